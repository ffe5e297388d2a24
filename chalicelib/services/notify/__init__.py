"""Outgoing notifications and digests, one pipeline: what a domain event tells whom, and how.

Its entries: `NotifyService.deliver` (delivery.py: alerts, instant emails, digest items, for the
outbox drain and the notification queue) and `DigestService` (digests.py: the daily digest job).
Neither is re-exported here: the API imports unsubscribe.py (the one-click link) and digests.py,
and importing this package must not load the instant email's builder into the API's cold start.
"""

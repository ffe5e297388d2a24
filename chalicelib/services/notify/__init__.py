"""Outgoing notifications and digests, one pipeline: what a domain event tells whom, and how.

Its entries: `NotifyService.deliver` (delivery.py: alerts, instant emails, digest items, for the
outbox drain and the notification queue) and `DigestService` (digests.py: the daily digest job).
What the emails say and carry back (the one-click unsubscribe token, the reply key, the ids that
thread them) is emails.py; unsubscribe.py honours the link. Nothing is re-exported here: the API
imports unsubscribe.py and digests.py, and importing this package must not load the delivery into
the API's cold start.
"""

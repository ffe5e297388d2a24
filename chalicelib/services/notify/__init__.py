"""Outgoing notifications and digests, one pipeline: what a domain event tells whom, and how.

Its entries: `NotifyService.deliver` (delivery.py: alerts, instant emails, digest items, for the
outbox drain and the notification queue) and `DigestService` (digests.py: the daily digest job).
What the emails say (and their one-click unsubscribe token) is emails.py; unsubscribe.py honours
the link; the reply key and the ids that thread them are chalicelib/mail/threads.py, which mail in
reads too: neither pipeline imports the other. Nothing is re-exported here: the API
imports unsubscribe.py and digests.py, and importing this package must not load the delivery into
the API's cold start.
"""

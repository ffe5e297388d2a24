"""Mail in costs at most 3 DynamoDB requests per imported mail over a mailbox (issue 14, Build 8).

Every post a poll creates is recorded in the outbox in the same transaction as the post, and the
outbox drain tells the notification handler: both are counted. The drain reads the subscribers
of the group and of the author once per batch of records (services/notify.BatchReads), not
once per post, and the batch's posts in one BatchGetItem; who is told stays the same.
"""

from __future__ import annotations

import pytest

from chalicelib import deps
from tests.mail.test_ingest import mail
from tests.support.notify import DIGEST, INSTANT, subscribe
from tests.support.outbox import drain

MAILS = 20
BUDGET = 3.0  # DynamoDB requests per imported mail, on average over the mailbox


def alerts_of(user_id: str):
    from chalicelib.store.alerts import AlertRecord

    return list(AlertRecord.query(user_id))


@pytest.mark.slow
def test_a_mailbox_of_posts_to_a_group_with_subscribers_stays_within_budget(
    community, mailbox, dovecot, dynamo_counter
):
    c = community
    garden = c.group("garden")
    ann = c.user("ann", {garden: "member"}, email="ann@example.org")
    bob = c.user("bob", {garden: "member"}, email="bob@example.org")
    dan = c.user("dan", {garden: "member"}, email="dan@example.org")
    c.load()
    # The author herself (never told of her own posts), a group fan told on screen, and an author
    # fan who asked for nothing: the group and the author each have subscribers to look up.
    subscribe(ann, "group", garden, 1, email=INSTANT, red=True)
    subscribe(ann, "author", ann, 8, email=DIGEST)
    subscribe(bob, "group", garden, 1, screen=True)
    subscribe(dan, "author", ann, 8)
    for number in range(MAILS):
        mailbox.deliver(mail("Ann <ann@example.org>", f"News {number}", f"Plot {number}.\n"))
    config = mailbox.connector(garden)
    ingestor = deps.mail_ingestor()
    ingestor.mail.prepare()  # the log table exists already in a deployed stack
    dynamo_counter.reset()

    result = ingestor.poll(config, lambda: False)
    poll_requests = dict(dynamo_counter.requests)
    assert alerts_of(bob) == []  # told by the drain, not by the poll
    dynamo_counter.reset()
    assert drain() == MAILS

    requests = sum(poll_requests.values()) + dynamo_counter.total
    assert result.posted == MAILS, result.line()
    assert requests / MAILS <= BUDGET, (poll_requests, dict(dynamo_counter.requests))
    # Who is told did not change: the fan once per post, the author and dan never.
    told = alerts_of(bob)
    assert len(told) == MAILS
    assert len({alert.alert_id for alert in told}) == MAILS
    assert alerts_of(ann) == [] and alerts_of(dan) == []
    assert mailbox.count() == 0

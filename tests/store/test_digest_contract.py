"""The digests table's contract (store/notifications.py), on the PynamoDB repository against moto and on
the in-memory fake `make simulate` sends 100,000 digests through: items queued once, found by
user in queue order, taken once; one claim per user and day; one instant email per occurrence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.digest_fakes import FakeDigestRepository

NOW = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
DAY = "2026-03-02"


@pytest.fixture
def digests(kind):
    from chalicelib.store.notifications import DigestRepository

    return FakeDigestRepository() if kind == "fake" else DigestRepository()


def queue(digests, user: str, occurrence: str, minutes: int) -> bool:
    return digests.queue(user, occurrence, {"title": occurrence}, NOW - timedelta(minutes=minutes))


def test_an_item_is_queued_once_and_listed_by_user_oldest_first(digests):
    assert queue(digests, "ann", "post-2", 5)
    assert queue(digests, "ann", "post-1", 10)
    assert not queue(digests, "ann", "post-1", 1)  # the same occurrence again
    assert queue(digests, "bob", "post-1", 3)
    assert [r.occurrence_id for r in digests.pending_items("ann", 10)] == ["post-1", "post-2"]
    assert [r.item for r in digests.pending_items("ann", 1)] == [{"title": "post-1"}]
    assert sorted(digests.users_with_pending_items()) == ["ann", "bob"]
    assert digests.pending_items("cid", 10) == []


def test_many_users_told_of_the_same_occurrence_at_once_are_each_listed_once(digests):
    users = sorted(f"user-{n}" for n in range(40))
    for user in users:
        queue(digests, user, "post-1", 10)
        queue(digests, user, "post-2", 10)
    assert sorted(digests.users_with_pending_items()) == users


def test_an_item_is_taken_once_and_put_back_waits_again(digests):
    queue(digests, "ann", "post-1", 10)
    [record] = digests.pending_items("ann", 10)
    assert digests.take(record, DAY, NOW)
    assert not digests.take(record, DAY, NOW)
    assert digests.pending_items("ann", 10) == []
    assert list(digests.users_with_pending_items()) == []
    digests.put_back(record)
    [again] = digests.pending_items("ann", 10)
    assert again.occurrence_id == "post-1"
    assert list(digests.users_with_pending_items()) == ["ann"]
    assert digests.take(again, DAY, NOW)


def test_a_day_is_claimed_once_until_released_and_remembers_its_message(digests):
    assert digests.day("ann", DAY) is None
    assert digests.claim_day("ann", DAY, NOW)
    assert not digests.claim_day("ann", DAY, NOW + timedelta(hours=1))
    assert digests.claim_day("ann", "2026-03-03", NOW + timedelta(days=1))
    digests.release_day("ann", DAY)
    assert digests.claim_day("ann", DAY, NOW)
    digests.finish_day("ann", DAY, 3, "message-1")
    day = digests.day("ann", DAY)
    assert (int(day.item_count), day.message_id) == (3, "message-1")


def test_an_instant_email_is_claimed_once_per_user_and_occurrence(digests):
    assert digests.claim_instant("ann", "post-1", NOW)
    assert not digests.claim_instant("ann", "post-1", NOW)
    assert digests.claim_instant("bob", "post-1", NOW)
    digests.release_instant("ann", "post-1")
    assert digests.claim_instant("ann", "post-1", NOW)
    digests.record_instant("ann", "post-1", "message-2")


def test_a_claim_gone_before_its_message_is_recorded_stays_gone(digests):
    """A day's claim, an instant claim or a taken item deleted since (its TTL ran out, or it
    was released) is not made again by writing its message or putting it back: such an item
    would have no `expires` and stay forever. The write answers False and leaves no item."""
    assert digests.claim_day("ann", DAY, NOW)
    digests.release_day("ann", DAY)
    finished = digests.finish_day("ann", DAY, 3, "message-1")
    assert digests.day("ann", DAY) is None
    assert finished is False
    assert digests.claim_instant("ann", "post-1", NOW)
    digests.release_instant("ann", "post-1")
    recorded = digests.record_instant("ann", "post-1", "message-2")
    assert digests.claim_instant("ann", "post-1", NOW)  # nothing stood in the claim's way
    assert recorded is False
    queue(digests, "ann", "post-2", 10)
    [record] = digests.pending_items("ann", 10)
    assert digests.take(record, DAY, NOW)
    gone(digests, record)
    put_back = digests.put_back(record)
    assert digests.pending_items("ann", 10) == []
    assert queue(digests, "ann", "post-2", 1)  # the item's key is free again
    assert put_back is False


def gone(digests, record) -> None:
    """The item's TTL ran out: DynamoDB deleted it."""
    if isinstance(digests, FakeDigestRepository):
        digests._items.pop((record.user_id, record.sk))
    else:
        record.delete()

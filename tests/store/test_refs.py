"""One BatchGetItem across tables for the references of a record or page (issue 17)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.fixtures import new_id

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(community):
    c = community
    c.garden = c.group("garden")
    c.writers = [c.user(f"writer-{i}", {c.garden: "member"}) for i in range(3)]
    c.post_ids = [c.post(c.garden, c.writers[i % 3]) for i in range(3)]
    return c.load()


def test_users_groups_and_posts_come_in_one_batch_get(world, dynamo_counter):
    from chalicelib.store.refs import ReferenceReader

    refs = ReferenceReader().read(
        users={*world.writers, new_id()},
        groups={world.garden, world.root},
        posts=set(world.post_ids),
    )
    assert dynamo_counter.requests == {"BatchGetItem": 1}
    assert set(refs.users) == set(world.writers)  # the unknown id is simply absent
    assert set(refs.groups) == {world.garden, world.root}
    assert set(refs.posts) == set(world.post_ids)
    assert refs.posts[world.post_ids[0]].author_id == world.writers[0]
    # Users and groups are remembered by the warm container; posts are read again.
    dynamo_counter.reset()
    again = ReferenceReader().read(users=set(world.writers), groups={world.garden})
    assert dynamo_counter.total == 0 and set(again.users) == set(world.writers)


def test_more_than_a_hundred_keys_take_one_request_per_hundred(world, dynamo_counter):
    from chalicelib.store.refs import ReferenceReader

    asked = {new_id() for _ in range(150)} | set(world.writers)
    refs = ReferenceReader().read(users=asked, groups={world.garden})
    assert dynamo_counter.requests == {"BatchGetItem": 2}
    assert set(refs.users) == set(world.writers) and set(refs.groups) == {world.garden}


def test_unprocessed_keys_are_asked_again(world, dynamo_counter):
    """DynamoDB answers at most 16 MB a request and leaves the rest unprocessed: 45 posts of
    nearly 400 KB each need a second request, which is made."""
    from chalicelib.store.posts import PostRecord
    from chalicelib.store.refs import ReferenceReader

    big = "x" * 390_000
    ids = [new_id() for _ in range(45)]
    with PostRecord.batch_write() as batch:
        for post_id in ids:
            batch.save(
                PostRecord(
                    id=post_id,
                    group_id=world.garden,
                    author_id=world.writers[0],
                    title="Big",
                    slug=f"big-{post_id}",
                    content=big,
                    created_on=T0,
                )
            )
    dynamo_counter.reset()
    refs = ReferenceReader().read(posts=set(ids))
    assert set(refs.posts) == set(ids)
    assert dynamo_counter.requests == {"BatchGetItem": 2}

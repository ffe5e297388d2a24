"""Two moderators at once: a rival's change lands between our read and our write, and the
conditional write makes us decide again on what is stored (no lost update, no resurrection)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chalicelib import deps
from chalicelib.errors import Conflict, NotFound
from chalicelib.jobs.base import Deadline
from tests.support import NOW


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden")
    c.moderator = c.user("garden-moderator", {c.garden: "moderator"})
    c.rival = c.user("rival-moderator", {c.garden: "moderator"})
    c.post_id = c.post(c.garden, c.moderator)
    return c


def racing_service(rival_acts: Callable[[], None]):
    """A service whose repository lets `rival_acts` run just before our first write."""
    from chalicelib.services.comments import CommentService
    from chalicelib.store.comments import CommentRepository

    class RivalFirst(CommentRepository):
        pending: Callable[[], None] | None = rival_acts

        def _rival(self) -> None:
            rival, RivalFirst.pending = RivalFirst.pending, None
            if rival is not None:
                rival()

        def replace_if_unchanged(self, read, changed, *, announcements=()):
            self._rival()
            return super().replace_if_unchanged(read, changed, announcements=announcements)

        def purge_if_unchanged(self, record, announcements=()):
            self._rival()
            return super().purge_if_unchanged(record, announcements)

        def purge_if_deleted_before(self, comment_id, cutoff, announcements=()):
            self._rival()
            return super().purge_if_deleted_before(comment_id, cutoff, announcements)

    return CommentService(
        RivalFirst(), deps.group_service(), deps.comment_presenter(), clock=lambda: NOW
    )


def plain_service():

    return deps.comment_service(clock=lambda: NOW)


def stored(comment_id: int):
    from chalicelib.store.comments import CommentRepository

    return CommentRepository().get(comment_id)


def deleted(c) -> dict:
    return {"deletedOn": "2026-01-10T00:00:00Z", "deletedById": c.moderator}


@pytest.fixture
def deleted_comment(garden) -> int:
    """A comment the moderator deleted, loaded."""
    comment_id = garden.comment(garden.post_id, garden.moderator, **deleted(garden))
    garden.load()
    return comment_id


def test_undelete_after_a_rival_undelete_is_409(deleted_comment):
    service = racing_service(lambda: plain_service().undelete(stored(deleted_comment)))
    with pytest.raises(Conflict) as conflict:
        service.undelete(stored(deleted_comment))
    assert conflict.value.errors[0].key == "state"
    assert not stored(deleted_comment).is_deleted


def test_undelete_after_a_rival_purge_is_404_and_nothing_comes_back(deleted_comment):
    service = racing_service(lambda: plain_service().purge(stored(deleted_comment)))
    with pytest.raises(NotFound):
        service.undelete(stored(deleted_comment))
    assert stored(deleted_comment) is None


def test_purge_after_a_rival_undelete_is_409_and_the_comment_lives(deleted_comment):
    service = racing_service(lambda: plain_service().undelete(stored(deleted_comment)))
    with pytest.raises(Conflict):
        service.purge(stored(deleted_comment))
    assert stored(deleted_comment) is not None and not stored(deleted_comment).is_deleted


def test_delete_after_a_rival_delete_answers_the_rivals_deletion(garden):
    comment = garden.comment(garden.post_id, garden.moderator)
    garden.load()
    service = racing_service(lambda: plain_service().delete(stored(comment), garden.rival))
    out = service.delete(stored(comment), garden.moderator)
    assert out.deleted_by.id == garden.rival
    assert stored(comment).deleted_by_id == garden.rival


def test_approve_racing_a_delete_keeps_both_changes(garden):
    comment = garden.comment(garden.post_id, garden.moderator, isApproved=False)
    garden.load()
    service = racing_service(lambda: plain_service().delete(stored(comment), garden.rival))
    out = service.approve(stored(comment))
    assert out.is_approved is True and out.approved_on == NOW
    record = stored(comment)
    assert record.is_approved and record.is_deleted and record.deleted_by_id == garden.rival


def test_delete_unapproved_skips_a_comment_approved_meanwhile(garden):
    first = garden.comment(garden.post_id, garden.moderator, isApproved=False)
    second = garden.comment(garden.post_id, garden.moderator, isApproved=False)
    garden.load()
    service = racing_service(lambda: plain_service().approve(stored(first)))
    group = service.group_of(stored(first))
    result = service.delete_unapproved_in_group(group, garden.moderator, Deadline.unbounded())
    assert result.count == 1
    assert not stored(first).is_deleted and stored(first).is_approved
    assert stored(second).is_deleted


def test_monthly_purge_leaves_a_comment_undeleted_meanwhile(deleted_comment):
    service = racing_service(lambda: plain_service().undelete(stored(deleted_comment)))
    assert service.purge_old_deleted(Deadline.unbounded()) == 0
    assert stored(deleted_comment) is not None and not stored(deleted_comment).is_deleted

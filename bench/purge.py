"""Purge: DynamoDB items read per comment purged, 10,000 comments of which 100 qualify.

The table mixes live comments, comments deleted within the month (not yet purgeable, but in the
purge index) and the 100 deleted more than a month ago. The reference is the obvious job without
an index: a Scan of the comments table filtered on the deletion date, counted the same way.
"""

from __future__ import annotations

from datetime import timedelta

from bench.report import Figure
from bench.world import T0, in_process_aws, z
from tests.fixtures import Community, counting_dynamodb

TOTAL, QUALIFYING = 10_000, 100


def purge_figures(total: int = TOTAL, qualifying: int = QUALIFYING) -> list[Figure]:
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments
    from chalicelib.services.comments import one_month_before
    from chalicelib.store.comments import CommentRecord

    now = T0
    cutoff = one_month_before(now)
    with in_process_aws():
        community = Community()
        community.group("home")
        community.user("root-admin", {community.root: "administrator"})
        groups = [community.group(f"group-{i}") for i in range(4)]
        moderator = community.user("moderator", {g: "moderator" for g in groups})
        posts = [community.post(groups[i % len(groups)], moderator) for i in range(20)]
        recent = (total - qualifying) // 2
        for index in range(total):
            if index < qualifying:
                deleted = {"deletedOn": z(cutoff - timedelta(days=1, minutes=index))}
            elif index < qualifying + recent:
                deleted = {"deletedOn": z(now - timedelta(days=2, minutes=index))}
            else:
                deleted = {}
            if deleted:
                deleted["deletedById"] = moderator
            community.comment(posts[index % len(posts)], moderator, **deleted)
        community.load()

        with counting_dynamodb() as counter:
            scanned = sum(
                1 for _ in CommentRecord.scan(filter_condition=CommentRecord.deleted_on <= cutoff)
            )
            scan_items = counter.items_read
            counter.reset()
            purged = purge_old_deleted_comments(Deadline.unbounded(), now=now)
            purge_items = counter.items_read

    note = None
    if purged != qualifying or scanned != qualifying:
        note = f"purged {purged}, scan found {scanned}, expected {qualifying}"
    return [
        Figure(
            "purge_items_read_per_purged",
            purge_items / purged if purged else None,
            scan_items / scanned if scanned else None,
            "items/comment",
            note,
        )
    ]

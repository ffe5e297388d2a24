"""In-process AWS (moto), the DynamoDB counter, and the communities the figures run against.

The environment is the tests' own (tests/conftest.py, imported by bench.run before anything else),
and the builders are the tests' (`Community`, `counting_dynamodb`, tests/support/seeding.py): the
bench measures what the tests exercise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from statistics import median
from typing import Any

from tests.fixtures import Community, auth, z
from tests.support.seeding import seed_events, seed_mail_log

# Every dataset lives around this moment: events before it are expired, after it upcoming.
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
PAGE_SIZE = 15


@contextmanager
def in_process_aws() -> Iterator[None]:
    """A fresh moto AWS with every table and the mailbox queue (as the tests' `aws` fixture)."""
    from moto import mock_aws

    from agora_local.embedded_aws import serialise_moto_dynamodb
    from chalicelib.settings import get_settings, reload_settings

    # Code under test runs threads too (mail polls mailboxes in parallel): moto's DynamoDB gets
    # the same lock as make run's, so the threads race as they would on DynamoDB, not in moto.
    serialise_moto_dynamodb()
    with mock_aws():
        reload_settings()
        from agora_local.run import ensure_kms_key, ensure_queue
        from chalicelib.store import base
        from chalicelib.store.groups import GroupRepository
        from chalicelib.store.tables import create_tables

        GroupRepository.forget_cache()
        base.forget()
        create_tables(wait=False)
        ensure_queue(get_settings().mailbox_queue)
        ensure_kms_key(get_settings().kms_key_id)
        try:
            yield
        finally:
            GroupRepository.forget_cache()
            base.forget()


def median_ms(
    call: Callable[[], Any], samples: int, budget_seconds: float = 15, warm_up: int = 3
) -> float:
    """Median wall time of `call`: `samples` runs, or fewer (at least 5) once the budget is spent.

    In-process DynamoDB is moto, whose (de)serialising dominates a request: the budget keeps the
    whole bench inside its ten minutes on a busy machine.
    """
    for _ in range(warm_up):
        call()
    deadline = time.monotonic() + budget_seconds
    times: list[int] = []
    while len(times) < samples and (len(times) < 5 or time.monotonic() < deadline):
        started = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - started)
    return median(times) / 1e6


def features() -> set[str]:
    """Which figure families the tree can serve now (issues land while the bench is written)."""
    from app import app

    routes = set(app.routes)
    available = set()
    if "/api/v1/en_US/system-page/home-page" in routes:
        available.add("home_page")
    if {"/api/v1/en_US/event/{eventId}", "/api/v1/en_US/event/list/upcoming/{groupId}"} <= routes:
        available.add("events")
    if "/api/v1/en_US/comment/post/list/{groupId}/deleted" in routes:
        available.add("comments")
    if {"events", "comments"} <= available and (
        "/api/v1/en_US/connector/email-to-post/{groupId}/log" in routes
    ):
        available.add("calls")
    return available


def paged(path: str, offset: object) -> str:
    """The page of `path` that starts after `offset`, PAGE_SIZE items long."""
    return f"{path}?offset={offset}&pageSize={PAGE_SIZE}"


@dataclass
class Club:
    """A group with `size` events and `size` deleted comments, and the ids the figures ask for."""

    size: int
    root_admin: str
    moderator: str
    group_id: str
    event_id: int | None = None
    event_offset: int | None = None
    comment_offset: int | None = None
    # The other reads of issue 17's table (feature "calls").
    post_id: str | None = None
    post_offset: str | None = None
    unapproved_offset: int | None = None
    reported_offset: int | None = None
    mail_offset: str | None = None

    def headers(self, user_id: str) -> dict[str, str]:
        return {"Content-Type": "application/json", **auth(user_id)}

    @property
    def home_page(self) -> str:
        return "/api/v1/en_US/system-page/home-page"

    @property
    def event(self) -> str:
        return f"/api/v1/en_US/event/{self.event_id}"

    @property
    def events_page(self) -> str:
        return (
            f"/api/v1/en_US/event/list/upcoming/{self.group_id}"
            f"?timeStamp={z(T0)}&offset={self.event_offset}&pageSize={PAGE_SIZE}"
        )

    @property
    def comments_page(self) -> str:
        return paged(
            f"/api/v1/en_US/comment/post/list/{self.group_id}/deleted", self.comment_offset
        )

    @property
    def post(self) -> str:
        return f"/api/v1/en_US/post/{self.post_id}"

    @property
    def email_to_post(self) -> str:
        return f"/api/v1/en_US/connector/email-to-post/{self.group_id}"

    @property
    def posts_page(self) -> str:
        return paged(f"/api/v1/en_US/post/list/{self.group_id}", self.post_offset)

    @property
    def mail_log_page(self) -> str:
        return paged(f"{self.email_to_post}/log", self.mail_offset)

    @property
    def unapproved_page(self) -> str:
        return paged(
            f"/api/v1/en_US/comment/post/list/{self.group_id}/unapproved", self.unapproved_offset
        )

    @property
    def spam_reports_page(self) -> str:
        return paged(
            f"/api/v1/en_US/comment/post/list/{self.group_id}/spam-reports", self.reported_offset
        )

    @property
    def calendar_month(self) -> str:
        return (
            f"/api/v1/en_US/event/list/calendar/{self.group_id}"
            f"?calendarStartDate={z(T0.replace(day=1, hour=0, minute=0))}"
            f"&calendarEndDate={z(T0.replace(month=T0.month + 1, day=1, hour=0, minute=0))}"
        )


def build_club(size: int, available: set[str]) -> Club:
    """Load a club of `size` events and `size` deleted comments (inside `in_process_aws`).

    The pages asked for start in the middle of their list (`offset`), so they are neither the
    first page nor one whose cost could hide in the list's start.
    """
    community = Community()
    community.group("home")
    root_admin = community.user("root-admin", {community.root: "administrator"})
    group_id = community.group("club")
    moderator = community.user("moderator", {group_id: "moderator"})
    club = Club(size=size, root_admin=root_admin, moderator=moderator, group_id=group_id)
    writers = [community.user(f"writer-{i}", {group_id: "member"}) for i in range(5)]
    if "comments" in available:
        posts = [community.post(group_id, moderator, title=f"Post {i}") for i in range(10)]
        comment_ids = []
        for index in range(size):
            deleted_on = T0 - timedelta(minutes=size - index)
            comment_ids.append(
                community.comment(
                    posts[index % len(posts)],
                    moderator,
                    content=f"<p>comment {index}</p>",
                    deletedOn=z(deleted_on),
                    deletedById=moderator,
                )
            )
        # Newest deletion first: the middle of the list.
        club.comment_offset = comment_ids[size // 2]
    if "calls" in available:
        add_moderation_lists(community, club, group_id, writers)
    community.load()
    if "calls" in available:
        # Mail log entries naming the club's posts; the offset mid-log.
        mail_log = seed_mail_log(
            group_id,
            club.mail_posts,  # type: ignore[attr-defined]
            4 * PAGE_SIZE,
            newest=T0,
            domain="bench.example",
        )
        club.mail_offset = mail_log[PAGE_SIZE - 1]
    if "events" in available:
        # One a day: a calendar month holds about 30 of them, whatever the count.
        event_ids = seed_events(
            group_id,
            [T0 + timedelta(days=index - size // 2, minutes=30) for index in range(size)],
            authors=[moderator],
            written_on=T0,
            title=bench_event_title,
            search_text=bench_event_search_text,
            content="<p>Stalls and music</p>",
            organizer="Parish council",
            location="Market square",
        )
        # Half the events start before T0, half after; the upcoming list is the second half.
        club.event_id = event_ids[size // 2]
        club.event_offset = event_ids[size // 2 + size // 4]
    return club


def add_moderation_lists(community: Any, club: Club, group_id: str, writers: list[str]) -> None:
    """Posts by several writers, comments awaiting approval and reported ones (4 pages each)."""
    count = 4 * PAGE_SIZE
    posts = [
        community.post(group_id, writers[i % len(writers)], title=f"Written {i}")
        for i in range(count)
    ]
    club.post_id = posts[-1]
    # Newest first: the page after the first one.
    club.post_offset = posts[count - PAGE_SIZE]
    for i in range(3):
        community.comment(club.post_id, writers[i % len(writers)])
    unapproved = [
        community.comment(posts[i], writers[(i + 1) % len(writers)], isApproved=False)
        for i in range(count)
    ]
    club.unapproved_offset = unapproved[count - PAGE_SIZE]
    reported = [
        community.comment(
            posts[i],
            writers[i % len(writers)],
            spamReports=[{"authorId": writers[(i + 2) % len(writers)], "createdOn": z(T0)}],
        )
        for i in range(count)
    ]
    club.reported_offset = reported[count - PAGE_SIZE]
    club.mail_posts = posts  # type: ignore[attr-defined]


def bench_event_title(index: int) -> str:
    return f"Event {index:05d}"


def bench_event_search_text(index: int) -> str:
    return f"event {index:05d} stalls and music market square parish council"


# --- a large community ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldSize:
    """A community's volume. Comments are one per post and events ten per group: the proportions
    of the bench's club, spread over many groups."""

    name: str
    members: int
    groups: int
    posts: int

    @property
    def comments(self) -> int:
        return self.posts

    @property
    def events(self) -> int:
        return 10 * self.groups


WORLD_SIZES = {
    "large": WorldSize("large", 100_000, 10_000, 1_000_000),
    "medium": WorldSize("medium", 10_000, 1_000, 100_000),
    "small": WorldSize("small", 1_000, 100, 10_000),
}
WRITE_THREADS = 4
CHUNK = 2_500  # records a thread writes per task, 25 to a BatchWriteItem
# Ids of the generated comments and events start far above the club's (no counter is raised).
FIRST_COMMENT_ID, FIRST_EVENT_ID = 10_000_000, 50_000_000
# Generated posts, comments and events are dated long before the club's: the club's pages (and
# its calendar month) hold what they hold in the small twin, at another place in bigger lists.
WORLD_EPOCH = T0 - timedelta(days=3 * 365)


def grow_world(club: Club, size: WorldSize, *, threads: int = WRITE_THREADS) -> dict[str, int]:
    """Members, groups, posts, comments and events around `club` (inside `in_process_aws`),
    written through the store's bulk paths (BatchWriteItem, 25 items a request) on `threads`
    threads. The club's own group takes its share of the generated posts, comments and events.
    Answers how many records of each kind were written."""
    import random
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    from chalicelib.store.groups import GroupRepository
    from chalicelib.store.posts import PostRecord

    store = _fixture_store()
    PostRecord._get_connection().connection.client  # noqa: B018  clients before the threads
    root_id = GroupRepository().root_id()
    group_ids = [str(uuid.uuid4()) for _ in range(size.groups - 1)] + [club.group_id]
    member_ids = [str(uuid.uuid4()) for _ in range(size.members)]
    post_ids = [str(uuid.uuid4()) for _ in range(size.posts)]

    def groups(start: int, stop: int) -> None:
        store.write_groups(
            [
                {
                    "id": group_ids[i],
                    "name": f"Group {i}",
                    "slug": f"world-group-{i}",
                    "parent_id": root_id,
                    "access": "public",
                    "permissions": {},
                }
                for i in range(start, stop)
            ]
        )

    def members(start: int, stop: int) -> None:
        local = random.Random(start)
        store.write_users(
            [
                {
                    "id": member_ids[i],
                    "alias": f"Member {i}",
                    "email": f"member-{i}@world.example",
                    "email_lower": f"member-{i}@world.example",
                    "slug": f"member-{i}",
                    "memberships": {local.choice(group_ids): "member" for _ in range(3)},
                }
                for i in range(start, stop)
            ]
        )

    def posts(start: int, stop: int) -> None:
        local = random.Random(start)
        store.write_posts(
            [
                {
                    "id": post_ids[i],
                    "group_id": local.choice(group_ids),
                    "author_id": local.choice(member_ids),
                    "title": f"World post {i}",
                    "slug": f"world-post-{i}",
                    "content": "<p>Allotment news from the world.</p>",
                    "created_on": WORLD_EPOCH + timedelta(minutes=i),
                }
                for i in range(start, stop)
            ]
        )

    def comments(start: int, stop: int) -> None:
        from chalicelib.domain.comments import Comment

        local = random.Random(start)
        rows = []
        for i in range(start, stop):
            post_index = local.randrange(len(post_ids))
            rows.append(
                Comment(
                    id=FIRST_COMMENT_ID + i,
                    post_id=post_ids[post_index],
                    # Any group: the comment lists are keyed by post and group, never read whole.
                    group_id=group_ids[post_index % len(group_ids)],
                    author_id=local.choice(member_ids),
                    content=f"<p>comment {i}</p>",
                    created_on=WORLD_EPOCH + timedelta(minutes=i),
                    parent_comment_id=0,
                    is_approved=True,
                    approved_on=None,
                    rating=0,
                    votes=0,
                    is_anonymous=False,
                    deleted_on=None,
                    deleted_by_id=None,
                    last_deleted_on=None,
                    last_reported_on=None,
                    spam_reports=(),
                    source="fixture",
                    version=None,
                )
            )
        store.write_comments(rows, dict.fromkeys(member_ids, "Member"))

    def events(start: int, stop: int) -> None:
        from chalicelib.store.events import EventRecord, EventRepository

        records = []
        for i in range(start, stop):
            moment = WORLD_EPOCH + timedelta(hours=i)
            records.append(
                EventRecord(
                    id=FIRST_EVENT_ID + i,
                    group_id=group_ids[i % len(group_ids)],
                    author_id=member_ids[i % len(member_ids)],
                    editor_id=member_ids[i % len(member_ids)],
                    created_on=moment,
                    modified_on=moment,
                    start_date=moment,
                    end_date=moment + timedelta(hours=1),
                    title=f"World event {i}",
                    search_text=f"world event {i}",
                )
            )
        EventRepository().put_many(records)

    written = {}
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for kind, write, total in [
            ("groups", groups, len(group_ids) - 1),
            ("members", members, size.members),
            ("posts", posts, size.posts),
            ("comments", comments, size.comments),
            ("events", events, size.events),
        ]:
            started = time.monotonic()
            tasks = [pool.submit(write, s, min(s + CHUNK, total)) for s in range(0, total, CHUNK)]
            for task in tasks:
                task.result()
            written[kind] = total
            print(
                f"world {size.name}: {total:,} {kind} in {time.monotonic() - started:.0f}s",
                flush=True,
            )
    return written


def _fixture_store() -> Any:
    from chalicelib.store.fixture import FixtureStore

    return FixtureStore()

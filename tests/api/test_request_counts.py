"""DynamoDB requests per call (issue 17): a single record costs 1 request once the container is
warm (caller, group and people come from its memory), a list page 1 Query + 1 BatchGetItem.

Each call is made twice; the second one (a warm container) is counted. Several authors, editors
and reporters make sure that a page names more than the caller.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.fixtures import z
from tests.support.seeding import seed_events, seed_mail_log

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
PAGE = "pageSize=5"


@pytest.fixture
def world(community, kms_key, api):
    c = community
    c.garden = c.group("garden", access="private")
    c.admin = c.user("garden-admin", {c.garden: "administrator"})
    c.moderator = c.user("garden-moderator", {c.garden: "moderator"})
    c.writers = [c.user(f"writer-{i}", {c.garden: "member"}) for i in range(4)]
    c.post_ids = [
        c.post(c.garden, c.writers[i % 4], title=f"Post {i}", createdOn=z(T0 - timedelta(days=i)))
        for i in range(12)
    ]
    c.deleted = [
        c.comment(
            c.post_ids[i % 12],
            c.writers[i % 4],
            deletedOn=z(T0 - timedelta(minutes=i)),
            deletedById=c.moderator,
        )
        for i in range(12)
    ]
    c.unapproved = [
        c.comment(c.post_ids[i % 12], c.writers[i % 4], isApproved=False) for i in range(12)
    ]
    c.reported = [
        c.comment(
            c.post_ids[i % 12],
            c.writers[i % 4],
            spamReports=[{"authorId": c.writers[(i + 1) % 4], "createdOn": z(T0)}],
        )
        for i in range(12)
    ]
    c.visible = [c.comment(c.post_ids[0], c.writers[i % 4]) for i in range(3)]
    c.load()
    c.events = seed_events(
        c.garden,
        [T0 + timedelta(days=index - 6) for index in range(12)],
        authors=c.writers,
        editors=c.writers[1:] + c.writers[:1],
        written_on=T0,
    )
    c.log = seed_mail_log(c.garden, c.post_ids, 12, newest=T0, domain="example.org")
    status, _ = api.put(
        f"/api/v1/en_US/connector/email-to-post/{c.garden}",
        c.admin,
        {
            "serverName": "pop.example.org",
            "serverPort": 995,
            "serverUsername": "garden",
            "serverPassword": "s3cret",
            "isEnabled": True,
            "isSSL": True,
            "deleteProcessed": False,
        },
    )
    assert status == 200
    return c


def warm_count(api, counter, path: str, user: str) -> tuple[dict, dict]:
    """The body and the DynamoDB requests of the second of two identical calls."""
    status, first = api.get(path, user)
    assert status == 200, first
    counter.reset()
    status, body = api.get(path, user)
    assert status == 200, body
    assert body["object"] == first["object"]
    return body["object"], dict(counter.requests)


def test_get_event_is_one_request_when_warm(api, world, dynamo_counter):
    event, requests = warm_count(
        api, dynamo_counter, f"/api/v1/en_US/event/{world.events[3]}", world.writers[0]
    )
    assert event["id"] == world.events[3]
    assert event["author"]["id"] == world.writers[3] and event["editor"]["id"] == world.writers[0]
    assert requests == {"GetItem": 1}


def test_get_post_is_one_request_when_warm(api, world, dynamo_counter):
    post, requests = warm_count(
        api, dynamo_counter, f"/api/v1/en_US/post/{world.post_ids[0]}", world.writers[1]
    )
    assert post["author"]["id"] == world.writers[0] and post["commentsCount"] == 4
    assert requests == {"GetItem": 1}


def test_get_email_to_post_settings_is_one_request_and_one_decrypt_when_warm(
    api, world, dynamo_counter
):
    settings, requests = warm_count(
        api, dynamo_counter, f"/api/v1/en_US/connector/email-to-post/{world.garden}", world.admin
    )
    assert settings["serverPassword"] == "s3cret"
    assert requests == {"GetItem": 1}


@pytest.mark.parametrize(
    "path, key, offset_of",
    [
        ("post/list/{g}", "posts", lambda w: w.post_ids[3]),
        ("event/list/upcoming/{g}?timeStamp=2026-03-01T00:00:00Z", "events", lambda w: w.events[2]),
        ("event/list/expired/{g}?timeStamp=2026-03-30T00:00:00Z", "events", lambda w: w.events[9]),
        ("connector/email-to-post/{g}/log", "entries", lambda w: w.log[3]),
        ("comment/post/list/{g}/deleted", "comments", lambda w: w.deleted[3]),
        ("comment/post/list/{g}/unapproved", "comments", lambda w: w.unapproved[8]),
        ("comment/post/list/{g}/spam-reports", "comments", lambda w: w.reported[8]),
    ],
)
def test_a_list_page_is_one_query_and_at_most_one_batch_get_when_warm(
    api, world, dynamo_counter, path, key, offset_of
):
    separator = "&" if "?" in path else "?"
    base = "/api/v1/en_US/" + path.format(g=world.garden) + separator + PAGE
    user = world.admin
    _, first = api.get(base, user)
    # The next page names the last item of the first: the usual way through a list.
    offset = first["object"]["offset"]
    page, requests = warm_count(api, dynamo_counter, f"{base}&offset={offset}", user)
    assert len(page[key]) == 5
    assert requests.pop("Query") == 1
    assert requests in ({}, {"BatchGetItem": 1})
    # An offset never seen by this container costs one read more, and stays correct.
    chosen = offset_of(world)
    page, requests = warm_count(api, dynamo_counter, f"{base}&offset={chosen}", user)
    assert page[key] and str(chosen) not in [str(item["id"]) for item in page[key]]
    assert requests.pop("Query") == 1
    assert requests in ({}, {"BatchGetItem": 1})


def test_a_cold_comment_page_reads_posts_groups_and_people_in_one_batch_get(
    api, world, dynamo_counter
):
    from chalicelib.store import base

    path = f"/api/v1/en_US/comment/post/list/{world.garden}/spam-reports?{PAGE}"
    api.get(path, world.admin)
    base.forget()
    dynamo_counter.reset()
    status, body = api.get(path, world.admin)
    assert status == 200 and len(body["object"]["comments"]) == 5
    reporters = {r["author"]["id"] for c in body["object"]["comments"] for r in c["reports"]}
    assert reporters and reporters <= set(world.writers)
    # The caller, the group of the path (both GetItem), the page, and one BatchGetItem.
    assert dynamo_counter.requests["BatchGetItem"] == 1
    assert dynamo_counter.requests["Query"] <= 2  # the page, and the root group when cold


def test_a_calendar_month_is_one_query_and_one_batch_get_when_warm(api, world, dynamo_counter):
    path = (
        f"/api/v1/en_US/event/list/calendar/{world.garden}"
        "?calendarStartDate=2026-03-01T00:00:00Z&calendarEndDate=2026-04-01T00:00:00Z"
    )
    page, requests = warm_count(api, dynamo_counter, path, world.writers[2])
    assert [e["id"] for e in page["events"]] == world.events
    assert requests == {"Query": 1, "BatchGetItem": 1}


@pytest.fixture
def kms_calls(world):
    """KMS operations made while the test runs (botocore's `after-call.kms`)."""
    from chalicelib.aws import client

    calls: list[str] = []

    def record(model, **_):
        calls.append(model.name)

    kms = client("kms")
    kms.meta.events.register("after-call.kms", record)
    yield calls
    kms.meta.events.unregister("after-call.kms", record)


def test_the_password_is_decrypted_only_for_a_caller_who_may_see_it(api, world, kms_calls):
    status, _ = api.put(
        "/api/v1/en_US/connector/email-to-comment",
        world.users[0]["id"],
        {
            "serverName": "pop.example.org",
            "serverPort": 995,
            "serverUsername": "comments",
            "serverPassword": "system secret",
            "isEnabled": True,
            "isSSL": True,
            "deleteProcessed": False,
        },
    )
    assert status == 200
    path = f"/api/v1/en_US/connector/email-to-comment/{world.garden}"
    kms_calls.clear()
    status, body = api.get(path, world.admin)  # a group administrator: no password for them
    assert status == 200 and body["object"]["serverPassword"] == ""
    assert kms_calls == []
    status, body = api.get(path, world.users[0]["id"])  # the root administrator sees it
    assert status == 200 and body["object"]["serverPassword"] == "system secret"
    assert kms_calls == ["Decrypt"]
    kms_calls.clear()
    status, body = api.get(f"/api/v1/en_US/connector/email-to-post/{world.garden}", world.admin)
    assert status == 200 and body["object"]["serverPassword"] == "s3cret"
    assert kms_calls == ["Decrypt"]


def test_sign_in_with_the_right_password_is_at_most_three_requests(community, api, dynamo_counter):
    # Issue 28: the user's Query and the attempt's one conditional UpdateItem; no clean-up.
    # Issue 36: one PutItem more remembers the source the owner signed in from, so that a
    # crowd of guessers elsewhere cannot lock them out of it.
    community.user("signer", password="a good password", email="signer@example.org")
    community.load()
    dynamo_counter.reset()
    status, body = api.post(
        "/api/v1/en_US/security/login",
        body={"email": "signer@example.org", "password": "a good password"},
    )
    assert status == 200, body
    assert dynamo_counter.total <= 3, dynamo_counter.requests
    assert dynamo_counter.requests == {"Query": 1, "UpdateItem": 1, "PutItem": 1}


# At 600 people, "mar" alone finds 300: a page that read its whole bucket, or the table, would
# read three times the 100 items allowed below. The items are counted, so a larger community
# proves nothing more and costs moto's time (its Query walks the whole table).
@pytest.mark.parametrize("size", [50, 600])
def test_a_user_search_page_is_one_query_whatever_the_community_size(
    api, community, dynamo_counter, size, monkeypatch
):
    from chalicelib.settings import reload_settings

    # Moto answers a Query in time proportional to the table (not DynamoDB's way): on a busy
    # machine two calls over hundreds of users must not outlast the warm container's memory.
    monkeypatch.setenv("AGORA_CACHE_SECONDS", "600")
    reload_settings()
    from chalicelib.store.groups import GroupRepository

    monkeypatch.setattr(GroupRepository, "ROOT_CACHE_SECONDS", 600.0)  # the root group's id too
    c = community
    c.garden = c.group("garden")
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    names = ["mary", "mark", "martin", "zoe", "ann", "bob"]
    for i in range(size):
        c.user(f"{names[i % len(names)]}-{i:04d}", {c.garden: "member"} if i % 2 == 0 else None)
    c.load()
    root = c.users[0]["id"]
    for user, query in [
        (root, "q=mar&pageSize=3"),
        (root, "q=mary-0&pageSize=3"),  # longer than a bucket: filtered, still one Query
        (c.garden_admin, f"q=ma&groupId={c.garden}&pageSize=3"),
    ]:
        base = f"/api/v1/en_US/user/search?{query}"
        _, first = api.get(base, user)
        offset = first["object"]["offset"]
        page, requests = warm_count(api, dynamo_counter, f"{base}&offset={offset}", user)
        assert len(page["users"]) == 3, (query, page)
        assert requests.pop("Query") == 1
        assert requests in ({}, {"BatchGetItem": 1})
        assert dynamo_counter.items_read <= 100

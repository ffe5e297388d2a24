"""The audit log (CONTRACT §12, §10, §5): each change an entry in the change's own transaction,
read by group and in whole, newest first."""

from __future__ import annotations

import pytest

from tests.api.test_aws_faults import (
    FAULT_URL,
    _dynamodb_clients,
    _error_response,
    _set_attempts,
    stored_state,
)

AUDIT = "/api/v1/en_US/audit"
MAILBOX = "/api/v1/en_US/connector/email-to-post/{}"
EVENT = "/api/v1/en_US/event"
COMMENTS = "/api/v1/en_US/comment/post"

SETTINGS = {
    "serverName": "pop.example.org",
    "serverPort": 995,
    "serverUsername": "garden-inbox",
    "serverPassword": "first secret",
    "isEnabled": True,
    "isSSL": True,
    "deleteProcessed": False,
}
EVENT_BODY = {
    "title": "Spring fair",
    "startDate": "2026-04-01T09:00:00Z",
    "endDate": "2026-04-01T17:00:00Z",
    "allDay": False,
    "content": "<p>Stalls</p>",
    "organizer": "Council",
    "location": "Square",
}


@pytest.fixture
def people(community, kms_key):
    from tests.fixtures import two_groups

    c = two_groups(community)
    c.post_id = c.post(c.garden, c.member, title="Roses", slug="roses")
    return c


def entries(api, user, path=AUDIT, **query):
    params = "&".join(f"{k}={v}" for k, v in query.items())
    status, body = api.get(path + (f"?{params}" if params else ""), user)
    assert status == 200, body
    return body["object"]["entries"]


def group_log(api, people, **query):
    return entries(api, people.garden_admin, f"{AUDIT}/{people.garden}", **query)


def garden_event(api, people):
    """The moderator's event in the garden (EVENT_BODY), created; its id."""
    people.load()
    status, body = api.post(EVENT, people.moderator, {**EVENT_BODY, "groupId": people.garden})
    assert status == 200, body
    return body["object"]["id"]


def test_a_mailbox_settings_change_is_one_entry_with_the_password_only_said_to_change(api, people):
    people.load()
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, SETTINGS)[0] == 200
    changed = {**SETTINGS, "serverPassword": "second secret", "serverName": "mail.example.org"}
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, changed)[0] == 200

    newest, first = group_log(api, people)
    assert newest["type"] == "auditEntry" and newest["action"] == "emailToPost.update"
    assert newest["actor"]["id"] == people.garden_admin and newest["via"] == "api"
    assert newest["actor"]["alias"] == "Garden Admin"
    assert newest["group"]["id"] == people.garden
    assert newest["target"] == {"type": "emailToPost", "id": people.garden, "name": "Garden"}
    assert newest["changes"] == [
        {"field": "serverName", "before": "pop.example.org", "after": "mail.example.org"},
        {"field": "serverPassword", "before": "(set)", "after": "(changed)"},
    ]
    assert newest["requestId"] and newest["requestId"] != first["requestId"]
    assert {"field": "serverPassword", "before": None, "after": "(set)"} in first["changes"]
    assert "first secret" not in str(first) and "second secret" not in str(newest)


def test_a_refused_write_and_a_write_that_changes_nothing_record_nothing(api, people):
    people.load()
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, SETTINGS)[0] == 200
    unchanged = {k: v for k, v in SETTINGS.items() if k != "serverPassword"}
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, unchanged)[0] == 200
    bad = {**SETTINGS, "serverPort": 0}
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, bad)[0] == 400
    assert api.put(MAILBOX.format(people.garden), people.member, SETTINGS)[0] == 403
    assert len(group_log(api, people)) == 1


def test_an_events_create_update_and_delete_are_three_entries_newest_first(api, people):
    event_id = garden_event(api, people)
    moved = {**EVENT_BODY, "title": "Summer fair"}
    assert api.put(f"{EVENT}/{event_id}", people.moderator, moved)[0] == 200
    assert api.delete(f"{EVENT}/{event_id}", people.moderator)[0] == 200

    log = group_log(api, people)
    assert [e["action"] for e in log] == ["event.delete", "event.update", "event.create"]
    assert {e["target"]["id"] for e in log} == {str(event_id)}
    assert log[1]["changes"] == [
        {"field": "title", "before": "Spring fair", "after": "Summer fair"}
    ]
    assert {"field": "startDate", "before": None, "after": "2026-04-01T09:00:00Z"} in log[2][
        "changes"
    ]
    assert {"field": "title", "before": "Summer fair", "after": None} in log[0]["changes"]
    assert all(e["actor"]["id"] == people.moderator for e in log)


def test_an_event_changed_without_its_title_is_named_by_its_title(api, people):
    event_id = garden_event(api, people)
    moved = {**EVENT_BODY, "location": "Park"}
    assert api.put(f"{EVENT}/{event_id}", people.moderator, moved)[0] == 200
    [changed] = group_log(api, people, action="event.update")
    assert changed["changes"] == [{"field": "location", "before": "Square", "after": "Park"}]
    assert changed["target"] == {"type": "event", "id": str(event_id), "name": "Spring fair"}


def test_moderation_is_recorded_and_filtered_by_resource_and_actor(api, people):
    comment = people.comment(people.post_id, people.member, isApproved=False)
    people.load()
    assert api.post(f"{COMMENTS}/{comment}/approve", people.moderator)[0] == 200
    assert api.post(f"{COMMENTS}/{comment}/approve", people.moderator)[0] == 200  # no change
    assert api.delete(f"{COMMENTS}/{comment}", people.garden_admin)[0] == 200
    assert api.post(f"{COMMENTS}/{comment}/purge", people.garden_admin)[0] == 200

    log = group_log(api, people, action="comment")
    assert [e["action"] for e in log] == ["comment.purge", "comment.delete", "comment.approve"]
    assert {"field": "isApproved", "before": False, "after": True} in log[2]["changes"]
    assert [e["action"] for e in group_log(api, people, action="comment.delete")] == [
        "comment.delete"
    ]
    by_moderator = group_log(api, people, actorId=people.moderator)
    assert [e["action"] for e in by_moderator] == ["comment.approve"]


def test_pages_newest_first_by_entry_id_and_an_unknown_offset_is_400(api, people):
    people.load()
    for port in (110, 111, 112, 113, 114):
        body = {**SETTINGS, "serverPort": port, "isSSL": False}
        assert api.put(MAILBOX.format(people.garden), people.garden_admin, body)[0] == 200
    whole = group_log(api, people)
    assert len(whole) == 5
    ports = [next(c["after"] for c in e["changes"] if c["field"] == "serverPort") for e in whole]
    assert ports == [114, 113, 112, 111, 110]
    status, body = api.get(f"{AUDIT}/{people.garden}?pageSize=2", people.garden_admin)
    first = body["object"]
    assert [e["id"] for e in first["entries"]] == [e["id"] for e in whole[:2]]
    assert first["offset"] == whole[1]["id"]
    second = group_log(api, people, pageSize=2, offset=first["offset"])
    assert [e["id"] for e in second] == [e["id"] for e in whole[2:4]]
    unknown = "00000000-0000-4000-8000-000000000000"
    status, body = api.get(f"{AUDIT}/{people.garden}?offset={unknown}", people.garden_admin)
    assert status == 400 and body["errors"][0]["key"] == "offset"
    # An entry of another group's log is no place in this one.
    status, body = api.get(f"{AUDIT}/{people.other}?offset={whole[0]['id']}", people.other_admin)
    assert status == 400 and body["errors"][0]["key"] == "offset"


@pytest.mark.parametrize(
    ("who", "whole", "garden", "other"),
    [
        ("root_admin", 200, 200, 200),
        ("garden_admin", 403, 200, 403),
        ("moderator", 403, 403, 403),
        ("member", 403, 403, 403),
        (None, 401, 401, 401),
    ],
)
def test_who_may_read_which_log(api, people, who, whole, garden, other):
    people.load()
    user = getattr(people, who) if who else None
    assert api.get(AUDIT, user)[0] == whole
    assert api.get(f"{AUDIT}/{people.garden}", user)[0] == garden
    assert api.get(f"{AUDIT}/{people.other}", user)[0] == other


def test_the_root_reads_every_groups_entries_and_those_of_no_group(api, people):
    people.load()
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, SETTINGS)[0] == 200
    assert api.put(MAILBOX.format(people.other), people.other_admin, SETTINGS)[0] == 200
    log = entries(api, people.root_admin)
    assert [e["group"]["id"] for e in log[:2]] == [people.other, people.garden]
    assert group_log(api, people)[0]["id"] == log[1]["id"]
    # The community's load, which belongs to no group, is the root's alone.
    [loaded] = log[2:]
    assert loaded["action"] == "fixture.load" and loaded["group"] is None
    assert {"field": "groups", "before": None, "after": 3} in loaded["changes"]
    # The whole log pages as a group's does.
    status, body = api.get(f"{AUDIT}?pageSize=2", people.root_admin)
    assert [e["id"] for e in body["object"]["entries"]] == [e["id"] for e in log[:2]]
    rest = entries(api, people.root_admin, pageSize=2, offset=body["object"]["offset"])
    assert [e["id"] for e in rest] == [loaded["id"]]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("action=<script>", "action"),
        ("action=event.create.again", "action"),
        ("action=bogus", "action"),
        ("action=event.bogus", "action"),
        (f"actorId={'x' * 101}", "actorId"),
        ("pageSize=0", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("offset=not-a-guid", "offset"),
    ],
)
def test_hostile_filters_are_400_with_their_key(api, people, query, key):
    people.load()
    status, body = api.get(f"{AUDIT}?{query}", people.root_admin)
    assert status == 400 and body["errors"][0]["key"] == key, body


def _fail_transactions(request, **_):
    """A botocore hook: every TransactWriteItems fails on the server (moto never sees it)."""
    target = request.headers.get("X-Amz-Target", b"")
    if not (target.decode() if isinstance(target, bytes) else target).endswith(
        "TransactWriteItems"
    ):
        return None
    request.url = FAULT_URL
    return _error_response(500, "InternalServerError", "Internal server error")


@pytest.fixture
def failing_transactions(aws):
    clients = _dynamodb_clients()
    for client in clients:
        client.meta.events.register_first("before-send.dynamodb", _fail_transactions)
        _set_attempts(client, 1)
    yield
    for client in clients:
        client.meta.events.unregister("before-send.dynamodb", _fail_transactions)
        _set_attempts(client, 3)


def test_a_failed_transaction_leaves_neither_the_change_nor_its_entry(api, people, request):
    people.load()
    event = {**EVENT_BODY, "groupId": people.garden}
    before = stored_state()
    request.getfixturevalue("failing_transactions")
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, SETTINGS)[0] == 503
    assert api.post(EVENT, people.moderator, event)[0] == 503
    assert stored_state() == before


def test_the_openapi_document_has_both_routes_with_their_filters(api):
    _, document = api.get("/api/v1/en_US/openapi.json")
    for path in (AUDIT, f"{AUDIT}/{{groupId}}"):
        operation = document["paths"][path]["get"]
        query = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
        assert {"offset", "pageSize", "action", "actorId"} <= query, path
        assert operation["responses"]["200"]
    assert "AuditEntryOut" in document["components"]["schemas"]


def test_settings_documents_connectors_players_and_feed_keys_are_recorded(api, people):
    from tests.fixtures import new_id

    chat = new_id()
    people.connectors.append({"id": chat, "kind": "chat", "name": "Chat", "description": ""})
    people.load()
    page = "/api/v1/en_US/system-page/home-page"
    connector = f"/api/v1/en_US/connector/local/{chat}/group/{people.garden}"
    chat_settings = {"applicationId": "app", "applicationSecret": "chat secret", "allowGuest": True}
    assert api.put(page, people.root_admin, {"content": "<p>Welcome</p>"})[0] == 200
    assert api.put(page, people.root_admin, {"content": "<p>Welcome</p>"})[0] == 200  # same
    body = {"isEnabled": True, "inheritSettings": False, "settings": chat_settings}
    assert api.put(connector, people.garden_admin, body)[0] == 200
    status_path = f"/api/v1/en_US/connector/local/{chat}/status"
    assert (
        api.patch(status_path, people.garden_admin, {"group": people.garden, "isEnabled": False})[0]
        == 200
    )
    player = {"id": new_id(), "name": "Ann the Brave"}
    assert api.post("/rest/v1/en_US/player", people.root_admin, player)[0] == 200
    key = f"/api/v1/en_US/user/{people.member}/feed-key"
    assert api.get(key, people.member)[0] == 200
    assert api.delete(key, people.member)[0] == 200

    log = entries(api, people.root_admin)
    assert [e["action"] for e in log] == [
        "feedKey.revoke",
        "feedKey.create",
        "player.create",
        "connector.update",
        "connector.update",
        "homePage.update",
        "fixture.load",
    ]
    assert log[0]["changes"] == [{"field": "key", "before": "(set)", "after": "(removed)"}]
    assert log[0]["actor"]["id"] == people.member and log[0]["group"] is None
    assert log[3]["changes"] == [{"field": "isEnabled", "before": True, "after": False}]
    # Switched off, the entry's changes name no connector: the catalogue does.
    assert log[3]["target"] == {"type": "connector", "id": chat, "name": "Chat"}
    assert {"field": "settings.applicationSecret", "before": None, "after": "(set)"} in log[4][
        "changes"
    ]
    assert "chat secret" not in str(log)
    # The page never saved answered no content (CONTRACT §12: before is what the API answered).
    assert log[5]["changes"] == [{"field": "content", "before": "", "after": "<p>Welcome</p>"}]
    assert [e["action"] for e in group_log(api, people)] == ["connector.update"] * 2


def test_create_admin_and_unlock_are_recorded_as_the_cli(community, api, monkeypatch):
    import io

    from chalicelib.cli import main

    community.load()
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert main(["create-admin", "--email", "new.admin@example.org"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert main(["create-admin", "--email", "new.admin@example.org"]) == 0  # nothing changes
    wrong = {"email": "new.admin@example.org", "password": "a wrong guess"}
    assert api.post("/api/v1/en_US/security/login", body=wrong)[0] == 401
    assert main(["unlock", "--email", "new.admin@example.org"]) == 0
    assert main(["unlock", "--email", "new.admin@example.org"]) == 0  # not locked: nothing changes

    unlocked, created, _loaded = entries(api, community.users[0]["id"])
    assert created["action"] == "admin.create" and created["via"] == "cli"
    assert created["actor"] == {"type": "system", "name": "create-admin"}
    assert created["group"]["id"] == community.root and created["requestId"] is None
    assert {"field": "role", "before": None, "after": "administrator"} in created["changes"]
    assert {"field": "password", "before": None, "after": "(set)"} in created["changes"]
    assert unlocked["action"] == "user.unlock"
    assert unlocked["actor"] == {"type": "system", "name": "unlock"}
    assert unlocked["target"] == {
        "type": "user",
        "id": created["target"]["id"],
        "name": created["target"]["name"],
    }
    assert created["target"]["name"]  # the new administrator, by name
    by_command = entries(api, community.users[0]["id"], actorId="unlock")
    assert [e["id"] for e in by_command] == [unlocked["id"]]


def test_the_monthly_purge_records_each_comment_as_its_own(api, people):
    from chalicelib.jobs.base import Deadline
    from chalicelib.jobs.comment_purge import purge_old_deleted_comments

    comment = people.comment(
        people.post_id,
        people.member,
        deletedOn="2025-01-01T00:00:00Z",
        deletedById=people.moderator,
    )
    people.load()
    assert purge_old_deleted_comments(Deadline.unbounded()) == 1
    # The every-group index the job reads holds keys only: the entry names no group, and is
    # in the root's log.
    purged = entries(api, people.root_admin)[0]
    assert purged["action"] == "comment.purge" and purged["via"] == "job"
    assert purged["actor"] == {"type": "system", "name": "purge-comments"}
    assert purged["target"] == {"type": "comment", "id": str(comment), "name": None}


def test_the_entry_rides_in_the_writes_own_transaction_with_no_extra_request(
    api, people, dynamo_counter
):
    """An event's create is one TransactWriteItems, as before the log: the entry is one more
    item in it. A settings save was one UpdateItem after its read and is now one transaction
    after the same read (its entry needs one); no write goes to the log on its own."""
    people.load()
    event = {**EVENT_BODY, "groupId": people.garden}
    assert api.post(EVENT, people.moderator, event)[0] == 200  # warms the caches
    dynamo_counter.reset()
    assert api.post(EVENT, people.moderator, event)[0] == 200
    writes = {k: v for k, v in dynamo_counter.requests.items() if k not in ("GetItem", "Query")}
    assert writes == {"UpdateItem": 1, "TransactWriteItems": 1}  # the id counter, the event

    assert api.put(MAILBOX.format(people.garden), people.garden_admin, SETTINGS)[0] == 200
    dynamo_counter.reset()
    changed = {**SETTINGS, "serverUsername": "renamed"}
    assert api.put(MAILBOX.format(people.garden), people.garden_admin, changed)[0] == 200
    assert dynamo_counter.requests == {"GetItem": 1, "TransactWriteItems": 1}
    assert [e["action"] for e in group_log(api, people)[:3]] == [
        "emailToPost.update",
        "emailToPost.update",
        "event.create",
    ]


def test_the_profile_structures_changes_are_recorded(api, people):
    people.load()
    profile = "/api/v1/en_US/profile"
    status, body = api.post(f"{profile}/section", people.root_admin, {"name": "About me"})
    assert status == 200, body
    section = body["object"]["id"]
    assert api.put(f"{profile}/section/{section}", people.root_admin, {"name": "About"})[0] == 200
    field = {"sectionId": section, "name": "Town", "typeId": 1}
    status, body = api.post(f"{profile}/field", people.root_admin, field)
    assert status == 200, body
    assert api.delete(f"{profile}/field/{body['object']['id']}", people.root_admin)[0] == 200

    log = entries(api, people.root_admin, action="profileSection")
    assert [e["action"] for e in log] == ["profileSection.update", "profileSection.create"]
    assert log[0]["changes"] == [{"field": "name", "before": "About me", "after": "About"}]
    assert log[0]["target"] == {"type": "profileSection", "id": str(section), "name": "About"}
    fields = entries(api, people.root_admin, action="profileField")
    assert [e["action"] for e in fields] == ["profileField.delete", "profileField.create"]
    assert {"field": "name", "before": "Town", "after": None} in fields[0]["changes"]


def test_notifications_set_for_a_user_are_recorded_with_what_they_were(api, people):
    people.load()
    path = f"/api/v1/en_US/user/{people.member}/notifications"
    body = {"groupId": people.garden, "emailAlertId": 1, "showScreenAlert": True}
    status, answer = api.post(f"{path}/group/1", people.root_admin, body)
    assert status == 200, answer
    assert api.post(f"{path}/group/1", people.root_admin, body)[0] == 200  # the same: no entry
    status, answer = api.post(f"{path}/type-digest", people.garden_admin, {"typeId": 2})
    assert status == 200, answer

    log = entries(api, people.root_admin, action="notification")
    assert [e["action"] for e in log] == ["notification.update"] * 2
    assert log[0]["changes"] == [{"field": "digest", "before": 1, "after": 2}]
    assert log[0]["actor"]["id"] == people.garden_admin
    assert log[1]["changes"] == [
        {"field": "emailAlertId", "before": 0, "after": 1},
        {"field": "showScreenAlert", "before": False, "after": True},
    ]
    assert log[1]["group"]["id"] == people.garden and log[1]["actor"]["id"] == people.root_admin
    assert people.member in log[1]["target"]["id"]
    # The entry names whose notifications they are, not only their id.
    assert log[1]["target"]["name"] == log[0]["target"]["name"] == "Garden Member"


def test_clearing_a_users_email_suppression_is_recorded_once(api, people):
    from datetime import UTC, datetime

    from chalicelib.store.sending import SuppressionRepository

    people.load()
    address = next(u["email"] for u in people.users if u["id"] == people.member)
    SuppressionRepository().suppress(address, "bounce", "550", "f-1", datetime.now(UTC))
    path = f"/api/v1/en_US/user/{people.member}/email-suppression"
    assert api.delete(path, people.garden_admin)[1]["object"]["cleared"] is True
    assert api.delete(path, people.garden_admin)[1]["object"]["cleared"] is False  # no change
    [cleared] = entries(api, people.root_admin, action="user")
    assert cleared["target"] == {"type": "user", "id": people.member, "name": "Garden Member"}
    assert cleared["changes"] == [{"field": "emailSuppressed", "before": True, "after": False}]
    assert cleared["actor"]["id"] == people.garden_admin


def _writable(answer, *names):
    return {name: answer[name] for name in names}


def _feed(answer):
    body = _writable(answer, "imageUrl", "imageLinkUrl", "imageAlt", "ttl", "editorEmail")
    return {**body, "webmasterEmail": "", "skipDays": answer["skipDays"], "ttl": 30,
            "skipHours": answer["skipHours"]}  # fmt: skip


def _feed_days(answer):
    days = [{**day, "selected": day["name"] == "Monday"} for day in answer["skipDays"]]
    return {**_feed(answer), "ttl": answer["ttl"], "skipDays": days}


def _group_email(answer):
    return {**_writable(answer, "name", "newsletterName"), "email": "garden@example.org"}


def _mailbox(answer):
    return {**_writable(answer, "serverPort", "isSSL", "deleteProcessed"), **SETTINGS}


def _chat(answer):
    settings = {"applicationId": "app", "applicationSecret": "chat secret", "allowGuest": True}
    return {"isEnabled": answer["isEnabled"], "inheritSettings": False, "settings": settings}


# (read and written at, who, the body a form makes of the answer, the secrets it sets). Each
# is the first save of settings never saved.
FIRST_SAVES = {
    "feed ttl": ("/api/v1/en_US/feed/settings/{garden}", "garden_admin", _feed, ()),
    "feed days": ("/api/v1/en_US/feed/settings/{garden}", "garden_admin", _feed_days, ()),
    "group email": ("/api/v1/en_US/group-email/{garden}", "garden_admin", _group_email, ()),
    "newsletter": (
        "/api/v1/en_US/newsletter/settings/{garden}",
        "garden_admin",
        lambda answer: {"disclaimer": "<p>Be kind</p>"},
        (),
    ),
    "home page": (
        "/api/v1/en_US/system-page/home-page",
        "root_admin",
        lambda answer: {"content": "<p>Welcome</p>"},
        (),
    ),
    "private landing page": (
        "/api/v1/en_US/system-page/private-landing-page/group/{garden}",
        "garden_admin",
        lambda answer: {"content": "<p>Members only</p>"},
        (),
    ),
    "premium landing page": (
        "/api/v1/en_US/system-page/premium-landing-page/group/{garden}",
        "garden_admin",
        lambda answer: {"content": answer["content"], "isEnabled": True},
        (),
    ),
    "email to post": (MAILBOX.format("{garden}"), "garden_admin", _mailbox, ("serverPassword",)),
    "email to comment": (
        "/api/v1/en_US/connector/email-to-comment",
        "root_admin",
        _mailbox,
        ("serverPassword",),
    ),
    "chat connector": (
        "/api/v1/en_US/connector/local/{chat}/group/{root}",
        "root_admin",
        _chat,
        ("settings.applicationSecret",),
    ),
}


def _flat(answer):
    """An answer's fields by the names the log gives them (`settings.applicationId`)."""
    flat = dict(answer)
    for name, value in (answer.get("settings") or {}).items():
        flat[f"settings.{name}"] = value
    return flat


@pytest.mark.parametrize("kind", FIRST_SAVES)
def test_a_first_save_records_only_the_changed_fields_from_what_the_api_answered(api, people, kind):
    """CONTRACT §12: `before` is the GET's answer before the change, defaults included (a feed
    never saved answers a time to live of 60), and a field the save leaves as answered is no
    change."""
    from tests.fixtures import new_id

    chat = new_id()
    people.connectors.append({"id": chat, "kind": "chat", "name": "Chat", "description": ""})
    people.load()
    path, who, form, secrets = FIRST_SAVES[kind]
    path = path.format(garden=people.garden, root=people.root, chat=chat)
    read = (
        "/api/v1/en_US/connector/email-to-comment/" + people.garden if "comment" in path else path
    )
    user = getattr(people, who)
    before = _flat(api.get_object(read, user))
    status, body = api.put(path, user, form(before))
    assert status == 200, body
    after = _flat(api.get_object(read, user))

    [entry] = [e for e in entries(api, people.root_admin) if e["action"] != "fixture.load"]
    changed = sorted(
        name
        for name in {*before, *after}
        if name not in ("modifiedOn", "editor", "nextPollOn", "groups", "settings")
        and before.get(name) != after.get(name)
    )
    assert sorted(c["field"] for c in entry["changes"]) == changed, entry["changes"]
    for change in entry["changes"]:
        if change["field"] in secrets:
            assert change == {"field": change["field"], "before": None, "after": "(set)"}
        else:
            name = change["field"]
            assert (change["before"], change["after"]) == (before[name], after[name]), name
    assert entry["changes"], "the save changed something"
    if kind == "feed ttl":  # the demo's first change: the form showed 60
        assert entry["changes"] == [{"field": "ttl", "before": 60, "after": 30}]


def test_every_action_the_services_record_is_one_the_filter_takes(api, people):
    """The `action` filter refuses what the log never records (`bogus` answered an empty list);
    every action named in the code is one it takes."""
    import ast
    import pathlib

    from chalicelib.schemas.audit import ACTIONS, KNOWN_ACTIONS

    named = set()
    for path in pathlib.Path("chalicelib").rglob("*.py"):
        if path.name.startswith("cli"):  # argparse's action= is no audit action
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "entry":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    named.add(first.value)
            if isinstance(node, ast.keyword) and node.arg == "action":
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    named.add(node.value.value)
    assert len(named) > 15 and named <= KNOWN_ACTIONS, named - KNOWN_ACTIONS
    people.load()
    for action in (*ACTIONS, *KNOWN_ACTIONS):
        assert api.get(f"{AUDIT}?action={action}", people.root_admin)[0] == 200, action
    status, body = api.get(f"{AUDIT}?action=bogus", people.root_admin)
    assert status == 400 and body["errors"][0]["key"] == "action"
    assert "event.create" in body["errors"][0]["message"]


def test_a_subgroup_that_stops_inheriting_records_the_parents_settings_it_showed(api, people):
    """A subgroup never configured answers its parent's chat settings (inheritSettings true): its
    first save of its own records those as `before`."""
    from tests.fixtures import new_id

    chat = new_id()
    people.connectors.append({"id": chat, "kind": "chat", "name": "Chat", "description": ""})
    people.load()
    at = "/api/v1/en_US/connector/local/{}/group/{}"
    own = {"applicationId": "root-app", "applicationSecret": "root secret", "allowGuest": False}
    body = {"isEnabled": True, "inheritSettings": False, "settings": own}
    assert api.put(at.format(chat, people.root), people.root_admin, body)[0] == 200
    shown = api.get_object(at.format(chat, people.garden), people.garden_admin)
    assert shown["settings"]["inheritSettings"] is True
    assert shown["settings"]["applicationId"] == "root-app"
    garden = {"applicationId": "garden-app", "applicationSecret": "its own", "allowGuest": False}
    body = {"isEnabled": False, "inheritSettings": False, "settings": garden}
    status, answer = api.put(at.format(chat, people.garden), people.garden_admin, body)
    assert status == 200, answer
    [entry] = group_log(api, people, action="connector")
    assert entry["changes"] == [
        {"field": "inheritSettings", "before": True, "after": False},
        {"field": "settings.applicationId", "before": "root-app", "after": "garden-app"},
        {"field": "settings.applicationSecret", "before": "(set)", "after": "(changed)"},
    ]

"""Email-to-post and email-to-comment settings: shapes, validation, privileges, KMS at rest."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from chalicelib import deps
from chalicelib.domain.mailboxes import MailboxEdit, PollOutcome, PollState
from chalicelib.errors import TooManyRequests
from tests.fixtures import auth, group_summary, new_id, with_two_groups
from tests.support.mailbox_fakes import FakeCipher
from tests.support.privileges import GARDEN_ADMINISTRATORS_ONLY, caller

POST_SETTINGS = "/api/v1/en_US/connector/email-to-post/{}"
COMMENT_SETTINGS = "/api/v1/en_US/connector/email-to-comment"

GOOD = {
    "serverName": "pop.example.org",
    "serverPort": 995,
    "serverUsername": "garden-inbox",
    "serverPassword": "s3cret pass",
    "isEnabled": True,
    "isSSL": True,
    "deleteProcessed": True,
}


def to_post(group_id: str) -> str:
    return POST_SETTINGS.format(group_id)


def to_comment(group_id: str) -> str:
    return f"{COMMENT_SETTINGS}/{group_id}"


@pytest.fixture
def people(community, kms_key):
    return with_two_groups(community)


def stored_mailbox(scope: str) -> dict:
    """The raw DynamoDB item, as anyone with table access would see it."""
    from chalicelib.aws import client
    from chalicelib.store.mailboxes import MailboxRecord

    item = client("dynamodb").get_item(
        TableName=MailboxRecord.Meta.table_name, Key={"scope": {"S": scope}}
    )
    return item["Item"]


# --- email-to-post -------------------------------------------------------------------------------


def test_unsaved_email_to_post_answers_disabled_defaults(api, people):
    assert api.get_object(to_post(people.garden), people.garden_admin) == {
        "type": "connectorEmailToPost",
        "group": group_summary(people.garden, "garden"),
        "serverName": "",
        "serverPort": 995,
        "serverUsername": "",
        "serverPassword": "",
        "isEnabled": False,
        "isSSL": True,
        "deleteProcessed": False,
        "lastProcessed": None,
        "lastError": None,
        "emailAddress": "",
        "nextPollOn": None,
        "inboundAddress": None,
        "accessWarnings": [],
    }


def test_email_to_post_round_trip_stores_the_password_encrypted(api, people):
    status, body = api.put(to_post(people.garden), people.garden_admin, GOOD)
    assert status == 200 and body["success"] is True
    saved = body["object"]
    for field, value in GOOD.items():
        assert saved[field] == value, field
    assert saved["type"] == "connectorEmailToPost" and saved["group"]["id"] == people.garden
    assert saved["lastProcessed"] is None

    item = stored_mailbox(people.garden)
    assert "serverPassword" not in item
    assert b"s3cret pass" not in item["password"]["B"]
    assert all("s3cret" not in str(value) for value in item.values())

    status, again = api.get(to_post(people.garden), people.garden_admin)
    assert status == 200 and again["object"] == saved


def test_omitted_password_keeps_the_stored_one(api, people):
    api.put(to_post(people.garden), people.garden_admin, GOOD)
    without = {k: v for k, v in GOOD.items() if k != "serverPassword"}
    status, body = api.put(
        to_post(people.garden), people.garden_admin, {**without, "serverPort": 1995}
    )
    assert status == 200
    assert body["object"]["serverPassword"] == "s3cret pass"
    assert body["object"]["serverPort"] == 1995
    _, again = api.get(to_post(people.garden), people.garden_admin)
    assert again["object"]["serverPassword"] == "s3cret pass"


def test_new_password_replaces_the_stored_one(api, people):
    api.put(to_post(people.garden), people.garden_admin, GOOD)
    api.put(to_post(people.garden), people.garden_admin, {**GOOD, "serverPassword": "  other "})
    _, body = api.get(to_post(people.garden), people.garden_admin)
    # Passwords are taken as sent, spaces included.
    assert body["object"]["serverPassword"] == "  other "


def test_port_defaults_to_the_usual_pop3_port(api, people):
    # A PUT lists every field; a null port means the usual one.
    base = {**GOOD, "serverPort": None}
    _, ssl = api.put(to_post(people.garden), people.garden_admin, base)
    _, plain = api.put(to_post(people.garden), people.garden_admin, {**base, "isSSL": False})
    assert ssl["object"]["serverPort"] == 995 and plain["object"]["serverPort"] == 110


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"serverName": "   "}, "serverName"),
        ({"serverName": None}, "serverName"),
        ({"serverName": "pop example org"}, "serverName"),
        ({"serverPort": 0}, "serverPort"),
        ({"serverPort": 65536}, "serverPort"),
        ({"serverPort": "abc"}, "serverPort"),
        ({"serverUsername": ""}, "serverUsername"),
        ({"serverPassword": ""}, "serverPassword"),
        ({"isEnabled": "perhaps"}, "isEnabled"),
    ],
)
def test_invalid_settings_are_400_with_the_key(api, people, change, key):
    sent = {**GOOD, **change}
    status, body = api.put(to_post(people.garden), people.garden_admin, sent)
    assert status == 400 and body["success"] is False
    assert [e["key"] for e in body["errors"]] == [key]
    assert body["object"] == sent
    _, stored = api.get(to_post(people.garden), people.garden_admin)
    assert stored["object"]["isEnabled"] is False


def test_missing_server_name_is_400(api, people):
    sent = {k: v for k, v in GOOD.items() if k != "serverName"}
    status, body = api.put(to_post(people.garden), people.garden_admin, sent)
    assert status == 400 and body["errors"][0]["key"] == "serverName"


def test_disabled_connector_needs_no_account(api, people):
    status, body = api.put(
        to_post(people.garden),
        people.garden_admin,
        {
            "serverName": "pop.example.org",
            "serverPort": None,
            "serverUsername": "",
            "isEnabled": False,
            "isSSL": True,
            "deleteProcessed": False,
        },
    )
    assert status == 200 and body["object"]["isEnabled"] is False


@pytest.mark.parametrize(
    "missing",
    ["serverName", "serverPort", "serverUsername", "isEnabled", "isSSL", "deleteProcessed"],
)
def test_a_listed_field_left_out_is_400_naming_it_and_changes_nothing(api, people, missing):
    assert api.put(to_post(people.garden), people.garden_admin, GOOD)[0] == 200
    _, before = api.get(to_post(people.garden), people.garden_admin)
    body = {k: v for k, v in GOOD.items() if k != missing}
    status, answer = api.put(to_post(people.garden), people.garden_admin, body)
    assert status == 400
    assert missing in [e["key"] for e in answer["errors"]]
    _, after = api.get(to_post(people.garden), people.garden_admin)
    assert after["object"] == before["object"]


@GARDEN_ADMINISTRATORS_ONLY
def test_email_to_post_needs_group_administrator(api, people, who, expected):
    user = caller(people, who)
    status, body = api.put(to_post(people.garden), user, GOOD)
    assert status == expected and body["success"] is (expected == 200)
    status, _ = api.get(to_post(people.garden), user)
    assert status == expected


def test_email_to_post_of_unknown_group_is_404(api, people):
    status, body = api.get(to_post(new_id()), people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "groupId"


def test_last_processed_is_answered_once_recorded(api, people):

    api.put(to_post(people.garden), people.garden_admin, GOOD)
    when = datetime(2026, 11, 2, 8, 30, tzinfo=UTC)
    assert deps.mailbox_settings_service().record_last_processed(people.garden, when)
    _, body = api.get(to_post(people.garden), people.garden_admin)
    assert body["object"]["lastProcessed"] == "2026-11-02T08:30:00Z"
    # Saving the settings again keeps it: it is the poller's, not the administrator's.
    _, body = api.put(to_post(people.garden), people.garden_admin, GOOD)
    assert body["object"]["lastProcessed"] == "2026-11-02T08:30:00Z"


# --- email-to-comment ----------------------------------------------------------------------------


def test_email_to_comment_round_trip_for_root_administrator(api, people):
    status, body = api.put(COMMENT_SETTINGS, people.root_admin, GOOD)
    assert status == 200 and body["success"] is True
    saved = body["object"]
    assert saved["type"] == "connectorEmailToComment" and "group" not in saved
    for field, value in GOOD.items():
        assert saved[field] == value, field
    assert saved["accessWarnings"] == []
    assert b"s3cret pass" not in stored_mailbox("system")["password"]["B"]
    status, again = api.get(to_comment(people.garden), people.root_admin)
    assert status == 200 and again["object"] == saved


def test_email_to_comment_hides_the_password_from_group_administrators(api, people):
    api.put(COMMENT_SETTINGS, people.root_admin, GOOD)
    status, body = api.get(to_comment(people.garden), people.garden_admin)
    assert status == 200 and body["success"] is True
    assert body["object"]["serverPassword"] == ""
    assert body["object"]["serverName"] == "pop.example.org"
    assert len(body["object"]["accessWarnings"]) == 1
    warning = body["object"]["accessWarnings"][0]
    assert warning["key"] == "serverPassword" and warning["code"] == "ACCESS_DENIED"
    assert warning["message"]


def test_email_to_comment_is_one_system_wide_setting(api, people):
    api.put(COMMENT_SETTINGS, people.root_admin, GOOD)
    _, garden = api.get(to_comment(people.garden), people.root_admin)
    _, other = api.get(to_comment(people.other), people.root_admin)
    assert garden["object"] == other["object"]
    # and it is not any group's email-to-post mailbox
    _, post = api.get(to_post(people.garden), people.root_admin)
    assert post["object"]["serverName"] == ""


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("garden_admin", 403),
        ("member", 403),
        (None, 401),
    ],
)
def test_email_to_comment_update_needs_root_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, _ = api.put(COMMENT_SETTINGS, user, GOOD)
    assert status == expected


@pytest.mark.parametrize(
    ("who", "expected"),
    [("root_admin", 200), ("garden_admin", 200), ("other_admin", 403), (None, 401)],
)
def test_email_to_comment_read_needs_group_administrator(api, people, who, expected):
    user = getattr(people, who) if who else None
    status, _ = api.get(to_comment(people.garden), user)
    assert status == expected


def test_email_to_comment_validation_names_the_key(api, people):
    status, body = api.put(COMMENT_SETTINGS, people.root_admin, {**GOOD, "serverName": ""})
    assert status == 400 and [e["key"] for e in body["errors"]] == ["serverName"]


# --- what mail-in reads --------------------------------------------------------------------------


def test_enabled_mailboxes_lists_only_enabled_ones_without_a_scan(api, people, dynamo_counter):

    api.put(to_post(people.garden), people.garden_admin, GOOD)
    api.put(to_post(people.other), people.other_admin, {**GOOD, "isEnabled": False})
    api.put(COMMENT_SETTINGS, people.root_admin, {**GOOD, "serverUsername": "comments"})
    dynamo_counter.reset()

    service = deps.mailbox_settings_service()
    found = {m.scope: m for m in service.enabled_mailboxes()}
    assert set(found) == {people.garden, "system"}
    assert found[people.garden].group_id == people.garden and found["system"].group_id is None
    assert found["system"].server_username == "comments"
    assert "Scan" not in dynamo_counter.requests
    assert service.decrypted_password(people.garden) == "s3cret pass"

    directory = deps.mailbox_directory()
    assert set(directory.enabled_mailbox_keys()) == {f"post#{people.garden}", "comment#system"}


def test_disabling_removes_the_mailbox_from_the_enabled_ones(api, people):

    api.put(to_post(people.garden), people.garden_admin, GOOD)
    api.put(to_post(people.garden), people.garden_admin, {**GOOD, "isEnabled": False})
    assert list(deps.mailbox_settings_service().enabled_mailboxes()) == []


def test_record_last_processed_of_unknown_mailbox_is_false(people):

    when = datetime(2026, 11, 2, tzinfo=UTC)
    assert deps.mailbox_settings_service().record_last_processed(new_id(), when) is False


def test_routes_cost_a_few_requests_and_no_scan(api, people, dynamo_counter):
    api.put(to_post(people.garden), people.garden_admin, GOOD)
    for call in (
        lambda: api.get(to_post(people.garden), people.garden_admin),
        lambda: api.put(to_post(people.garden), people.garden_admin, GOOD),
        lambda: api.get(to_comment(people.garden), people.garden_admin),
        lambda: api.put(COMMENT_SETTINGS, people.root_admin, GOOD),
    ):
        dynamo_counter.reset()
        status, _ = call()
        assert status == 200
        assert "Scan" not in dynamo_counter.requests
        assert dynamo_counter.total <= 6, dynamo_counter.requests


# --- POP3 hosts (CONTRACT §8, issue 24) ---------------------------------------------------------


@pytest.mark.parametrize("host", ["169.254.169.254", "fe80::1", "fd00:ec2::254"])
def test_link_local_and_metadata_hosts_are_400_everywhere(api, people, host, private_mail_hosts):
    # Even where private hosts are allowed.
    for path, user in (
        (to_post(people.garden), people.garden_admin),
        (COMMENT_SETTINGS, people.root_admin),
    ):
        status, body = api.put(path, user, {**GOOD, "serverName": host})
        assert status == 400, body
        [error] = body["errors"]
        assert error["key"] == "serverName" and error["value"] == host
        assert "metadata" in error["message"]
    assert api.get(to_post(people.garden), people.garden_admin)[1]["object"]["serverName"] == ""


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "10.0.0.8", "::1"])
def test_loopback_and_private_hosts_are_400_unless_allowed(api, people, host):
    status, body = api.put(
        to_post(people.garden), people.garden_admin, {**GOOD, "serverName": host}
    )
    assert status == 400, body
    assert [e["key"] for e in body["errors"]] == ["serverName"]
    assert "AGORA_MAIL_ALLOW_PRIVATE_HOSTS" in body["errors"][0]["message"]


def test_loopback_host_is_accepted_where_private_hosts_are_allowed(api, people, private_mail_hosts):
    status, body = api.put(
        to_post(people.garden), people.garden_admin, {**GOOD, "serverName": "127.0.0.1"}
    )
    assert status == 200, body


# --- the rhythm of polls: nextPollOn, poll now, emailAddress ---------------------------------


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_saved_settings_are_due_in_five_minutes_and_poll_now_makes_them_due_at_once(api, people):
    from datetime import timedelta

    before = datetime.now(UTC)
    status, body = api.put(to_post(people.garden), people.garden_admin, GOOD)
    assert status == 200
    due = _moment(body["object"]["nextPollOn"])
    assert (
        before + timedelta(minutes=5) <= due < datetime.now(UTC) + timedelta(minutes=5, seconds=1)
    )
    status, body = api.post(f"{to_post(people.garden)}/poll", people.garden_admin, None)
    assert status == 202 and body["success"] is True
    assert body["object"]["type"] == "connectorEmailToPost"
    assert body["object"]["serverPassword"] == GOOD["serverPassword"]
    now = _moment(body["object"]["nextPollOn"])
    assert before <= now <= datetime.now(UTC)
    _, read = api.get(to_post(people.garden), people.garden_admin)
    assert read["object"]["nextPollOn"] == body["object"]["nextPollOn"]
    assert set(deps.mailbox_directory().due_mailbox_keys(now)) == {f"post#{people.garden}"}


def test_poll_now_of_a_disabled_or_never_saved_mailbox_is_409_is_enabled(api, people):
    status, body = api.post(f"{to_post(people.garden)}/poll", people.garden_admin, None)
    assert status == 409 and body["errors"][0]["key"] == "isEnabled"
    api.put(to_post(people.garden), people.garden_admin, {**GOOD, "isEnabled": False})
    status, body = api.post(f"{to_post(people.garden)}/poll", people.garden_admin, None)
    assert status == 409 and body["errors"][0]["key"] == "isEnabled"
    _, read = api.get(to_post(people.garden), people.garden_admin)
    assert read["object"]["nextPollOn"] is None


@GARDEN_ADMINISTRATORS_ONLY
def test_poll_now_needs_what_the_mailboxs_put_needs(api, people, who, expected):
    api.put(to_post(people.garden), people.garden_admin, GOOD)
    status, _ = api.post(f"{to_post(people.garden)}/poll", caller(people, who), None)
    assert status == (202 if expected == 200 else expected)


@pytest.mark.parametrize(
    ("who", "expected"), [("root_admin", 202), ("garden_admin", 403), (None, 401)]
)
def test_email_to_comment_poll_now_needs_a_root_administrator(api, people, who, expected):
    api.put(COMMENT_SETTINGS, people.root_admin, GOOD)
    status, body = api.post(f"{COMMENT_SETTINGS}/poll", getattr(people, who) if who else None, None)
    assert status == expected
    if expected == 202:
        assert body["object"]["type"] == "connectorEmailToComment"
        assert body["object"]["nextPollOn"] is not None


def test_email_address_is_stored_answered_kept_when_omitted_and_checked(api, people):
    path = to_post(people.garden)
    status, body = api.put(
        path, people.garden_admin, {**GOOD, "emailAddress": "garden@example.org"}
    )
    assert status == 200 and body["object"]["emailAddress"] == "garden@example.org"
    assert stored_mailbox(people.garden)["email_address"] == {"S": "garden@example.org"}
    status, body = api.put(path, people.garden_admin, GOOD)
    assert body["object"]["emailAddress"] == "garden@example.org"
    status, body = api.put(path, people.garden_admin, {**GOOD, "emailAddress": ""})
    assert status == 200 and body["object"]["emailAddress"] == ""
    status, body = api.put(path, people.garden_admin, {**GOOD, "emailAddress": "not an address"})
    assert status == 400 and body["errors"][0]["key"] == "emailAddress"
    status, body = api.put(
        COMMENT_SETTINGS, people.root_admin, {**GOOD, "emailAddress": "c@x.test"}
    )
    assert status == 200 and body["object"]["emailAddress"] == "c@x.test"


def test_the_poll_routes_are_in_the_openapi_document(api):
    status, body = api.get("/api/v1/en_US/openapi.json")
    paths = body["paths"]
    for path in (
        "/api/v1/en_US/connector/email-to-post/{groupId}/poll",
        "/api/v1/en_US/connector/email-to-comment/poll",
    ):
        assert "202" in paths[path]["post"]["responses"]
        assert "409" in paths[path]["post"]["responses"]


# --- poll now: at most once a minute a mailbox (CONTRACT §5) -----------------------------------


def test_poll_now_again_within_a_minute_is_429_with_the_seconds_left(api, people):
    from chalicelib.store.mailboxes import MailboxRepository

    api.put(to_post(people.garden), people.garden_admin, GOOD)
    poll = f"{to_post(people.garden)}/poll"
    first = api.post(poll, people.garden_admin, None)
    # The poll fails meanwhile: the mailbox backs off for 30 minutes.
    backed_off = datetime.now(UTC) + timedelta(minutes=30)
    failed = PollOutcome(datetime.now(UTC), PollState(backed_off, 0, 1), "login refused")
    MailboxRepository().record_poll(people.garden, failed)

    response = api.client.http.post(poll, headers={**auth(people.garden_admin)})

    assert first[0] == 202
    body = json.loads(response.body)
    assert response.status_code == 429 and body["success"] is False
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    # It says the truth: not "already due", but when the back-off makes it due.
    assert "due now" not in body["message"] and "already due" not in body["message"]
    assert f"next due at {backed_off:%H:%M:%S} UTC" in body["message"]
    # The back-off stands: this poll now made nothing due.
    _, read = api.get(to_post(people.garden), people.garden_admin)
    assert abs(_moment(read["object"]["nextPollOn"]) - backed_off) < timedelta(milliseconds=1)
    # The other mailbox has its own minute.
    api.put(COMMENT_SETTINGS, people.root_admin, GOOD)
    assert api.post(f"{COMMENT_SETTINGS}/poll", people.root_admin, None)[0] == 202


def test_poll_now_a_minute_later_makes_the_mailbox_due_again(people):
    from chalicelib.services.mailboxes import MailboxSettingsService
    from chalicelib.store.mailboxes import MailboxRepository

    moments = iter([T_POLL, T_POLL + timedelta(seconds=59), T_POLL + timedelta(seconds=60)])
    service = MailboxSettingsService(MailboxRepository(), FakeCipher(), clock=lambda: next(moments))
    enable_garden(people.garden)

    first = service.poll_email_to_post(garden_of(people))
    with pytest.raises(TooManyRequests) as refused:
        service.poll_email_to_post(garden_of(people))
    again = service.poll_email_to_post(garden_of(people))

    assert first.next_poll_on == T_POLL
    assert refused.value.retry_after == 1
    # Not polled since the first: it is due, and says so.
    assert "is due now" in refused.value.message
    assert again.next_poll_on == T_POLL + timedelta(seconds=60)


def test_concurrent_poll_nows_make_the_mailbox_due_once(moto_server):
    """Eight requests at once, on threads, against a real (threaded) DynamoDB endpoint: one
    conditional write wins, the other seven are told to wait."""
    import threading

    from chalicelib.services.mailboxes import MailboxSettingsService
    from chalicelib.store.mailboxes import MailboxRepository
    from tests.fixtures import Community

    community = Community()
    community.group("home")
    community.load()
    enable_garden(community.root)
    service = MailboxSettingsService(MailboxRepository(), FakeCipher(), clock=lambda: T_POLL)
    group = deps.group_service().get(community.root, key="groupId")
    start = threading.Barrier(8)
    outcomes: list[str] = []
    lock = threading.Lock()

    def poll_now() -> None:
        start.wait()
        try:
            service.poll_email_to_post(group)
            outcome = "due"
        except TooManyRequests as refused:
            outcome = f"429 after {refused.retry_after}"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=poll_now) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["429 after 60"] * 7 + ["due"]


T_POLL = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def enable_garden(scope: str) -> None:
    from chalicelib.store.mailboxes import MailboxRepository

    MailboxRepository().save_settings(
        scope,
        MailboxEdit(
            kind="emailToPost",
            server_name="pop.example.org",
            server_port=995,
            server_username="garden",
            password=FakeCipher().encrypt("pw", {"agora:scope": scope}),
            is_enabled=True,
            is_ssl=True,
            delete_processed=False,
            editor_id="ann",
            modified_on=T_POLL,
            next_poll_on=T_POLL + timedelta(minutes=5),
        ),
    )


def garden_of(people):
    return deps.group_service().get(people.garden, key="groupId")

"""A body is read only when it says it is JSON (CONTRACT §5, §6): any other `Content-Type` is a
415 with key `Content-Type`, after the token and the route's privilege (401, 403), before the
body; a sign-in refused so is no attempt against the throttle."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from chalicelib.api.routing import ROUTES
from tests.fixtures import auth
from tests.support.passwords import guessed_administrator
from tests.support.seeding import seed_events
from tests.support.throttle_windows import IN_PROCESS_SECONDS, in_one_throttle_window

LOGIN = "/api/v1/en_US/security/login"
HOME = "/api/v1/en_US/system-page/home-page"
RIGHT = {"email": "ann@example.org", "password": "correct horse"}
WRONG = {"email": "ann@example.org", "password": "nope"}

# What a page on another site can send without the browser asking first, and near misses.
NOT_JSON = [
    "text/plain",
    "text/plain; charset=utf-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "application/json-patch+json",
    "text/json",
    "application/json; charset=latin-1",
    "application/json; profile=x",
    "",
]
JSON = ["application/json", "Application/JSON; Charset=UTF-8", 'application/json;charset="utf-8"']


@pytest.fixture
def owner(community):
    return guessed_administrator(community, "ann@example.org")


@pytest.fixture
def root_event(community):
    """The root administrator's id, and an event of theirs in the root group."""
    root_admin = community.users[0]["id"]
    community.load()
    (event_id,) = seed_events(
        community.root,
        [datetime(2026, 4, 1, 9, tzinfo=UTC)],
        authors=[root_admin],
        written_on=datetime(2026, 3, 1, tzinfo=UTC),
    )
    return root_admin, event_id


def send(client, method, path, content_type, body, headers=None):
    all_headers = {**({"Content-Type": content_type} if content_type else {}), **(headers or {})}
    response = getattr(client.http, method.lower())(path, headers=all_headers, body=body)
    return response.status_code, json.loads(response.body)


def is_415(status, body, content_type):
    return (
        status == 415
        and body["success"] is False
        and [(e["key"], e["value"]) for e in body["errors"]] == [("Content-Type", content_type)]
    )


@pytest.mark.parametrize("content_type", NOT_JSON)
def test_a_sign_in_that_is_not_json_is_415(client, owner, content_type):
    status, body = send(client, "POST", LOGIN, content_type, json.dumps(RIGHT))

    assert is_415(status, body, content_type), body
    assert body["object"] is None


@pytest.mark.parametrize("content_type", JSON)
def test_json_with_or_without_a_utf8_charset_signs_in(client, owner, content_type):
    status, body = send(client, "POST", LOGIN, content_type, json.dumps(RIGHT))

    assert status == 200 and body["success"] is True


def test_refused_sign_ins_are_no_attempts_against_the_throttle(client, owner):
    """Six wrong guesses as text/plain (what a page elsewhere can make a browser send), then the
    owner's own sign-in: the five-guess limit was never reached."""

    def scenario():
        refused = [send(client, "POST", LOGIN, "text/plain", json.dumps(WRONG)) for _ in range(6)]
        return refused, send(client, "POST", LOGIN, "application/json", json.dumps(RIGHT))

    refused, (status, body) = in_one_throttle_window(scenario, needs=IN_PROCESS_SECONDS)

    assert [s for s, _ in refused] == [415] * 6
    assert status == 200 and body["success"] is True


def test_every_route_with_a_body_refuses_one_that_is_not_json(client, community, root_event):
    """From the root administrator, who passes every privilege: the body is what is refused."""
    root_admin, event_id = root_event
    values = {
        "groupId": community.root,
        "connectorId": community.new_id(),
        "eventId": str(event_id),
        "userId": root_admin,
        "notificationId": "1",
        "sectionId": "1",
        "fieldId": community.new_id(),
    }
    routes = [spec for spec in ROUTES if spec.body_model is not None]
    answers = {}
    for spec in routes:
        path = re.sub(r"{(\w+)}", lambda m: values[m.group(1)], spec.path)
        headers = auth(root_admin) if spec.need is not None else {}
        answers[f"{spec.method} {spec.path}"] = send(
            client, spec.method, path, "text/plain", '{"title": "x"}', headers
        )

    assert len(answers) >= 20
    assert {route for route, (s, b) in answers.items() if not is_415(s, b, "text/plain")} == set()


def test_no_token_is_401_and_no_privilege_403_before_the_body_is_looked_at(client, community):
    member = community.user("member", {community.root: "member"})
    community.load()
    page = json.dumps({"content": "<p>hi</p>"})

    anonymous = send(client, "PUT", HOME, "text/plain", page)
    unprivileged = send(client, "PUT", HOME, "text/plain", page, auth(member))

    assert anonymous[0] == 401
    assert unprivileged[0] == 403 and unprivileged[1]["errors"] == []


def test_an_empty_body_needs_no_content_type(client, root_event):
    """The calendar move takes its fields from the query string: no body, nothing to label."""
    root_admin, event_id = root_event
    query = (
        "startDate=2026-04-02T09:00:00Z&calendarStartDate=2026-04-01T00:00:00Z"
        "&calendarEndDate=2026-05-01T00:00:00Z"
    )

    status, body = send(
        client, "PUT", f"/api/v1/en_US/event/{event_id}/calendar?{query}", "", "", auth(root_admin)
    )

    assert status == 200, body


def test_the_openapi_document_names_the_415_on_routes_with_a_body(api):
    document = api.get("/api/v1/en_US/openapi.json")[1]

    operations = [op for item in document["paths"].values() for op in item.values()]
    with_body = [op for op in operations if "requestBody" in op]
    assert with_body and all("415" in op["responses"] for op in with_body)
    assert not any("415" in op["responses"] for op in operations if "requestBody" not in op)
    assert "Content-Type" in document["components"]["responses"]["Error415"]["description"]

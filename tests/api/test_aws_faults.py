"""AWS faults (CONTRACT §6): a botocore hook makes the N-th DynamoDB call of a request throttle, fail
with a 500, time out, or have its transaction cancelled by a conflict. For every N until the request
gets through, the answer is 503 with `Retry-After` (409 with key `state` for a conflict) in the
envelope, and the stored state is exactly what it was before; then the request succeeds.

botocore's retries stay on, lowered to one attempt in these tests (the throttling backoff would
otherwise wait seconds); one test shows a single fault absorbed by a retry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib import deps
from tests.fixtures import with_two_groups
from tests.support.feed import feed_settings

P = "/api/v1/en_US"
FAULT_URL = "http://fault-injected.invalid/"


class _Raw:
    """The raw stream botocore reads a response body from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def _error_response(status: int, code: str, message: str, **extra: Any) -> Any:
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders

    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["x-amzn-RequestId"] = "fault-injected"
    body = json.dumps(
        {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message, **extra}
    )
    return AWSResponse(FAULT_URL, status, headers, _Raw(body.encode()))


WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
# Every call of a request is failed in turn with a 500; throttling and timeouts, which take the
# same path through botocore and the router, only on the writes (the calls that could leave
# something half-written), to keep the test short.
WRITES_ONLY = {"throttle", "timeout"}


@dataclass
class Faults:
    """A `before-send` hook on every DynamoDB client: from call number `at` of a request on, each
    call fails as `kind` (a retry is a call too); `once` fails only call `at`."""

    kind: str | None = None
    at: int = 0
    once: bool = False
    calls: int = 0
    failed: list[str] = field(default_factory=list)

    def arm(self, kind: str, at: int, once: bool = False) -> None:
        self.kind, self.at, self.once, self.calls, self.failed = kind, at, once, 0, []

    def disarm(self) -> None:
        self.kind = None

    def before_send(self, request: Any, **_: Any) -> Any:
        if self.kind is None:
            return None
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        if self.kind in WRITES_ONLY and operation not in WRITES:
            return None
        self.calls += 1
        if self.kind == "conflict":
            # Every transaction is cancelled by a (pretended) concurrent one.
            if operation != "TransactWriteItems":
                return None
        elif self.calls < self.at or (self.once and self.calls > self.at):
            return None
        self.failed.append(operation)
        if self.kind == "timeout":
            from botocore.exceptions import ReadTimeoutError

            raise ReadTimeoutError(endpoint_url=request.url)
        # moto answers every request it recognises by its URL: this one it must not execute.
        request.url = FAULT_URL
        if self.kind == "throttle":
            return _error_response(
                400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."
            )
        if self.kind == "error500":
            return _error_response(500, "InternalServerError", "Internal server error")
        items = json.loads(request.body)["TransactItems"]
        reasons = [
            {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        ]
        reasons += [{"Code": "None"}] * (len(items) - 1)
        return _error_response(
            400,
            "TransactionCanceledException",
            "Transaction cancelled, please refer cancellation reasons for specific reasons "
            "[TransactionConflict]",
            CancellationReasons=reasons,
        )


def _dynamodb_clients() -> list[Any]:
    from chalicelib.aws import client as aws_client
    from chalicelib.store.tables import all_models

    clients = {id(c): c for c in [aws_client("dynamodb")]}
    for model in all_models():
        found = model._get_connection().connection.client
        clients[id(found)] = found
    return list(clients.values())


def _set_attempts(botocore_client: Any, attempts: int) -> None:
    """botocore's standard retry handler again, with `attempts` tries in all."""
    from botocore.retries import standard

    events = botocore_client.meta.events
    events.unregister("needs-retry.dynamodb", unique_id="retry-config-dynamodb")
    events.unregister("request-created.dynamodb", unique_id="seed-max-attempts-dynamodb")
    standard.register_retry_handler(botocore_client, max_attempts=attempts)


def _configured_attempts(botocore_client: Any) -> int:
    retries = botocore_client.meta.config.retries or {}
    return retries.get("total_max_attempts") or retries.get("max_attempts", 2) + 1


@pytest.fixture
def faults(aws: None) -> Iterator[Faults]:
    hook = Faults()
    clients = _dynamodb_clients()
    for botocore_client in clients:
        botocore_client.meta.events.register_first("before-send.dynamodb", hook.before_send)
        _set_attempts(botocore_client, 1)
    yield hook
    for botocore_client in clients:
        botocore_client.meta.events.unregister("before-send.dynamodb", hook.before_send)
        _set_attempts(botocore_client, _configured_attempts(botocore_client))


@contextmanager
def retries(attempts: int) -> Iterator[None]:
    clients = _dynamodb_clients()
    for botocore_client in clients:
        _set_attempts(botocore_client, attempts)
    yield
    for botocore_client in clients:
        _set_attempts(botocore_client, 1)


def stored_state() -> dict[str, list[str]]:
    """Every item of every table, in a canonical text form.

    Read from moto's own tables, not through Scan: the test compares the state after every
    fault, and scanning all the tables through botocore each time was nine tenths of its time.

    The counters table is left out: an id handed out to a request that then failed is skipped,
    as a sequence's would be, and is not part of any record."""
    from chalicelib.store.tables import all_models
    from tests.fixtures import moto_dynamodb

    _, backend = moto_dynamodb()
    state: dict[str, list[str]] = {}
    for name in sorted({model.Meta.table_name for model in all_models()}):
        if name.endswith("counters"):
            continue
        items = backend.get_table(name).all_items()
        state[name] = sorted(
            json.dumps(item.to_json()["Attributes"], sort_keys=True) for item in items
        )
    return state


@pytest.fixture
def world(community):
    c = with_two_groups(community)
    return c


def _request(api: Any, method: str, path: str, user: str, body: Any) -> tuple[int, dict, dict]:
    from tests.fixtures import auth

    headers = {"Content-Type": "application/json", **auth(user)}
    payload = json.dumps(body) if body is not None else None
    response = getattr(api.client.http, method.lower())(path, headers=headers, body=payload)
    return response.status_code, json.loads(response.body), dict(response.headers)


def survive_faults(
    api: Any, faults: Faults, kind: str, method: str, path: str, user: str, body: Any = None
) -> dict:
    """Fail call 1, 2, … of the request until it makes fewer calls than that and succeeds."""
    expected = 409 if kind == "conflict" else 503
    before = stored_state()
    for at in range(1, 60):
        faults.arm(kind, at)
        status, answer, headers = _request(api, method, path, user, body)
        faults.disarm()
        if not faults.failed:
            assert status == 200, (at, answer)
            return answer["object"]
        assert status == expected, (path, kind, at, faults.failed, answer)
        assert answer["success"] is False and answer["object"] is None
        if expected == 503:
            assert int(headers["Retry-After"]) >= 1
            assert answer["errors"] == []
        else:
            assert [e["key"] for e in answer["errors"]] == ["state"]
            # Retried, a bounded number of times.
            assert 2 <= len(faults.failed) <= 15, faults.failed
        assert stored_state() == before, (path, kind, at, faults.failed)
        if kind == "conflict":
            # Every transaction is cancelled whatever `at` is: the race over, it gets through.
            status, answer, _ = _request(api, method, path, user, body)
            assert status == 200, answer
            return answer["object"]
    raise AssertionError("the request never got through")


KINDS = ["throttle", "error500", "timeout"]


@pytest.mark.parametrize("kind", KINDS)
def test_settings_writes_answer_503_and_change_nothing(api, world, faults, kind):
    c = world
    feed = survive_faults(
        api,
        faults,
        kind,
        "PUT",
        f"{P}/feed/settings/{c.garden}",
        c.garden_admin,
        feed_settings(ttl=45),
    )
    assert feed["ttl"] == 45
    page = survive_faults(
        api,
        faults,
        kind,
        "PUT",
        f"{P}/system-page/home-page",
        c.root_admin,
        {"content": "<p>Hi</p>"},
    )
    assert page["content"] == "<p>Hi</p>"


EVENT = {
    "title": "Fair",
    "startDate": "2026-04-01T09:00:00Z",
    "endDate": "2026-06-02T10:00:00Z",
    "allDay": False,
    "content": "<p>Stalls</p>",
    "organizer": "Council",
    "location": "Square",
}


@pytest.mark.parametrize("kind", [*KINDS, "conflict"])
def test_event_writes_answer_503_or_409_and_change_nothing(api, world, faults, kind):
    c = world
    created = survive_faults(
        api, faults, kind, "POST", f"{P}/event", c.moderator, {**EVENT, "groupId": c.garden}
    )
    path = f"{P}/event/{created['id']}"
    moved = {
        **EVENT,
        "title": "Moved fair",
        "startDate": "2026-05-01T09:00:00Z",
        "endDate": "2026-05-01T10:00:00Z",
    }
    assert (
        survive_faults(api, faults, kind, "PUT", path, c.moderator, moved)["title"] == "Moved fair"
    )
    drag = {
        "startDate": "2026-05-03T09:00:00Z",
        "calendarStartDate": "2026-05-01T00:00:00Z",
        "calendarEndDate": "2026-06-01T00:00:00Z",
    }
    calendar = survive_faults(api, faults, kind, "PUT", f"{path}/calendar", c.moderator, drag)
    assert [e["startDate"] for e in calendar["events"]] == ["2026-05-03T09:00:00Z"]
    survive_faults(api, faults, kind, "DELETE", path, c.moderator)
    status, _ = api.get(path, c.moderator)
    assert status == 404


@pytest.fixture
def thread(world):
    """A post with a live comment and a deleted one, loaded through the fixture loader."""

    c = world
    post = c.post(c.garden, c.member)
    c.live = c.comment(post, c.member)
    c.gone = c.comment(post, c.member, deletedOn="2026-01-01T12:00:00Z", deletedById=c.moderator)
    deps.fixture_service().load(c.as_fixture())
    return c


@pytest.mark.parametrize("kind", [*KINDS, "conflict"])
def test_comment_writes_answer_503_or_409_and_change_nothing(api, thread, faults, kind):
    c = thread
    base = f"{P}/comment/post"
    assert (
        survive_faults(api, faults, kind, "DELETE", f"{base}/{c.live}", c.moderator)["id"] == c.live
    )
    restored = survive_faults(api, faults, kind, "POST", f"{base}/{c.gone}/undelete", c.moderator)
    assert restored["deletedOn"] is None
    survive_faults(api, faults, kind, "POST", f"{base}/{c.live}/purge", c.moderator)
    status, _ = api.post(f"{base}/{c.live}/undelete", c.moderator)
    assert status == 404


@pytest.mark.parametrize("kind", [*KINDS, "conflict"])
def test_profile_writes_answer_503_or_409_and_change_nothing(api, world, faults, kind):
    c = world
    about = survive_faults(
        api, faults, kind, "POST", f"{P}/profile/section", c.root_admin, {"name": "About"}
    )
    field = {"sectionId": about["id"], "name": "Nick", "typeId": 1}
    first = survive_faults(api, faults, kind, "POST", f"{P}/profile/field", c.root_admin, field)
    # A new first field moves the other one down: several items in one transaction.
    survive_faults(
        api,
        faults,
        kind,
        "POST",
        f"{P}/profile/field",
        c.root_admin,
        {**field, "name": "Motto", "position": 1},
    )
    status, answer = api.get(f"{P}/profile", c.root_admin)
    assert status == 200 and first["id"] in json.dumps(answer["object"])


def test_one_throttled_call_is_absorbed_by_botocores_retry(api, world, faults):
    c = world
    with retries(2):
        faults.arm("error500", 1, once=True)
        status, answer, _ = _request(
            api, "PUT", f"{P}/feed/settings/{c.garden}", c.garden_admin, feed_settings(ttl=30)
        )
        faults.disarm()
    assert faults.failed, "the fault was injected"
    assert status == 200 and answer["object"]["ttl"] == 30

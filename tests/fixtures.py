"""Shared pytest fixtures: moto in-process AWS, the Chalice test client, a community builder, and a
DynamoDB request counter (botocore event hooks) for the O(pageSize) tests."""

from __future__ import annotations

import itertools
import json
import os
import pickle
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws

from agora_local import moto_speedups
from tests.support import REPO_ROOT, suite_key_pair


@pytest.fixture(autouse=True)
def settings_follow_the_environment() -> Iterator[None]:
    """After each test, the cached settings are the environment's again: a test that set an
    AGORA_ variable (monkeypatch) and reloaded the settings leaves them as its own otherwise, and
    a later test in the same worker would pass or fail by the order it ran in."""
    yield
    from chalicelib.settings import Settings, get_settings, reload_settings

    try:
        current = Settings.from_environ()
    except ValueError:
        return  # the environment makes no valid settings: the next get_settings() says so
    if get_settings.cache_info().currsize and get_settings() != current:
        reload_settings()


@pytest.fixture
def aws(request: pytest.FixtureRequest) -> Iterator[None]:
    """A fresh in-process AWS with every table and the mailbox queue.

    Clients are kept across tests (moto intercepts every client made after it was imported, and
    making botocore sessions anew costs seconds); only the backends are new for each test.
    """
    if request.node.get_closest_marker("fast"):
        pytest.fail("a test marked fast asked for moto (the fast tier runs without AWS)")
    from agora_local.embedded_aws import serialise_moto_dynamodb
    from chalicelib.settings import get_settings, reload_settings

    # Code under test runs threads too (mail polls mailboxes in parallel): moto's DynamoDB gets
    # the same lock as make run's, so the threads race as they would on DynamoDB, not in moto.
    serialise_moto_dynamodb()
    share_symmetric_keys_unused_rsa_key()
    moto_speedups.install()
    number_communities_from_zero()
    with in_process_aws():
        reload_settings()
        from chalicelib.store import base
        from chalicelib.store.groups import GroupRepository

        GroupRepository.forget_cache()
        base.forget()
        empty_tables()
        empty_queues(get_settings().mailbox_queue, get_settings().notify_queue)
        yield
        GroupRepository.forget_cache()
        base.forget()


_SYMMETRIC_RSA_KEY: list[Any] = []


def share_symmetric_keys_unused_rsa_key() -> None:
    """moto's KMS makes every key an RSA-2048 private key, a SYMMETRIC_DEFAULT key too, which
    only Sign, Verify and GetPublicKey would use (KMS refuses all three for a symmetric key, and
    Agora calls none of them): tens of ms of CPU for each test that asks for `kms_key`. In this process a symmetric key gets one such
    key made once; its own id and key material (what encrypts) are still new for every key, and
    every other key spec (RSA_*, ECC_*, HMAC_*) still gets a fresh private key of its own."""
    import moto.kms.models as kms_models

    original = kms_models.generate_private_key
    if getattr(original, "shares_symmetric_key", False):
        return

    def generate_private_key(key_spec: str) -> Any:
        if key_spec != "SYMMETRIC_DEFAULT":
            return original(key_spec)
        if not _SYMMETRIC_RSA_KEY:
            _SYMMETRIC_RSA_KEY.append(original(key_spec))
        return _SYMMETRIC_RSA_KEY[0]

    generate_private_key.shares_symmetric_key = True  # type: ignore[attr-defined]
    kms_models.generate_private_key = generate_private_key  # type: ignore[assignment]


# moto's callbacks for the `requests` library, made the first time moto's patching is enabled in
# this process and given to it again ever after.
_MOTO_CALLBACKS: list[Any] = []


def in_process_aws() -> Any:
    """`mock_aws()`, whose start resets every backend as always but does not build moto's 1,300
    `responses` callbacks anew (10 ms of CPU a test): they hold no state of a test (a URL
    pattern and moto's dispatcher each), so the first start's are registered again."""
    from moto.core.models import MockAWS

    mock = mock_aws()

    def enable_patching(reset: bool = True) -> None:
        from moto.core.models import botocore_stubber, responses_mock

        if not _MOTO_CALLBACKS:
            MockAWS._enable_patching(mock, reset=reset)
            _MOTO_CALLBACKS.extend(responses_mock.registered())
            return
        # MockAWS._enable_patching, with the callbacks it made the first time.
        botocore_stubber.enabled = True
        if reset:
            mock.reset()
        responses_mock.start()
        for callback in _MOTO_CALLBACKS:
            responses_mock.add(callback)

    mock._enable_patching = enable_patching  # type: ignore[method-assign]
    return mock


def empty_queues(*names: str) -> None:
    """The queues, empty, in the current (fresh) moto SQS: made as its CreateQueue makes them
    (with no attributes, as `agora_local.run.ensure_queue` asks), without the 5 ms of botocore
    and moto's parsing each request costs."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    from chalicelib.aws import client

    region = client("sqs").meta.region_name
    backend = sqs_backends[DEFAULT_ACCOUNT_ID][region]
    for name in names:
        backend.create_queue(name)


# moto's tables as create_tables left them the first time, by (account, region), pickled: each
# test's fresh backend gets a copy. Creating the tables through the API costs about 0.5 s a test
# (two calls per table through botocore and moto); a deep copy cost 8 ms of CPU, unpickling the
# same objects (empty tables: no locks, no sentinels) under 1 ms.
_TABLES_AS_CREATED: dict[tuple[str, str], bytes] = {}


def moto_dynamodb() -> tuple[tuple[str, str], Any]:
    """The in-process moto DynamoDB the tables' clients call, and its (account, region)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    from chalicelib.store.base import MODELS
    from chalicelib.store.tables import all_models

    # The region the tables' clients call (botocore's, from AWS_DEFAULT_REGION). all_models()
    # lists and imports the store's modules (4 ms a call): once they are, any model tells.
    model = MODELS[0] if MODELS else all_models()[0]
    region = model._get_connection().connection.client.meta.region_name
    return (DEFAULT_ACCOUNT_ID, region), dynamodb_backends[DEFAULT_ACCOUNT_ID][region]


def empty_tables() -> None:
    """Every table and index, empty, in the current (fresh) moto backend: `create_tables` the
    first time in this process, a copy of what it made ever after.

    A table with a stream (the outbox) gets a new stream in each copy, as moto gives a table it
    creates (a new label, so a new stream ARN, and an empty shard): a stream reader kept from an
    earlier test (positions live in memory, per ARN) never reads this test's stream from a stale
    position.
    """
    from chalicelib.store.tables import all_models, create_tables

    where, backend = moto_dynamodb()
    if where not in _TABLES_AS_CREATED:
        create_tables(wait=False)
        # Agora's tables only: the process-wide backend may hold another test's own table (an
        # embedded server's), which every later copy would bring back with its items.
        ours = {model.Meta.table_name for model in all_models()}
        _TABLES_AS_CREATED[where] = pickle.dumps(
            {name: table for name, table in backend.tables.items() if name in ours}
        )
        return
    tables = pickle.loads(_TABLES_AS_CREATED[where])
    for table in tables.values():
        if table.stream_shard is not None:
            table.set_stream_specification(dict(table.stream_specification))
    backend.tables.update(tables)


@pytest.fixture
def private_mail_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mailbox settings may name loopback and private-network POP3 hosts, as in `make run`: for
    the tests whose POP3 server is the local Dovecot (CONTRACT §2) or that store such a
    mailbox's settings, and only those."""
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_MAIL_ALLOW_PRIVATE_HOSTS", "1")
    reload_settings()


@pytest.fixture
def moto_server():
    """A moto server on loopback as AWS_ENDPOINT_URL, with every table: for tests whose threads
    race each other through real HTTP (no in-process mock)."""
    with embedded_moto_server():
        yield


@contextmanager
def embedded_moto_server() -> Iterator[None]:
    """The `moto_server` fixture's server, for code outside a test (the bench's lease race)."""
    from agora_local.embedded_aws import start_moto_server, stop_moto_server
    from chalicelib import aws
    from chalicelib.store.tables import all_models

    # The server serialises moto's DynamoDB calls (as make run's does): that gives moto
    # DynamoDB's guarantee that each call is atomic, and nothing more, so races between calls
    # (a read, then a conditional write) play out as they would against DynamoDB.
    server = start_moto_server(suite_key_pair())
    host, port = server.get_host_and_port()
    previous = os.environ.get("AWS_ENDPOINT_URL")
    # The clients and PynamoDB connections of the in-process mock, given back afterwards: made
    # anew they cost 0.8 s of CPU (24 tables' botocore sessions and clients), and they would be
    # the same (no endpoint; moto intercepts every client made after it was imported).
    kept_clients = dict(aws._clients) if previous is None else {}
    kept_connections = {model: model._connection for model in all_models()}
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    aws.reset()
    try:
        # The server is in this process and serves moto's process-wide backends: the tables are
        # copied into them as the aws fixture copies them (created over HTTP the first time).
        empty_tables()
        yield
    finally:
        if previous is None:
            os.environ.pop("AWS_ENDPOINT_URL", None)
        else:
            os.environ["AWS_ENDPOINT_URL"] = previous
        aws.reset()
        if previous is None:
            aws._clients.update(kept_clients)
            for model, connection in kept_connections.items():
                model._connection = connection
        stop_moto_server(server)


@pytest.fixture
def kms_key(aws: None) -> str:
    """The KMS key that encrypts stored secrets (moto makes key material: opt in where needed)."""
    from agora_local.run import ensure_kms_key
    from chalicelib.settings import get_settings

    return ensure_kms_key(get_settings().kms_key_id)


@pytest.fixture
def client(aws: None) -> Iterator[Any]:
    from chalice.test import Client

    from app import app

    with Client(app, stage_name="dev", project_dir=str(REPO_ROOT)) as test_client:
        yield test_client


def new_id() -> str:
    """An id no test's community holds (random): for an unknown id, or a record a test adds."""
    return str(uuid.uuid4())


# A `Community`'s ids are uuid5 of this namespace and "<community>/<id>": the n-th community a test
# builds gives the same ids in every test (so the same cast is the same fixture document, loaded
# once per worker: tests/support/seeding.py), and two communities of one test never share an id.
COMMUNITY_IDS = uuid.UUID("6f1c7a52-3d0e-4b8e-9a51-0c2f7b9e4d11")
_communities_built = itertools.count()


def _next_community() -> int:
    return next(_communities_built)


def number_communities_from_zero() -> None:
    """The next `Community` is the test's first (the `aws` fixture starts each test with it)."""
    global _communities_built
    _communities_built = itertools.count()


def z(moment: datetime) -> str:
    """A moment as the API writes it: ISO 8601 in UTC with a `Z`."""
    return moment.isoformat().replace("+00:00", "Z")


@dataclass
class Community:
    """Builds a fixture in memory, then loads it through the real loader."""

    groups: list[dict[str, Any]] = field(default_factory=list)
    users: list[dict[str, Any]] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    connectors: list[dict[str, Any]] = field(default_factory=list)
    players: list[dict[str, Any]] = field(default_factory=list)
    next_comment_id: int = 1
    clock: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    number: int = field(default_factory=_next_community)
    ids_made: int = 0

    def new_id(self) -> str:
        """This community's next id: the same for the same cast in every test (`COMMUNITY_IDS`)."""
        self.ids_made += 1
        return str(uuid.uuid5(COMMUNITY_IDS, f"{self.number}/{self.ids_made}"))

    def group(
        self, slug: str, parent: str | None = None, access: str = "public", **extra: Any
    ) -> str:
        group_id = self.new_id()
        parent_id = parent if parent is not None else (self.root if self.groups else None)
        self.groups.append(
            {
                "id": group_id,
                "name": slug.title(),
                "slug": slug,
                "parentId": parent_id,
                "access": access,
                **extra,
            }
        )
        return group_id

    @property
    def root(self) -> str:
        return next(g["id"] for g in self.groups if g["parentId"] is None)

    def user(
        self,
        slug: str,
        roles: dict[str, str] | None = None,
        password: str | None = None,
        email: str | None = None,
        password_hash: str | None = None,
    ) -> str:
        user_id = self.new_id()
        entry: dict[str, Any] = {
            "id": user_id,
            "alias": slug.replace("-", " ").title(),
            "email": email or f"{slug}@example.org",
            "slug": slug,
            "memberships": [{"groupId": g, "role": r} for g, r in (roles or {}).items()],
        }
        if password is not None:
            entry["password"] = password
        if password_hash is not None:
            entry["passwordHash"] = password_hash  # as an export carries it
        self.users.append(entry)
        return user_id

    def tick(self) -> str:
        self.clock += timedelta(minutes=1)
        return z(self.clock)

    def post(self, group_id: str, author_id: str, title: str = "A post", **extra: Any) -> str:
        post_id = self.new_id()
        self.posts.append(
            {
                "id": post_id,
                "groupId": group_id,
                "authorId": author_id,
                "title": title,
                "content": "<p>text</p>",
                "createdOn": self.tick(),
                **extra,
            }
        )
        return post_id

    def comment(
        self, post_id: str, author_id: str, content: str = "<p>nice</p>", **extra: Any
    ) -> int:
        comment_id = self.next_comment_id
        self.next_comment_id += 1
        self.comments.append(
            {
                "id": comment_id,
                "postId": post_id,
                "authorId": author_id,
                "content": content,
                "createdOn": self.tick(),
                **extra,
            }
        )
        return comment_id

    def as_fixture(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "users": self.users,
            "posts": self.posts,
            "comments": self.comments,
            "connectors": self.connectors,
            "players": self.players,
        }

    def load(self) -> Community:
        """Load the fixture: for real, or as a copy of the same document's earlier load into a
        fresh backend (tests/support/fixture_copies.py: the same stored items)."""
        from tests.support.fixture_copies import COPIES

        COPIES.load(self.as_fixture())
        return self


def group_summary(group_id: str, slug: str) -> dict[str, str]:
    """A group as the API names it inside other objects, for a group `Community.group` made
    (named after its slug, the default thumbnail)."""
    return {
        "id": group_id,
        "name": slug.title(),
        "slug": slug,
        "thumbUrl": "https://community.example/images/group-default.png",
        "url": f"https://community.example/{slug}",
    }


def garden_and_photos(c: Community) -> Community:
    """A public group `garden` and a private one, `photos`, under the root (not loaded yet): the
    scene of the feed, calendar and notification tests, which add their own people to it."""
    c.garden = c.group("garden")
    c.photos = c.group("photos", access="private")
    return c


def with_two_groups(c: Community, garden_access: str = "public") -> Community:
    """The cast of the privilege tests, loaded: see `two_groups`."""
    return two_groups(c, garden_access).load()


@pytest.fixture
def people(community: Community) -> Community:
    """The cast of the privilege tests, loaded (`with_two_groups`), for the modules that need no
    other; a module with a cast of its own defines its own `people`."""
    return with_two_groups(community)


def two_groups(c: Community, garden_access: str = "public") -> Community:
    """The cast of the privilege tests, not loaded yet: groups `garden` and `other`, the root
    administrator, an administrator of each group, and a moderator and a member of garden."""
    c.garden = c.group("garden", access=garden_access)
    c.other = c.group("other")
    c.root_admin = c.users[0]["id"]
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    c.other_admin = c.user("other-admin", {c.other: "administrator"})
    c.moderator = c.user("garden-moderator", {c.garden: "moderator"})
    c.member = c.user("garden-member", {c.garden: "member"})
    return c


@pytest.fixture
def community(aws: None) -> Community:
    """A root group with its administrator: `community.root`, `community.users[0]`."""
    c = Community()
    c.group("home")
    c.user("root-admin", {c.root: "administrator"})
    return c


def token(user_id: str) -> str:
    from chalicelib.auth import issue_token

    return issue_token(user_id)


def auth(user_id: str) -> dict[str, str]:
    return {"X-Auth": token(user_id)}


class Api:
    """The Chalice test client with JSON in and out."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(
        self,
        method: str,
        path: str,
        user: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
    ) -> tuple[int, dict]:
        all_headers = {
            "Content-Type": "application/json",
            **(auth(user) if user else {}),
            **(headers or {}),
        }
        payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
        response = getattr(self.client.http, method.lower())(
            path, headers=all_headers, body=payload
        )
        return response.status_code, json.loads(response.body)

    def get(self, path: str, user: str | None = None, **kw: Any) -> tuple[int, dict]:
        return self.call("GET", path, user, **kw)

    def get_object(self, path: str, user: str | None = None) -> Any:
        """The object a GET answers, once it is checked to have succeeded (200, success)."""
        status, body = self.get(path, user)
        assert status == 200 and body["success"] is True, body
        return body["object"]

    def put(
        self, path: str, user: str | None = None, body: Any = None, **kw: Any
    ) -> tuple[int, dict]:
        return self.call("PUT", path, user, body, **kw)

    def post(
        self, path: str, user: str | None = None, body: Any = None, **kw: Any
    ) -> tuple[int, dict]:
        return self.call("POST", path, user, body, **kw)

    def patch(
        self, path: str, user: str | None = None, body: Any = None, **kw: Any
    ) -> tuple[int, dict]:
        return self.call("PATCH", path, user, body, **kw)

    def delete(self, path: str, user: str | None = None, **kw: Any) -> tuple[int, dict]:
        return self.call("DELETE", path, user, **kw)


@pytest.fixture
def api(client: Any) -> Api:
    return Api(client)


@dataclass
class DynamoCounter:
    """Counts DynamoDB requests and the items they read, by operation."""

    requests: dict[str, int] = field(default_factory=dict)
    items_read: int = 0

    def on_response(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        self.requests[operation] = self.requests.get(operation, 0) + 1
        if operation in ("Query", "Scan"):
            self.items_read += int(parsed.get("ScannedCount", parsed.get("Count", 0)))
        elif operation == "GetItem":
            self.items_read += 1 if parsed.get("Item") else 0
        elif operation == "BatchGetItem":
            self.items_read += sum(len(v) for v in parsed.get("Responses", {}).values())

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def reset(self) -> None:
        self.requests.clear()
        self.items_read = 0


@contextmanager
def counting_dynamodb() -> Iterator[DynamoCounter]:
    """Hooks `after-call.dynamodb` on every botocore client Agora's store uses (each PynamoDB
    connection's and ours) until the block ends; the bench counts with it too."""
    from chalicelib.aws import client as aws_client
    from chalicelib.store.tables import all_models

    counter = DynamoCounter()
    clients = {id(c): c for c in [aws_client("dynamodb")]}
    for model in all_models():
        connection_client = model._get_connection().connection.client
        clients[id(connection_client)] = connection_client
    for botocore_client in clients.values():
        botocore_client.meta.events.register("after-call.dynamodb", counter.on_response)
    try:
        yield counter
    finally:
        for botocore_client in clients.values():
            botocore_client.meta.events.unregister("after-call.dynamodb", counter.on_response)


@pytest.fixture
def dynamo_counter(aws: None) -> Iterator[DynamoCounter]:
    """Counts the test's DynamoDB requests (`counting_dynamodb`) for its whole duration."""
    with counting_dynamodb() as counter:
        yield counter

"""What `load` hands the store and what `export` writes (services/fixture.py) hold to their
declarations in domain/fixture.py key by key, the documents in the file's order; and a record
loaded and exported again is the file's record (no store: a loaded value stands in for the stored
record, whose attributes have the same names)."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace as Rec

import pytest

from chalicelib.domain import fixture as declared
from chalicelib.domain.comments import Comment
from chalicelib.domain.groups import Group
from chalicelib.domain.posts import NewPost
from chalicelib.domain.users import User
from chalicelib.schemas.fixture import Fixture
from chalicelib.services.fixture import FixtureExporter, FixtureService
from tests.support import REPO_ROOT

pytestmark = pytest.mark.fast

DEMO = Fixture.model_validate(json.loads((REPO_ROOT / "demo/community.json").read_text("utf-8")))
# A user's password would be hashed (argon2, slow); an export gives the hash instead.
HASH = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
USERS = [u.model_copy(update={"password": None, "password_hash": HASH}) for u in DEMO.users]
POST_GROUPS = {p.id: p.group_id for p in DEMO.posts}


def stored(values):
    """The stored record a load's values make, as the exporter reads it."""
    if dataclasses.is_dataclass(values):  # loaded as the domain's record
        values = dataclasses.asdict(values)
    reports = [Rec(**r) for r in values.get("spam_reports", [])]
    return Rec(**{**values, "spam_reports": reports})


def keys(kind):
    if dataclasses.is_dataclass(kind):
        return [f.name for f in dataclasses.fields(kind)]
    return list(kind.__annotations__)


# section: (the file's records, load one, its values' declaration, export one, its document's)
SECTIONS = {
    "groups": (
        DEMO.groups,
        FixtureService._group,
        Group,
        FixtureExporter._group,
        declared.GroupDocument,
    ),
    "users": (
        USERS,
        lambda u: FixtureService._user(u, None, 0),
        User,
        FixtureExporter._user,
        declared.UserDocument,
    ),
    "posts": (
        DEMO.posts,
        lambda p: FixtureService._posts(Fixture.model_construct(posts=[p]))[0],
        NewPost,
        FixtureExporter._post,
        declared.PostDocument,
    ),
    "comments": (
        DEMO.comments,
        lambda c: FixtureService._comment(c, POST_GROUPS),
        Comment,
        FixtureExporter._comment,
        declared.CommentDocument,
    ),
    "events": (
        DEMO.events,
        FixtureService._event,
        declared.LoadedEvent,
        FixtureExporter._event,
        declared.EventDocument,
    ),
    "connectors": (
        DEMO.connectors,
        FixtureService._connector,
        declared.ConnectorValues,
        lambda c: FixtureExporter._connector(c, True),
        declared.ConnectorDocument,
    ),
    "players": (
        DEMO.players,
        FixtureService._player,
        declared.PlayerValues,
        FixtureExporter._player,
        declared.PlayerDocument,
    ),
}


@pytest.mark.parametrize("section", SECTIONS)
def test_a_record_loaded_and_exported_is_the_file_s_record_with_its_declared_keys(section):
    records, load, values_kind, export, document_kind = SECTIONS[section]
    assert records  # the demo gives every section
    for record in records:
        values = load(record)
        if not dataclasses.is_dataclass(values):  # a record: its fields are its constructor's
            # NewPost's count is left out (a new post has none); the rest are all given.
            assert set(values) == set(keys(values_kind)) - {"comments_count"}
        document = export(stored(values))
        # A fixture's `source` is the default, left out (the file's own `source` is optional).
        assert list(document) == [k for k in keys(document_kind) if k != "source"]
        given = record.model_dump(mode="json", by_alias=True)
        if section == "connectors":
            given["isEnabled"] = True  # the exporter is told; the demo's are enabled
        if section == "users":  # an export writes them by group id
            given["memberships"].sort(key=lambda m: m["groupId"])
        assert document == {key: given[key] for key in document}


@pytest.mark.parametrize("section", ["posts", "comments"])
def test_a_mailed_post_or_comment_is_exported_with_its_source_last(section):
    records, load, _, export, document_kind = SECTIONS[section]
    values = {**stored(load(records[0])).__dict__, "source": "email"}
    document = export(stored(values))
    assert list(document) == keys(document_kind) and document["source"] == "email"

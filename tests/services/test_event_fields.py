"""One shape per record (issue 60): what an event, a post or a group holds is declared by its
domain record, its stored item and its schema; the fixture's import and export, an event's audit
and the documents an export writes are derived from them. These hold the derivations to the
declarations, so that a field added to a record and its schema cannot be forgotten on the way
into or out of a fixture, or in the audit log."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic.alias_generators import to_camel

from chalicelib.domain import fixture as documents
from chalicelib.domain.events import DETAIL_NAMES, Event
from chalicelib.domain.fixture import LoadedEvent
from chalicelib.domain.groups import Group
from chalicelib.domain.posts import NewPost, Post
from chalicelib.schemas.events import EventFields, EventOut, EventWrite
from chalicelib.schemas.fixture import FixtureEvent, FixtureGroup, FixturePost
from chalicelib.schemas.posts import PostFields, PostOut
from chalicelib.services.events import AUDITED
from chalicelib.services.fixture import SHARED
from chalicelib.services.posts import SHOWN
from chalicelib.store.events import EventRecord
from chalicelib.store.groups import GroupRecord
from chalicelib.store.posts import PostRecord

pytestmark = pytest.mark.fast

EVENT_KEYS = ["id", "group_id", "author_id"]  # what places an event, first in the file


def names(record: type) -> list[str]:
    return [f.name for f in dataclasses.fields(record)]


def aliases(model) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def test_the_api_takes_and_answers_exactly_what_an_event_says_of_itself():
    assert list(EventFields.model_fields) == list(DETAIL_NAMES)
    assert set(DETAIL_NAMES) <= set(EventWrite.model_fields)
    assert set(DETAIL_NAMES) <= set(EventOut.model_fields)


def test_every_field_of_an_event_is_stored():
    assert set(names(Event)) <= set(EventRecord.get_attributes())


def test_a_fixture_s_event_is_its_keys_what_it_says_of_itself_and_its_creation():
    assert list(FixtureEvent.model_fields) == [*EVENT_KEYS, *DETAIL_NAMES, "created_on"]
    assert set(FixtureEvent.model_fields) == set(names(LoadedEvent))
    # Loaded as it is given and exported in the file's order, each under the API's name.
    _, shared = SHARED["events"]
    assert list(shared) == list(FixtureEvent.model_fields)
    assert list(documents.EventDocument.__annotations__) == aliases(FixtureEvent)
    for name in DETAIL_NAMES:
        assert FixtureEvent.model_fields[name].alias == EventFields.model_fields[name].alias


def test_an_event_s_change_audits_all_it_says_of_itself_and_its_group_by_the_api_s_names():
    assert list(AUDITED) == [*DETAIL_NAMES, "group_id"]
    assert [AUDITED[n] for n in DETAIL_NAMES] == [to_camel(n) for n in DETAIL_NAMES]
    assert AUDITED["group_id"] == "groupId"


@pytest.mark.parametrize(
    ("section", "model", "record", "stored", "document", "own"),
    [
        ("posts", FixturePost, Post, PostRecord, documents.PostDocument, "source"),
        ("groups", FixtureGroup, Group, GroupRecord, documents.GroupDocument, "permissions"),
    ],
)
def test_a_post_or_group_travels_through_a_fixture_with_every_field_of_its_record(
    section, model, record, stored, document, own
):
    """Every field of the record but a post's count of comments (the store keeps it) is in the
    file, stored, and written back under the file's name in the file's order; `own` is the one
    the section writes itself."""
    travels = [n for n in names(record) if n != "comments_count"]
    assert set(model.model_fields) == set(travels)
    assert set(travels) <= set(stored.get_attributes())
    assert list(document.__annotations__) == aliases(model)
    _, shared = SHARED[section]
    assert list(shared) == [n for n in model.model_fields if n != own]


def test_a_new_post_is_stored_with_what_a_post_holds():
    assert set(NewPost.__annotations__) == set(names(Post))


def test_a_fixture_s_post_is_its_keys_and_what_it_says_of_itself():
    assert list(FixturePost.model_fields) == [
        "id",
        "group_id",
        "author_id",
        *PostFields.model_fields,
    ]


def test_an_answer_shows_every_field_of_a_post_s_record():
    """Its group and author as references, its source as the API names it, the rest as stored."""
    assert set(names(Post)) - {"group_id", "author_id"} <= set(PostOut.model_fields)
    assert set(SHOWN) == set(names(Post)) - {"group_id", "author_id", "source"}

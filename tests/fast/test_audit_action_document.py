"""The document says which `action` the audit log filters by as the API checks it: a resource, one
of its actions, or blank. Schemathesis sent `MreIeq.XeHHjGV`, which the old pattern (words joined
by a dot) allowed, and the API refused as no action of the log."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chalicelib.schemas.audit import ACTIONS, KNOWN_ACTIONS, AuditQuery

pytestmark = pytest.mark.fast


def documented() -> set[str]:
    schema = AuditQuery.model_json_schema(by_alias=True)["properties"]["action"]
    return {value for option in schema["anyOf"] for value in option.get("enum", [])}


def accepted(action: str) -> bool:
    try:
        AuditQuery.model_validate({"action": action})
    except ValidationError:
        return False
    return True


WORDS = st.sampled_from(sorted({*ACTIONS, *KNOWN_ACTIONS, "bogus", "event.bogus", "Event"}))


@given(WORDS | st.from_regex(r"^[a-zA-Z]+(\.[a-zA-Z]+)?$", fullmatch=True))
def test_the_documents_actions_are_those_the_api_takes(action):
    assert (action in documented()) == accepted(action)


def test_every_documented_action_is_taken():
    assert "" in documented() and "event" in documented() and "event.create" in documented()
    assert all(accepted(action) for action in documented())

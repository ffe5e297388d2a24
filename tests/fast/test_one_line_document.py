"""The document states the single line a text must be (schemas/common.py ONE_LINE), and says it as
the API reads it: a text the pattern admits is never refused for a line break, and one it refuses
always is, once the router has removed the control characters from the body's strings, as it does
before any model reads them. Schemathesis found the gap: a location with a line break, valid by the
document, answered 400."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from chalicelib.sanitize import without_controls
from chalicelib.schemas.common import ONE_LINE, ONE_VISIBLE_LINE, SingleLine
from chalicelib.schemas.events import EventWrite

pytestmark = pytest.mark.fast

ONE_LINE_CHECK = TypeAdapter(SingleLine)
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def refused_for_a_break(sent: str) -> bool:
    try:
        ONE_LINE_CHECK.validate_python(without_controls(sent))
    except ValidationError as error:
        return "line breaks are not allowed" in str(error)
    return False


# A last "\n": Python's `$` matches before it, ECMA 262's does not (the pattern must not use it).
@example("\n")
@example("Spring fair\n")
@given(st.text(alphabet=st.sampled_from(BREAKS) | st.characters()))
def test_the_documents_pattern_and_the_check_read_a_text_alike(sent):
    assert (re.search(ONE_LINE, sent) is None) == refused_for_a_break(sent)


def test_an_events_texts_say_so_in_the_document():
    properties = EventWrite.model_json_schema(by_alias=True)["properties"]
    assert properties["location"]["pattern"] == ONE_LINE
    assert properties["organizer"]["pattern"] == ONE_LINE
    # A required one also needs a visible character (what trimming leaves).
    assert properties["title"]["pattern"] == ONE_VISIBLE_LINE
    assert re.search(ONE_VISIBLE_LINE, "Spring\u2028fair") is None
    assert re.search(ONE_VISIBLE_LINE, " \t ") is None
    assert re.search(ONE_VISIBLE_LINE, "Spring fair\r") is not None  # the router drops the \r

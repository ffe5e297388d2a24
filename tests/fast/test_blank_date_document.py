"""The document says an optional date may be blank (no date), as the API reads it: Schemathesis
sent `timeStamp=` to the expired events, which the API answered as now while the document allowed
only a date-time or null (a query string cannot send null)."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chalicelib.schemas.events import EventListQuery

pytestmark = pytest.mark.fast

SCHEMA = EventListQuery.model_json_schema(by_alias=True)["properties"]["timeStamp"]


def documented(value: str) -> bool:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    return jsonschema.Draft202012Validator(SCHEMA, format_checker=checker).is_valid(value)


def accepted(value: str) -> bool:
    try:
        return EventListQuery.model_validate({"timeStamp": value}).time_stamp is None
    except ValidationError:
        return False


@given(st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x1c\x85\xa0\u2028\u3000\ufeff\x01\x95a")))
def test_a_blank_date_is_none_in_the_api_and_valid_in_the_document(value):
    assert documented(value) == accepted(value)


def test_a_date_is_still_documented_and_taken():
    assert documented("2026-05-01T10:00:00Z") and documented("") and documented(" ")
    assert EventListQuery.model_validate({"timeStamp": "2026-05-01T10:00:00Z"}).time_stamp

"""Booleans are JSON booleans and integers JSON numbers in every body (issue 37, CONTRACT §6): a
string where the document says boolean or integer is a 400 with the field's key, in every body
model of every route, nested ones included; a query string's text is still read as its type."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel

from chalicelib.api.blueprints import all_blueprints
from chalicelib.api.routing import ROUTES
from chalicelib.api.routing.inputs import validate
from chalicelib.errors import ValidationFailed
from chalicelib.schemas.common import _json_kind

all_blueprints()


def body_models() -> list[type[BaseModel]]:
    """Every model a route validates a body with, and the models nested in them."""
    found: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.append(annotation)
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            return
        for argument in typing.get_args(annotation):
            visit(argument)

    for spec in ROUTES:
        if spec.body_model is not None:
            visit(spec.body_model)
    from chalicelib.schemas.profile_fields import DATA_MODELS

    for model in DATA_MODELS.values():
        visit(model)
    return found


def typed_fields() -> list[tuple[type[BaseModel], str, type]]:
    return [
        (model, field.alias or name, kind)
        for model in body_models()
        for name, field in model.model_fields.items()
        if (kind := _json_kind(field.annotation)) is not None
    ]


def test_the_bodies_have_boolean_and_integer_fields_to_check():
    keys = {key for _, key, _ in typed_fields()}
    assert {"allDay", "isEnabled", "ttl", "serverPort", "typeId", "selected"} <= keys


@pytest.mark.parametrize(
    "model, key, kind", typed_fields(), ids=lambda v: getattr(v, "__name__", str(v))
)
def test_a_string_for_a_boolean_or_an_integer_is_refused_with_its_key(model, key, kind):
    for sent in ["yes", "true", "1", ""] if kind is bool else ["60", "1", "1.0", True]:
        with pytest.raises(ValidationFailed) as refused:
            validate(model, {key: sent})
        assert key in [e.key for e in refused.value.errors], (model.__name__, key, sent)


def test_json_values_of_the_right_type_pass():
    from chalicelib.schemas.events import EventCreate

    event = validate(
        EventCreate,
        {
            "groupId": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "title": "Picnic",
            "startDate": "2026-05-01T10:00:00Z",
            "allDay": True,
        },
    )
    assert event.all_day is True
    from chalicelib.schemas.feed import FeedSettingsUpdate

    assert _accepts(FeedSettingsUpdate, "ttl", 60.0)


def _accepts(model: type[BaseModel], key: str, value: Any) -> bool:
    try:
        validate(model, {key: value})
    except ValidationFailed as error:
        return key not in [e.key for e in error.errors]
    return True


def test_a_query_strings_text_is_read_as_its_type():
    from chalicelib.schemas.events import CalendarMove

    move = validate(
        CalendarMove,
        {
            "startDate": "2026-05-01T10:00:00Z",
            "allDay": "true",
            "calendarStartDate": "2026-05-01T00:00:00Z",
            "calendarEndDate": "2026-06-01T00:00:00Z",
        },
        "query",
    )
    assert move.all_day is True


def test_a_nested_boolean_is_refused_with_its_path():
    from chalicelib.schemas.feed import FeedSettingsUpdate

    with pytest.raises(ValidationFailed) as refused:
        validate(FeedSettingsUpdate, {"skipDays": [{"name": "Monday", "selected": "yes"}]})
    assert "skipDays.0.selected" in [e.key for e in refused.value.errors]

"""Strict JSON (CONTRACT §6) without a server: every JSON document is taken as it is; NaN, Infinity,
numbers beyond a float, lone surrogates and nesting deeper than 64 are refused with the error the
envelope answers (400, the key that holds a lone surrogate)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib.api.routing import MAX_BODY_DEPTH, parse_json
from chalicelib.api.routing.strict_json import LONE_SURROGATE
from chalicelib.errors import BadRequest, ValidationFailed

# Text as a client may send it and the API keeps it: no lone surrogate, and no control character
# but tab and newline (the others are removed: tested below).
KEPT_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\t\n"), max_size=20
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | KEPT_TEXT,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(KEPT_TEXT, children, max_size=4)
    ),
    max_leaves=25,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def refusal(raw: str | bytes) -> BadRequest:
    with pytest.raises(BadRequest) as raised:
        parse_json(raw)
    assert raised.value.status == 400
    return raised.value


def surrogate_refusal(raw: str) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as raised:
        parse_json(raw)
    assert raised.value.status == 400
    assert [e.message for e in raised.value.errors] == [LONE_SURROGATE]
    return raised.value


@given(JSON_VALUES)
def test_any_json_document_round_trips(value: Any) -> None:
    assert parse_json(json.dumps(value)) == value


@given(JSON_VALUES)
def test_any_json_document_round_trips_from_utf8_bytes_and_ascii_escapes(value: Any) -> None:
    assert parse_json(json.dumps(value, ensure_ascii=False).encode("utf-8")) == value
    assert parse_json(json.dumps(value, ensure_ascii=True)) == value


@given(st.integers(min_value=1, max_value=MAX_BODY_DEPTH))
def test_nesting_up_to_the_limit_is_accepted(depth: int) -> None:
    parsed = parse_json(nested(depth))
    for _ in range(depth - 1):
        parsed = parsed[0]
    assert parsed == []


@given(st.integers(min_value=MAX_BODY_DEPTH + 1, max_value=MAX_BODY_DEPTH * 4))
def test_nesting_beyond_the_limit_is_refused(depth: int) -> None:
    assert "deeper than 64" in refusal(nested(depth)).message


def test_objects_count_toward_the_depth_like_arrays() -> None:
    deep = '{"a":' * (MAX_BODY_DEPTH + 1) + "1" + "}" * (MAX_BODY_DEPTH + 1)
    assert "deeper than 64" in refusal(deep).message


def test_nesting_past_the_interpreters_recursion_limit_is_the_same_refusal() -> None:
    assert "deeper than 64" in refusal(nested(200_000)).message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_are_refused(constant: str) -> None:
    assert refusal(f'{{"x": {constant}}}').message == "The request body is not valid JSON."


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1.5e400"])
def test_numbers_beyond_a_float_are_refused(number: str) -> None:
    refusal(f"[{number}]")


def test_big_integers_stay_exact() -> None:
    assert parse_json("[123456789012345678901234567890]") == [123456789012345678901234567890]


def test_a_syntax_error_names_its_line_and_column() -> None:
    message = refusal('{\n  "a": 1,\n  "b": }').message
    assert message.startswith("The request body is not valid JSON: ")
    assert "line 3, column 8" in message


def test_bytes_that_are_not_utf8_are_refused() -> None:
    assert refusal(b'{"a": "\xff\xfe"}').message == "The request body is not valid JSON."


@pytest.mark.parametrize("raw", ["", "   ", "{", "[1,]", "{'a': 1}", '{"a" 1}', "tru"])
def test_malformed_documents_are_refused(raw: str) -> None:
    refusal(raw)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ('{"title": "a\\ud800b"}', "title"),
        # Deep in the body: the path to it.
        ('{"data": {"options": ["ok", "\\udfff"]}}', "data.options.1"),
        # In a key: the key is echoed with U+FFFD, so the answer itself can be UTF-8.
        ('{"a\\udc00": 1}', "a\ufffd"),
        # The whole body.
        ('"\\ud83d"', "body"),
    ],
)
def test_a_lone_surrogate_is_refused_on_the_key_that_holds_it(raw: str, key: str) -> None:
    assert [e.key for e in surrogate_refusal(raw).errors] == [key]


@given(KEPT_TEXT, KEPT_TEXT, st.integers(min_value=0xD800, max_value=0xDFFF))
def test_any_lone_surrogate_anywhere_in_a_string_is_refused(
    before: str, after: str, code: int
) -> None:
    # The escape is written into the JSON text between two encoded strings.
    raw = '{"text": ' + json.dumps(before)[:-1] + f"\\u{code:04x}" + json.dumps(after)[1:] + "}"
    surrogate_refusal(raw)


def test_a_surrogate_pair_is_one_character() -> None:
    assert parse_json('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("a\u0000b", "ab"),
        ("line\r\nnext", "line\nnext"),
        ("tab\tkept", "tab\tkept"),
        ("bell\u0007", "bell"),
        ("del\u007f", "del"),
        ("c1\u0085x", "c1x"),
    ],
)
def test_control_characters_are_removed_from_strings_but_tab_and_newline(
    sent: str, kept: str
) -> None:
    assert parse_json(json.dumps({"deep": [{"text": sent}]})) == {"deep": [{"text": kept}]}


def test_control_characters_in_keys_are_left_to_the_models() -> None:
    # Keys name fields: a key with a control character matches no field and is refused there.
    assert parse_json('{"a\\u0001": 1}') == {"a\u0001": 1}

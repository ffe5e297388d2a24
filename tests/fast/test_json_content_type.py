"""The `Content-Type` a body must carry (CONTRACT §6): `application/json`, in any letter case, with
at most a UTF-8 `charset`; anything else is the 415 with key `Content-Type`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib.api.routing.inputs import read_body, require_json
from chalicelib.errors import UnsupportedMediaType


def any_case(text: str) -> st.SearchStrategy[str]:
    return st.tuples(*(st.sampled_from([c.lower(), c.upper()]) for c in text)).map("".join)


@given(
    media=any_case("application/json"),
    charset=st.one_of(st.none(), st.sampled_from(["utf-8", "UTF-8", '"utf-8"', "utf8"])),
    space=st.sampled_from(["", " ", "  "]),
)
def test_json_in_any_case_with_a_utf8_charset_is_read(
    media: str, charset: str | None, space: str
) -> None:
    content_type = media if charset is None else f"{media};{space}charset={charset}"
    require_json(content_type)


@given(st.text(max_size=40))
def test_any_other_media_type_is_415(text: str) -> None:
    if text.split(";")[0].strip().lower() == "application/json":
        text = "x" + text
    with pytest.raises(UnsupportedMediaType) as raised:
        require_json(text)
    assert raised.value.status == 415
    assert [e.key for e in raised.value.errors] == ["Content-Type"]


@pytest.mark.parametrize(
    "content_type",
    [None, "", "text/plain", "application/json; charset=iso-8859-1", "application/json; v=1"],
)
def test_a_body_without_a_json_type_is_not_parsed(content_type: str | None) -> None:
    with pytest.raises(UnsupportedMediaType):
        read_body(b'{"email": "a@example.org"}', required=True, content_type=content_type)

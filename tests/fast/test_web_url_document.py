"""The document states the URL a feed's image and its link must be (schemas/feed.py
WEB_URL_OR_EMPTY) as the API reads it: the text as sent, before the router removes its control
characters and the model trims its blanks. Schemathesis found the gap: `HTTp://\\x95?…`, valid by
the old pattern, was a URL with no host once the router had dropped the U+0095, and answered 400."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from chalicelib.sanitize import without_controls
from chalicelib.schemas.feed import WEB_URL_OR_EMPTY, FeedSettingsUpdate
from tests.support.feed import feed_settings

pytestmark = pytest.mark.fast


def accepted(sent: str) -> bool:
    """Whether PUT feed/settings takes `sent` as imageLinkUrl (the router, then the model)."""
    body = feed_settings(imageLinkUrl=without_controls(sent))
    try:
        FeedSettingsUpdate.model_validate(body)
    except ValidationError as error:
        assert [e["loc"] for e in error.errors()] == [("imageLinkUrl",)]
        return False
    return True


def documented(sent: str) -> bool:
    return re.search(WEB_URL_OR_EMPTY, sent) is not None


# What URLs are made of, and what trips a reading of them: blanks of both engines' `\s`, control
# characters, delimiters, brackets and characters NFKC turns into delimiters.
PIECES = st.sampled_from(
    ["http://", "https://", "HTTP://", "h", "t", "p", "s", ":", "/", "?", "#", "@", "[", "]", "a"]
    + [" ", "\t", "\n", "\r", "\x0b", "\x1c", "\x85", "\x95", "\x00", "\xa0", "\u2028", "\ufeff"]
    + ["\u3000", "\uff0f", "\uff03", "\u2100", "\ufe6b", ".", "é", "%", "x.example", "-"]
)


@given(st.lists(PIECES, max_size=12).map("".join) | st.text())
@settings(max_examples=400)
@example("HTTp://\x95?\U0001f3fbÆ")  # Schemathesis's: no host once the U+0095 is gone
@example("HttPs://\x9a#")
@example("http://a\uff0fb")  # urlsplit refuses a host NFKC gives a slash
@example("http://a\x1c")  # Python's \s, not ECMA's: removed by the router, so accepted
@example("http://a\ufeff")  # ECMA's \s, not Python's: a character of the host
@example(" https://x.example/a b")
@example("http://@http://")  # credentials before a host: refused by both
@example("https://user:pw@x.example/")
def test_the_documents_pattern_and_the_check_read_a_url_alike(sent):
    assert documented(sent) == accepted(sent)


@given(st.from_regex(WEB_URL_OR_EMPTY))
@settings(max_examples=400)
def test_every_url_the_document_allows_is_accepted(sent):
    assert accepted(sent)


def test_the_feed_settings_say_so_in_the_document():
    properties = FeedSettingsUpdate.model_json_schema(by_alias=True)["properties"]
    assert properties["imageUrl"]["pattern"] == WEB_URL_OR_EMPTY
    assert properties["imageLinkUrl"]["pattern"] == WEB_URL_OR_EMPTY
    assert documented("https://x.example/feed.png") and documented("")
    assert not documented("ftp://x.example/") and not documented("https:///path")

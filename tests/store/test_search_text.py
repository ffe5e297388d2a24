"""What `filter` searches is derived by the records themselves, from what they store."""

from __future__ import annotations

import pytest

from chalicelib.store.comments import CommentRecord
from chalicelib.store.posts import PostRecord

pytestmark = pytest.mark.fast


def test_post_search_text_is_the_lower_cased_title_and_the_text_of_its_html():
    post = PostRecord(id="p", title="Spring SALE", content="<p>Roses &amp; <b>Tulips</b></p>")
    post.refresh_index_keys()
    assert post.search_text == "spring sale\nroses & tulips"


def test_post_search_text_drops_markup_of_hostile_html():
    post = PostRecord(id="p", title="T", content='<script>alert("x")</script><p>ok</p>')
    post.refresh_index_keys()
    assert "script" not in post.search_text and "alert" not in post.search_text
    assert post.search_text.endswith("ok")


def test_comment_search_text_is_its_text_and_its_authors_alias():
    comment = CommentRecord(id=1, post_id="p", group_id="g", content="<p>Nice <i>Thorn</i></p>")
    comment.refresh_index_keys("GardenFan")
    assert comment.search_text == "nice thorn\ngardenfan"


def test_a_later_write_without_the_alias_keeps_the_search_text():
    comment = CommentRecord(id=1, post_id="p", group_id="g", content="<p>Nice</p>")
    comment.refresh_index_keys("Ann")
    comment.content = "<p>changed</p>"
    comment.refresh_index_keys()
    assert comment.search_text == "nice\nann"


def test_search_text_of_a_huge_post_is_cut_to_its_byte_budget_on_a_character_boundary():
    from chalicelib.store.base import MAX_SEARCH_TEXT_BYTES

    post = PostRecord(id="p", title="Big", content="<p>" + "é" * MAX_SEARCH_TEXT_BYTES + "</p>")
    post.refresh_index_keys()
    assert len(post.search_text.encode("utf-8")) <= MAX_SEARCH_TEXT_BYTES
    assert post.search_text.startswith("big\néé")
    assert post.search_text.rstrip("é") == "big\n"

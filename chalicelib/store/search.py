"""What the `filter` of posts and comments searches: one rule, applied by the records' index-key
hooks (store/posts.py, store/comments.py) whoever writes them (API, fixture loader, mail in)."""

from __future__ import annotations

# DynamoDB's item limit is 400 KB; a post or comment from mail keeps its content under 150,000
# bytes (services/mail_in/rules.py), which leaves this much for its search copy.
MAX_SEARCH_TEXT_BYTES = 60_000


def search_text(*parts: str) -> str:
    """The parts' text (HTML reduced to its text), lower-cased (DynamoDB's `contains` is
    case-sensitive), cut to `MAX_SEARCH_TEXT_BYTES` of UTF-8."""
    text = "\n".join(parts).lower()
    data = text.encode("utf-8")
    if len(data) <= MAX_SEARCH_TEXT_BYTES:
        return text
    return data[:MAX_SEARCH_TEXT_BYTES].decode("utf-8", "ignore")

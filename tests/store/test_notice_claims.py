"""A sender's notice claim (store/mail.py NoticeClaims) is only ever updated while it is stored:
marking a claim that expired since as sent or released makes no item of its own."""

from __future__ import annotations

from datetime import UTC, datetime

from chalicelib.aws import client
from chalicelib.settings import get_settings
from chalicelib.store.mail import NoticeClaims

DAY = "2026-12-07"


def stored_items() -> list[dict]:
    return client("dynamodb").scan(TableName=get_settings().table_name("mail"))["Items"]


def test_a_claim_gone_is_neither_marked_sent_nor_released_into_a_bare_item(aws):
    claims = NoticeClaims()
    claims.sent("ann@example.org", DAY, "<notice-1@example.org>")
    claims.release("ann@example.org", DAY)
    assert stored_items() == []


def test_a_stored_claim_is_marked_sent_and_released(aws):
    claims = NoticeClaims()
    now = datetime(2026, 12, 7, 9, tzinfo=UTC)
    assert claims.claim("ann@example.org", DAY, "post#g", "entry-1", now)
    assert claims.begin_sending("ann@example.org", DAY, "entry-1", now)
    claims.release("ann@example.org", DAY)
    assert claims.begin_sending("ann@example.org", DAY, "entry-1", now)  # free to try again
    claims.sent("ann@example.org", DAY, "<notice-1@example.org>")
    [item] = stored_items()
    assert item["notice_message_id"] == {"S": "<notice-1@example.org>"}

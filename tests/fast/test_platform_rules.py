"""Rules of the platform modules that need no AWS: sanitising, the clock and schedules, job
deadlines and SQS batches, what an AWS failure means, log correlation ids."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from chalicelib import aws, logs
from chalicelib.clock import iso
from chalicelib.jobs.base import SAFETY_MARGIN_MS, Deadline, PartsFailed, each_message
from chalicelib.jobs.schedules import DailyAt, Every, MonthlyAt
from chalicelib.sanitize import (
    clean_html,
    html_to_text,
    search_key,
    text_to_html,
    without_controls,
    xml_text,
)

# --- sanitising ------------------------------------------------------------------------------


def test_control_characters_go_but_tab_and_newline_stay():
    assert without_controls("a\x00b\tc\nd\x1be\x7ff\x85g") == "ab\tc\nd" + "efg"


def test_a_clean_string_is_returned_as_it_is():
    text = "nothing to remove\tat all\n"
    assert without_controls(text) is text
    assert xml_text(text) is text


def test_xml_text_drops_what_xml_cannot_carry():
    assert xml_text("a\x01b\ud800c\ufffed\U0001f600") == "abcd\U0001f600"


def test_plain_text_becomes_escaped_paragraphs():
    assert text_to_html("One <b>\r\nline\r\n\r\n\r\nTwo & three\n\n  ") == (
        "<p>One &lt;b&gt;<br>line</p><p>Two &amp; three</p>"
    )
    assert text_to_html("") == ""


def test_html_cleaning_drops_scripts_handlers_and_javascript_links():
    cleaned = clean_html(
        '<p onclick="steal()">Hi <a href="javascript:alert(1)">x</a>'
        '<a href="https://example.org">y</a></p><script>alert(1)</script>'
    )
    assert "script" not in cleaned and "onclick" not in cleaned and "javascript" not in cleaned
    assert 'href="https://example.org"' in cleaned
    assert 'rel="noopener noreferrer nofollow"' in cleaned


def test_the_text_of_html_is_unescaped_and_without_tags():
    assert html_to_text("  <p>Fish &amp; <b>chips</b></p><script>x</script> ") == "Fish & chips"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Zoë  Müller", "zoe muller"),
        ("\tANN\x00 \u00a0Smith\n", "ann smith"),
        ("Straße", "strasse"),
        ("ﬁsh", "fish"),  # a ligature, decomposed
    ],
)
def test_the_search_key_folds_case_accents_controls_and_spaces(text, key):
    assert search_key(text) == key


# --- time --------------------------------------------------------------------------------------


def test_iso_is_utc_with_a_z():
    moment = datetime(2026, 3, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    assert iso(moment) == "2026-03-01T12:30:00Z"
    assert iso(datetime(2026, 3, 1, 12, 30, 0, 5000, tzinfo=UTC)) == "2026-03-01T12:30:00.005000Z"


def test_every_is_a_plain_interval():
    moment = datetime(2026, 1, 1, 23, 58, tzinfo=UTC)
    assert Every(minutes=5).next_after(moment) == datetime(2026, 1, 2, 0, 3, tzinfo=UTC)
    assert Every(seconds=30).next_after(moment) == moment + timedelta(seconds=30)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 5, 1, 5, 59, 59), datetime(2026, 5, 1, 6, 0)),
        (datetime(2026, 5, 1, 6, 0), datetime(2026, 5, 2, 6, 0)),  # not the same instant again
        (datetime(2026, 12, 31, 7, 0), datetime(2027, 1, 1, 6, 0)),
    ],
)
def test_daily_at_is_the_next_such_time(moment, expected):
    assert DailyAt(hour=6).next_after(moment) == expected


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 5, 1, 2, 0), datetime(2026, 5, 1, 3, 0)),
        (datetime(2026, 5, 1, 3, 0), datetime(2026, 6, 1, 3, 0)),
        (datetime(2026, 5, 20, 0, 0), datetime(2026, 6, 1, 3, 0)),
        (datetime(2026, 12, 2, 0, 0), datetime(2027, 1, 1, 3, 0)),
    ],
)
def test_monthly_at_is_the_next_such_day(moment, expected):
    assert MonthlyAt(day=1, hour=3).next_after(moment) == expected


# --- jobs --------------------------------------------------------------------------------------


def test_a_deadline_keeps_a_tenth_of_a_short_run_and_the_margin_of_a_long_one():
    assert Deadline(lambda: 60_000).margin_ms == 6_000
    assert Deadline(lambda: 900_000).margin_ms == SAFETY_MARGIN_MS


def test_a_deadline_expires_at_its_margin():
    remaining = [100_000]
    deadline = Deadline(lambda: remaining[0])
    assert not deadline.expired()
    remaining[0] = deadline.margin_ms
    assert deadline.expired()


def test_without_a_lambda_context_there_is_no_deadline():
    assert not Deadline.from_lambda(None).expired()
    assert not Deadline.from_lambda(object()).expired()


def test_a_deadline_in_seconds_expires_when_they_are_spent():
    assert Deadline.after_seconds(0).expired()
    assert not Deadline.after_seconds(3600).expired()


class Record:
    def __init__(self, message_id: str, body: str) -> None:
        self.body = body
        self._id = message_id

    def to_dict(self) -> dict[str, Any]:
        return {"messageId": self._id, "body": self.body}


def test_only_the_failed_messages_of_a_batch_are_delivered_again():
    handled = []

    def handle(body: str) -> None:
        if body == "bad":
            raise RuntimeError("cannot")
        handled.append(body)

    records = [Record("1", "ok"), Record("2", "bad"), Record("3", "fine")]
    assert each_message(records, handle) == {"batchItemFailures": [{"itemIdentifier": "2"}]}
    assert handled == ["ok", "fine"]
    assert each_message([], handle) == {"batchItemFailures": []}


def test_failed_parts_are_counted_and_kept_line_by_line():
    failed = PartsFailed(["group a: timeout", "group b: throttled"])
    assert str(failed) == "2 part(s) failed: group a: timeout; group b: throttled"
    assert failed.lines == ["group a: timeout", "group b: throttled"]
    assert len(str(PartsFailed(["x" * 5000]))) < 2100


# --- what an AWS failure means ---------------------------------------------------------------


def client_error(code: str, status: int = 400, **response: Any) -> ClientError:
    return ClientError(
        {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}, **response},
        "Operation",
    )


def cancelled(*codes: str) -> ClientError:
    reasons = [{"Code": code} for code in codes]
    return client_error("TransactionCanceledException", CancellationReasons=reasons)


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (client_error("ProvisionedThroughputExceededException"), True),
        (client_error("ThrottlingException"), True),
        (client_error("SomethingNew", status=503), True),
        (client_error("ConditionalCheckFailedException"), False),
        (client_error("ValidationException"), False),
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), True),
        (ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), True),
        (cancelled("None", "ThrottlingError"), True),
        (cancelled("ConditionalCheckFailed", "ThrottlingError"), False),
        (cancelled("None", "None"), False),
        (ValueError("ours"), False),
    ],
)
def test_what_is_worth_sending_again_is_unavailable(error, unavailable):
    assert aws.is_unavailable(error) is unavailable


def test_a_wrapped_botocore_error_is_read_through_its_cause():
    class PynamoError(Exception):
        def __init__(self, cause: BaseException) -> None:
            self.cause = cause

    wrapped = PynamoError(client_error("ThrottlingException"))
    assert aws.error_code(wrapped) == "ThrottlingException"
    assert aws.is_unavailable(wrapped)


def test_a_transaction_lost_to_a_concurrent_one_is_a_race():
    assert aws.is_cancelled_by_race(cancelled("None", "TransactionConflict"))
    assert not aws.is_cancelled_by_race(cancelled("TransactionConflict", "ConditionalCheckFailed"))
    assert not aws.is_cancelled_by_race(cancelled("None"))
    assert not aws.is_cancelled_by_race(client_error("ThrottlingException"))
    assert aws.cancellation_codes(cancelled("None", "TransactionConflict")) == [
        "",
        "TransactionConflict",
    ]


# --- log correlation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("gw-7c1f", "gw-7c1f"),
        ("  a.b:c_d-1 ", "a.b:c_d-1"),
        ("x" * 128, "x" * 128),
        ("x" * 129, None),
        ("has space", None),
        ("new\nline", None),
        ("", None),
        (42, None),
    ],
)
def test_a_correlation_id_from_outside_is_short_and_printable(value, kept):
    assert logs._safe_id(value) == kept


def test_invocations_nest_and_restore_the_outer_correlation_id():
    assert logs.current_correlation_id() is None
    with logs.invocation(correlation="outer") as outer:
        assert outer["correlationId"] == "outer"
        with logs.invocation(mailbox="m1") as inner:
            assert inner == {"correlationId": "outer", "mailbox": "m1"}
        with logs.invocation(correlation="bad id!") as refused:
            assert refused["correlationId"] == "outer"
        assert logs.current_correlation_id() == "outer"
    assert logs.current_correlation_id() is None
    fresh = logs.correlation_id()
    assert fresh and fresh != logs.correlation_id()


def test_a_lambda_context_binds_its_request_id():
    class Context:
        aws_request_id = "req-1"

    with logs.invocation(Context()) as bound:
        assert bound["requestId"] == "req-1"
        assert isinstance(bound["coldStart"], bool)


def test_a_log_line_is_one_json_object_with_the_bound_fields(capsys):
    logger = logs.get_logger("fast-test")
    with logs.invocation(correlation="corr-1", mailbox="m1"):
        logger.warning("something happened", extra={"count": 2})
    [line] = [json.loads(x) for x in capsys.readouterr().err.splitlines() if "fast-test" in x]
    assert (line["message"], line["level"], line["count"]) == ("something happened", "WARNING", 2)
    assert (line["correlationId"], line["mailbox"]) == ("corr-1", "m1")


def test_a_debug_line_is_dropped_at_the_default_level(capsys):
    logs.get_logger("fast-test").debug("not shown")
    assert "not shown" not in capsys.readouterr().err


def test_progress_is_silent_off_a_terminal_and_overwrites_on_one():
    from chalicelib.cli import Progress

    piped = io.StringIO()
    quiet = Progress(piped)
    quiet.show("load: 10 users written")
    quiet.done()
    assert piped.getvalue() == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    shown = Progress(terminal)
    shown.show("load: 10 users written")
    shown.show("load: 2 groups")
    shown.done()
    width = len("load: 10 users written")
    assert terminal.getvalue() == (
        "\rload: 10 users written"
        + "\r"
        + "load: 2 groups".ljust(width)
        + "\r"
        + " " * width
        + "\r"
    )

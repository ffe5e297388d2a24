"""The purge of comments deleted more than a calendar month ago: per group and the monthly job
(CONTRACT §8), with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib import deps
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.comment_purge import purge_old_deleted_comments
from chalicelib.services.comments import one_month_before
from tests.fixtures import z
from tests.support import NOW


@pytest.fixture
def garden(community):
    c = community
    c.garden = c.group("garden")
    c.other = c.group("other")
    c.moderator = c.user("garden-moderator", {c.garden: "moderator", c.other: "moderator"})
    c.post_id = c.post(c.garden, c.moderator)
    c.other_post = c.post(c.other, c.moderator)
    return c


def deleted_comment(c, deleted_on: datetime, post_id: str | None = None) -> int:
    return c.comment(
        post_id or c.post_id, c.moderator, deletedOn=z(deleted_on), deletedById=c.moderator
    )


def remaining(comment_ids) -> list[int]:
    from chalicelib.store.comments import CommentRepository

    repository = CommentRepository()
    return [i for i in comment_ids if repository.get(i) is not None]


def expired_deadline() -> Deadline:
    return Deadline(lambda: 0)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 11, 21, 10, 0, tzinfo=UTC), datetime(2026, 10, 21, 10, 0, tzinfo=UTC)),
        (datetime(2026, 3, 31, 8, 30, tzinfo=UTC), datetime(2026, 2, 28, 8, 30, tzinfo=UTC)),
        (datetime(2028, 3, 31, 8, 30, tzinfo=UTC), datetime(2028, 2, 29, 8, 30, tzinfo=UTC)),
        (datetime(2027, 1, 15, 0, 0, tzinfo=UTC), datetime(2026, 12, 15, 0, 0, tzinfo=UTC)),
    ],
)
def test_one_calendar_month_before_clamps_the_day(now, expected):
    assert one_month_before(now) == expected


def test_monthly_purge_takes_comments_deleted_a_month_ago_or_more_in_every_group(garden):
    month_ago = one_month_before(NOW)
    stays = deleted_comment(garden, month_ago + timedelta(minutes=1))
    boundary = deleted_comment(garden, month_ago)
    goes = deleted_comment(garden, month_ago - timedelta(minutes=1))
    other_group = deleted_comment(garden, month_ago - timedelta(days=40), garden.other_post)
    live = garden.comment(garden.post_id, garden.moderator)
    garden.load()
    assert purge_old_deleted_comments(Deadline.unbounded(), now=NOW) == 3
    assert remaining([stays, boundary, goes, other_group, live]) == [stays, live]


def test_group_purge_keeps_a_comment_deleted_a_month_minus_a_minute_ago(garden):

    month_ago = one_month_before(NOW)
    stays = deleted_comment(garden, month_ago + timedelta(minutes=1))
    goes = deleted_comment(garden, month_ago - timedelta(minutes=1))
    other_group = deleted_comment(garden, month_ago - timedelta(days=40), garden.other_post)
    garden.load()
    group = deps.group_service().get(garden.garden)
    result = deps.comment_service(clock=lambda: NOW).purge_deleted_in_group(
        group, Deadline.unbounded()
    )
    assert result.count == 1
    assert remaining([stays, goes, other_group]) == [stays, other_group]


def test_an_expired_deadline_stops_after_one_batch_and_the_next_run_continues(garden):
    old = [deleted_comment(garden, NOW - timedelta(days=60 + i)) for i in range(5)]
    garden.load()
    runs = [purge_old_deleted_comments(expired_deadline(), now=NOW, batch_size=2) for _ in range(4)]
    assert runs == [2, 2, 1, 0]
    assert remaining(old) == []


def test_a_run_with_time_left_goes_through_every_batch(garden):
    old = [deleted_comment(garden, NOW - timedelta(days=60 + i)) for i in range(5)]
    garden.load()
    assert purge_old_deleted_comments(Deadline.unbounded(), now=NOW, batch_size=2) == 5
    assert remaining(old) == []


def test_purge_reads_only_the_candidate_comments(garden, dynamo_counter):
    for i in range(1000):
        if i % 3 == 0:
            garden.comment(garden.post_id, garden.moderator)
        else:
            deleted_comment(garden, NOW - timedelta(days=1, minutes=i))
    old = [deleted_comment(garden, NOW - timedelta(days=45, minutes=i)) for i in range(7)]
    garden.load()
    dynamo_counter.reset()
    assert purge_old_deleted_comments(Deadline.unbounded(), now=NOW) == 7
    assert "Scan" not in dynamo_counter.requests
    assert dynamo_counter.requests["Query"] == 1
    assert dynamo_counter.items_read == 7
    # Each purge is one transaction: the delete and its Comment Purged outbox item.
    assert dynamo_counter.requests["TransactWriteItems"] == 7
    assert "DeleteItem" not in dynamo_counter.requests
    assert remaining(old) == []


def test_scheduled_function_in_app_py_purges(garden, client):
    now = datetime.now(UTC)
    old = deleted_comment(garden, now - timedelta(days=70))
    recent = deleted_comment(garden, now - timedelta(days=3))
    garden.load()
    event = client.events.generate_cw_event(
        source="aws.events",
        detail_type="Scheduled Event",
        detail={},
        resources=["arn:aws:events:us-east-1:123456789012:rule/purge-comments"],
    )
    response = client.lambda_.invoke("purge-comments", event)
    assert response.payload == 1
    assert remaining([old, recent]) == [recent]


def test_cli_purge_comments_runs_it_once(garden, capsys):
    from chalicelib.cli import main

    old = deleted_comment(garden, datetime.now(UTC) - timedelta(days=70))
    garden.load()
    assert main(["purge-comments"]) == 0
    assert capsys.readouterr().out.strip() == "purged 1 comment(s)"
    assert remaining([old]) == []


def purge_age_metrics(capsys) -> list[float]:
    from tests.support.emf import emf, json_lines, value

    lines = emf(json_lines(capsys.readouterr().out), "PurgeRunAgeDays")
    return [value(line, "PurgeRunAgeDays") for line in lines]


def test_the_daily_check_reports_the_days_since_the_last_completed_purge(
    garden, capsys, monkeypatch
):
    """The purge's heartbeat (issue 48): CloudWatch cannot look back a month, so each completed
    run stamps its time and the daily check emits the days since (alarmed past 32, and when
    missing: infra/watch.py)."""
    from chalicelib.jobs.comment_purge import report_last_run

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-SendDigests")  # EMF in Lambda
    garden.load()
    capsys.readouterr()
    # A stack that never purged counts from its first check: no page on a new stack.
    assert report_last_run(NOW) == 0
    assert report_last_run(NOW + timedelta(days=33)) == 33
    assert purge_age_metrics(capsys) == [0, 33]
    purge_old_deleted_comments(Deadline.unbounded(), now=NOW + timedelta(days=33))
    assert report_last_run(NOW + timedelta(days=34, hours=12)) == 1.5
    # A run stopped at its deadline (the rest waits for the next) still completed.
    purge_old_deleted_comments(expired_deadline(), now=NOW + timedelta(days=40))
    assert report_last_run(NOW + timedelta(days=40)) == 0
    assert purge_age_metrics(capsys) == [1.5, 0]


def test_a_check_that_cannot_read_reports_nothing_and_the_alarm_sees_silence(
    garden, capsys, monkeypatch
):
    from chalicelib.aws import client
    from chalicelib.jobs.comment_purge import report_last_run

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-SendDigests")
    garden.load()
    client("dynamodb").delete_table(TableName="agora-test-counters")
    capsys.readouterr()
    assert report_last_run(NOW) is None  # and the daily run it rides on goes on
    assert purge_age_metrics(capsys) == []


def test_a_purge_stopped_at_its_deadline_says_what_it_left_and_is_not_complete(
    garden, capsys, monkeypatch
):
    """Issue 57: the monthly purge stopped at its 900 s deadline and recorded itself complete, so
    the backlog waited a month unseen. It now counts what it left (CommentPurgeBacklog, alarmed),
    says so, and stamps nothing; the next run goes on and completes."""
    from chalicelib.jobs.comment_purge import LAST_RUN
    from chalicelib.store.counters import CounterRepository
    from tests.support.emf import emf, json_lines, value

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PurgeComments")  # EMF in Lambda
    old = [deleted_comment(garden, NOW - timedelta(days=60 + i)) for i in range(5)]
    garden.load()
    capsys.readouterr()
    assert purge_old_deleted_comments(expired_deadline(), now=NOW, batch_size=2) == 2
    captured = capsys.readouterr()
    printed = json_lines(captured.out + captured.err)
    [left] = [value(line, "CommentPurgeBacklog") for line in emf(printed, "CommentPurgeBacklog")]
    assert left == 3
    [warning] = [
        line for line in printed if line.get("message", "").startswith("the purge stopped")
    ]
    assert warning["left"] == 3 and "3 deleted comments are left" in warning["message"]
    assert CounterRepository().read(LAST_RUN) is None
    # The next run goes on from the oldest left, and completes.
    assert purge_old_deleted_comments(Deadline.unbounded(), now=NOW, batch_size=2) == 3
    printed = json_lines(capsys.readouterr().out)
    assert [value(line, "CommentPurgeBacklog") for line in emf(printed, "CommentPurgeBacklog")] == [
        0
    ]
    assert CounterRepository().read(LAST_RUN) == int(NOW.timestamp())
    assert remaining(old) == []

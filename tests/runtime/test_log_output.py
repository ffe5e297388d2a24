"""Log lines read as data for machines and as words for people: `make run`'s scheduler logs a job's
result as JSON data (not a Python repr), and a one-shot command writes plain text at WARNING and
above on stderr unless AGORA_LOG_FORMAT=json."""

from __future__ import annotations

import json
import threading

import pytest

from chalicelib import logs
from chalicelib.jobs.mail_poll import PollReport
from chalicelib.settings import reload_settings


@pytest.fixture
def log_format(monkeypatch):
    """Set AGORA_LOG_FORMAT (None: unset) for one test."""

    def use(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("AGORA_LOG_FORMAT", raising=False)
        else:
            monkeypatch.setenv("AGORA_LOG_FORMAT", value)
        reload_settings()

    yield use
    monkeypatch.delenv("AGORA_LOG_FORMAT", raising=False)
    reload_settings()


def test_make_runs_scheduler_logs_a_poll_report_as_data(capsys, log_format):
    from agora_local.run import Scheduler
    from chalicelib.jobs.schedules import Every

    log_format(None)
    ran = threading.Event()

    def poll() -> PollReport:
        ran.set()
        return PollReport(lines=["post#g1: seen 2, posted 1"], failures=[])

    scheduler = Scheduler([("poll-mail", Every(seconds=1), poll)])
    capsys.readouterr()
    scheduler.start()
    assert ran.wait(10)
    scheduler.stop()
    scheduler.join(10)
    [line] = [
        json.loads(x) for x in capsys.readouterr().err.splitlines() if "scheduled job ran" in x
    ]
    assert line["job"] == "poll-mail"
    assert line["result"] == {"lines": ["post#g1: seen 2, posted 1"], "failures": []}


def test_a_command_writes_plain_text_warnings_and_no_info(capsys, log_format):
    log_format(None)
    logger = logs.get_logger("cli-test")
    capsys.readouterr()
    with logs.for_people():
        logger.info("polled a mailbox", extra={"mailbox": "post#g1"})
        logger.warning("daily digests stopped", extra={"report": PollReport(lines=["a"])})
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError:
            logger.exception("mailbox poll failed")
    assert capsys.readouterr().err.splitlines() == [
        'warning: daily digests stopped (report={"lines": ["a"], "failures": []})',
        "error: mailbox poll failed: ConnectionRefusedError: refused",
    ]
    # Outside the command, the same logger writes JSON lines again.
    logger.warning("after")
    assert json.loads(capsys.readouterr().err)["message"] == "after"


def test_agora_log_format_json_keeps_a_commands_json_lines(capsys, log_format):
    log_format(" JSON ")
    logger = logs.get_logger("cli-test")
    capsys.readouterr()
    with logs.for_people():
        logger.info("polled a mailbox", extra={"mailbox": "post#g1"})
    [line] = [json.loads(x) for x in capsys.readouterr().err.splitlines()]
    assert (line["message"], line["mailbox"]) == ("polled a mailbox", "post#g1")


def test_in_lambda_a_command_keeps_json(capsys, log_format, monkeypatch):
    log_format(None)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-test-PollMailbox")
    logger = logs.get_logger("cli-test")
    capsys.readouterr()
    with logs.for_people():
        logger.info("polled a mailbox")
    assert json.loads(capsys.readouterr().err)["function"] == "agora-test-PollMailbox"


def test_text_everywhere_when_asked(capsys, log_format):
    log_format("text")
    logs.get_logger("cli-test").info("listening", extra={"port": 8000})
    assert capsys.readouterr().err == "info: listening (port=8000)\n"


def test_an_unknown_log_format_is_refused():
    from chalicelib.settings import Settings, SettingsError

    with pytest.raises((SettingsError, ValueError)):
        Settings.from_environ({"AGORA_LOG_FORMAT": "yaml"})


def test_on_a_terminal_make_runs_job_lines_read_as_its_request_lines_do(capsys, log_format):
    """Issue 56: a terminal showed readable request lines and raw JSON job lines side by side."""
    import logging
    import re

    from agora_local.run import TerminalLines, readable_agora_lines

    log_format(None)
    handlers = logging.getLogger("chalicelib").handlers
    before = [h.formatter for h in handlers]
    try:
        readable_agora_lines()
        capsys.readouterr()
        logs.get_logger("scheduler").info(
            "scheduled job ran", extra={"job": "poll-mail", "result": None}
        )
        line = capsys.readouterr().err.strip()
    finally:
        for handler, formatter in zip(handlers, before, strict=True):
            handler.setFormatter(formatter)
    assert all(isinstance(h.formatter, TerminalLines) is False for h in handlers)
    assert re.fullmatch(
        r"\[\d\d/[A-Z][a-z]{2}/\d{4} \d\d:\d\d:\d\d\] info: scheduled job ran "
        r'\(job="poll-mail" result=null\)',
        line,
    ), line

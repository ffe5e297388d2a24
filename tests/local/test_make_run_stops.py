"""Every change kept, however `make run` stops (issue 56, CONTRACT §1): a closed terminal
(SIGHUP), output into a pipe whose reader is gone before the Ctrl-C (`make run | tee log`), a
second make run on the same data folder (refused, naming the first), a `kill -9` (its lock is no
obstacle, and the next start says what it restored), mail delivered and not yet polled, and a
Ctrl-C in the middle of a poll (not the mailbox's failure). Each starts the real `make run`."""

from __future__ import annotations

import os
import re
import signal
import stat
import time

import pytest

from tests.support.stops import (
    COMMENTS_MAILBOX,
    add_event,
    deliver,
    events_kept,
    local_pop3_port,
    mailbox_settings,
    make_run,
    poll_now,
    post_titles,
    python_pid,
    second_instance,
    signal_group,
    stopped_after,
    wait_for_the_end,
    wait_until_polling,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def runs():
    """`make_run`, each run it started killed (its whole process group) if a failed test left it
    running."""
    started = []

    def start(data_dir, **options):
        started.append(make_run(data_dir, **options))
        return started[-1]

    yield start
    for agora in started:
        try:
            os.killpg(agora.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def assert_the_next_run_keeps(runs, data_dir, token: str, made: dict[str, str]) -> None:
    """A make run started on `data_dir` after the stop has every event `made` (id: title) and
    restored a clean stop's save (not a crash's)."""
    with stopped_after(runs(data_dir)) as again:
        assert events_kept(again, token, made) == set(made)
        assert not any("did not stop cleanly" in line for line in again.output)


def test_a_closed_terminal_sighup_saves_first(tmp_path, runs):
    agora = runs(tmp_path)
    token = agora.login()
    made = {add_event(agora, token, "Before the hang-up"): "Before the hang-up"}
    signal_group(agora, [signal.SIGHUP])
    said = wait_for_the_end(agora)
    assert said.count(f"data saved in {tmp_path}") == 1, said
    assert_the_next_run_keeps(runs, tmp_path, token, made)


def test_output_into_a_pipe_whose_reader_is_gone_loses_nothing(tmp_path, runs):
    """`make run 2>&1 | tee log`, then Ctrl-C: the same Ctrl-C ends tee, so every line the stop
    writes meets a closed pipe."""
    agora = runs(tmp_path, stderr_too=True)
    token = agora.login()
    made = {add_event(agora, token, f"Piped {n}"): f"Piped {n}" for n in range(5)}
    assert agora.process.stdout is not None
    agora.process.stdout.close()  # tee is gone
    signal_group(agora, [signal.SIGINT])
    wait_for_the_end(agora)
    assert_the_next_run_keeps(runs, tmp_path, token, made)


def test_a_second_make_run_on_a_folder_in_use_is_refused_and_names_the_first(tmp_path, runs):
    first = runs(tmp_path)
    try:
        token = first.login()
        made = {add_event(first, token, "The first's own"): "The first's own"}
        second = second_instance(tmp_path)
        # make says its recipe failed (2); Agora's own line is the one before.
        assert second.returncode == 2, second.stdout + second.stderr
        [line, _] = second.stderr.strip().splitlines()
        assert f"make run is already running on {tmp_path} (pid {python_pid(first)})" in line
        assert "data:" not in second.stdout  # it restored nothing, saved nothing
        # The first goes on, its data as it was.
        made[add_event(first, token, "After the refusal")] = "After the refusal"
        # The busy-port hint names it too: another folder, the first's port.
        other = tmp_path / "other"
        busy = second_instance(other, int(first.printed["AWS_ENDPOINT_URL"].rsplit(":", 1)[1]))
        assert busy.returncode == 2, busy.stderr
        assert f"is used by another make run (pid {python_pid(first)}, data folder {tmp_path})" in (
            busy.stderr
        )
    finally:
        signal_group(first, [signal.SIGINT])
        said = wait_for_the_end(first)
    assert said.count("data saved") == 1
    assert_the_next_run_keeps(runs, tmp_path, token, made)


def test_after_kill_9_the_lock_is_no_obstacle_and_the_start_says_what_it_restored(tmp_path, runs):
    agora = runs(tmp_path)
    token = agora.login()
    # The start's own save of the demo (taken beside the serving) is on disk.
    deadline = time.monotonic() + 30
    while not (tmp_path / "embedded-aws.pickle").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    signal_group(agora, [signal.SIGKILL])
    wait_for_the_end(agora)
    with stopped_after(runs(tmp_path), signal.SIGTERM) as again:
        said = "".join(again.output)
        assert re.search(
            r"the last run did not stop cleanly: restored the save of \d\d:\d\d:\d\d", said
        ), said
        assert token and again.login()
    # A clean stop in between: the next start says nothing of the kind.
    with stopped_after(runs(tmp_path)) as last:
        assert "did not stop cleanly" not in "".join(last.output)


def test_mail_delivered_and_not_yet_polled_is_there_after_a_stop(tmp_path, runs):
    agora = runs(tmp_path)
    token = agora.login()
    subjects = {f"Waiting {n}" for n in range(3)}
    deliver(tmp_path, *sorted(subjects))
    signal_group(agora, [signal.SIGINT])
    wait_for_the_end(agora)
    _private(tmp_path)
    with stopped_after(runs(tmp_path)) as again:
        assert poll_now(again, token)[0] == 202
        deadline = time.monotonic() + 60
        while not subjects <= post_titles(again, token) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert subjects <= post_titles(again, token)


def _private(folder) -> None:
    """Dovecot's passwd and the mail are in the data folder, the owner's alone."""
    mail = folder / "mail"
    assert stat.S_IMODE(mail.stat().st_mode) == 0o700
    assert stat.S_IMODE((mail / "passwd").stat().st_mode) == 0o600
    for path in mail.glob("users/*/Maildir/*/*"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_ctrl_c_mid_poll_is_not_the_mailboxs_failure_and_poll_now_tells_the_truth(tmp_path, runs):
    agora = runs(tmp_path)
    token = agora.login()
    subjects = {f"Mid-poll {n:02d}" for n in range(40)}
    deliver(tmp_path, *sorted(subjects))
    # Both due: Gardening's first (its 40 mails), the comments' next, after the stop began.
    assert poll_now(agora, token)[0] == 202
    assert poll_now(agora, token, COMMENTS_MAILBOX)[0] == 202
    assert wait_until_polling(local_pop3_port(tmp_path)), "no poll began"
    signal_group(agora, [signal.SIGINT])  # Ctrl-C, to make run's whole process group
    said = wait_for_the_end(agora)
    assert said.count("data saved") == 1, said
    with stopped_after(runs(tmp_path)) as again:
        assert mailbox_settings(again, token, COMMENTS_MAILBOX)["lastError"] is None
        settings = mailbox_settings(again, token)
        assert settings["lastError"] is None, settings["lastError"]
        status, body = poll_now(again, token)
        if status == 429:
            # Within a minute of the Poll now before the stop: it says when it is really due.
            due = settings["nextPollOn"]
            if due is not None and due > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()):
                assert f"next due at {due[11:19]} UTC" in body["message"], (due, body)
            else:
                assert "is due now" in body["message"], (settings, body)
        else:
            assert status == 202, body
        # Every mail becomes a post, with no other Poll now: the stop left the mailbox due, so
        # the restarted run's own schedule reads what the stop left on the server at once (not
        # 5 minutes on, nor once the minute of Poll now has passed).
        deadline = time.monotonic() + 90
        while not subjects <= post_titles(again, token) and time.monotonic() < deadline:
            time.sleep(1)
        assert subjects <= post_titles(again, token)
        assert mailbox_settings(again, token)["lastError"] is None


def test_reset_says_what_it_deleted_the_waiting_mail_included(tmp_path, runs):
    from tests.support.stops import waiting_subjects

    agora = runs(tmp_path)
    deliver(tmp_path, "Deleted by the reset")
    signal_group(agora, [signal.SIGINT])
    wait_for_the_end(agora)
    with stopped_after(runs(tmp_path, reset=True)) as again:
        [said] = [line for line in again.output if line.startswith("data: RESET=1 deleted")]
        assert f"the saved data in {tmp_path}" in said
        assert re.search(r"the data saved at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(embedded-aws", said)
        assert "the local mailboxes with 1 mails waiting (mail/)" in said, said
        assert waiting_subjects(tmp_path) == set()
        assert any(line.startswith("demo data:") for line in again.output)

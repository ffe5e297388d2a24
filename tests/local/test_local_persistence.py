"""`make run` keeps its data between runs (issue 29): stopped by SIGTERM or Ctrl-C (SIGINT) and
started again, a group setting, an event and a moderation change are still there, and tokens still
sign in; `make run RESET=1` starts again from the demo. Runs the real `make run` (the install step
marked done: the shared virtualenv is not reinstalled)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.support import REPO_ROOT
from tests.support.running import RunningAgora, start_agora

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
GARDENING = next(g["id"] for g in DEMO["groups"] if g["name"] == "Gardening Club")
UNAPPROVED = 104  # a comment of the demo, unapproved, in the Gardening Club


def make_run(data_dir: str, *arguments: str, sigint_ignored: bool = False) -> RunningAgora:
    return start_agora(
        {"AGORA_DATA_DIR": data_dir},
        command=["make", "--no-print-directory", "-o", ".venv/.installed", "run", *arguments],
        sigint_ignored=sigint_ignored,
    )


def stop_and_wait(agora: RunningAgora, how: signal.Signals) -> str:
    """Stop as a terminal's Ctrl-C does (the signal to make's process group) or as `kill` does
    (SIGTERM to make, which passes it on); the rest of the output."""
    if how == signal.SIGINT:
        os.killpg(os.getpgid(agora.process.pid), signal.SIGINT)
    else:
        agora.process.send_signal(how)
    # make itself reports the signal (its status is -15 or -2); Agora's own lines tell the rest.
    try:
        rest, _ = agora.process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(os.getpgid(agora.process.pid), signal.SIGKILL)
        agora.process.communicate()
        raise AssertionError(f"{how.name} did not stop make run within 60 s") from None
    assert "Traceback" not in rest, rest
    return rest


def state(agora: RunningAgora, token: str) -> dict:
    auth = {"X-Auth": token}
    _, feed = agora.request("GET", f"/api/v1/en_US/feed/settings/{GARDENING}", headers=auth)
    _, events = agora.request(
        "GET", f"/api/v1/en_US/event/list/upcoming/{GARDENING}?pageSize=100", headers=auth
    )
    _, unapproved = agora.request(
        "GET",
        f"/api/v1/en_US/comment/post/list/{GARDENING}/unapproved?pageSize=100",
        headers=auth,
    )
    return {
        "ttl": feed["object"]["ttl"],
        "events": sorted(e["title"] for e in events["object"]["events"]),
        "unapproved": sorted(c["id"] for c in unapproved["object"]["comments"]),
    }


def change_everything(agora: RunningAgora, token: str, title: str, ttl: int) -> None:
    """A group setting, an event and a moderation change, each answered 200."""
    auth = {"X-Auth": token}
    status, feed = agora.request("GET", f"/api/v1/en_US/feed/settings/{GARDENING}", headers=auth)
    assert status == 200, feed
    status, body = agora.request(
        "PUT",
        f"/api/v1/en_US/feed/settings/{GARDENING}",
        {**feed["object"], "ttl": ttl},
        headers=auth,
    )
    assert status == 200, body
    event = {
        "groupId": GARDENING,
        "title": title,
        "startDate": "2099-05-01T10:00:00Z",
        "endDate": "2099-05-01T12:00:00Z",
    }
    status, body = agora.request("POST", "/api/v1/en_US/event", event, headers=auth)
    assert status == 200, body


@pytest.mark.slow
def test_make_run_keeps_its_data_across_restarts_and_reset_starts_from_the_demo(tmp_path):
    data_dir = str(tmp_path / "data")
    first = make_run(data_dir)
    try:
        token = first.login()
        demo_state = state(first, token)
        assert UNAPPROVED in demo_state["unapproved"]
        change_everything(first, token, "Kept after SIGTERM", demo_state["ttl"] + 17)
        status, body = first.request(
            "POST", f"/api/v1/en_US/comment/post/{UNAPPROVED}/approve", headers={"X-Auth": token}
        )
        assert status == 200, body
        changed = state(first, token)
    finally:
        rest = stop_and_wait(first, signal.SIGTERM)
    assert f"data saved in {data_dir}" in rest
    assert changed["ttl"] == demo_state["ttl"] + 17
    assert "Kept after SIGTERM" in changed["events"]
    assert UNAPPROVED not in changed["unapproved"]

    # Started as a CI runner or a supervisor starts a background job, with SIGINT ignored: Ctrl-C
    # (SIGINT to the process group) must still stop it and save.
    second = make_run(data_dir, sigint_ignored=True)
    try:
        assert not any(line.startswith("demo data:") for line in second.output)
        assert any(line.startswith(f"data: restored from {data_dir}") for line in second.output)
        # The token of the first run still signs in: the token secret was kept too.
        assert state(second, token) == changed
        change_everything(second, token, "Kept after Ctrl-C", demo_state["ttl"] + 5)
        changed_again = state(second, token)
    finally:
        rest = stop_and_wait(second, signal.SIGINT)
    assert f"data saved in {data_dir}" in rest

    third = make_run(data_dir)
    try:
        assert state(third, token) == changed_again
        assert {"Kept after SIGTERM", "Kept after Ctrl-C"} <= set(changed_again["events"])
    finally:
        stop_and_wait(third, signal.SIGTERM)

    reset = make_run(data_dir, "RESET=1")
    try:
        assert any(line.startswith("demo data:") for line in reset.output)
        # A new token secret: tokens of the old data no longer sign in.
        status, _ = reset.request(
            "GET", f"/api/v1/en_US/feed/settings/{GARDENING}", headers={"X-Auth": token}
        )
        assert status == 401
        assert state(reset, reset.login()) == demo_state
    finally:
        stop_and_wait(reset, signal.SIGTERM)

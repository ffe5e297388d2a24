"""`make run`'s data folder made by the previous release (`make-run-<commit>/`, left by that
release's own `make run`: tests/upgrade/regenerate.py) opens in this one, with its changes, and
is migrated; a snapshot this moto cannot read is replaced by the export written beside every
snapshot, said in one line; without an export, one line says how to get one."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.running import RunningAgora, free_port, run_module, start_agora
from tests.upgrade.test_upgrade import BASE_URL, PREVIOUS, holds, previous_items

HERE = Path(__file__).resolve().parent
V1 = "/api/v1/en_US"
GARDENING = "076e75e0-7661-51c5-9ccc-8a2b790e771e"
UNAPPROVED = 104  # approved by hand in the previous release's run
NOW_RELATIVE = ("/event/list/upcoming/", "/event/list/expired/")


def previous_folder(tmp_path: Path) -> Path:
    """A copy of the previous release's data folder, with the modes it made (755 and 644)."""
    folder = tmp_path / "data"
    shutil.copytree(HERE / f"make-run-{PREVIOUS}", folder)
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)
    return folder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def stop(agora: RunningAgora) -> None:
    agora.process.send_signal(signal.SIGTERM)
    agora.process.communicate(timeout=60)


def by_id(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(events, key=lambda event: str(event["id"]))


def hand_made_changes(agora: RunningAgora, token: str) -> dict[str, object]:
    auth = {"X-Auth": token}
    _, events = agora.request(
        "GET", f"{V1}/event/list/upcoming/{GARDENING}?pageSize=100", None, auth
    )
    _, waiting = agora.request(
        "GET", f"{V1}/comment/post/list/{GARDENING}/unapproved?pageSize=100", None, auth
    )
    return {
        "event": f"Made by {PREVIOUS}" in {e["title"] for e in events["object"]["events"]},
        "approved": UNAPPROVED not in {c["id"] for c in waiting["object"]["comments"]},
    }


@pytest.mark.slow
def test_the_previous_releases_data_folder_opens_migrated_and_falls_back_to_its_export(tmp_path):
    folder = previous_folder(tmp_path)
    unlisted = sum(
        1
        for item in previous_items()["mail"]
        if item["sk"]["S"].startswith("entry#") and "status_mailbox" not in item
    )
    agora = start_agora({"AGORA_DATA_DIR": str(folder)}, as_a_user=True)
    try:
        output = "".join(agora.output)
        assert f"data: restored from {folder}" in output
        assert "demo data:" not in output
        assert f"migrate: mail-log-status-index: done: {unlisted} item(s) read" in output
        # Private, also what the previous release made world-readable; the export is there.
        assert mode(folder) == 0o700
        assert {p.name: mode(p) for p in folder.iterdir()} == {
            "embedded-aws.pickle": 0o600,
            "token-secret": 0o600,
            "community.json": 0o600,
            "aws-key-pair.json": 0o600,  # made at the first start of this release
            "make-run.lock": 0o600,  # held while it runs: one make run per folder
        }
        token = agora.login()
        assert hand_made_changes(agora, token) == {"event": True, "approved": True}
        # Every read answers as the previous release did, stored mailbox passwords included
        # (its KMS key came back with its data), every mail log filter complete.
        text = (HERE / f"answers-{PREVIOUS}.json").read_text(encoding="utf-8")
        answers = json.loads(text.replace(BASE_URL, agora.base.replace("127.0.0.1", "localhost")))
        # This `make run` answers on today's clock (the in-process test replays the answers at
        # the moment they were taken): which side of now an event falls on is compared there;
        # here each group's upcoming and expired events, together, are the events it had.
        recorded: dict[str, list[dict[str, object]]] = {}
        answered: dict[str, list[dict[str, object]]] = {}
        for path, answer in answers.items():
            status, body = agora.request("GET", path, None, {"X-Auth": token})
            assert status == answer["status"], (path, body)
            if any(part in path for part in NOW_RELATIVE):
                group = path.split("?")[0].rsplit("/", 1)[1]
                aside = {"events": [], "offset": None}  # the list's own, and where it goes on
                holds({**body["object"], **aside}, {**answer["object"], **aside}, path)
                recorded.setdefault(group, []).extend(answer["object"]["events"])
                answered.setdefault(group, []).extend(body["object"]["events"])
                continue
            holds(body["object"], answer["object"], path)
        assert len(recorded) == 8 and sum(map(len, recorded.values())) == 8
        for group, events in recorded.items():
            holds(by_id(answered[group]), by_id(events), f"the events of {group}")
    finally:
        stop(agora)

    # Another moto (or snapshot format) cannot read the snapshot: the export stands in for it.
    (folder / "embedded-aws.pickle").write_bytes(pickle.dumps((1, "0.0.1", [])))
    again = start_agora({"AGORA_DATA_DIR": str(folder)}, as_a_user=True)
    try:
        output = "".join(again.output)
        [said] = [line for line in again.output if line.startswith("make run: ")]
        assert "another version of the embedded AWS (moto 0.0.1" in said
        assert "loading its export community.json instead" in said
        assert f"data: loaded from {folder / 'community.json'}" in output
        assert "demo data:" not in output
        assert (folder / "embedded-aws.pickle.0.0.1").exists()
        assert hand_made_changes(again, again.login()) == {"event": True, "approved": True}
    finally:
        stop(again)


def start_on(folder: Path) -> subprocess.CompletedProcess[str]:
    """make run on `folder`, to its end (it stops before serving here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGORA_", "AWS_"))}
    env |= {
        "AGORA_DATA_DIR": str(folder),
        "AGORA_PORT": str(free_port()),
        "AGORA_AWS_PORT": str(free_port()),
        "PYTHONPATH": str(HERE.parent.parent),
    }
    return run_module("agora_local", env=env)


@pytest.mark.slow
def test_an_unreadable_snapshot_without_an_export_stops_with_the_way_back(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "embedded-aws.pickle").write_bytes(b"\x80\x05not a pickle of this moto")
    result = start_on(folder)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"make run: the data in {folder} was saved by another version")
    assert "`python -m chalicelib.cli export FILE`" in line and "make run RESET=1" in line
    assert (folder / "embedded-aws.pickle").exists()  # kept for the previous release to export


@pytest.mark.slow
def test_an_export_that_cannot_be_loaded_stops_make_run_with_one_line(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "embedded-aws.pickle").write_bytes(pickle.dumps((1, "0.0.1", [])))
    (folder / "community.json").write_text('{"groups": [{"id": "cut short')
    result = start_on(folder)
    assert result.returncode == 1
    *_, line = result.stderr.strip().splitlines()
    assert line.startswith(f"make run: {folder / 'community.json'} cannot be loaded (")
    assert "make run RESET=1" in line and "Traceback" not in result.stderr

"""Schemathesis fuzzes `make run`'s server from its own OpenAPI document with every check, positive
and negative data acceptance included: no 5xx, every answer as documented, every body the document
allows accepted and every body it forbids refused. The one allowance: where a rule on stored state
or between two values (an `offset` naming no item, a taken name, an end date before its start)
refuses schema-valid data, that operation may answer 400, and only with that rule's error
(tests/support/fuzz_hooks.py). Path ids come
from the demo community part of the time (a Schemathesis dictionary), and the stateful phase
follows the document's `links` from each create to the record it made, so the run reaches existing
records rather than 404s. Bounded in examples and time: the coverage phase is off, as it alone
takes minutes on two busy cores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT
from tests.support.running import start_agora

# Schemathesis's own default for the check, to which the operations of STATE_RULES add 400.
POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES = [
    "2xx",
    "3xx",
    "401",
    "403",
    "404",
    "409",
    "429",
    "5xx",
]

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
DEMO_IDS = {
    "groupId": [g["id"] for g in DEMO["groups"]],
    "postId": [p["id"] for p in DEMO["posts"]],
    "userId": [u["id"] for u in DEMO["users"]],
    "playerId": [p["id"] for p in DEMO["players"]],
    "eventId": [e["id"] for e in DEMO["events"]],
    "commentId": [c["id"] for c in DEMO["comments"]],
    "connectorId": [c["id"] for c in DEMO["connectors"]],
}


def config(token: str) -> str:
    """schemathesis.toml: the token, and the demo's ids for path parameters 80% of the time."""
    # Imported here, not at collection: the hooks import Schemathesis (about 1 s of CPU in each
    # pytest process).
    from tests.support.fuzz_hooks import PAGE_REFUSALS, STATE_RULES

    lines = [f'headers = {{ "X-Auth" = "{token}" }}', ""]
    for name, values in DEMO_IDS.items():
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}", ""]
    # The stateful phase follows the document's own links (create -> the record it made) only:
    # the ~200 links Schemathesis infers besides spread its few steps over lists and 404s.
    # Fifty scenarios of up to fifty steps: with five of the default length, whether a create's
    # link reached a PUT that succeeded hung on the one stream the seed gave (uv's venv, whose
    # script gave Hypothesis other constants, followed three links and no PUT).
    lines += ["[phases.stateful]", "inference.algorithms = []", "max-steps = 50"]
    lines += ["generation.max-examples = 50", ""]
    lines.append("[parameters]")
    for name in DEMO_IDS:
        lines.append(f'"path.{name}" = {{ dictionary = "{name}", probability = 0.8 }}')
    # A body's group (an event's) is a demo group as often: creates succeed, links are followed.
    lines.append('"body.groupId" = { dictionary = "groupId", probability = 0.8 }')
    # Where a rule on stored state may refuse valid data with a 400 (fuzz_hooks.STATE_RULES):
    # positive_data_acceptance accepts a 400 there, and `refused_only_for_state` checks its keys.
    accepted = [*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "400"]
    lines += [
        "",
        "[[operations]]",
        f"include-name = {json.dumps(sorted({*STATE_RULES, *PAGE_REFUSALS}))}",
        f"checks.positive_data_acceptance.expected-statuses = {json.dumps(accepted)}",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_fuzzing_every_operation_with_every_check_finds_nothing(tmp_path):
    agora = start_agora()
    try:
        token = agora.login()
        settings = tmp_path / "schemathesis.toml"
        settings.write_text(config(token))
        report = tmp_path / "fuzz.txt"
        reached = tmp_path / "reached.json"
        # Its module, not the venv's `schemathesis` script: Hypothesis draws strings from the
        # constants of every module outside site-packages that is loaded, `__main__` included,
        # and pip's script and uv's hold different ones (uv's names "-script.pyw"), so the
        # same seed generated other data in a venv uv made.
        command = [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(settings),
            "run",
            f"{agora.base}/api/v1/en_US/openapi.json",
            "--url",
            agora.base,
            "--checks",
            "all",
            # AGORA_FUZZ_EXAMPLES raises the examples per operation.
            "--phases",
            "examples,fuzzing,stateful",
            "--max-examples",
            os.environ.get("AGORA_FUZZ_EXAMPLES", "5"),
            "--request-timeout",
            "20",
            "--generation-deterministic",
            "--continue-on-failure",
        ]
        from tests.support.fuzz_hooks import REACHED_FILE

        hooks = {"SCHEMATHESIS_HOOKS": str(REPO_ROOT / "tests" / "support" / "fuzz_hooks.py")}
        env = {**os.environ, **hooks, REACHED_FILE: str(reached), "NO_COLOR": "1"}
        run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
        output = run.stdout + run.stderr
        report.write_text(output)
        tail = output[-8000:]
        assert run.returncode == 0, tail
        assert "ST101" not in run.stdout, tail  # Schemathesis's code for a server error
        # The stateful phase ran and followed links from the creates to their records.
        covered = re.search(r"API Links:\s+(\d+) covered", output)
        assert covered and int(covered.group(1)) >= 4, tail
        # …and reached records: a single-record read or update answered 2xx in that phase.
        stateful = [
            (label, status)
            for phase, label, status in json.loads(reached.read_text())
            if phase == "stateful"
        ]
        succeeded = {label for label, status in stateful if 200 <= status < 300}
        single_record = {
            label
            for label in succeeded
            if label.split()[0] in ("GET", "PUT", "PATCH") and label.endswith("}")
        }
        beyond_404 = {label for label, status in stateful if status != 404}
        print(
            f"stateful: {len(beyond_404)} operations answered other than 404, {len(succeeded)}"
            f" answered 2xx, single-record reads and updates: {sorted(single_record)}"
        )
        # The Done-when: single-record reads and updates answered 200 (GET, PUT).
        assert {"GET", "PUT"} <= {label.split()[0] for label in single_record}, (
            sorted(succeeded),
            tail,
        )
    finally:
        agora.stop()


@pytest.mark.fast
def test_the_state_allowance_passes_only_its_own_errors():
    """A 400 to schema-valid data on a paged list passes only when it says the offset names no
    item; any other error, or any 400 elsewhere, is left to positive_data_acceptance."""
    from types import SimpleNamespace

    from tests.support.fuzz_hooks import refused_only_for_state

    def outcome(label: str, errors: list[dict], positive: bool = True) -> str:
        mode = SimpleNamespace(is_positive=positive)
        case = SimpleNamespace(
            operation=SimpleNamespace(label=label),
            meta=SimpleNamespace(generation=SimpleNamespace(mode=mode)),
        )
        response = SimpleNamespace(status_code=400, json=lambda: {"errors": errors}, text="")
        try:
            refused_only_for_state(None, response, case)
        except AssertionError:
            return "failed"
        return "passed"

    posts = "GET /api/v1/en_US/post/list/{groupId}"
    unknown = {"key": "offset", "message": "no item has this id"}
    malformed = {"key": "offset", "message": "must be a GUID"}
    page_size = {"key": "pageSize", "message": "Input should be less than or equal to 100"}
    assert outcome(posts, [unknown]) == "passed"
    assert outcome(posts, [malformed]) == "failed"
    assert outcome(posts, [unknown, page_size]) == "failed"
    assert outcome(posts, []) == "failed"
    assert outcome(posts, [malformed], positive=False) == "passed"  # negative data: refused
    taken = {"key": "name", "message": "another section already has this name"}
    assert outcome("POST /api/v1/en_US/profile/section", [taken]) == "passed"
    assert outcome("PUT /api/v1/en_US/group-email/{groupId}", [taken]) == "passed"  # built-in's
    # Following a group needs the user's membership of it when it is private (Schemathesis, seed 3).
    follow = "POST /api/v1/en_US/user/{userId}/notifications/group/{notificationId}"
    member = {
        "key": "userRoleId",
        "message": "the user is not a member of the private group 'Staff'",
    }
    assert outcome(follow, [member]) == "passed"
    assert follow in config("token")  # the run lets it answer that 400
    assert outcome(follow, [{"key": "userRoleId", "message": "must be an integer"}]) == "failed"
    # An event with a blank end date lasts all day (allDay true), or is refused so.
    end = {"key": "endDate", "message": "is required unless the event lasts all day (allDay true)"}
    assert outcome("POST /api/v1/en_US/event", [end]) == "passed"
    assert outcome("PUT /api/v1/en_US/event/{eventId}", [end]) == "passed"
    # A CRM connector has no settings, a chat connector has some: the path's connector decides.
    local = "PUT /api/v1/en_US/connector/local/{connectorId}/group/{groupId}"
    crm = {"key": "settings", "message": "the CRM connector has no settings: send an empty object"}
    assert outcome(local, [crm]) == "passed" and local in config("token")
    assert outcome(local, [{"key": "settings.applicationId", "message": "x"}]) == "failed"
    root = "the root group has no parent group to inherit settings from"  # seed 13, 20 examples
    assert outcome(local, [{"key": "inheritSettings", "message": root}]) == "passed"

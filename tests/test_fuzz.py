"""Schemathesis fuzzes `make run`'s server from its own OpenAPI document: no 5xx, and every
response is an envelope matching the document. Bounded in examples and time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.running import start_agora

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.mark.slow
def test_fuzzing_every_operation_finds_no_server_error_and_no_schema_mismatch(tmp_path):
    agora = start_agora()
    try:
        token = agora.login()
        report = tmp_path / "fuzz.txt"
        command = [
            str(Path(sys.executable).parent / "schemathesis"),
            "run",
            f"{agora.base}/api/v1/en_US/openapi.json",
            "--url",
            agora.base,
            "--checks",
            CHECKS,
            "--max-examples",
            os.environ.get("AGORA_FUZZ_EXAMPLES", "5"),
            "--header",
            f"X-Auth: {token}",
            "--request-timeout",
            "20",
            "--generation-deterministic",
            "--continue-on-failure",
        ]
        run = subprocess.run(command, capture_output=True, text=True, timeout=900)
        report.write_text(run.stdout + run.stderr)
        tail = (run.stdout + run.stderr)[-6000:]
        assert run.returncode == 0, tail
        assert "ST101" not in run.stdout, tail  # Schemathesis's code for a server error
    finally:
        agora.stop()

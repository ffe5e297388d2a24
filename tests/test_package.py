"""Reproducible builds: the lock files pin every package with hashes and agree with the pins; the
runtime is pinned; the zip keeps the AWS SDK's description of every service the code calls."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support import REPO_ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a requirements file, following `-r` includes."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("-r "):
            found.update(pins(path.parent / line.split(maxsplit=1)[1]))
        elif match := PIN.match(line):
            found[name(match.group(1))] = match.group(2)
    return found


def locked(path: Path) -> dict[str, tuple[str, int]]:
    """Each locked package: its version and how many hashes it names."""
    entries: dict[str, tuple[str, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        if match := PIN.match(line):
            current = name(match.group(1))
            entries[current] = (match.group(2), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = entries[current]
            entries[current] = (version, hashes + 1)
    return entries


def test_every_pin_is_locked_at_its_version_with_hashes():
    for requirements, lock in (
        ("requirements.txt", "requirements.lock"),
        ("requirements-dev.txt", "requirements-dev.lock"),
    ):
        entries = locked(REPO_ROOT / lock)
        for package, version in pins(REPO_ROOT / requirements).items():
            assert package in entries, f"{package} is not in {lock}: run `make lock`"
            assert entries[package][0] == version, f"{lock} has another {package}: run `make lock`"
        assert all(hashes > 0 for _, hashes in entries.values()), f"{lock} lacks hashes"


def test_lambda_ships_the_versions_the_tests_run_with():
    runtime, dev = (
        locked(REPO_ROOT / "requirements.lock"),
        locked(REPO_ROOT / "requirements-dev.lock"),
    )
    assert "boto3" in runtime and "botocore" in runtime
    for package, (version, _) in runtime.items():
        assert dev[package][0] == version, package


def test_lambda_runtime_is_pinned_to_a_supported_python():
    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    major, minor = config["lambda_runtime"].removeprefix("python").split(".")
    assert (int(major), int(minor)) >= (3, 12)


def test_the_zip_keeps_the_model_of_every_service_the_code_calls():
    from infra.slim_package import SERVICES_CALLED, dropped

    called = {"dynamodb"}  # PynamoDB
    for path in (REPO_ROOT / "chalicelib").rglob("*.py"):
        called |= set(re.findall(r'client\("([a-z0-9-]+)"\)', path.read_text()))
    assert called <= set(SERVICES_CALLED)
    for service in called:
        assert not dropped(f"botocore/data/{service}/2012-08-10/service-2.json.gz")
    assert dropped("botocore/data/ec2/2016-11-15/service-2.json.gz")
    assert not dropped("botocore/data/endpoints.json") and not dropped("boto3/__init__.py")

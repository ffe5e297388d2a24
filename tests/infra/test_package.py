"""Reproducible builds: the lock files pin every package with hashes and agree with the pins; the
runtime is pinned; the zip keeps the AWS SDK's description of every service the code calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.running import on_the_real_clock

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


def test_bytecode_left_by_the_build_machine_is_not_shipped():
    """`make test` writes bytecode while `make package` runs beside it: chalice copies what it
    finds in chalicelib, and the zip grew by 0.8 MB of .pyc files no Lambda reads."""
    from infra.slim_package import dropped

    assert dropped("chalicelib/__pycache__/app.cpython-311.pyc")
    assert dropped("chalicelib/api/__pycache__/posts.cpython-312.pyc")
    assert dropped("__pycache__/app.cpython-311.pyc")
    assert not dropped("chalicelib/api/posts.py") and not dropped("app.py")


@pytest.mark.fast
def test_slimming_drops_no_module_that_agora_s_libraries_load():
    """The text part of a sent mail (inscriptis), a group's RSS feed (feedgen) and the trimming
    of a mailed reply (quotequail) run in a fresh interpreter; every module file they load,
    named as it stands in the zip, is kept."""
    script = """
import sys, sysconfig
from datetime import UTC, datetime
from feedgen.feed import FeedGenerator
import quotequail
from chalicelib.mail.outgoing import mail_text
from chalicelib.mail.replies import trim_reply

mail_text("<p>Hello <a href='https://example.org'>there</a></p><ul><li>one</li></ul>")
trim_reply("Thanks!\\n\\nOn Mon, Ann wrote:\\n> hello")
quotequail.quote_html("<p>Thanks</p><blockquote>hello</blockquote>")
feed = FeedGenerator()
feed.title("t"); feed.link(href="https://example.org"); feed.description("d")
entry = feed.add_entry(); entry.title("p"); entry.link(href="https://example.org/p")
entry.pubDate(datetime(2026, 1, 1, tzinfo=UTC))
feed.rss_str()
site = sysconfig.get_paths()["purelib"] + "/"
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    if path.startswith(site):
        print(path.removeprefix(site))
"""
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    ).stdout.split()
    from infra.slim_package import dropped

    assert any(name.startswith("lxml/etree.") for name in loaded)
    assert any(name.startswith("lxml/html/") for name in loaded)
    assert [name for name in loaded if dropped(name)] == []
    assert dropped("lxml/objectify.cpython-312-x86_64-linux-gnu.so")
    assert dropped("lxml/includes/tree.h") and dropped("lxml/etree.pyx")
    assert not dropped("lxml/etree.cpython-312-x86_64-linux-gnu.so")


def test_slimming_drops_what_agora_never_reads_and_leaves_a_slim_zip_as_it_is(tmp_path):
    import zipfile

    from infra.slim_package import slim

    kept = {"app.py": b"app", "botocore/data/dynamodb/2012-08-10/service-2.json.gz": b"\x1f\x8b"}
    never_read = {
        "botocore/data/ec2/2016-11-15/service-2.json.gz": b"\x00" * 4096,
        "chalicelib/__pycache__/app.cpython-311.pyc": b"\x00" * 100,
    }
    fat, slim_zip = tmp_path / "fat.zip", tmp_path / "slim.zip"
    for path, members in ((fat, kept | never_read), (slim_zip, kept)):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(name, data)

    before, after = slim(fat)
    assert after < before
    with zipfile.ZipFile(fat) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == kept
    written = slim_zip.read_bytes()
    assert slim(slim_zip) == (len(written), len(written))
    assert slim_zip.read_bytes() == written


@pytest.mark.fast
def test_a_module_importing_what_only_make_run_uses_is_found_in_the_zip(tmp_path):
    """`make package` refuses such a zip (infra.slim_package): the zip it wrote before make run's
    code left chalicelib held the embedded AWS, which imports moto in its functions."""
    import zipfile

    from infra.slim_package import local_only_importers

    members = {
        "chalicelib/embedded_aws.py": b"def start():\n    from moto.server import ThreadedMotoServer\n",
        "chalicelib/served.py": b"import werkzeug.serving\n",
        "chalicelib/console/page.py": b"from playwright.sync_api import sync_playwright\n",
        "chalicelib/fine.py": b"import json\n# moto is not imported here\ntext = 'import moto'\n",
        "motor/__init__.py": b"import motoring\n",
        "chalicelib/data.txt": b"import moto\n",
    }
    path = tmp_path / "deployment.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    assert sorted(local_only_importers(path)) == [
        "chalicelib/console/page.py",
        "chalicelib/embedded_aws.py",
        "chalicelib/served.py",
    ]


# ELF e_machine (bytes 18-19, little-endian): what a compiled module runs on.
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def elf_machine(header: bytes) -> str | None:
    if header[:4] != b"\x7fELF":
        return None
    return ELF_MACHINES.get(int.from_bytes(header[18:20], "little"), "other")


@pytest.mark.fast
def test_elf_machine_reads_the_header():
    header = b"\x7fELF" + bytes(14)
    assert elf_machine(header + (183).to_bytes(2, "little")) == "aarch64"
    assert elf_machine(header + (62).to_bytes(2, "little")) == "x86_64"
    assert elf_machine(b"#!/bin/sh\n" + bytes(10)) is None


@pytest.mark.slow
def test_arm64_package_ships_aarch64_wheels_and_arm64_functions(tmp_path):
    """`make package ARCH=arm64`'s step: the zip from requirements-arm64.lock, every compiled
    module built for aarch64 (read from its ELF header), every function on arm64."""
    import subprocess
    import sys
    import zipfile

    from infra import yaml_text

    out = tmp_path / "package"
    done = subprocess.run(
        [sys.executable, "-m", "infra.package", "--arch", "arm64", "--stage", "dev"]
        + ["--merge-template", "infra/dev.yaml", str(out)],
        cwd=REPO_ROOT,
        # uv fetches the aarch64 wheels from PyPI: on the real clock, its TLS check passes.
        env=on_the_real_clock(
            {**os.environ, "PYTHONPATH": str(REPO_ROOT), "AWS_DEFAULT_REGION": "us-east-1"}
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    machines: dict[str, list[str]] = {}
    with zipfile.ZipFile(out / "deployment.zip") as archive:
        for name in archive.namelist():
            if name.endswith(".so") or ".so." in name.rsplit("/", 1)[-1]:
                with archive.open(name) as module:
                    machine = elf_machine(module.read(20))
                if machine:
                    machines.setdefault(machine, []).append(name)
    assert set(machines) == {"aarch64"}, {k: v[:3] for k, v in machines.items()}
    assert any("pydantic_core" in name for name in machines["aarch64"])
    # infra.package writes the zip without what slimming would drop (infra.slim_package), with
    # Agora's code and the service descriptions it calls.
    from infra.slim_package import dropped

    with zipfile.ZipFile(out / "deployment.zip") as archive:
        names = archive.namelist()
    assert [name for name in names if dropped(name)] == []
    # make run's code (agora_local) stays out: nothing in the zip imports moto, werkzeug or
    # playwright (the x86_64 zip has the same modules: `make package` checks it the same way).
    from infra.slim_package import local_only_importers

    assert local_only_importers(out / "deployment.zip") == []
    assert not any(name.startswith("agora_local/") for name in names)
    assert {"app.py", "chalicelib/services/console.py", "botocore/data/endpoints.json"} <= set(
        names
    )
    assert any(name.startswith("botocore/data/dynamodb/") for name in names)
    template = yaml_text.load((out / "sam.yaml").read_text())
    architectures = {
        tuple(r["Properties"]["Architectures"])
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Serverless::Function"
    }
    assert architectures == {("arm64",)}


def test_arm64_lock_pins_the_same_versions_as_the_x86_64_lock():
    x86, arm = (
        locked(REPO_ROOT / "requirements.lock"),
        locked(REPO_ROOT / "requirements-arm64.lock"),
    )
    for package, (version, _) in x86.items():
        assert arm.get(package, (None,))[0] == version, f"{package}: run `make lock`"
    for package, version in pins(REPO_ROOT / "requirements.txt").items():
        assert arm.get(package, (None,))[0] == version, f"{package}: run `make lock`"


@pytest.mark.fast
def test_the_installer_s_bookkeeping_stays_out_of_the_zip(tmp_path):
    """uv leaves a `.lock` in the folder it installs into, infra.package its stamp: neither is
    shipped, nor the scripts and bytecode of the installed packages; their modules are."""
    import zipfile

    from infra.package import add_to_zip

    installed = tmp_path / "dependencies"
    files = {
        ".lock": "",
        ".installed-from": "python3.12 x86_64 0",
        "bin/dkimsign": "#!/usr/bin/python\n",
        "feedgen/__pycache__/feed.cpython-311.pyc": "",
        "feedgen/feed.py": "feed = 1\n",
        "feedgen-1.0.0.dist-info/RECORD": "feedgen/feed.py,,\n",
    }
    for name, text in files.items():
        (installed / name).parent.mkdir(parents=True, exist_ok=True)
        (installed / name).write_text(text)
    zipped = tmp_path / "deployment.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("app.py", "app = 1\n")
    add_to_zip(zipped, installed)
    with zipfile.ZipFile(zipped) as archive:
        assert sorted(archive.namelist()) == [
            "app.py",
            "feedgen-1.0.0.dist-info/RECORD",
            "feedgen/feed.py",
        ]


@pytest.mark.fast
def test_a_venv_without_uv_is_told_so_and_nothing_is_removed(tmp_path):
    """The dependencies are installed by the venv's uv: a Python without one beside it stops
    with the reason, and the folder installed before is left as it was."""
    root = tmp_path / "repo"
    (root / "infra").mkdir(parents=True)
    (root / "infra" / "package.py").write_text((REPO_ROOT / "infra" / "package.py").read_text())
    (root / "requirements.lock").write_text("six==1.17.0\n")
    earlier = root / "build" / "lambda-dependencies" / "six.py"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("# installed before\n")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    done = subprocess.run(
        [str(python), "-c", "from infra.package import install_dependencies as i; i('python3.12')"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    missing = f"{python.with_name('uv')} is missing: `make` installs it in the venv"
    assert done.stderr.strip() == missing
    assert earlier.read_text() == "# installed before\n"

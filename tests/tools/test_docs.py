"""The front page and the manual (issue 51): README is a front page that links into docs/, and
`make docs` builds docs/ with MkDocs strictly, so a broken link or anchor fails the build."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(config),
            "--site-dir",
            str(site),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )


def test_the_manual_builds_strictly_with_every_page_in_its_nav(tmp_path):
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True
    assert config["site_dir"] == "build/docs"
    assert config["use_directory_urls"] is False  # opened from disk, a link opens its page
    nav_pages = {next(iter(entry.values())) for entry in config["nav"]}
    assert nav_pages == {p.name for p in DOCS.glob("*.md")}
    built = mkdocs_build(REPO_ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "index.html").exists()
    # Every link of the home page names a file the site holds, as a browser on file:// needs
    # (running.html, not running/, which opens a directory listing there).
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    pages = re.findall(r'href="([a-z-]+\.html)(?:#[^"]*)?"', home)
    assert "running.html" in pages and "cli.html" in pages
    assert [page for page in pages if not (tmp_path / "site" / page).exists()] == []
    assert re.findall(r'href="([a-z-]+/)(?:#[^"]*)?"', home) == []
    assert (tmp_path / "site" / "console-moderation.png").exists()
    # The README's tour is a page of the manual (mkdocs_hooks.py), its links the site's own files.
    tour = (tmp_path / "site" / "tour.html").read_text(encoding="utf-8")
    assert "security/login" in tour and "Tomatoes ripening early this year" in tour
    linked = re.findall(r'(?:href|src)="([a-z-]+\.(?:html|png))(?:#[^"]*)?"', tour)
    assert "mail.html" in linked and "console-moderation.png" in linked
    assert [page for page in linked if not (tmp_path / "site" / page).exists()] == []


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md#nowhere).\n")
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}])
    config["hooks"] = [str(REPO_ROOT / hook) for hook in config.get("hooks", [])]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    built = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "missing.md" in built.stderr


@pytest.mark.fast
def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert len(list(DOCS.glob("*.md"))) >= 5
    for sections in ("## Two commands", "## A five-minute tour", "## Where to read on"):
        assert sections in text
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "README links into docs/"
    assert [t for t in local if not (REPO_ROOT / t).exists()] == []


def fixture_field_names(model: type, seen: set[type] | None = None) -> set[str]:
    """Every key a fixture file may hold, by its name in the file, nested records included."""
    import typing

    from pydantic import BaseModel

    seen = seen if seen is not None else set()
    seen.add(model)
    names: set[str] = set()
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        names.add(info.alias or name)
        pending = [info.annotation]
        while pending:
            kind = pending.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel) and kind not in seen:
                names |= fixture_field_names(kind, seen)
            pending.extend(typing.get_args(kind))
    return names


@pytest.mark.fast
def test_the_manual_describes_every_field_of_the_fixture_file():
    """A clone has no other description of the format `load` reads (docs/cli.md, issue 56)."""
    from chalicelib.schemas.fixture import Fixture

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = page.split("## The fixture file", 1)[1]
    named = set(re.findall(r"`([A-Za-z]+)`", section))
    assert fixture_field_names(Fixture) - named == set()


@pytest.mark.fast
def test_the_readme_and_the_manual_name_nothing_outside_the_repository():
    """A clone made anywhere has no ../shared beside it: no page sends the reader there."""
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert "../shared/spec" not in text and "../shared/design" not in text, page.name
        assert not re.search(r"CONTRACT(\.md| §)", text), page.name


# CONTRACT §2's variables (the contract lives outside the repository): the page names each.
CONTRACT_VARIABLES = (
    "AWS_ENDPOINT_URL AGORA_TABLE_PREFIX AGORA_TOKEN_SECRET AGORA_BASE_URL AGORA_PORT "
    "AGORA_AWS_PORT AGORA_KMS_KEY_ID AWS_DEFAULT_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY "
    "SSL_CERT_FILE AGORA_MAIL_AUTHSERV_ID AGORA_GAME_LEVEL_BASE AGORA_GAME_LEVEL_EXPONENT "
    "AGORA_CORS_ORIGINS AGORA_LOG_LEVEL AGORA_EVENT_BUS AGORA_MAIL_SENDER "
    "AGORA_MAIL_ALLOW_PRIVATE_HOSTS AGORA_MAIL_AUTH AGORA_DNS_SERVERS AGORA_MAIL_UNVERIFIED "
    "AGORA_MAIL_POLL_MAX_MINUTES AGORA_MAIL_INBOUND_DOMAIN AGORA_SMTP_PORT AGORA_MAIL_SEND_RATE"
).split()


@pytest.mark.fast
def test_the_configuration_page_names_every_variable_agora_reads():
    """docs/configuration.md says "every environment variable": every setting settings.py reads
    (AGORA_ and its field's name) and every variable of CONTRACT §2 has its row."""
    from chalicelib.settings import ENV_PREFIX, Settings

    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", page))
    read = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    assert read - rows == set()
    assert set(CONTRACT_VARIABLES) - rows == set()


@pytest.mark.fast
def test_the_consoles_size_in_the_manual_is_what_its_files_measure():
    """docs/running.md's "about N KB, M KB compressed" within a fifth of the files' sizes, raw
    and gzipped one by one as a server compresses them (it said 75 KB once the files were 110)."""
    import gzip

    page = (DOCS / "running.md").read_text(encoding="utf-8")
    said = re.search(r"about (\d+) KB,\s+(\d+) KB compressed", page)
    assert said, "docs/running.md gives the console's size"
    files = [f for f in (REPO_ROOT / "chalicelib" / "console").iterdir() if f.is_file()]
    raw = sum(len(f.read_bytes()) for f in files) / 1000
    packed = sum(len(gzip.compress(f.read_bytes(), 6)) for f in files) / 1000
    assert abs(int(said.group(1)) - raw) <= raw / 5, f"{raw:.1f} KB"
    assert abs(int(said.group(2)) - packed) <= packed / 5, f"{packed:.1f} KB compressed"


@pytest.mark.fast
def test_every_make_target_is_in_the_development_page_and_the_benchmarks_in_the_readme():
    """docs/development.md lists "every other target"; `make simulate` and `make load` were
    missing there, and simulate from the README's line about the benchmarks."""
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    targets = re.search(r"^\.PHONY:(.*)$", makefile, re.MULTILINE).group(1).split()
    page = (DOCS / "development.md").read_text(encoding="utf-8")
    assert [t for t in targets if not re.search(rf"`make {t}\b", page)] == []
    benchmarks = next(line for line in README.read_text().splitlines() if "benchmarks.md" in line)
    assert [t for t in ("bench", "load", "scale", "simulate", "cost") if t not in benchmarks] == []


@pytest.mark.fast
def test_the_ses_quota_sizing_in_deploy_md_is_what_the_bench_measured():
    """docs/deploy.md sizes the SES quota from `make simulate`'s digest day and `make cost`'s
    all-digest month, typed into the page: its seconds, its rate and its mails a day are the
    ones bench/results.json and docs/benchmarks.md's cost table hold, and the quota it asks for
    is 1.5 times that day (it said 150,000 beside a day of 113,000)."""
    import json

    page = (DOCS / "deploy.md").read_text(encoding="utf-8")
    said = re.search(
        r"sends 100,000 digests in ([\d,]+) s at up\s+to (\d+) a second.*?sends about "
        r"([\d,]+) mails a day.*?1\.5 times your own day \(([\d,]+) at 100,000 members\)",
        page,
        re.DOTALL,
    )
    assert said, "docs/deploy.md sizes the SES quota"
    seconds, rate, daily, quota = (int(group.replace(",", "")) for group in said.groups())
    results = json.loads((REPO_ROOT / "bench" / "results.json").read_text(encoding="utf-8"))
    measured = {f["name"]: f["value"] for f in results["figures"]}
    assert seconds == round(measured["digest_100k_s"])
    assert rate == round(measured["digest_100k_peak_rate"])
    costs = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    [row] = [line for line in costs.splitlines() if line.startswith("| mails sent |")]
    all_digests_a_month = int(row.strip(" |").rsplit("|", 1)[1].strip().replace(",", ""))
    assert daily == round(all_digests_a_month / 30, -3), all_digests_a_month
    assert quota == round(1.5 * daily, -4), daily

"""One `make run` and one Chromium for the console's browser tests (Debian's, launched by path)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.running import REPO_ROOT, RunningAgora, start_agora

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
# Screenshots for people to look at; build/ is git-ignored.
SCREENSHOTS = REPO_ROOT / "build" / "console-screenshots"


@pytest.fixture(scope="session")
def agora() -> Iterator[RunningAgora]:
    running = start_agora()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs Debian's chromium package")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"the console raised in the browser: {errors}"


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not AXE.exists():
        pytest.fail("axe-core is missing: `make test` installs it (npm ci)")
    # Evaluated through the DevTools protocol, which the console's CSP (no inline script) allows.
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate("async () => await axe.run(document)")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]

"""One `make run`, one Chromium and one browser tab for the console's browser tests (Debian's
Chromium, launched by path)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.support.running import REPO_ROOT, RunningAgora, start_agora

AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
# Screenshots for people to look at; build/ is git-ignored.
SCREENSHOTS = REPO_ROOT / "build" / "console-screenshots"


# Module-wide, not session-wide: the browser tests are one module, and what it started ends with
# its last test instead of idling (an idle `make run` still runs its schedule) to the session's end.
@pytest.fixture(scope="module")
def agora() -> Iterator[RunningAgora]:
    running = start_agora()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs Debian's chromium package")
    with sync_playwright() as playwright:
        # One renderer process for each site (--process-per-site): each test's new tab is drawn
        # by the process that drew the console before, instead of a new one (starting a renderer
        # cost about a second of CPU a test). It changes which process runs a page, not what
        # the page does.
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--process-per-site"]
        )
        yield browser
        browser.close()


class Tab:
    """The browser tab a test drives: a new tab for each test, so that nothing one test left in
    its document (a timer, a request in flight, the page it ended on) or in its session storage
    (the console keeps its token there) reaches the next.

    The tabs share one browser context (its local storage, cookies and HTTP cache: the console
    keeps nothing in them, and the sign-in test checks that local storage stays empty). A test's
    tab leaves the console when the next test starts (its document ends, and with it its timers
    and requests) and stays open, on a static file of the console's site, until the test after
    that: it keeps the site's renderer process alive for the next tab (`browser`). One tab
    reused for all tests once let the event form test find the calendar without its form: a
    link followed while the first page's module loaded, whose page was then drawn over the
    newer one (fixed in app.js `route`, and tested)."""

    def __init__(self, browser, base: str) -> None:
        self.browser = browser
        self.base = base
        self.context = None
        self.page = None
        self.keeper = None

    def fresh(self):
        """A new tab with empty session storage."""
        if self.context is None:
            self.context = self.browser.new_context(
                viewport={"width": 1280, "height": 900}, locale="en-GB"
            )
        if self.page is not None:
            # Away from the console: what the last test left in its document ends here.
            self.page.goto(f"{self.base}/console/favicon.svg")
        if self.keeper is not None:
            self.keeper.close()
        self.keeper, self.page = self.page, self.context.new_page()
        return self.page

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
        self.context = self.page = self.keeper = None


@pytest.fixture(scope="module")
def tab(browser, agora) -> Iterator[Tab]:
    shared = Tab(browser, agora.base)
    yield shared
    shared.close()


@pytest.fixture
def page(tab):
    """A new tab, its storage empty (no token): the test opens the console in it, signed in or
    not (test_console.py `sign_in`)."""
    page = tab.fresh()
    errors: list[str] = []

    def record(error) -> None:
        errors.append(str(error))

    page.on("pageerror", record)
    yield page
    page.remove_listener("pageerror", record)
    assert errors == [], f"the console raised in the browser: {errors}"


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@functools.cache
def _axe_source() -> str:
    if not AXE.exists():
        pytest.fail("axe-core is missing: `make test` installs it (npm ci)")
    return AXE.read_text(encoding="utf-8")


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now."""
    # Evaluated through the DevTools protocol, which the console's CSP (no inline script) allows;
    # once a document (the console changes pages without loading another).
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    # Only the violations are reported in full: the passes' details are not read. The console's
    # frames (the sandboxed previews on Settings) run no script, so axe cannot be put in them:
    # it waited half a second for an answer from each before leaving it out, as `iframes: false`
    # leaves it out at once (the frame elements themselves are still checked).
    options = "{resultTypes: ['violations'], iframes: false}"
    result = page.evaluate(f"async () => await axe.run(document, {options})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]

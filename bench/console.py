"""The console's first page: from opening `/console/` to a loaded moderation list, in Chromium.

`make run`'s server with the demo data (tests/support/running.py), Debian's Chromium driven by
Playwright as the console tests drive it (a fresh browser context each time: nothing cached).
A measure opens the sign-in screen, signs the root administrator in and waits until the first
group's Unapproved list shows its comments (or says it is empty). The reference makes the same
HTTP calls the page needs (the page itself, sign-in, the session, the first list page) from
Python, one after the other: the ratio is what the browser and the console add to the API's work.
Sign-in hashes a password slowly on purpose, in both.

Each measure in the browser is followed by one from Python, and each side's figure is the median
of its runs: the two see the same machine, however busy (run one side after the other, a load that
came or went between them moved the ratio by itself).

The browser is asked to do only what a person's browser would do for the page: Chromium builds its
own omnibox popup (chrome://omnibox-popup.top-chrome, some 400 files and half a second of CPU) in
every new window, which on this machine ran beside the typing and the sign-in's hash
(tests/support/chromium.py turns it off), and the measure waits for the list without polling at
every frame (a MutationObserver in the page answers when the list shows; rAF polling kept the tab
drawing frames while the password was hashed).

`make bench` runs it with the rest; `python -m bench.console` runs it alone against a `make run`
of its own and writes its figure into bench/results.json (the others stay as they were).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.report import Figure, machine_description, merge_results, skipped, text_table
from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS

NAMES = [("console_first_page", "ms")]
RUNS = 5
SETTLE = 1.0
LIST_LOADED = "ul.comments li.comment, main p.empty:not([hidden])"
# Answers at the frame that draws the first element the selector finds shown (as Playwright's
# `to_be_visible`), looked at after each change to the document: no polling while nothing changes,
# and the same moment as looking at every frame.
LIST_SHOWN = """(selector) => new Promise((resolve, reject) => {
  const shown = () => document.querySelector(selector)?.checkVisibility() === true;
  const drawn = () => requestAnimationFrame(() => resolve(true));
  if (shown()) return drawn();
  const watcher = new MutationObserver(() => {
    if (!shown()) return;
    watcher.disconnect();
    clearTimeout(timer);
    drawn();
  });
  const timer = setTimeout(() => {
    watcher.disconnect();
    reject(new Error(`${selector} was not shown within 30 seconds`));
  }, 30000);
  watcher.observe(document, { subtree: true, childList: true, attributes: true });
})"""


def console_figures() -> list[Figure]:
    if not Path(CHROMIUM).exists():
        return skipped(NAMES, "Chromium is missing (`make test` installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    from tests.support.running import start_agora

    running = start_agora()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                browser_ms, api_ms = _medians(
                    lambda: _browser_run(browser, running), lambda: _api_run(running)
                )
            finally:
                browser.close()
    finally:
        running.stop()
    return [Figure("console_first_page", browser_ms, api_ms, "ms")]


def _medians(*sides: Callable[[], float]) -> list[float]:
    """Each side's median of RUNS, the sides taking turns (same machine, same moment), each run
    SETTLE seconds after the last: a closed browser context still takes tens of ms of CPU to
    tear down, which would otherwise slow the Python run after it."""
    for run in sides:
        run()  # warm-up: the server's first requests import what they need
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(RUNS):
        for run, taken in zip(sides, times, strict=True):
            time.sleep(SETTLE)
            taken.append(run())
    return [statistics.median(taken) for taken in times]


def _browser_run(browser: Any, running: Any) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    try:
        page = context.new_page()
        started = time.perf_counter()
        page.goto(f"{running.base}/console/")
        page.get_by_label("Email").fill(running.admin_email)
        page.get_by_label("Password").fill(running.admin_password)
        page.get_by_role("button", name="Sign in").click()
        # Answered by the page when the list shows: Playwright's `expect` looks again after 100,
        # 250, 500 and 1,000 ms, so a list shown at 400 ms after the click was measured at
        # 850 ms, the wait's schedule rather than the console's.
        page.evaluate(LIST_SHOWN, LIST_LOADED)
        return (time.perf_counter() - started) * 1000
    finally:
        context.close()


def _api_run(running: Any) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(f"{running.base}/console/", timeout=30) as response:
        response.read()
    token = running.login()
    headers = {"X-Auth": token}
    status, session = running.request("GET", "/console/api/session", headers=headers)
    assert status == 200, session
    group = next(g for g in session["object"]["groups"] if g["mayModerate"])
    status, page = running.request(
        "GET",
        f"/api/v1/en_US/comment/post/list/{group['id']}/unapproved?pageSize=15",
        headers=headers,
    )
    assert status == 200, page
    return (time.perf_counter() - started) * 1000


def main() -> int:
    from datetime import UTC, datetime

    from bench.report import agora_logs_to_file

    agora_logs_to_file("console.log")
    figures = console_figures()
    # Run alone, it says how busy the machine was: a slow sign-in (the password hash, on
    # both sides) makes the ratio smaller than on an idle machine.
    load = os.getloadavg()[0]
    figures = [
        replace(f, note=f"measured alone (python -m bench.console), load average {load:.1f}")
        for f in figures
    ]
    print(text_table(figures))
    if any(figure.value is None for figure in figures):
        return 1
    merge_results(figures, datetime.now(UTC).date(), machine_description())
    print("wrote bench/results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

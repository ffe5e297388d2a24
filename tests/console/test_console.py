"""The administrators' console in real Chromium against `make run` (issue 20's Must show)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from chalicelib.sanitize import search_key
from tests.console.conftest import axe_violations, screenshot

pytestmark = pytest.mark.slow

# A year whose dates are upcoming whatever the day (the suite runs years ahead too).
LATER = datetime.now(UTC).year + 2
GARDENING = "076e75e0-7661-51c5-9ccc-8a2b790e771e"
SEED_SWAP = "0ab40bcc-5f9b-565b-97d6-7707568dbdfb"
ANN = ("ann@agora.example", "agora-demo-admin")
MIA = ("mia@agora.example", "agora-demo-mia")
GUS = ("gus@agora.example", "agora-demo-gus")
TOKEN_KEY = "agora.console.token"
NAV = [
    "Moderation",
    "Events",
    "Settings",
    "Mail log",
    "Profile fields",
    "Notifications",
    "Activity",
]


def sign_in(page, agora, who=ANN) -> None:
    """The console opened in the tab as the sign-in form leaves it: `who`'s token in the tab's
    session storage before the console's scripts run. A sign-in costs a slow password check, so
    each person signs in once for the whole module (`token`); the form itself is driven by the
    tests that are about signing in (`sign_in_with_the_form`)."""
    origin, key, value = (json.dumps(v) for v in (agora.base, TOKEN_KEY, token(agora, who)))
    script = f"if (location.origin === {origin}) sessionStorage.setItem({key}, {value});"
    # Only for this page load: a reload afterwards finds what the console left in the storage.
    with page.add_init_script(script):
        page.goto(f"{agora.base}/console/")
    shown(page)


def sign_in_with_the_form(page, who) -> None:
    """Signed in through the console's own form (on its sign-in page)."""
    page.get_by_label("Email").fill(who[0])
    page.get_by_label("Password").fill(who[1])
    page.get_by_role("button", name="Sign in").click()
    shown(page)


def shown(page) -> None:
    """The console signed in and its first page drawn, before the test goes elsewhere (a page
    whose module arrives late is not drawn over a later one: the test of app.js `route` below)."""
    expect(page.get_by_role("navigation", name="Console")).to_be_visible()
    expect(page.locator("#main > .loading")).to_have_count(0)


_TOKENS: dict[tuple[str, str], str] = {}


def token(agora, who=ANN) -> str:
    # One sign-in per user for the module's API checks and browser tabs: each costs a slow
    # password hash.
    if (agora.base, who[0]) not in _TOKENS:
        status, body = agora.request(
            "POST", "/api/v1/en_US/security/login", {"email": who[0], "password": who[1]}
        )
        assert status == 200, body
        _TOKENS[agora.base, who[0]] = body["object"]
    return _TOKENS[agora.base, who[0]]


def api(agora, method, path, body=None, who=ANN):
    return agora.request(method, f"/api/v1/en_US/{path}", body, {"X-Auth": token(agora, who)})


def listed(agora, path: str) -> list[int]:
    """The ids of the comments a list answers (asked as Ann)."""
    status, body = api(agora, "GET", path)
    assert status == 200, body
    return [c["id"] for c in body["object"]["comments"]]


def moderate(page, comment, button: str, announced: str) -> None:
    """Press `button` on a comment's row: the status line says `announced` and the row leaves."""
    comment.get_by_role("button", name=button).click()
    expect(page.locator("#status")).to_contain_text(announced)
    expect(comment).to_have_count(0)


def open_page(page, name: str) -> None:
    """Open a console page from the navigation and wait until it is drawn: until then the page
    before it (whose group chooser is labelled "Group" too) may still be what the locators find."""
    page.get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", level=1, name=name)).to_be_visible()


def choose_group(page, name: str) -> None:
    """Choose a group by its name (its option is indented by its depth in the tree)."""
    chooser = page.get_by_label("Group", exact=True)
    option = chooser.locator("option").filter(has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    value = option.get_attribute("value")
    chooser.select_option(value)
    expect(chooser).to_have_value(value)


def test_root_administrator_signs_in_sees_every_page_and_is_signed_out_by_an_expired_token(
    agora, page
):
    """The sign-in form, every page of the console (each with its heading, none left loading, no
    request failing but the wrong password's), the icon, signing out, and an expired token."""
    failed: list[str] = []

    def record(response) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    page.on("response", record)
    assert f"Console:            {agora.base}/console/\n" in agora.output
    page.goto(f"{agora.base}/console/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    screenshot(page, "sign-in")
    assert axe_violations(page) == []
    page.get_by_label("Email").fill(ANN[0])
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).not_to_be_empty()
    expect(page.get_by_role("navigation", name="Console")).to_be_hidden()

    # Signed in, the first page asks the API for the session and its own list, nothing else.
    asked: list[str] = []

    def ask(request) -> None:
        asked.append(f"{request.method} {request.url}")

    page.on("request", ask)
    page.get_by_label("Password").fill(ANN[1])
    page.get_by_role("button", name="Sign in").click()
    nav = page.get_by_role("navigation", name="Console")
    expect(nav.get_by_role("link")).to_have_text(NAV)
    expect(page.locator("ul.comments li.comment, main p.empty:not([hidden])").first).to_be_visible()
    page.remove_listener("request", ask)
    opened = page.get_by_label("Group", exact=True).input_value()
    # The list may be asked again, for its next page, while the window shows its end.
    read = [re.sub(r"\?.*", "", a.replace(agora.base, "")) for a in asked if "/api/" in a]
    assert read[:3] == [
        "POST /api/v1/en_US/security/login",
        "GET /console/api/session",
        f"GET /api/v1/en_US/comment/post/list/{opened}/unapproved",
    ], asked
    assert set(read[3:]) <= {read[2]}, asked
    # The token lives in this tab's session storage only.
    assert page.evaluate("() => localStorage.length") == 0
    assert page.evaluate("() => Object.keys(sessionStorage)") == ["agora.console.token"]

    # Every page opens, with an icon, and no request fails (but the wrong password's sign-in).
    for name in NAV:
        page.get_by_role("link", name=name).click()
        expect(page.get_by_role("heading", level=1, name=name)).to_be_visible()
        expect(page.locator(".loading")).to_have_count(0)
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert icon
    for path in (f"/console/{icon}", "/console/favicon.ico"):
        answer = page.request.get(agora.base + path)
        assert answer.status == 200, path
        assert answer.headers["content-type"] == "image/svg+xml"
        assert answer.body().startswith(b"<svg")
    page.remove_listener("response", record)
    assert [f.split(" ", 1)[0] for f in failed] == ["401"], failed
    assert failed[0].endswith("/api/v1/en_US/security/login"), failed

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0

    # A token whose `exp` has passed (the API would refuse it too): the console asks to sign in again.
    page.evaluate(
        """() => {
        const claims = btoa(JSON.stringify({sub: "x", exp: 1})).replace(/=+$/, "");
        sessionStorage.setItem("agora.console.token", "e30." + claims + ".sig");
    }"""
    )
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text("Your session has expired. Sign in again.")
    assert page.evaluate("() => sessionStorage.length") == 0


# A comment as mail-in stores one it held because its sender was not verified (issue 47).
SEED_HELD_COMMENT = """
import json, sys
from datetime import UTC, datetime
from chalicelib.store.comments import CommentRepository

post_id, group_id = sys.argv[1:3]
users = json.load(open("demo/community.json", encoding="utf-8"))["users"]
mia = next(u for u in users if u["email"] == "mia@agora.example")
CommentRepository().insert(
    author_alias=mia["alias"], id=9001, post_id=post_id, group_id=group_id, author_id=mia["id"],
    content="<p>Signed by nobody.</p>", created_on=datetime.now(UTC), is_approved=False,
    source="email", held_because="sender not verified: example.org publishes no DMARC policy",
)
"""


def test_moderation_approves_asks_before_a_bulk_delete_clears_reports_and_purges(agora, page):
    """Gardening Club's Moderation page, one tab after another: a comment held because its
    sender was not verified says so and why; approving a comment moves it out of Unapproved; the
    bulk delete asks first and a refusal changes nothing; the tabs work from the keyboard and a
    comment's spam reports are cleared; a deleted comment is purged for good and another
    undeleted."""
    import os
    import subprocess
    import sys

    from bench.admin_load import aws_environment
    from tests.support.running import REPO_ROOT

    env = {**os.environ, **aws_environment(agora.output), "PYTHONPATH": str(REPO_ROOT)}
    seed = [sys.executable, "-c", SEED_HELD_COMMENT, SEED_SWAP, GARDENING]
    subprocess.run(seed, env=env, check=True, cwd=REPO_ROOT)
    sign_in(page, agora)
    open_page(page, "Moderation")
    choose_group(page, "Gardening Club")
    expect(page.get_by_role("tab", name="Unapproved")).to_have_attribute("aria-selected", "true")
    expect(page.locator('li[data-comment-id="9001"] .unverified')).to_have_text(
        "Not verified: example.org publishes no DMARC policy"
    )
    comment = page.locator('li[data-comment-id="104"]')
    expect(comment).to_contain_text("Author")
    expect(comment.locator(".unverified")).to_have_count(0)
    screenshot(page, "moderation")
    assert axe_violations(page) == []

    moderate(page, comment, "Approve comment 104", "Comment 104 approved.")

    assert 104 not in listed(agora, f"comment/post/list/{GARDENING}/unapproved")
    status, body = api(agora, "GET", f"post/{SEED_SWAP}/comments?pageSize=100")
    approved = {c["id"]: c for c in body["object"]["comments"]}
    assert status == 200 and approved[104]["isApproved"] is True and approved[104]["approvedOn"]

    # The bulk delete asks first, and a refusal changes nothing.
    page.get_by_role("button", name="Delete all unapproved").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Delete every unapproved comment")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("#status")).to_contain_text("Nothing was deleted.")
    assert 105 in listed(agora, f"comment/post/list/{GARDENING}/unapproved")

    # The tabs work from the keyboard: arrow keys move the selection.
    page.get_by_role("tab", name="Unapproved").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Spam reports")).to_be_focused()
    expect(page.get_by_role("tab", name="Spam reports")).to_have_attribute("aria-selected", "true")
    reported = page.locator('li[data-comment-id="106"]')
    expect(reported).to_be_visible()
    screenshot(page, "moderation-spam")
    moderate(page, reported, "Clear reports comment 106", "Spam reports of comment 106 cleared.")
    assert 106 not in listed(agora, f"comment/post/list/{GARDENING}/spam-reports")

    # A deleted comment purged is gone for good; another is undeleted.
    page.get_by_role("tab", name="Deleted").click()
    comment = page.locator('li[data-comment-id="108"]')
    expect(comment.locator(".state")).to_have_text("Deleted")
    screenshot(page, "moderation-deleted")

    moderate(page, comment, "Purge comment 108", "Comment 108 purged for good.")

    assert 108 not in listed(agora, f"comment/post/list/{GARDENING}/deleted?pageSize=100")
    status, body = api(agora, "POST", "comment/post/108/undelete")
    assert status == 404, body

    moderate(page, page.locator('li[data-comment-id="107"]'), "Undelete", "Comment 107 undeleted.")
    assert 107 in listed(agora, f"post/{SEED_SWAP}/comments?pageSize=100")


def test_a_moderator_sees_neither_settings_nor_other_groups(agora, page):
    page.goto(f"{agora.base}/console/")
    sign_in_with_the_form(page, MIA)
    nav = page.get_by_role("navigation", name="Console")
    expect(nav.get_by_role("link")).to_have_text(["Moderation", "Events"])
    options = page.get_by_label("Group", exact=True).locator("option")
    expect(options).to_have_text(["Gardening Club", "Photography"])
    # Typing the address of Settings does not show it either.
    page.goto(f"{agora.base}/console/#/settings")
    expect(page.get_by_role("main")).to_contain_text("Your account may not use this page.")
    expect(page.get_by_role("button", name=re.compile("Save"))).to_have_count(0)


def this_month(day: int, hour: int) -> str:
    """An instant on a day of the current month, which the calendar opens on."""
    return f"{datetime.now(UTC):%Y-%m}-{day:02d}T{hour:02d}:00:00Z"


def gardening_event(agora, title: str, day: int, hours: tuple[int, int], **extra) -> dict:
    """A new event of the Gardening Club on `day` of this month, `hours` its times, as stored."""
    status, body = api(
        agora,
        "POST",
        "event",
        {
            "groupId": GARDENING,
            "title": title,
            "startDate": this_month(day, hours[0]),
            "endDate": this_month(day, hours[1]),
            **extra,
        },
    )
    assert status == 200, body
    return body["object"]


def open_the_gardening_calendar(page, agora) -> None:
    sign_in(page, agora)
    open_page(page, "Events")
    choose_group(page, "Gardening Club")


def test_the_calendar_shows_hostile_text_as_text_and_moves_events_by_keyboard_and_by_drag(
    agora, page
):
    """Three events of this month made through the API, one calendar: hostile text from the API
    is shown as text and never runs; a keyboard move (Escape cancels, Enter moves) and a drag to
    another day change the event's dates through the API."""
    now = datetime.now(UTC)
    day = this_month
    hostile = '<img src=x onerror="window.pwned=1">Picnic'
    stored = gardening_event(agora, hostile, 20, (9, 10), location=hostile)
    keyed_id = gardening_event(agora, "Bulb planting", 8, (9, 11))["id"]
    dragged_id = gardening_event(agora, "Seed swap", 10, (10, 12), location="Hall")["id"]

    open_the_gardening_calendar(page, agora)
    # Hostile text from the API is shown as text and never runs.
    event = page.locator(f'button.event[data-event-id="{stored["id"]}"]')
    expect(event).to_have_text(stored["title"])
    assert page.locator("img").count() == 0
    assert page.evaluate("() => window.pwned") is None

    dragged = page.locator(f'button.event[data-event-id="{dragged_id}"]')
    expect(dragged).to_have_count(1)
    expect(page.locator(f'td[data-date="{now:%Y-%m}-10"]')).to_contain_text("Seed swap")
    expect(page.get_by_role("region", name="Upcoming and expired")).to_be_visible()
    screenshot(page, "events")
    assert axe_violations(page) == []

    # A keyboard move changes the event's dates through the API.
    event = page.locator(f'button.event[data-event-id="{keyed_id}"]')
    event.focus()
    event.press("ArrowRight")
    expect(page.locator("#status")).to_contain_text('Moving "Bulb planting" to')
    expect(page.locator(f'td[data-date="{now:%Y-%m}-09"]')).to_have_class(re.compile("over"))
    # Escape cancels: nothing is sent.
    event.press("Escape")
    expect(page.locator("#status")).to_contain_text("cancelled")
    status, body = api(agora, "GET", f"event/{keyed_id}")
    assert body["object"]["startDate"] == day(8, 9)

    event.press("ArrowDown")  # a week later
    event.press("ArrowRight")
    event.press("ArrowRight")
    event.press("ArrowLeft")
    expect(page.locator("#status")).to_contain_text(re.compile(r"to \w+,? 16 "))
    event.press("Enter")
    expect(page.locator("#status")).to_contain_text('"Bulb planting" moved to')
    expect(page.locator(f'td[data-date="{now:%Y-%m}-16"]')).to_contain_text("Bulb planting")
    moved = page.locator(f'button.event[data-event-id="{keyed_id}"]')
    expect(moved).to_be_focused()
    assert axe_violations(page) == []

    status, body = api(agora, "GET", f"event/{keyed_id}")
    assert (body["object"]["startDate"], body["object"]["endDate"]) == (day(16, 9), day(16, 11))

    # Dragging an event to another day moves it.
    dragged.drag_to(page.locator(f'td[data-date="{now:%Y-%m}-12"]'))
    expect(page.locator("#status")).to_contain_text('"Seed swap" moved to')
    expect(page.locator(f'td[data-date="{now:%Y-%m}-12"]')).to_contain_text("Seed swap")
    expect(page.locator(f'td[data-date="{now:%Y-%m}-10"]')).not_to_contain_text("Seed swap")

    status, body = api(agora, "GET", f"event/{dragged_id}")
    assert status == 200
    assert (body["object"]["startDate"], body["object"]["endDate"]) == (day(12, 10), day(12, 12))


def test_the_event_form_shows_the_api_errors_in_its_own_words_and_creates_an_event(agora, page):
    """An error under a field names the other fields by their labels (the API keeps its own
    names); a missing title is shown beside the field; a good event is saved and listed."""
    open_the_gardening_calendar(page, agora)
    page.get_by_label("Title").fill("Backwards")
    page.get_by_label("Start", exact=True).fill(f"{LATER}-05-04T18:00")
    page.get_by_label("End", exact=True).fill(f"{LATER}-05-04T17:00")
    page.get_by_role("button", name="Save event").click()
    error = page.locator('[data-key="endDate"] .field-error')
    expect(error).to_have_text("must not be before Start")
    expect(page.locator("#status")).to_contain_text("must not be before Start")
    expect(page.locator("#status")).not_to_contain_text("startDate")
    screenshot(page, "events-error-in-labels")
    # The API itself keeps its names: only the console translates them.
    status, body = api(
        agora,
        "POST",
        "event",
        {
            "groupId": GARDENING,
            "title": "Backwards",
            "startDate": f"{LATER}-05-04T18:00:00Z",
            "endDate": f"{LATER}-05-04T17:00:00Z",
        },
    )
    assert status == 400 and "startDate" in body["errors"][0]["message"]

    # No title (and no end): the API's error sits beside the Title field.
    page.get_by_label("Title").fill("")
    page.get_by_label("End", exact=True).fill("")
    page.get_by_role("button", name="Save event").click()
    title_error = page.locator('[data-key="title"] .field-error')
    expect(title_error).to_be_visible()
    expect(page.get_by_label("Title")).to_have_attribute("aria-invalid", "true")

    page.get_by_label("Title").fill("Summer fair")
    page.get_by_label("End", exact=True).fill(f"{LATER}-05-04T20:00")
    page.get_by_label("Location").fill("Meadow")
    page.get_by_label("Organizer").fill("Gus")
    page.get_by_label("Content").fill("Bring seeds")
    page.get_by_role("button", name="Save event").click()
    expect(page.locator("#status")).to_contain_text("Event saved.")
    expect(title_error).to_be_hidden()

    page.get_by_label("Filter").fill("summer")
    expect(page.locator(".event-list").first).to_contain_text("Summer fair")
    status, body = api(agora, "GET", f"event/list/upcoming/{GARDENING}?filter=summer%20fair")
    saved = body["object"]["events"]
    assert [(e["title"], e["startDate"], e["endDate"], e["location"]) for e in saved] == [
        ("Summer fair", f"{LATER}-05-04T18:00:00Z", f"{LATER}-05-04T20:00:00Z", "Meadow")
    ]


def test_settings_show_a_feed_error_beside_its_field_then_store_a_good_one_and_a_mailbox_error(
    agora, page
):
    """Feed settings: the API's error beside the field, then a good one stored. A mailbox whose
    server refuses connections: after a poll, Settings shows its lastError with the time, beside
    the form (issue 23)."""
    import os

    from bench.admin_load import aws_environment
    from tests.support import REPO_ROOT
    from tests.support.running import free_port, run_module

    photography = "44dd1629-602f-5579-88ae-f6a12ed221b1"
    closed = {
        "serverName": "127.0.0.1",
        "serverPort": free_port(),
        "serverUsername": "photos",
        "serverPassword": "photos-password",
        "isEnabled": True,
        "isSSL": False,
        "deleteProcessed": False,
    }
    assert api(agora, "PUT", f"connector/email-to-post/{photography}", closed)[0] == 200
    try:
        env = {**os.environ, **aws_environment(agora.output), "PYTHONPATH": str(REPO_ROOT)}
        polled = run_module("chalicelib.cli", "poll-mail", env=env)
        assert polled.returncode == 1, polled.stdout + polled.stderr
    finally:
        # Switched off again, so the other tests' polls leave it alone.
        api(agora, "PUT", f"connector/email-to-post/{photography}", {**closed, "isEnabled": False})
    status, body = api(agora, "GET", f"connector/email-to-post/{photography}")
    last_error = body["object"]["lastError"]
    assert last_error["message"].startswith("Could not connect to the mail server")

    sign_in(page, agora)
    open_page(page, "Settings")
    choose_group(page, "Gardening Club")
    feed = page.get_by_role("form", name="Feed settings")
    editor = feed.get_by_label("Editor email")
    expect(editor).to_be_visible()
    screenshot(page, "settings")
    assert axe_violations(page) == []

    editor.fill("not an email")
    feed.get_by_role("checkbox", name="Sunday").check()
    feed.get_by_role("button", name="Save feed settings").click()
    error = feed.locator('[data-key="editorEmail"] .field-error')
    expect(error).to_be_visible()
    expect(editor).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#status")).not_to_contain_text("saved")
    status, body = api(agora, "GET", f"feed/settings/{GARDENING}")
    assert body["object"]["editorEmail"] != "not an email"

    editor.fill("editor@agora.example")
    feed.get_by_role("button", name="Save feed settings").click()
    expect(page.locator("#status")).to_contain_text("Feed settings saved.")
    expect(error).to_be_hidden()
    status, body = api(agora, "GET", f"feed/settings/{GARDENING}")
    assert status == 200 and body["object"]["editorEmail"] == "editor@agora.example"
    assert {d["name"]: d["selected"] for d in body["object"]["skipDays"]}["Sunday"] is True

    # The mailbox that could not be read.
    choose_group(page, "Photography")
    shown = page.locator(".mailbox-last-error")
    expect(shown).to_contain_text("Last poll failed")
    expect(shown).to_contain_text("Could not connect to the mail server")
    expect(shown.locator("time")).to_have_attribute("datetime", last_error["on"])
    expect(page.get_by_role("form", name="Email-to-post connector")).to_be_visible()
    screenshot(page, "settings-mailbox-error")
    assert axe_violations(page) == []


def create_section(page, name: str) -> None:
    """A new profile section `name` made on the Profile fields page."""
    new_section = page.get_by_role("form", name="New section")
    new_section.get_by_label("Section name").fill(name)
    new_section.get_by_role("button", name="Create section").click()
    expect(page.locator("#status")).to_contain_text("Section created.")
    expect(page.get_by_role("heading", name=f"Section: {name}")).to_be_visible()


def new_field_form(page, section: str, name: str):
    """The New field form of the Profile fields page, its section and name filled in."""
    form = page.get_by_role("form", name="New field")
    form.get_by_label("Section", exact=True).select_option(label=section)
    form.get_by_label("Field name").fill(name)
    return form


def open_profile_fields(page) -> None:
    """The Profile fields page drawn afresh (its New field form shown), from another page."""
    page.get_by_role("link", name="Mail log").click()
    expect(page.get_by_role("heading", level=1, name="Mail log")).to_be_visible()
    page.get_by_role("link", name="Profile fields").click()
    expect(page.get_by_role("form", name="New field")).to_be_visible()


def test_profile_fields_create_sections_and_fields_with_type_data_defaults_and_parents(agora, page):
    """A section and a field with its type data (and the API's error beside a field); a list
    field's default option stored; a field shown only under an option of its parent."""
    status, body = api(agora, "POST", "profile/section", {"name": "Kitchen"})
    assert status == 200, body
    section_id = body["object"]["id"]
    status, body = api(
        agora,
        "POST",
        "profile/field",
        {
            "sectionId": section_id,
            "name": "Diet",
            "typeId": 7,
            "data": {"options": [{"value": "Vegan"}, {"value": "Omnivore"}]},
        },
    )
    assert status == 200, body
    sign_in(page, agora)
    page.get_by_role("link", name="Profile fields").click()

    # A section and a field with its type data.
    create_section(page, "Garden")

    form = new_field_form(page, "Garden", "Favourite plant")
    form.get_by_label("Field type").select_option(label="DropDownList")
    form.get_by_label("Options").fill("Tomato\nBasil")
    form.get_by_role("button", name="Create field").click()
    expect(page.locator("#status")).to_contain_text("Field created.")
    expect(page.locator(".profile-field")).to_contain_text(["Favourite plant (DropDownList)"])
    screenshot(page, "profile-fields")
    assert axe_violations(page) == []

    status, body = api(agora, "GET", "profile")
    garden = next(s for s in body["object"]["sections"] if s["name"] == "Garden")
    (field,) = garden["fields"]
    assert field["typeName"] == "DropDownList"
    assert [o["value"] for o in field["data"]["options"]] == ["Tomato", "Basil"]

    # A TextBox's maxLength out of range: the API's `data.maxLength` error sits beside that field.
    form = page.get_by_role("form", name="Field Favourite plant")
    form.get_by_label("Field type").select_option(label="TextBox")
    form.get_by_label("Maximum length").fill("0")
    form.get_by_role("button", name="Save field").click()
    expect(form.locator('[data-key="data.maxLength"] .field-error')).to_be_visible()

    # The default option of a list field is stored.
    open_profile_fields(page)
    create_section(page, "Balcony")

    form = new_field_form(page, "Balcony", "Sun")
    form.get_by_label("Field type").select_option(label="RadioButtonList")
    form.get_by_label("Options").fill("Full\nPartial\nShade")
    form.get_by_label("Default option").select_option(label="Partial")
    assert axe_violations(page) == []
    form.get_by_role("button", name="Create field").click()
    expect(page.locator("#status")).to_contain_text("Field created.")

    def stored_default():
        status, body = api(agora, "GET", "profile")
        balcony = next(s for s in body["object"]["sections"] if s["name"] == "Balcony")
        (sun,) = balcony["fields"]
        return (sun["data"].get("defaultValue") or {}).get("value")

    assert stored_default() == "Partial"
    # The editor shows it, and another choice replaces it.
    form = page.get_by_role("form", name="Field Sun")
    expect(form.get_by_label("Default option")).to_have_value("Partial")
    form.get_by_label("Default option").select_option(label="Shade")
    form.get_by_role("button", name="Save field").click()
    expect(page.locator("#status")).to_contain_text("Field saved.")
    assert stored_default() == "Shade"

    # A field shown only under an option of its parent.
    open_profile_fields(page)
    form = new_field_form(page, "Kitchen", "Favourite legume")
    form.get_by_label("Shown only under").select_option(label="Diet")
    form.get_by_label("when that field's option is").select_option(label="Vegan")
    form.get_by_role("button", name="Create field").click()
    expect(page.locator("#status")).to_contain_text("Field created.")

    status, body = api(agora, "GET", "profile")
    kitchen = next(s for s in body["object"]["sections"] if s["id"] == section_id)
    child = next(f for f in kitchen["fields"] if f["name"] == "Favourite legume")
    assert (child["parentName"], child["parentSelectedValueName"]) == ("Diet", "Vegan")


def test_more_comments_load_as_the_list_scrolls(agora, page):
    for comment_id in (109, 110):
        status, body = api(agora, "DELETE", f"comment/post/{comment_id}")
        assert status == 200, body
    sign_in(page, agora)
    page.goto(f"{agora.base}/console/#/moderation?pageSize=1")
    choose_group(page, "Photography")
    page.get_by_role("tab", name="Deleted").click()
    # One comment a page: the second arrives through `offset` when the end of the list is in view.
    expect(page.locator("li.comment")).to_have_count(2)


SEED_MAIL_LOG = """
import sys
from datetime import UTC, datetime, timedelta
from chalicelib.services.mailboxes import mailbox_key
from chalicelib.store.mail import MailRepository

mail, now = MailRepository(), datetime.now(UTC)
records = [
    mail.new_entry(mailbox_key(sys.argv[1]), f"00000000-0000-4000-8000-{index:012d}",
                   now - timedelta(minutes=index), sender="someone@example.org",
                   subject=f"{status} mail {index}", status=status, reason=f"test {status}",
                   notice_sent=index == 60)
    for index, status in enumerate(["posted"] * 60 + ["rejected"] * 3)
]
mail.write_all(records)
"""


def test_mail_log_reads_the_api_its_outcome_filter_asks_it_and_notifications_save(agora, page):
    """The Mail log page reads the API; its `rejected` filter lists the rejected entries from the
    API, also those beyond the first page the console loaded (60 posted mails are newer than the
    3 rejected ones); the Notifications page stores two changes with one button."""
    import os
    import subprocess
    import sys

    from tests.support.running import REPO_ROOT

    sign_in(page, agora)
    page.get_by_role("link", name="Mail log").click()
    expect(page.get_by_label("Mailbox")).to_be_visible()
    expect(page.get_by_label("Outcome")).to_be_visible()
    expect(page.get_by_text("No mail matches.")).to_be_visible()
    screenshot(page, "mail-log")
    assert axe_violations(page) == []

    env = {**os.environ, **agora.printed, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run(
        [sys.executable, "-c", SEED_MAIL_LOG, GARDENING], env=env, check=True, cwd=REPO_ROOT
    )
    page.get_by_label("Mailbox").select_option(label="Email-to-post: Gardening Club")
    expect(page.locator("tr[data-status]")).to_have_count(50)  # the first page: all posted
    # The next page joins the rows shown (ui.js logList); then nothing follows.
    more = page.get_by_role("button", name="Load more")
    more.click()
    expect(page.locator("tr[data-status]")).to_have_count(63)
    expect(more).to_be_hidden()

    with page.expect_request(lambda request: "status=rejected" in request.url):
        page.get_by_label("Outcome").select_option("rejected")

    rows = page.locator("tr[data-status]")
    expect(rows).to_have_count(3)
    for index in range(3):
        expect(rows.nth(index)).to_have_attribute("data-status", "rejected")
    expect(rows.first).to_contain_text("test rejected")
    expect(rows.first).to_contain_text("The sender was told why by email.")
    expect(rows.nth(1)).not_to_contain_text("told why")
    screenshot(page, "mail-log-rejected")

    open_page(page, "Notifications")
    choose_group(page, "Gardening Club")
    expect(page.get_by_role("heading", name="Group: Gardening Club")).to_be_visible()
    form = page.get_by_role("form", name="Notifications")
    # Two changes, one button: both are stored.
    form.get_by_label("Digest", exact=True).select_option(label="Full Daily digest")
    form.get_by_label("All new group posts: email alert").select_option(label="Instant")
    screenshot(page, "notifications")
    assert axe_violations(page) == []
    form.get_by_role("button", name="Save notifications").click()
    expect(page.locator("#status")).to_contain_text("Notifications saved: 2 changes.")
    ann = page.evaluate(
        "() => JSON.parse(atob(sessionStorage.getItem('agora.console.token').split('.')[1])).sub"
    )
    status, body = api(agora, "GET", f"user/{ann}/notifications?groupId={GARDENING}")
    assert status == 200 and body["object"]["digest"]["typeId"] == 2
    (gardening,) = body["object"]["typeGroups"]
    first = next(n for n in gardening["notifications"] if n["name"] == "All new group posts")
    assert first["emailAlert"]["id"] == 1


def test_notifications_find_a_person_by_three_letters_and_show_their_subscriptions(agora, page):
    status, body = api(agora, "GET", "user/search?q=sam")
    assert status == 200, body
    (sam,) = body["object"]["users"]
    status, body = api(
        agora,
        "POST",
        f"user/{sam['id']}/notifications/group/2",
        {"groupId": GARDENING, "emailAlertId": 2, "showScreenAlert": True, "showRedLabel": False},
    )
    assert status == 200, body

    # A group administrator: the search offers the members of the group chosen.
    sign_in(page, agora, GUS)
    open_page(page, "Notifications")
    choose_group(page, "Gardening Club")
    person = page.get_by_role("combobox", name="Person")
    person.press_sequentially("Sam")
    option = page.get_by_role("option", name=re.compile("Sam Member"))
    expect(option).to_be_visible()
    expect(person).to_have_attribute("aria-expanded", "true")
    screenshot(page, "notifications-person-search")
    assert axe_violations(page) == []
    person.press("ArrowDown")
    expect(option).to_have_attribute("aria-selected", "true")
    person.press("Enter")
    expect(page.get_by_text("Notifications of sam@agora.example")).to_be_visible()
    expect(
        page.get_by_text(re.compile("All new group comments — email: Daily digest"))
    ).to_be_visible()
    assert axe_violations(page) == []

    # Someone outside the group is not offered to its administrator.
    person.fill("")
    person.press_sequentially("Rit")
    expect(page.get_by_text("Nobody found.")).to_be_visible()


def test_load_more_shows_only_when_more_follow(agora, page):
    """A list shorter than a page offers no more; a list one item longer than a page does, and
    once that item is shown, no longer."""
    tomato = "dc3a6f86-f4e7-5721-b613-97fad8f8eb32"

    def pruning(day: int) -> None:
        start = f"{LATER}-03-{day:02d}T10:00:00Z"
        status, body = api(
            agora,
            "POST",
            "event",
            {"groupId": tomato, "title": f"Pruning {day}", "startDate": start, "allDay": True},
        )
        assert status == 200, body

    for day in range(1, 5):
        pruning(day)
    sign_in(page, agora)
    open_page(page, "Events")
    choose_group(page, "Tomato Growers")
    page.get_by_label("Filter").fill("pruning")
    upcoming = page.locator(".event-list").first
    expect(upcoming.locator("li")).to_have_count(4)
    expect(page.get_by_role("button", name="More upcoming events")).to_be_hidden()
    expect(page.get_by_role("button", name="More expired events")).to_be_hidden()

    for day in range(5, 17):
        pruning(day)
    # 16 upcoming events, 15 a page: the 16th is behind "More upcoming events".
    page.get_by_label("Filter").fill("prunin")
    expect(upcoming.locator("li")).to_have_count(15)
    more = page.get_by_role("button", name="More upcoming events")
    expect(more).to_be_visible()
    screenshot(page, "events-more")
    more.click()
    expect(upcoming.locator("li")).to_have_count(16)
    expect(more).to_be_hidden()


def test_notifications_add_a_post_and_an_author_and_save_everything_at_once(agora, page):
    status, body = api(agora, "GET", "user/search?q=sam")
    (sam,) = body["object"]["users"]
    status, body = api(agora, "GET", f"post/list/{GARDENING}?pageSize=100")
    post = next(p for p in body["object"]["posts"] if p["id"] == SEED_SWAP)

    sign_in(page, agora)
    open_page(page, "Notifications")
    choose_group(page, "Gardening Club")
    person = page.get_by_role("combobox", name="Person")
    person.press_sequentially("Sam")
    page.get_by_role("option", name=re.compile("Sam Member")).click()
    expect(page.get_by_text("Notifications of sam@agora.example")).to_be_visible()
    form = page.get_by_role("form", name="Notifications")

    # A post by a word of its title, an author by name: each a new row, nothing sent yet.
    adder = form.get_by_role("combobox", name="Add a post")
    adder.press_sequentially(post["title"].split()[0][:4])
    form.get_by_role("option", name=re.compile(re.escape(post["title"]))).click()
    post_row = form.get_by_role("group", name=f"New comments on post: {post['title']}")
    expect(post_row).to_be_visible()
    expect(adder).to_have_value("")
    form.get_by_role("combobox", name="Add an author").press_sequentially("Gus")
    form.get_by_role("option", name=re.compile("Gus Gardener")).click()
    author_row = form.get_by_role("group", name="New posts by author: Gus Gardener")
    author_row.get_by_label("email alert").select_option(label="Daily digest")
    form.get_by_label("All new group comments: red label").check()
    status, body = api(agora, "GET", f"user/{sam['id']}/notifications?groupId={GARDENING}")
    assert [n["post"]["id"] for n in body["object"]["typePosts"]] == []
    screenshot(page, "notifications-add")
    assert axe_violations(page) == []

    form.get_by_role("button", name="Save notifications").click()
    expect(page.locator("#status")).to_contain_text("Notifications saved: 3 changes.")
    status, body = api(agora, "GET", f"user/{sam['id']}/notifications?groupId={GARDENING}")
    saved = body["object"]
    assert [(n["post"]["id"], n["emailAlert"]["id"]) for n in saved["typePosts"]] == [
        (SEED_SWAP, 1)
    ]
    assert [(n["author"]["alias"], n["emailAlert"]["id"]) for n in saved["typeAuthors"]] == [
        ("Gus Gardener", 2)
    ]
    (gardening,) = saved["typeGroups"]
    comments = next(n for n in gardening["notifications"] if n["name"] == "All new group comments")
    assert comments["showRedLabel"] is True
    # Shown again from the API: the new rows are there, and a second save has nothing to send.
    expect(form.get_by_role("group", name=re.compile("New posts by author: Gus"))).to_be_visible()
    page.get_by_role("form", name="Notifications").get_by_role(
        "button", name="Save notifications"
    ).click()
    expect(page.locator("#status")).to_contain_text("Nothing has changed.")


def test_the_group_chooser_shows_the_groups_as_a_tree_and_a_group_administrator_only_theirs(
    agora, page
):
    sign_in(page, agora)
    open_page(page, "Settings")
    options = page.get_by_label("Group", exact=True).locator("option")
    tree = [
        (0, "Agora Community"),
        (1, "Gardening Club"),
        (2, "Tomato Growers"),
        (1, "Masterclass"),
        (2, "Advanced Masterclass"),
        (1, "Photography"),
        (1, "Staff Room"),
        (2, "Moderators Lounge"),
    ]
    # Each option's depth, and its text indented one step (four no-break spaces) a level, read
    # by assertions that wait for them.
    expect(options).to_have_count(len(tree))
    for index, (depth, name) in enumerate(tree):
        expect(options.nth(index)).to_have_attribute("data-depth", str(depth))
        expect(options.nth(index)).to_have_js_property("textContent", "\u00a0" * 4 * depth + name)
    screenshot(page, "group-chooser")
    # Siblings in the order the API lists groups by name (sanitize.search_key, then the id):
    # accents dropped, case folded (ß as ss, a final ς as σ), spaces run together.
    names = {
        "g1": "zeta",
        "g2": "Zoë",
        "g3": "Émile",
        "g4": "eve",
        "g5": "Ève",
        "g6": "Äpfel",
        "g7": "apple",
        "g8": "Straße Nord",
        "g9": "Strasse Süd",
        "g10": "λογοσ",
        "g20": "Λόγος",
        "g11": "Bob  Club",
        "g0": "bob club",
    }
    ui = page.evaluate("() => document.querySelector('link[href*=\"ui.js\"]').href")
    ordered = page.evaluate(
        "async ([url, groups]) => (await import(url)).groupTree(groups).map((t) => t.group.id)",
        [ui, [{"id": i, "name": n, "parentId": None} for i, n in names.items()]],
    )
    assert ordered == sorted(names, key=lambda i: (search_key(names[i]), i))

    # Gus administers a club and its subgroup: the subgroup sits under it.
    page.get_by_role("button", name="Sign out").click()
    # A group administrator sees only their groups and no system settings.
    sign_in_with_the_form(page, GUS)
    open_page(page, "Settings")
    options = page.get_by_label("Group", exact=True).locator("option")
    expect(options).to_have_count(2)
    expect(options).to_have_text(["Gardening Club", "Tomato Growers"])
    expect(options.nth(0)).to_have_attribute("data-depth", "0")
    expect(options.nth(1)).to_have_attribute("data-depth", "1")
    expect(page.get_by_role("form", name="Feed settings")).to_be_visible()
    expect(page.get_by_role("heading", name="Home page")).to_have_count(0)
    expect(page.get_by_role("link", name="Profile fields")).to_have_count(0)


def test_a_page_whose_module_arrives_late_is_not_drawn_over_the_page_opened_after_it(agora, page):
    """A person who clicks Profile fields, then Settings before the first page's module has
    arrived, stays on Settings when it arrives (app.js `route` numbers its routes)."""
    sign_in(page, agora)
    held = []
    module = re.compile(r"/console/profile-fields\.js(\?v=[0-9a-f]+)?$")
    page.route(module, lambda route: held.append(route))  # answered later
    with page.expect_request(module):
        page.get_by_role("link", name="Profile fields").click()
    for _ in range(100):  # the route's handler runs when Playwright next hears from the browser
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the console did not ask for the profile fields page's module"
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible()
    url = held[0].request.url
    held[0].continue_()
    # Importing the module again (its versioned URL) waits for the same load: route() saw it
    # arrive first.
    page.evaluate("async (url) => { await import(url); }", url)
    expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible()
    expect(page.get_by_role("heading", name="Profile fields")).to_have_count(0)
    assert page.url.endswith("#/settings")


def connector_card(page, agora, group: str):
    """Settings of `group`, signed in: its email-to-post connector's card and next-poll line."""
    sign_in(page, agora)
    open_page(page, "Settings")
    choose_group(page, group)
    card = page.get_by_role("region", name="Email-to-post connector")
    return card, card.locator(".mailbox-next-poll")


def test_poll_now_shows_the_next_poll_as_due_now_never_as_a_time_gone_by(agora, page):
    """make run wires each demo group's connector to its own mailbox (due 5 minutes after it was
    saved); Poll now makes it due at once, which Settings says in words, not as a past time."""
    card, next_poll = connector_card(page, agora, "Tomato Growers")
    expect(next_poll).to_contain_text("Next poll: ")
    with page.expect_response(lambda r: r.url.endswith("/poll")) as asked:
        card.get_by_role("button", name="Poll now").click()
    assert asked.value.status == 202
    expect(next_poll).to_have_text("Next poll: due now, at the schedule's next look.")
    expect(next_poll.locator("time")).to_have_count(0)


def test_a_posts_and_an_events_permalink_open_them_in_the_console(agora, page):
    """make run answers the permalinks it makes (AGORA_BASE_URL names its server) with the
    console page that shows them; a path that names nothing stays the envelope's 404."""
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirected:
        opener.open(f"{agora.base}/gardening/compost-tips", timeout=30)
    assert redirected.value.code == 302
    assert redirected.value.headers["Location"] == (
        "/console/#/post?id=5c12a49d-39ee-5921-bd7e-0b8b5bc6f8b1"
    )
    for nothing in ("/gardening/no-such-post", "/no-such-group", "/gardening/events/999999"):
        with pytest.raises(urllib.error.HTTPError) as missing:
            opener.open(agora.base + nothing, timeout=30)
        assert missing.value.code == 404, nothing
        assert json.loads(missing.value.read())["success"] is False  # a program's: the envelope
    # A browser at a mistyped permalink reads a page in words; the API's paths stay JSON for it.
    browser_asks = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    mistyped = urllib.request.Request(
        f"{agora.base}/gardening/compost-tips-for-beginners", headers=browser_asks
    )
    with pytest.raises(urllib.error.HTTPError) as missing:
        opener.open(mistyped, timeout=30)
    assert missing.value.code == 404
    assert missing.value.headers["Content-Type"].startswith("text/html")
    said = missing.value.read().decode()
    assert (
        "Gardening Club has nothing at <code>/gardening/compost-tips-for-beginners</code>" in said
    )
    assert '"success"' not in said
    api_path = urllib.request.Request(f"{agora.base}/api/v1/en_US/no-such", headers=browser_asks)
    with pytest.raises(urllib.error.HTTPError) as missing:
        opener.open(api_path, timeout=30)
    assert json.loads(missing.value.read())["success"] is False
    page.goto(f"{agora.base}/gardening/compost-tips-for-beginners")
    expect(page.get_by_role("heading", level=1, name="Nothing at this address")).to_be_visible()
    expect(page.get_by_role("link", name="Gardening Club")).to_have_attribute("href", "/gardening")
    screenshot(page, "permalink-mistyped")

    sign_in(page, agora)
    page.goto(f"{agora.base}/gardening/compost-tips")
    expect(page.get_by_role("heading", level=1, name="Compost tips for beginners")).to_be_visible()
    comments = page.get_by_role("region", name=re.compile(r"^Comments"))
    expect(comments.locator('li[data-comment-id="106"]')).to_contain_text("cheap watches")
    expect(page.locator("iframe.preview")).to_have_count(1)
    # The post's body reads in the console's type, not the frame's serif default.
    body = page.frame_locator("iframe.preview").locator("body")
    expect(body).to_contain_text("Green and brown layers")
    assert "system-ui" in body.evaluate("b => getComputedStyle(b).fontFamily")
    screenshot(page, "post")
    assert axe_violations(page) == []

    page.goto(f"{agora.base}/gardening/events/2")
    expect(page.get_by_role("heading", level=1, name="Events")).to_be_visible()
    expect(page.get_by_role("heading", name="Edit event 2")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value("Winter pruning workshop")
    expect(page.get_by_label("Group", exact=True)).to_have_value(GARDENING)


def test_activity_shows_who_changed_what_and_its_filters_ask_the_api(agora, page):
    """The Activity page (CONTRACT §12): a settings change made through the API shows in the
    group's log with who made it and what changed (the password only said to change); the
    action filter asks the API and lists only that resource's entries; root sees all groups."""
    mailbox = f"connector/email-to-post/{GARDENING}"
    settings = {
        "serverName": "pop.activity.example",
        "serverPort": 995,
        "serverUsername": "activity",
        "serverPassword": "an activity password",
        "isEnabled": False,
        "isSSL": True,
        "deleteProcessed": False,
    }
    assert api(agora, "PUT", mailbox, settings)[0] == 200
    sign_in(page, agora)
    open_page(page, "Activity")
    choose_group(page, "Gardening Club")
    row = page.locator('[data-action="emailToPost.update"]').first
    expect(row).to_contain_text("pop.activity.example")
    # make run set the demo's mailboxes up: the password was set before, or is set now.
    expect(row).to_contain_text(re.compile(r"password: (none|\(set\)) → \((set|changed)\)"))
    expect(row).to_contain_text("Ann Admin changed Gardening Club's email-to-post mailbox")
    assert "an activity password" not in page.content()
    screenshot(page, "activity")
    assert axe_violations(page) == []

    with page.expect_request(lambda request: "action=event" in request.url):
        page.get_by_label("Action").select_option(label="Events")
    expect(page.locator('[data-action^="emailToPost"]')).to_have_count(0)
    rows = page.locator("li[data-action]")
    for i in range(rows.count()):
        assert rows.nth(i).get_attribute("data-action").startswith("event.")
    # The root group's administrator reads the whole log.
    page.get_by_label("Action").select_option("")
    with page.expect_request(lambda request: request.url.split("?")[0].endswith("/audit")):
        choose_group(page, "All groups")
    expect(page.locator('[data-action="emailToPost.update"]').first).to_be_visible()


LOUNGE = "f44724e5"  # Moderators Lounge: no other test saves its settings
SAM = "93592c62-a219-58d8-b29d-cb52efebdd31"


def test_activity_says_each_change_in_words_and_fits_a_window_and_a_phone(agora, page):
    """Issue 56: the first save of a group's feed settings reads "Ann Admin changed Moderators
    Lounge's feed settings" and "time to live: 60 → 30 minutes", one change and no other (the
    form showed 60); a changed sender name saves though the sender email was left blank; a
    user's notifications name the user; a Settings error's message does not stay over the next
    page; every action the filter offers is one the API takes; the page fits a 1,280 px window
    and a 390 px phone."""
    sign_in(page, agora)
    open_page(page, "Settings")
    choose_group(page, "Moderators Lounge")
    feed = page.get_by_role("form", name="Feed settings")
    ttl = feed.get_by_label("Time to live (minutes)")
    expect(ttl).to_have_value("60")
    ttl.fill("30")
    feed.get_by_role("button", name="Save feed settings").click()
    expect(page.locator("#status")).to_contain_text("Feed settings saved.")
    mail = page.get_by_role("form", name="Group email")
    expect(mail.get_by_label("Sender email")).to_have_value("")
    mail.get_by_label("Sender name").fill("Lounge team")
    mail.get_by_role("button", name="Save group email").click()
    expect(page.locator("#status")).to_contain_text("Group email saved.")
    # A refused save leaves its red message; the next page does not show it.
    ttl.fill("-1")
    feed.get_by_role("button", name="Save feed settings").click()
    expect(page.locator("#status .message.error")).to_be_visible()
    path = f"user/{SAM}/notifications/group/1"
    body = {"groupId": GARDENING, "emailAlertId": 0, "showScreenAlert": False}
    for red in (True, False):  # one of them at least is a change, and it ends as the demo has it
        assert api(agora, "POST", path, {**body, "showRedLabel": red})[0] == 200

    open_page(page, "Activity")
    expect(page.locator("#status")).to_be_empty()
    choose_group(page, "All groups")
    feed_entry = page.locator('[data-action="feedSettings.update"]').filter(
        has_text="Moderators Lounge"
    )
    expect(feed_entry.locator(".deed")).to_have_text(
        "Ann Admin changed Moderators Lounge's feed settings"
    )
    expect(feed_entry.locator(".changes li")).to_have_text(["time to live: 60 → 30 minutes"])
    email_entry = page.locator('[data-action="groupEmail.update"]').filter(
        has_text="Moderators Lounge"
    )
    expect(email_entry.locator(".changes li")).to_have_text(
        ["sender name: Moderators Lounge → Lounge team"]
    )
    notified = page.locator('[data-action="notification.update"]').first
    expect(notified.locator(".deed")).to_have_text(
        "Ann Admin changed Sam Member's notifications for Gardening Club"
    )
    expect(notified.locator(".changes")).to_contain_text("red label:")
    assert SAM not in page.locator("#main").inner_text()
    # Every resource the filter offers is one the API takes (an unknown one is a 400).
    offered = (
        page.get_by_label("Action")
        .locator("option")
        .evaluate_all("options => options.map(o => o.value).filter(Boolean)")
    )
    assert len(offered) > 15
    for action in offered:
        assert api(agora, "GET", f"audit?action={action}&pageSize=1")[0] == 200, action
    assert api(agora, "GET", "audit?action=bogus")[0] == 400
    # The load's long target (the file's digest) wraps within the page.
    page.get_by_label("Action").select_option(label="Community file loads")
    loaded = page.locator('[data-action="fixture.load"]').first
    expect(loaded).to_contain_text("loaded a community file (sha256:")

    width = "() => document.documentElement.scrollWidth"
    assert page.evaluate(width) <= 1280
    screenshot(page, "activity-all")
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    expect(loaded).to_be_visible()
    assert page.evaluate(width) <= 390
    screenshot(page, "activity-phone")


def test_the_console_opens_on_a_group_below_the_root_and_hides_a_bulk_action_with_nothing_to_do(
    agora, page
):
    """Issue 56: Moderation opened on the empty root group ("Agora Community"), with "Delete all
    unapproved" offered for an empty list."""
    sign_in(page, agora)
    open_page(page, "Moderation")
    expect(page.get_by_label("Group", exact=True)).to_have_value(GARDENING)
    expect(page.locator(".comment").first).to_be_visible()
    expect(page.get_by_role("button", name="Delete all unapproved")).to_be_visible()
    choose_group(page, "Agora Community")
    expect(page.get_by_text("No comment waits for approval.")).to_be_visible()
    expect(page.get_by_role("button", name="Delete all unapproved")).to_be_hidden()


def test_a_next_poll_time_the_open_page_outlives_turns_into_due_now(agora, page):
    """Settings left open past the next poll's time shows it due, not a time gone by."""
    page.clock.install()
    _, next_poll = connector_card(page, agora, "Masterclass")
    expect(next_poll).to_contain_text("Next poll")
    page.clock.fast_forward("06:00:00")
    expect(next_poll).to_have_text("Next poll: due now, at the schedule's next look.")


def test_settings_show_the_group_s_inbound_address_with_a_copy_button(agora, page):
    """make run receives mail for its own host (CONTRACT §13): Settings names the group's
    address on it, and its button puts that address on the clipboard."""
    from urllib.parse import urlsplit

    address = f"gardening-tomatoes@{urlsplit(agora.printed['AGORA_BASE_URL']).hostname}"
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    card, _ = connector_card(page, agora, "Tomato Growers")
    line = card.locator(".mailbox-inbound")
    expect(line.locator("code")).to_have_text(address)
    line.get_by_role("button", name=f"Copy {address}").click()
    expect(line.get_by_role("status")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == address

"""The console's files and its session route (CONTRACT §10 `/console/`), without a browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


@pytest.fixture
def cast(community):
    from tests.fixtures import with_two_groups

    c = community
    c.child = c.group("seedlings", parent=None)
    return with_two_groups(c)


def test_console_page_and_its_files_have_their_content_types(client):
    page = client.http.get("/console/")
    assert page.status_code == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert re.search(rb'<script type="module" src="app\.js\?v=[0-9a-f]{16}">', page.body)
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    for name, kind in [("app.js", "text/javascript"), ("style.css", "text/css")]:
        answer = client.http.get(f"/console/{name}")
        assert answer.status_code == 200 and answer.headers["Content-Type"].startswith(kind)


def references(text: str) -> list[tuple[str, str]]:
    """Each console file a page or module names, with the version it asks for ("" for none)."""
    found = re.findall(
        r"""["'](?:\./)?([a-z0-9-]+\.(?:js|css|svg))(?:\?v=([0-9a-f]+))?["']""", text
    )
    return [(name, version) for name, version in found if name != "index.html"]


def test_every_file_the_console_names_carries_its_version_and_is_then_kept_for_good(client):
    page = client.http.get("/console/")
    assert page.headers["Cache-Control"] == "no-cache"  # the page names the versions: asked again
    seen, waiting = set(), references(page.body.decode())
    assert {"app.js", "api.js", "ui.js", "moderation.js", "style.css", "favicon.svg"} <= {
        name for name, _ in waiting
    }
    while waiting:
        name, version = waiting.pop()
        assert version, f"{name} is named without its version"
        if (name, version) in seen:
            continue
        seen.add((name, version))
        answer = client.http.get(f"/console/{name}?v={version}")
        assert answer.status_code == 200, name
        assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable", name
        waiting += references(answer.body.decode())
    # Every page module is reached from the page, each in one version.
    assert len({name for name, _ in seen}) == len(seen) >= 10


@pytest.mark.parametrize("asked", ["", "?v=", "?v=0000000000000000", "?v=%00%ff", "?v=a&v=b"])
def test_a_file_asked_for_without_its_current_version_is_asked_again_next_time(client, asked):
    answer = client.http.get(f"/console/app.js{asked}")
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-cache"


def test_a_changed_file_changes_its_version_and_those_of_the_files_that_lead_to_it(tmp_path):
    from chalicelib.api.console import ConsoleAssets

    def write(files: dict[str, str]) -> ConsoleAssets:
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        return ConsoleAssets(Path(tmp_path))

    files = {
        "index.html": '<script type="module" src="app.js"></script>',
        "app.js": 'import { a } from "./api.js"; const page = "./page.js"; const x = "other.js";',
        "api.js": 'import "./app.js"; export const a = 1;',  # a loop: named as it is
        "page.js": 'import { a } from "./api.js";',
    }
    first = write(files)
    before = {name: first.served(name) for name in files}
    # Asked for in another order (another process), the same versions.
    again = write(files)
    assert {name: again.served(name) for name in reversed(files)} == before
    changed = write({"page.js": 'import { a } from "./api.js"; // changed'})
    after = {name: changed.served(name) for name in files}
    assert before["api.js"] == after["api.js"]  # leads nowhere that changed
    for name in ("page.js", "app.js", "index.html"):
        assert before[name][1] != after[name][1], name
    text = after["app.js"][0]
    assert f'"./page.js?v={after["page.js"][1]}"' in text
    assert '"other.js"' in text  # not a file of the console: left as it was
    assert '"./app.js"' in after["api.js"][0]


def test_bare_console_path_redirects_to_the_slash_so_relative_links_work(client):
    answer = client.http.get("/console")
    assert answer.status_code == 301 and answer.headers["Location"] == "console/"


@pytest.mark.parametrize("name", ["nope.js", ".hidden.js", "app.py", "..%2Fapp.py", "index.html~"])
def test_only_the_console_own_files_are_served(client, name):
    answer = client.http.get(f"/console/{name}")
    assert answer.status_code == 404
    assert answer.json_body["success"] is False


def test_session_needs_a_token(api):
    status, body = api.get("/console/api/session")
    assert status == 401 and body["success"] is False


def test_session_lists_only_groups_the_user_moderates_or_administers(api, cast):
    status, body = api.get("/console/api/session", cast.moderator)
    assert status == 200, body
    session = body["object"]
    assert session["isRootAdmin"] is False and session["userId"] == cast.moderator
    assert [(g["id"], g["mayModerate"], g["mayAdminister"]) for g in session["groups"]] == [
        (cast.garden, True, False)
    ]

    _, body = api.get("/console/api/session", cast.garden_admin)
    assert [(g["id"], g["role"], g["mayAdminister"]) for g in body["object"]["groups"]] == [
        (cast.garden, "administrator", True)
    ]

    _, body = api.get("/console/api/session", cast.member)
    assert body["object"]["groups"] == []


def test_root_administrator_session_holds_every_group_parents_first(api, cast):
    status, body = api.get("/console/api/session", cast.root_admin)
    assert status == 200 and body["object"]["isRootAdmin"] is True
    ids = [g["id"] for g in body["object"]["groups"]]
    assert ids[0] == cast.root
    assert set(ids) == {cast.root, cast.garden, cast.other, cast.child}
    assert all(g["mayAdminister"] for g in body["object"]["groups"])


def test_a_session_reads_the_whole_group_tree_in_one_query(api, community, dynamo_counter):
    """Thirty groups three levels deep: the tree comes from one Query of the by-name index, not
    a read and a children Query for each group; each parent still comes before its children."""
    from tests.fixtures import two_groups

    cast = two_groups(community)
    parents = [cast.root]
    for level in range(3):
        parents = [
            community.group(f"level-{level}-{n}", parent=parents[n % len(parents)])
            for n in range(10)
        ]
    community.load()
    api.get("/console/api/session", cast.root_admin)  # the caller's user warm, as on any call
    dynamo_counter.reset()
    status, body = api.get("/console/api/session", cast.root_admin)
    assert status == 200, body
    assert dict(dynamo_counter.requests) == {"Query": 1}
    groups = body["object"]["groups"]
    assert len(groups) == 33
    place = {g["id"]: n for n, g in enumerate(groups)}
    assert all(place[g["parentId"]] < place[g["id"]] for g in groups if g["parentId"])

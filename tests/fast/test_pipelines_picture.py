"""The manual's picture of the two pipelines (docs/img/pipelines.svg, bench/architecture.py) is the
code's: drawn again from chalicelib's imports, it is the file docs/architecture.md shows; and the
rules it shows hold (issue 60, Build 4)."""

from __future__ import annotations

import ast
import re
from functools import cache

from bench import architecture
from bench.architecture import BOXES, MAIL_IN, NOTIFY, arrows, module_graph, render
from tests.support import REPO_ROOT


@cache
def code() -> dict[str, dict[str, bool]]:
    return module_graph()


TOLD = re.compile(r"<title>([^<]+ imports [^<]+)</title>")


def test_the_picture_in_the_manual_is_the_one_the_code_draws():
    drawn = render()
    picture = architecture.PICTURE
    shown = picture.read_text(encoding="utf-8") if picture.exists() else ""
    came = sorted(set(TOLD.findall(drawn)) - set(TOLD.findall(shown)))
    went = sorted(set(TOLD.findall(shown)) - set(TOLD.findall(drawn)))
    assert shown == drawn, (
        "docs/img/pipelines.svg is not the picture of the code as it is now "
        f"(arrows that came: {came or 'none'}; went: {went or 'none'}): "
        f"redraw it with `{architecture.COMMAND}` and commit it"
    )


def test_the_architecture_page_shows_the_picture_and_says_how_to_redraw_it():
    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert re.search(r"!\[[^\]]+\]\(img/pipelines\.svg\)", page)
    assert "python -m bench.architecture" in page


def _keys(graph: dict[str, dict[str, bool]]) -> set[tuple[str, str]]:
    return {(a.source.key, a.target.key) for a in arrows(graph)}


def test_an_arrow_per_pair_of_boxes_each_way_whatever_the_modules_behind_it():
    graph = {
        "chalicelib.services.mail_in.ingest": {
            "chalicelib.mail.parse": False,
            "chalicelib.mail.pop3": True,
            "chalicelib.services.mail_in.rules": False,
        },
        "chalicelib.services.mail_in.rules": {"chalicelib.mail.replies": False},
        "chalicelib.mail.parse": {"chalicelib.services.mail_in.rules": True},
        "chalicelib.mail.outgoing": {"chalicelib.domain.letters": True},
        "chalicelib.jobs.outbox": {"chalicelib.store.outbox": True, "chalicelib.store.posts": True},
    }
    found = {(a.source.key, a.target.key): a.typing_only for a in arrows(graph)}
    # Inside a box no arrow; mail/outgoing.py is a box of its own beside mail/ (longest prefix);
    # an arrow is dashed only when every import behind it is for types.
    assert found == {
        ("mail_in", "mail"): False,
        ("mail", "mail_in"): True,
        ("outgoing", "domain"): True,
        ("outbox", "store"): True,
    }


def test_a_module_moved_inside_its_folder_leaves_the_picture_as_it_was():
    graph = code()
    moved = {
        name.replace("services.notify.delivery", "services.notify.sending"): {
            target.replace("services.notify.delivery", "services.notify.sending"): typing
            for target, typing in targets.items()
        }
        for name, targets in graph.items()
    }
    assert "chalicelib.services.notify.sending" in moved
    assert render(moved) == render(graph)
    # A new import between two boxes is a new arrow.
    moved["chalicelib.services.notify.sending"]["chalicelib.mail.outgoing"] = False
    assert render(moved) != render(graph)


def test_the_type_checking_imports_are_told_apart(tmp_path):
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nimport chalicelib.clock\n"
        "if TYPE_CHECKING:\n    from chalicelib.store.posts import PostRecord\n"
        "def f():\n    from chalicelib.store.posts import PostRecord\n"
        "    from chalicelib.mail import threads\n"
    )
    found = architecture.imports_of(tree)
    assert found["chalicelib.clock"] is False
    assert found["chalicelib.store.posts.PostRecord"] is False  # also imported to run
    assert found["chalicelib.mail.threads"] is False
    only_types = architecture.imports_of(
        ast.parse("import typing\nif typing.TYPE_CHECKING:\n    import chalicelib.deps\n")
    )
    assert only_types["chalicelib.deps"] is True


def test_no_arrow_joins_the_mail_in_boxes_and_the_notify_boxes():
    """tests/fast/test_architecture.py keeps services/mail_in and services/notify apart; the
    picture's boxes hold more (the push door's services/inbound.py, the jobs that call each
    pipeline): none of one pipeline imports one of the other."""
    crossing = [
        f"{a.source.label} imports {a.target.label}"
        for a in arrows(code())
        if {a.source.kind, a.target.kind} == {MAIL_IN, NOTIFY}
    ]
    assert crossing == []


def test_the_arrows_point_down_or_across_a_row_never_up():
    drawn = arrows(code())
    assert {"mail_in", "notify", "store", "domain"} <= {a.target.key for a in drawn}
    assert [
        f"{a.source.label} imports {a.target.label}" for a in drawn if a.target.row < a.source.row
    ] == []
    # domain/ at the bottom imports no box.
    assert [a for a in drawn if a.source.key == "domain"] == []


def test_every_box_holds_code_and_the_job_adapters_are_at_the_top():
    """A box whose modules are gone (a job merged into another) is taken out of BOXES in
    bench/architecture.py rather than left to name what is not there."""
    graph = code()
    empty = [box.label for box in BOXES if not any(architecture.box_of(m) == box for m in graph)]
    assert empty == []
    assert all(box.label.startswith("jobs/") for box in BOXES if box.row == 0)


def _classes() -> set[str]:
    return {
        node.name
        for path in (REPO_ROOT / "chalicelib").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }


def test_the_pipelines_section_names_only_files_and_classes_that_are_there():
    """Modules move while the pipelines are made to own their flow: the page's section about them
    names no file, folder or class that has gone (`services/inbound.py`, `MailIngestor`, …)."""
    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## The two pipelines", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([^`\s]+)`", section))
    paths = {n for n in named if n.endswith((".py", "/"))}
    classes = {n for n in named if re.fullmatch(r"[A-Z][A-Za-z]+", n)}
    assert {"services/mail_in/", "jobs/outbox.py", "MailIngestor"} <= named
    here = [REPO_ROOT / "chalicelib", REPO_ROOT]
    assert sorted(p for p in paths if not any((root / p).exists() for root in here)) == []
    assert sorted(classes - _classes()) == []

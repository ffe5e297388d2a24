"""No message a user sees names an internal document or a section of one (issue 37): the API's
error messages and every other string the code writes, the OpenAPI document (its descriptions
come from docstrings too), the CLI's and `make run`'s `--help`, and the console's pages."""

from __future__ import annotations

import ast
import json
import re

import agora_local.run
from tests.support import REPO_ROOT

INTERNAL = re.compile(r"CONTRACT|ARCHITECTURE\.md|STYLE\.md|§")


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The docstrings of a module, its classes and functions: notes for its readers."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_string_of_the_code_names_an_internal_document():
    named = []
    paths = [*(REPO_ROOT / "chalicelib").rglob("*.py"), *(REPO_ROOT / "agora_local").rglob("*.py")]
    for path in sorted(paths):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = docstring_nodes(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and INTERNAL.search(node.value)
            ):
                named.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value[:80]}")
    assert named == []


def test_the_openapi_document_names_no_internal_document():
    # The routes registered, as when the API serves the document: asked before, the document
    # is made (once) of no route at all, and tests/api/test_openapi.py then read that one.
    import app  # noqa: F401
    from chalicelib.api.openapi_document import openapi_document

    text = json.dumps(openapi_document(), ensure_ascii=False)
    assert INTERNAL.findall(text) == []


def test_no_help_names_an_internal_document():
    from chalicelib.cli import parser

    root = parser()
    helps = [root.format_help()]
    for action in root._subparsers._group_actions:  # type: ignore[union-attr]
        helps += [command.format_help() for command in action.choices.values()]
    helps.append(agora_local.run.__doc__ or "")
    assert [h for h in helps if INTERNAL.search(h)] == []


def test_the_console_names_no_internal_document():
    console = REPO_ROOT / "chalicelib" / "console"
    named = [
        p.name
        for p in sorted(console.iterdir())
        if p.is_file() and INTERNAL.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert named == []

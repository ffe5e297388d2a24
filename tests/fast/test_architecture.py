"""The layering the style guide asks for, checked on the source (AST, nothing is imported)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.fast

PACKAGE = REPO_ROOT / "chalicelib"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imported(path: Path) -> set[str]:
    """Every module the file imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _own(name: str) -> str | None:
    """The chalicelib module a dotted name lives in (`a.b.Thing` → `a.b`)."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in _modules().items():
        found = {_own(n) for n in _imported(path) if n.startswith("chalicelib")}
        graph[name] = {n for n in found if n is not None and n != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == {frozenset({"a", "b", "c"})}
    assert _cycles({"a": {"b"}, "b": set()}) == set()


def test_no_import_cycle_in_chalicelib():
    graph = _graph()
    assert len(graph) > 50 and "chalicelib.services.notify" in graph  # the walk saw the tree
    assert _cycles(graph) == set()


FORBIDDEN_IN_SERVICES = ("chalice", "botocore", "chalicelib.envelope")


def test_services_import_neither_chalice_nor_botocore_nor_the_envelope():
    offenders = []
    for name, path in _modules().items():
        if not name.startswith("chalicelib.services."):
            continue
        for imported in _imported(path):
            if any(imported == f or imported.startswith(f + ".") for f in FORBIDDEN_IN_SERVICES):
                offenders.append(f"{name} imports {imported}")
    assert offenders == []


def test_callers_are_built_in_auth_only():
    """`Caller.of(user, root)` is the one way from a user to their privileges."""
    builders = set()
    for name, path in _modules().items():
        if "Caller(" in path.read_text(encoding="utf-8"):
            builders.add(name)
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Caller":
                builders.add(name)
    assert builders <= {"chalicelib.auth"}

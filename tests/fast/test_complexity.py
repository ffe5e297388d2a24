"""No function we write above cyclomatic complexity 15 (radon), wherever it lives: app.py,
chalicelib, make run's agora_local, infra, bench, the tests and their support (issue 60). A
function that branches more is split into small ones (or a table where a chain of ifs picks one
of many), pure where it can be.

Asserts are not counted (radon's `no_assert`), everywhere: in a test the asserts are the checks,
one after another, not paths through it, and counting them would push a test to split what it
checks rather than how it branches; in the shipped code an assert states an invariant (most narrow
a type for mypy) and no reader follows it as a branch. One measure for every file keeps the rule
one rule. What is not ours is not measured: build/ (the Lambda dependencies), the virtualenv,
node_modules, caches and hidden folders, bench's work folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from tests.support import REPO_ROOT

LIMIT = 15
# Folders (by name, at any depth) that hold no code of ours; hidden folders are skipped too.
NOT_OURS = {"build", "node_modules", "__pycache__"}
NOT_OURS_PATHS = {"bench/work"}  # what bench writes as it runs (gitignored)


def our_python_files(root: Path = REPO_ROOT) -> list[Path]:
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".")
            and name not in NOT_OURS
            and Path(folder, name).relative_to(root).as_posix() not in NOT_OURS_PATHS
        ]
        found += [Path(folder, name) for name in files if name.endswith(".py")]
    return sorted(found)


def _functions(blocks: list[Any], prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, complexity) of every function, method and closure among radon's blocks
    (which list a class's methods beside the class, each with its class name)."""
    from radon.visitors import Class

    for block in blocks:
        if isinstance(block, Class):
            continue
        name = f"{prefix}{block.fullname}"
        yield name, block.complexity
        yield from _functions(block.closures, f"{name}.")


def over_limit(source: str, limit: int = LIMIT) -> dict[str, int]:
    from radon.complexity import cc_visit

    return {name: cc for name, cc in _functions(cc_visit(source, no_assert=True)) if cc > limit}


@cache
def _offenders() -> dict[str, int]:
    found = {}
    for path in our_python_files():
        module = path.relative_to(REPO_ROOT).as_posix()
        for name, cc in over_limit(path.read_text(encoding="utf-8")).items():
            found[f"{module}:{name}"] = cc
    return found


def test_the_measure_sees_methods_and_closures_and_not_asserts():
    branches = "".join(f"    if x == {n}:\n        return {n}\n" for n in range(LIMIT))
    nested = branches.replace("\n    ", "\n        ")
    source = (
        f"def flat(x):\n{branches}    return -1\n"
        f"class C:\n    def method(self, x):\n    {nested}        return -1\n"
        f"def outer():\n    def inner(x):\n    {nested}        return -1\n    return inner\n"
    )
    assert over_limit(source) == {"flat": 16, "C.method": 16, "outer.inner": 16}
    assert over_limit(source, limit=16) == {}
    # Twenty checks in a row are one path; an if among them is still a branch.
    checks = "".join(f"    assert x != {n}\n" for n in range(20))
    assert over_limit(f"def test_checks(x):\n{checks}") == {}
    assert over_limit(f"def test_checks(x):\n{checks}{branches}", limit=LIMIT) == {
        "test_checks": 16
    }


def test_the_files_measured_are_every_python_file_we_write(tmp_path):
    measured = {path.relative_to(REPO_ROOT).as_posix() for path in our_python_files()}
    for ours in ("app.py", "mkdocs_hooks.py", "chalicelib/api/events.py",
                 "agora_local/__main__.py", "infra/build.py", "bench/mail_day.py",
                 "tests/fast/test_complexity.py", "tests/support/sam_stack.py",
                 "tests/rehearsal/iam.py"):  # fmt: skip
        assert ours in measured, ours
    # And nothing of what is installed, built or cached, here or in a copy of the tree's shape.
    for folder in (".venv/lib", "build/package", "node_modules/x", "chalicelib/__pycache__",
                   "bench/work", ".chalice/venv", "tests"):  # fmt: skip
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "module.py").write_text("")
    found = {path.relative_to(tmp_path).as_posix() for path in our_python_files(tmp_path)}
    assert found == {"tests/module.py"}


def test_no_function_we_write_is_above_the_limit():
    assert _offenders() == {}

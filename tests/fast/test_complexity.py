"""No function in chalicelib (nor in make run's agora_local) above cyclomatic complexity 15 (radon): a function that branches
more is split into small ones, pure where it can be, each with its own fast test."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from tests.support import REPO_ROOT

PACKAGES = (REPO_ROOT / "chalicelib", REPO_ROOT / "agora_local")
LIMIT = 15


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

    return {name: cc for name, cc in _functions(cc_visit(source)) if cc > limit}


@cache
def _offenders() -> dict[str, int]:
    found = {}
    for path in sorted(p for package in PACKAGES for p in package.rglob("*.py")):
        module = path.relative_to(REPO_ROOT).as_posix()
        for name, cc in over_limit(path.read_text(encoding="utf-8")).items():
            found[f"{module}:{name}"] = cc
    return found


def test_the_measure_sees_methods_and_closures():
    branches = "".join(f"    if x == {n}:\n        return {n}\n" for n in range(LIMIT))
    source = (
        f"def flat(x):\n{branches}    return -1\n"
        f"class C:\n    def method(self, x):\n    {branches.replace(chr(10) + '    ', chr(10) + '        ')}"
        "        return -1\n"
        f"def outer():\n    def inner(x):\n    {branches.replace(chr(10) + '    ', chr(10) + '        ')}"
        "        return -1\n    return inner\n"
    )
    assert over_limit(source) == {"flat": 16, "C.method": 16, "outer.inner": 16}
    assert over_limit(source, limit=16) == {}


def test_no_function_in_chalicelib_is_above_the_limit():
    assert _offenders() == {}

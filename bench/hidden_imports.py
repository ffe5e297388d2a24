"""Imports inside functions (issue 52 item 4): how many chalicelib hides from its readers and tools.

An AST walk (nothing is imported): every `import` and `from … import` under a function or lambda
of a chalicelib module, a nested function's counted once. Each is either a cycle waiting to be
untangled or a cold-start choice that a comment beside it measures.

    PYTHONPATH=. .venv/bin/python -m bench.hidden_imports           # the total and the files
    PYTHONPATH=. .venv/bin/python -m bench.hidden_imports --files   # and the count of each file
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def hidden(tree: ast.AST, inside: bool = False) -> int:
    """The imports below `tree` that stand inside a function."""
    found = 0
    for child in ast.iter_child_nodes(tree):
        if inside and isinstance(child, ast.Import | ast.ImportFrom):
            found += 1
        found += hidden(child, inside or isinstance(child, FUNCTIONS))
    return found


def counts(package: Path = ROOT / "chalicelib") -> dict[str, int]:
    """Module path → its imports inside functions, for every module with one."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        n = hidden(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if n:
            found[path.relative_to(ROOT).as_posix()] = n
    return found


def main(argv: list[str] | None = None) -> None:
    found = counts()
    print(f"imports inside functions in chalicelib: {sum(found.values())} in {len(found)} files")
    if "--files" in (sys.argv[1:] if argv is None else argv):
        for name, n in sorted(found.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {n:3d} {name}")


if __name__ == "__main__":
    main()

"""Imports inside functions (issue 52 item 4): how many chalicelib hides from its readers and tools.

An AST walk (nothing is imported): every `import` and `from … import` under a function or lambda
of a chalicelib module, a nested function's counted once. Each is either a cycle waiting to be
untangled or a cold-start choice that a comment beside it measures.

    PYTHONPATH=. .venv/bin/python -m bench.hidden_imports           # the total and the files
    PYTHONPATH=. .venv/bin/python -m bench.hidden_imports --files   # and the count of each file
    PYTHONPATH=. .venv/bin/python -m bench.hidden_imports --cost chalicelib.store.base jwt

`--cost` measures what importing each module at the top would add to `import app` (the Lambda's
cold start): in a fresh interpreter after `import app`, the median of 5 imports' wall time. The
figure beside a deferred import comes from it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

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


COST_RUNS = 5
PROBE = (
    "import time, app; start = time.perf_counter(); import {module}; "
    "print((time.perf_counter() - start) * 1000)"
)


def cost_ms(module: str) -> float:
    """Milliseconds that importing `module` adds once `app` is imported (median of fresh runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", PROBE.format(module=module)],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout.split()[-1]
        )
        for _ in range(COST_RUNS)
    ]
    return median(runs)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--cost"]:
        for module in args[1:]:
            print(f"{cost_ms(module):8.1f} ms  {module}")
        return
    found = counts()
    print(f"imports inside functions in chalicelib: {sum(found.values())} in {len(found)} files")
    if "--files" in args:
        for name, n in sorted(found.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {n:3d} {name}")


if __name__ == "__main__":
    main()

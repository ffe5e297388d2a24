"""`make package`'s check of the packaged template: cfn-lint with its serverless rules
(cfn-lint-serverless), every finding failing except those infra/lint-exceptions.json lists with
their reason; an exception that no longer occurs fails too, so the list stays true.

    python -m infra.lint build/package/sam.yaml
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

EXCEPTIONS = Path(__file__).resolve().parent / "lint-exceptions.json"


def exceptions(path: Path = EXCEPTIONS) -> dict[str, set[str]]:
    listed = json.loads(path.read_text())
    return {
        rule: set(entry["resources"])
        for rule, entry in listed.items()
        if isinstance(entry, dict) and entry.get("reason")
    }


def findings(template: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--append-rules",
         "cfn_lint_serverless.rules", "--format", "json", "--", str(template)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Its exit code is a bitmask of the levels found (2 error, 4 warning, 8 informational);
    # anything else, or no JSON, is cfn-lint itself failing.
    try:
        return list(json.loads(done.stdout or "[]"))
    except json.JSONDecodeError:
        raise SystemExit(f"cfn-lint failed to run: {done.stderr.strip()[-2000:]}") from None


def judge(found: list[dict[str, Any]], allowed: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """(findings not excepted, exceptions that no longer occur), one line each."""
    failing, seen = [], set()
    for finding in found:
        rule = finding["Rule"]["Id"]
        path = finding["Location"].get("Path") or []
        resource = path[1] if len(path) > 1 and path[0] == "Resources" else ""
        listed = allowed.get(rule, set())
        if resource in listed or "*" in listed:
            seen.add((rule, resource if resource in listed else "*"))
            continue
        line = finding["Location"]["Start"]["LineNumber"]
        failing.append(f"{rule} {resource or '-'} (line {line}): {finding['Message']}")
    stale = [
        f"{rule} {resource}: listed in {EXCEPTIONS.name} but no longer found"
        for rule, resources in sorted(allowed.items())
        for resource in sorted(resources)
        if (rule, resource) not in seen
    ]
    return failing, stale


def main(argv: list[str]) -> int:
    failing, stale = judge(findings(Path(argv[0])), exceptions())
    for line in failing + stale:
        print(line)
    if not failing and not stale:
        print(f"{argv[0]}: cfn-lint and serverless rules clean (exceptions: {EXCEPTIONS.name})")
    return 1 if failing or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Every `pattern` of the OpenAPI document reads a text as ECMA-262 does (JSON Schema's regular
expressions): a client's validator (a browser's, node's) and Python's (jsonschema, Hypothesis,
Schemathesis) must agree, or a text one of them takes is refused by the other. Python's `$`
matching before a last newline was such a difference. Node, which nobody here wrote, reads each
pattern against hostile texts (line breaks of every kind, controls, blanks, direction controls,
astral characters) and answers as Python's `re.search` does."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess

import pytest

NODE = shutil.which("node")
# What the document's patterns speak of: line breaks, blanks, controls the router removes,
# direction controls, delimiters, and ordinary and astral characters.
POOL = (
    "\n\r\t\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029 \u00a0\u1680\u2000\u202f\u3000\ufeff"
    "\x00\x07\x1f\x7f\x9f\u202a\u202e\u2066\u2069"
    "aZ09.-_@:/?#[]%+*\u00e9\u4e2d\U0001f600\U00010348"
)
FIXED = ["", "\n", "a\n", "\na", "Spring fair", "Spring fair\n", " \t ", "http://a.b/c", "a\u2028b"]


def patterns_of(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(patterns_of(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(patterns_of(value) for value in node))
    return set()


@pytest.mark.skipif(
    NODE is None, reason="node is not installed (make test installs npm's packages)"
)
def test_every_pattern_of_the_document_reads_alike_in_node_and_python(api):
    document = json.loads(api.client.http.get("/api/v1/en_US/openapi.json").body)
    patterns = sorted(patterns_of(document))
    assert len(patterns) >= 5, patterns  # the single line, the visible character, URLs, …
    pick = random.Random(20261208)
    texts = FIXED + ["".join(pick.choices(POOL, k=pick.randint(1, 12))) for _ in range(400)]
    script = (
        "const {patterns, texts} = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(patterns.map("
        "p => { const r = new RegExp(p, 'u'); return texts.map(t => r.test(t)); })));"
    )
    answer = subprocess.run(
        [NODE, "-e", script],
        input=json.dumps({"patterns": patterns, "texts": texts}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    in_node = json.loads(answer.stdout)
    for pattern, node_says in zip(patterns, in_node, strict=True):
        python_says = [re.search(pattern, text) is not None for text in texts]
        differ = [t for t, n, p in zip(texts, node_says, python_says, strict=True) if n != p]
        assert not differ, (pattern, differ[:5])

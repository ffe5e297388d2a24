"""Every metric the code can emit is registered (issue 57): `metrics.emit` refuses an unknown name
once AWS_LAMBDA_FUNCTION_NAME is set, which only Lambda sets, so an unregistered name passed every
test run without it and raised in the function (`NotificationDeadLettered`: the poison path
crashed and its record blocked the stream). Each `metrics.emit(...)` of chalicelib and app.py is
read from the source and emitted here under Lambda's variables, with the dimensions it names."""

from __future__ import annotations

import ast
import functools
import io
import json
from contextlib import redirect_stdout

import pytest

from tests.support import REPO_ROOT


# Read once a process: the tree's every module parsed, for the parametrisation and each case.
@functools.cache
def emitted() -> dict[str, frozenset[str]]:
    """Each metric name the code emits -> the dimensions some call gives it."""
    found: dict[str, set[str]] = {}
    sources = [REPO_ROOT / "app.py", *sorted((REPO_ROOT / "chalicelib").rglob("*.py"))]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "emit"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "metrics"
            ):
                continue
            name = node.args[0] if node.args else None
            where = f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
            # A name the source does not spell out could be any name: this test could not check it.
            assert isinstance(name, ast.Constant) and isinstance(name.value, str), where
            found.setdefault(name.value, set()).update(k.arg for k in node.keywords if k.arg)
    return {name: frozenset(dimensions) for name, dimensions in found.items()}


def test_the_metric_calls_are_found():
    names = emitted()
    assert {"MailHandled", "ServerErrors", "NotificationDeadLettered"} <= set(names)
    assert names["MailHandled"] == {"Outcome"}


@pytest.mark.parametrize("name", sorted(emitted()))
def test_each_metric_the_code_emits_is_registered_and_written_in_lambda(name, monkeypatch):
    from chalicelib import metrics

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agora-dev-rehearsal")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "7")
    dimensions = {key: "value" for key in emitted()[name]}
    written = io.StringIO()
    with redirect_stdout(written):
        metrics.emit(name, 1, **dimensions)
    document = json.loads(written.getvalue())
    [directive] = document["_aws"]["CloudWatchMetrics"]
    assert [m["Name"] for m in directive["Metrics"]] == [name]
    assert directive["Namespace"] == "Agora"
    assert set(dimensions) <= set(directive["Dimensions"][0])

"""The fast tier's guard (tests/conftest.py): a test marked fast that asks for moto, a server,
Dovecot or Chromium is refused at collection; a parameter of the same name is not a fixture."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import _refuse_fast_tests_with_aws_or_servers


@dataclass
class _CallSpec:
    params: dict[str, object]


@dataclass
class _Item:
    nodeid: str
    fixturenames: list[str]
    fast: bool = True
    callspec: _CallSpec | None = None

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "fast" and self.fast else None


def test_a_fast_test_asking_for_moto_or_a_server_is_refused_by_name():
    items = [
        _Item("t.py::rule", ["tmp_path"]),
        _Item("t.py::moto", ["aws", "tmp_path"]),
        _Item("t.py::pop3", ["dovecot"]),
    ]
    with pytest.raises(pytest.UsageError) as refused:
        _refuse_fast_tests_with_aws_or_servers(items)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "t.py::moto uses ['aws']" in message and "t.py::pop3 uses ['dovecot']" in message
    assert "t.py::rule" not in message


def test_slow_tests_and_parameters_named_like_fixtures_pass():
    items = [
        _Item("t.py::slow", ["aws", "browser"], fast=False),
        _Item("t.py::param", ["token"], callspec=_CallSpec({"token": "a.b"})),
    ]
    _refuse_fast_tests_with_aws_or_servers(items)  # type: ignore[arg-type]


def test_a_test_under_tests_fast_is_marked_fast_by_its_folder(request: pytest.FixtureRequest):
    # This module marks nothing itself: tests/fast/conftest.py does, for `-m fast` and the guard.
    assert request.node.get_closest_marker("fast") is not None

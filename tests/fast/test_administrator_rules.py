"""The first administrator's rules (services/administrators.py), pure: what a run changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chalicelib.auth import hash_password
from chalicelib.errors import ValidationFailed
from chalicelib.services.administrators import _changes, _check_password

HASH = hash_password("correct horse")


def account(role: str | None) -> SimpleNamespace:
    return SimpleNamespace(memberships={"g": role} if role else {}, password_hash=HASH)


def test_a_new_account_is_created_not_promoted():
    assert _changes(account(None), "g", "anything", created=True) == (False, False)


def test_an_administrator_with_the_same_password_changes_nothing():
    assert _changes(account("administrator"), "g", "correct horse", created=False) == (
        False,
        False,
    )


def test_a_member_is_promoted_and_a_new_password_is_a_change():
    assert _changes(account("member"), "g", "correct horse", created=False) == (True, False)
    assert _changes(account(None), "g", "battery staple", created=False) == (True, True)
    assert _changes(account("administrator"), "h", "correct horse", created=False) == (
        True,
        False,
    )


def test_a_short_password_is_refused():
    with pytest.raises(ValidationFailed):
        _check_password("short")
    _check_password("long enough")

"""The token secret from Secrets Manager at run time, and its rotation window (in moto): tokens
signed with the old and the new secret are both accepted during the window, only the new after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.auth import ROTATION_WINDOW, SecretsManagerKeys, user_id_from_token
from chalicelib.errors import Unauthorized

SECRET_ID = "agora-test-token-secret"


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def sign(secret: str, user_id: str) -> str:
    import jwt

    now = datetime.now(UTC)
    claims = {"sub": user_id, "iat": now, "exp": now + timedelta(hours=8)}
    return jwt.encode(claims, secret, algorithm="HS256")


@pytest.fixture
def secrets_manager(aws):
    from chalicelib.aws import client

    sm = client("secretsmanager")
    sm.create_secret(Name=SECRET_ID, SecretString="first-secret-" + "x" * 40)
    return sm


def test_tokens_of_old_and_new_secret_pass_during_the_window_only_new_after(secrets_manager):
    clock = Clock()
    keys = SecretsManagerKeys(SECRET_ID, clock=clock, cache_seconds=0)
    old_secret = keys.keys().current
    old_token = sign(old_secret, "ann")
    assert user_id_from_token(old_token, keys) == "ann"

    secrets_manager.put_secret_value(SecretId=SECRET_ID, SecretString="second-secret-" + "y" * 40)
    new_token = sign(keys.keys().current, "bob")
    assert keys.keys().current != old_secret
    # During the window: both.
    assert user_id_from_token(old_token, keys) == "ann"
    assert user_id_from_token(new_token, keys) == "bob"
    # After it: only the new secret's tokens.
    clock.now += ROTATION_WINDOW + timedelta(seconds=1)
    assert user_id_from_token(new_token, keys) == "bob"
    with pytest.raises(Unauthorized):
        user_id_from_token(old_token, keys)


def test_a_token_of_a_secret_never_stored_is_refused(secrets_manager):
    keys = SecretsManagerKeys(SECRET_ID, cache_seconds=0)
    with pytest.raises(Unauthorized):
        user_id_from_token(sign("some-other-secret-" + "z" * 40, "eve"), keys)


def test_the_secret_is_cached_until_the_cache_time_passes(secrets_manager):
    keys = SecretsManagerKeys(SECRET_ID, cache_seconds=3600)
    first = keys.keys().current
    secrets_manager.put_secret_value(SecretId=SECRET_ID, SecretString="rotated-" + "r" * 40)
    assert keys.keys().current == first  # no Secrets Manager call per request
    keys.forget()
    assert keys.keys().current == "rotated-" + "r" * 40


def test_sign_in_works_with_the_secret_referenced_from_secrets_manager(
    secrets_manager, community, api, monkeypatch
):
    from chalicelib.auth import forget_all
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_TOKEN_SECRET", f"secretsmanager:{SECRET_ID}")
    reload_settings()
    forget_all()
    try:
        c = community
        admin = c.user("admin", {c.root: "administrator"}, password="pass phrase 1")
        c.load()
        status, body = api.post(
            "/api/v1/en_US/security/login",
            body={"email": "admin@example.org", "password": "pass phrase 1"},
        )
        assert status == 200, body
        token = body["object"]
        assert user_id_from_token(token, SecretsManagerKeys(SECRET_ID)) == admin
        status, _ = api.get("/api/v1/en_US/system-page/home-page", headers={"X-Auth": token})
        assert status == 200
    finally:
        monkeypatch.undo()
        reload_settings()
        forget_all()

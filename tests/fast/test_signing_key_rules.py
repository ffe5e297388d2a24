"""The token secret's rotation window and cache (chalicelib/auth.py), with a fake Secrets
Manager client passed through the constructor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from chalicelib.auth import (
    ROTATION_WINDOW,
    SecretsManagerKeys,
    SigningKeys,
    StaticKeys,
    provider_for,
)

ROTATED = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


class FakeSecretsManager:
    """Answers `get_secret_value` from `versions` (stage -> answer, or an error code)."""

    def __init__(self, versions: dict[str, Any]) -> None:
        self.versions = versions
        self.calls: list[str] = []

    def get_secret_value(self, SecretId: str, VersionStage: str) -> dict[str, Any]:  # noqa: N803
        self.calls.append(VersionStage)
        found = self.versions.get(VersionStage, "ResourceNotFoundException")
        if isinstance(found, str):
            raise ClientError({"Error": {"Code": found}}, "GetSecretValue")
        return found


def rotated_secret() -> FakeSecretsManager:
    return FakeSecretsManager(
        {
            "AWSCURRENT": {"SecretString": "new", "CreatedDate": ROTATED},
            "AWSPREVIOUS": {"SecretString": "old", "CreatedDate": ROTATED - timedelta(days=30)},
        }
    )


def test_the_previous_key_is_accepted_only_within_the_window():
    keys = SigningKeys(current="new", previous="old", current_since=ROTATED)
    assert keys.accepted(ROTATED + ROTATION_WINDOW - timedelta(seconds=1)) == ["new", "old"]
    assert keys.accepted(ROTATED + ROTATION_WINDOW) == ["new"]


def test_without_a_rotation_date_only_the_current_key_is_accepted():
    assert SigningKeys(current="new", previous="old").accepted(ROTATED) == ["new"]


def test_a_static_secret_is_the_one_key():
    assert StaticKeys("s").accepted() == ["s"]
    assert StaticKeys("s").secrets() == ["s"]
    assert StaticKeys("s").keys() == SigningKeys(current="s")


def test_reply_keys_read_with_the_previous_secret_past_the_sign_in_window():
    """A reply may come weeks after its email: the secrets reply keys are read with (mail/threads.py)
    are the current and the previous one, however long ago the rotation was."""
    late = SecretsManagerKeys(
        "s", client=rotated_secret(), clock=lambda: ROTATED + timedelta(days=60)
    )
    assert late.accepted() == ["new"]
    assert late.secrets() == ["new", "old"]
    never_rotated = FakeSecretsManager({"AWSCURRENT": {"SecretString": "only"}})
    assert SecretsManagerKeys("s", client=never_rotated).secrets() == ["only"]


def test_the_rotated_secret_accepts_both_versions_during_the_window():
    now = ROTATED + timedelta(hours=1)
    keys = SecretsManagerKeys("agora-token", client=rotated_secret(), clock=lambda: now)
    assert keys.accepted() == ["new", "old"]


def test_after_the_window_only_the_current_version_is_accepted():
    later = ROTATED + ROTATION_WINDOW + timedelta(minutes=1)
    keys = SecretsManagerKeys("agora-token", client=rotated_secret(), clock=lambda: later)
    assert keys.accepted() == ["new"]


def test_a_secret_never_rotated_has_no_previous_version():
    client = FakeSecretsManager({"AWSCURRENT": {"SecretString": "only"}})
    keys = SecretsManagerKeys("agora-token", client=client)
    assert keys.keys() == SigningKeys(current="only")
    assert keys.accepted() == ["only"]


def test_a_naive_rotation_date_is_read_as_utc():
    client = FakeSecretsManager(
        {"AWSCURRENT": {"SecretString": "new", "CreatedDate": ROTATED.replace(tzinfo=None)}}
    )
    assert SecretsManagerKeys("agora-token", client=client).keys().current_since == ROTATED


def test_the_versions_are_read_once_within_the_cache_time_and_again_after_forget():
    client = rotated_secret()
    keys = SecretsManagerKeys("agora-token", client=client, cache_seconds=3600)
    keys.keys()
    keys.keys()
    assert client.calls == ["AWSCURRENT", "AWSPREVIOUS"]
    keys.forget()
    keys.keys()
    assert len(client.calls) == 4


def test_a_zero_cache_time_reads_on_every_ask():
    client = rotated_secret()
    keys = SecretsManagerKeys("agora-token", client=client, cache_seconds=0)
    keys.keys()
    keys.keys()
    assert len(client.calls) == 4


@pytest.mark.parametrize("code", ["AccessDeniedException", "ThrottlingException"])
def test_a_failure_other_than_no_previous_version_is_raised(code):
    client = FakeSecretsManager({"AWSCURRENT": {"SecretString": "new"}, "AWSPREVIOUS": code})
    with pytest.raises(ClientError):
        SecretsManagerKeys("agora-token", client=client).keys()


def test_a_missing_current_version_is_raised():
    with pytest.raises(ClientError):
        SecretsManagerKeys("agora-token", client=FakeSecretsManager({})).keys()


def test_one_provider_per_setting_value():
    reference = provider_for("secretsmanager:agora-fast-test-secret")
    assert isinstance(reference, SecretsManagerKeys)
    assert reference.secret_id == "agora-fast-test-secret"
    assert provider_for("secretsmanager:agora-fast-test-secret") is reference
    static = provider_for("a-fast-test-secret-value")
    assert isinstance(static, StaticKeys) and static.accepted() == ["a-fast-test-secret-value"]

"""CONTRACT §2: the AGORA_* variables, read by a plain Pydantic model over the environment."""

from __future__ import annotations

import pydantic
import pytest

from chalicelib.settings import Settings


def test_defaults_are_the_contract_defaults():
    settings = Settings.from_environ({})
    assert settings.table_prefix == "agora-dev-"
    assert settings.token_secret is None
    assert settings.public_base_url == "http://localhost:8000"
    assert (settings.port, settings.aws_port) == (8000, 8001)
    assert settings.kms_key_id == "alias/agora"
    assert settings.mail_authserv_id is None
    assert (settings.game_level_base, settings.game_level_exponent) == (100, 2.0)
    assert settings.demo is True


def test_variables_are_read_by_name_in_any_case_and_validated():
    settings = Settings.from_environ(
        {
            "AGORA_TABLE_PREFIX": "t-",
            "agora_port": "9000",
            "AGORA_TOKEN_SECRET": "s3cret",
            "AGORA_BASE_URL": "https://example.org/",
            "AGORA_DEMO": "0",
            "AGORA_GAME_LEVEL_EXPONENT": "1.5",
            "AGORA_SOMETHING_ELSE": "ignored",
            "TABLE_PREFIX": "not ours",
        }
    )
    assert settings.table_prefix == "t-"
    assert settings.port == 9000
    assert settings.token_secret is not None
    assert settings.token_secret.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.public_base_url == "https://example.org"
    assert settings.demo is False
    assert settings.game_level_exponent == 1.5


def test_a_malformed_value_is_refused():
    with pytest.raises(pydantic.ValidationError):
        Settings.from_environ({"AGORA_PORT": "eighty"})


def test_importing_the_settings_does_not_import_asyncio():
    import subprocess
    import sys

    code = "import sys, chalicelib.settings; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

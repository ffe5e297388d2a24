"""CONTRACT §2: the AGORA_* variables, read by a plain Pydantic model over the environment."""

from __future__ import annotations

import json
import subprocess

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
    import sys

    code = "import sys, chalicelib.settings; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "value", ["community.example.org", "ftp://example.org", "https://", "http:///path", "/x"]
)
def test_base_url_needs_an_http_scheme_and_a_host(value):
    with pytest.raises(pydantic.ValidationError, match="absolute http"):
        Settings.from_environ({"AGORA_BASE_URL": value})


def test_new_variables_have_the_contract_defaults_and_are_validated():
    settings = Settings.from_environ({})
    assert settings.cors_origins == "" and settings.allowed_origins == frozenset()
    assert settings.log_level == "INFO"
    settings = Settings.from_environ(
        {
            "AGORA_CORS_ORIGINS": " https://a.example.org/, http://localhost:3000 ,,",
            "AGORA_LOG_LEVEL": "debug",
        }
    )
    assert settings.allowed_origins == {"https://a.example.org", "http://localhost:3000"}
    assert settings.log_level == "DEBUG"
    with pytest.raises(pydantic.ValidationError):
        Settings.from_environ({"AGORA_LOG_LEVEL": "LOUD"})


def test_unknown_agora_variables_are_named_with_the_closest_setting():
    from chalicelib.settings import unknown_variables

    lines = unknown_variables(
        {"AGORA_BASE_ULR": "x", "AGORA_PORT": "1", "AGORA_ZZZ": "y", "PATH": "/bin"}
    )
    assert lines == [
        "AGORA_BASE_ULR is not an Agora setting and is ignored; did you mean AGORA_BASE_URL?",
        "AGORA_ZZZ is not an Agora setting and is ignored",
    ]


def with_a_bad_base_url(*arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`python *arguments` from the repository, AGORA_BASE_URL not a URL (and `variables`), no
    embedded AWS to reach."""
    import os
    import sys

    from tests.support import REPO_ROOT

    env = {**os.environ, "AGORA_BASE_URL": "community.example.org", **variables}
    env.pop("AWS_ENDPOINT_URL", None)
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=REPO_ROOT,
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_and_make_run_name_a_bad_variable_in_one_line(tmp_path):
    for command in (["chalicelib.cli", "create-tables"], ["agora_local"]):
        result = with_a_bad_base_url("-m", *command, AGORA_PORTT="1")
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines == [
            "warning: AGORA_PORTT is not an Agora setting and is ignored; did you mean AGORA_PORT?",
            lines[1],
        ]
        assert "AGORA_BASE_URL: must be an absolute http(s) URL" in lines[1]
        assert "'community.example.org'" in lines[1]


def test_make_runs_own_modules_read_no_setting_when_imported():
    """make run imports its modules before it checks the settings (agora_local/run.py `serve`
    imports agora_local.persistence first): a module of it that loads the store at its top (its
    table models read the settings) would end make run in a traceback, not the one line above,
    whenever the check comes later than the import."""
    from tests.support import REPO_ROOT

    modules = sorted(
        f"agora_local.{path.stem}"
        for path in (REPO_ROOT / "agora_local").glob("*.py")
        if path.stem not in ("__init__", "__main__")
    )
    assert "agora_local.persistence" in modules and "agora_local.lifecycle" in modules
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as error:\n"
        "        print(name, type(error).__name__)\n"
    )
    result = with_a_bad_base_url("-c", script, *modules)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_a_request_refused_for_its_token_does_not_load_pynamodb():
    """A request without a token, or with a malformed, wrongly signed or expired one, is answered
    401 on the token alone: the gate checks it before it builds the user table's repository, so
    PynamoDB is not loaded (only a good token reads the table). The answers are the API's 401s."""
    code = (
        "import sys, json, jwt\n"
        "from datetime import UTC, datetime\n"
        "from chalice.test import Client\n"
        "from app import app\n"
        "from chalicelib.auth import issue_token\n"
        "other = jwt.encode({'sub': 'ann', 'exp': 4102444800}, 'another-secret-that-is-long-enough',"
        " algorithm='HS256')\n"
        "expired = issue_token('ann', datetime(2020, 1, 1, tzinfo=UTC))\n"
        "with Client(app, stage_name='dev') as client:\n"
        "    for token in (None, 'not-a-token', other, expired):\n"
        "        headers = {'X-Auth': token} if token else {}\n"
        "        got = client.http.get('/api/v1/en_US/group/list', headers=headers)\n"
        "        print(got.status_code, json.dumps(json.loads(got.body), sort_keys=True))\n"
        "print('pynamodb' in sys.modules)\n"
    )
    lines = python_in_repo(code).splitlines()
    not_valid = "The token is not valid; sign in again."
    messages = [
        "Sign in first: the request has no valid token.",
        not_valid,
        not_valid,
        "The token has expired; sign in again.",
    ]
    assert [line.split(" ", 1)[0] for line in lines[-5:-1]] == ["401"] * 4
    bodies = [json.loads(line.split(" ", 1)[1]) for line in lines[-5:-1]]
    assert all(body.pop("timestamp") for body in bodies)
    envelope = {"success": False, "object": None, "errors": []}
    assert bodies == [{**envelope, "message": message} for message in messages]
    assert lines[-1] == "False", "PynamoDB was loaded"


def python_in_repo(code: str) -> str:
    """What `python -c code` prints, run in a new interpreter at the repository's root."""
    import sys

    from tests.support import REPO_ROOT

    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_a_request_that_reads_no_table_does_not_load_pynamodb():
    """A cold container's first request that needs no table (the API's own description and its
    reference page) does not pay for loading PynamoDB: the HTTP layer opens each request's call
    memory from store/per_call.py, not from store/base.py, which loads it."""
    import sys

    from tests.support import REPO_ROOT

    code = (
        "import sys\n"
        "from chalice.test import Client\n"
        "from app import app\n"
        "with Client(app, stage_name='dev') as client:\n"
        "    answers = [client.http.get('/api/v1/en_US/openapi.json').status_code,\n"
        "               client.http.get('/api/v1/en_US/docs').status_code]\n"
        "print(answers, 'pynamodb' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip().splitlines()[-1] == "[200, 200] False", out.stderr[-2000:]

"""CONTRACT §3's command line: its arguments, and the one line it prints for the AWS failures an
operator meets first (no command runs, nothing reaches AWS)."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from chalicelib.cli import COMMANDS, EXIT_AWS, EXIT_INVALID, explain_aws_failure, parser, refuse


def test_every_command_has_its_help_from_its_function():
    """A command's help is its function's docstring (chalicelib/cli.py `_command`): one line
    each, none empty."""
    for name, (run, help_text) in COMMANDS.items():
        assert help_text and "\n" not in help_text, name
        assert help_text == " ".join((run.__doc__ or "").split()), name


def test_the_commands_are_the_contract_s():
    assert set(COMMANDS) == {
        "create-tables",
        "load",
        "export",
        "poll-mail",
        "purge-comments",
        "send-digests",
        "create-admin",
        "unlock",
        "migrate",
        "sent-mail",
        "deliver",
        "redrive-outbox",  # issue 57: the outbox drain's dead letters (docs/cli.md)
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["create-tables"], {"command": "create-tables"}),
        (["load", "demo.json"], {"command": "load", "file": "demo.json"}),
        (["export", "-"], {"command": "export", "file": "-"}),
        (["create-admin", "--email", "a@x.org"], {"email": "a@x.org", "group_id": None}),
        (["create-admin", "--email", "a@x.org", "--group-id", "g"], {"group_id": "g"}),
        (["unlock", "--email", "a@x.org"], {"command": "unlock", "email": "a@x.org"}),
    ],
)
def test_each_command_takes_its_arguments(argv, expected):
    arguments = vars(parser().parse_args(argv))
    assert {key: arguments[key] for key in expected} == expected


@pytest.mark.parametrize(
    "argv",
    [[], ["drop-tables"], ["load"], ["export"], ["create-admin"], ["poll-mail", "extra"]],
)
def test_a_missing_or_unknown_argument_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(argv)
    assert stopped.value.code == 2
    assert "usage: python -m chalicelib.cli" in capsys.readouterr().err


def test_a_refusal_is_one_line_on_stderr_with_its_status(capsys):
    assert refuse("load: nothing was written") == EXIT_INVALID
    assert refuse("poll-mail: cannot reach AWS", EXIT_AWS) == EXIT_AWS
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "load: nothing was written\npoll-mail: cannot reach AWS\n"


def test_missing_credentials_point_at_make_run_only_without_an_endpoint(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    line = explain_aws_failure(NoCredentialsError())
    assert line is not None and line.startswith("no AWS credentials")
    assert "make run" in line
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:8001")
    line = explain_aws_failure(PartialCredentialsError(provider="env", cred_var="x"))
    assert line is not None and "make run" not in line


def test_no_region_names_the_variable():
    assert explain_aws_failure(NoRegionError()) == (
        "no AWS region: set AWS_DEFAULT_REGION (make run uses us-east-1)"
    )


def test_an_unreachable_endpoint_names_it(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:8141")
    line = explain_aws_failure(EndpointConnectionError(endpoint_url="http://127.0.0.1:8141"))
    assert line is not None and line.startswith("cannot reach http://127.0.0.1:8141")


def test_the_cause_under_a_wrapping_error_is_explained():
    try:
        try:
            raise NoRegionError()
        except NoRegionError as cause:
            raise RuntimeError("store failed") from cause
    except RuntimeError as wrapped:
        line = explain_aws_failure(wrapped)
    assert line is not None and line.startswith("no AWS region")


def test_an_error_that_is_not_aws_s_is_left_to_the_traceback():
    assert explain_aws_failure(ValueError("a bug")) is None


def test_an_error_chain_with_a_loop_ends():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert explain_aws_failure(first) is None

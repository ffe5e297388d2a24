"""CONTRACT §2's settings rules, on a given environment (no process environment, no AWS)."""

from __future__ import annotations

import pydantic
import pytest

from chalicelib.settings import (
    LOCAL_CREDENTIAL,
    LOCAL_REGION,
    Settings,
    SettingsError,
    agora_variables,
    local_endpoint_defaults,
    parse_dns_servers,
    unknown_variables,
)


@pytest.mark.parametrize(
    ("value", "servers"),
    [
        ("", []),
        ("192.0.2.1", [("192.0.2.1", 53)]),
        ("192.0.2.1:5353, 198.51.100.2", [("192.0.2.1", 5353), ("198.51.100.2", 53)]),
        ("[2001:db8::1]:5300", [("2001:db8::1", 5300)]),
        ("[2001:db8::1]", [("2001:db8::1", 53)]),
        ("2001:db8::1", [("2001:db8::1", 53)]),
        (" , 192.0.2.1 ,, ", [("192.0.2.1", 53)]),
    ],
)
def test_dns_servers_are_addresses_with_port_53_unless_given(value, servers):
    assert parse_dns_servers(value) == servers


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("dns.example.org", "not an IP address"),
        ("192.0.2.1:domain", "not an IP address"),
        ("192.0.2.1:0", "1 to 65535"),
        ("192.0.2.1:65536", "1 to 65535"),
        ("[2001:db8::1]:99999", "1 to 65535"),
    ],
)
def test_a_bad_dns_server_is_named_in_the_error(value, message):
    with pytest.raises(ValueError, match=message):
        parse_dns_servers(value)
    with pytest.raises(pydantic.ValidationError, match=message):
        Settings.from_environ({"AGORA_DNS_SERVERS": value})


MAKE_RUN = "http://127.0.0.1:8001"
AWS = "https://dynamodb.eu-west-1.amazonaws.com"


@pytest.mark.parametrize(
    ("environ", "mode"),
    [
        ({}, "verify"),  # a function, or a CLI against AWS
        ({"AWS_ENDPOINT_URL": AWS}, "verify"),
        ({"AWS_ENDPOINT_URL": "http://localhost.example.org:8001"}, "verify"),
        ({"AWS_ENDPOINT_URL": MAKE_RUN}, "off"),  # make run, or a CLI pointed at it
        ({"AWS_ENDPOINT_URL": "http://localhost:8001"}, "off"),
        ({"AWS_ENDPOINT_URL": "http://[::1]:8001"}, "off"),
        ({"AGORA_MAIL_AUTHSERV_ID": "mx.example.org"}, "header"),
        ({"AGORA_MAIL_AUTHSERV_ID": "mx.example.org", "AWS_ENDPOINT_URL": MAKE_RUN}, "header"),
        ({"AGORA_MAIL_AUTH": "verify", "AWS_ENDPOINT_URL": MAKE_RUN}, "verify"),
        ({"AGORA_MAIL_AUTH": "off"}, "off"),
    ],
)
def test_mail_auth_defaults_to_verify_except_against_make_runs_embedded_aws(environ, mode):
    assert Settings.from_environ(environ).mail_auth_mode == mode


@pytest.mark.parametrize(
    ("environ", "allowed"),
    [
        ({}, False),
        ({"AWS_ENDPOINT_URL": AWS}, False),
        ({"AWS_ENDPOINT_URL": MAKE_RUN}, True),
        ({"AWS_ENDPOINT_URL": MAKE_RUN, "AGORA_MAIL_ALLOW_PRIVATE_HOSTS": "0"}, False),
        ({"AGORA_MAIL_ALLOW_PRIVATE_HOSTS": "1"}, True),
    ],
)
def test_private_mail_hosts_are_allowed_by_default_only_against_make_run(environ, allowed):
    assert Settings.from_environ(environ).mail_allow_private_hosts is allowed


def test_mail_auth_is_read_case_and_space_insensitively_and_wins_over_the_default():
    settings = Settings.from_environ(
        {"AGORA_MAIL_AUTH": "  Verify ", "AGORA_MAIL_AUTHSERV_ID": "mx.example.org"}
    )
    assert settings.mail_auth_mode == "verify"
    assert Settings.from_environ({"AGORA_MAIL_AUTH": "  "}).mail_auth_mode == "verify"


def test_mail_auth_header_without_an_authserv_id_is_refused():
    with pytest.raises(pydantic.ValidationError, match="AGORA_MAIL_AUTHSERV_ID"):
        Settings.from_environ({"AGORA_MAIL_AUTH": "header"})
    with pytest.raises(pydantic.ValidationError):
        Settings.from_environ({"AGORA_MAIL_AUTH": "trust-me"})


def test_the_sender_is_noreply_at_the_base_host_unless_set():
    settings = Settings.from_environ({"AGORA_BASE_URL": "https://Club.Example.org:8443/x"})
    assert settings.sender_address == "noreply@club.example.org"
    explicit = Settings.from_environ({"AGORA_MAIL_SENDER": "  news@club.example.org "})
    assert explicit.sender_address == "news@club.example.org"


def test_an_unset_or_empty_token_secret_names_the_stage_secret():
    assert (
        Settings.from_environ({"AGORA_TABLE_PREFIX": "agora-prod-"}).token_secret_setting
        == "secretsmanager:agora-prod-token-secret"
    )
    empty = Settings.from_environ({"AGORA_TOKEN_SECRET": ""})
    assert empty.token_secret_setting == "secretsmanager:agora-dev-token-secret"
    given = Settings.from_environ({"AGORA_TOKEN_SECRET": "secretsmanager:elsewhere"})
    assert given.token_secret_setting == "secretsmanager:elsewhere"


def test_cache_seconds_may_be_zero_but_not_negative():
    assert Settings.from_environ({"AGORA_CACHE_SECONDS": "0"}).cache_seconds == 0
    with pytest.raises(pydantic.ValidationError):
        Settings.from_environ({"AGORA_CACHE_SECONDS": "-1"})


def test_the_log_level_is_trimmed_and_upper_cased():
    assert Settings.from_environ({"AGORA_LOG_LEVEL": " warning "}).log_level == "WARNING"


def test_the_settings_are_frozen():
    settings = Settings.from_environ({})
    with pytest.raises(pydantic.ValidationError):
        settings.port = 1  # type: ignore[misc]


def test_agora_variables_keep_only_the_prefix_by_field_name():
    found = agora_variables({"Agora_Port": "1", "AGORA_": "x", "AGORAPORT": "2", "PATH": "/"})
    assert found == {"port": "1", "": "x"}


def test_the_tools_own_variables_are_not_called_unknown():
    assert unknown_variables({"AGORA_FUZZ_EXAMPLES": "5", "AGORA_MAIL_CORPUS_DIR": "/x"}) == []


def test_no_endpoint_adds_nothing():
    assert local_endpoint_defaults({}) == {}
    assert local_endpoint_defaults({"AWS_ENDPOINT_URL": "  "}) == {}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_a_loopback_endpoint_brings_make_run_s_region_and_credentials(host):
    assert local_endpoint_defaults({"AWS_ENDPOINT_URL": f"http://{host}:8001"}) == {
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        "AWS_ACCESS_KEY_ID": LOCAL_CREDENTIAL,
        "AWS_SECRET_ACCESS_KEY": LOCAL_CREDENTIAL,
    }


def test_a_loopback_endpoint_keeps_the_region_and_credentials_already_set():
    environ = {"AWS_ENDPOINT_URL": "http://127.0.0.1:8001", "AWS_REGION": "eu-west-1"}
    assert set(local_endpoint_defaults(environ)) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    environ = {"AWS_ENDPOINT_URL": "http://127.0.0.1:8001", "AWS_PROFILE": "dev"}
    assert set(local_endpoint_defaults(environ)) == {"AWS_DEFAULT_REGION"}


def test_a_remote_endpoint_brings_nothing():
    assert local_endpoint_defaults({"AWS_ENDPOINT_URL": "https://dynamodb.example.org"}) == {}


@pytest.mark.parametrize("endpoint", ["127.0.0.1:8001", "ftp://127.0.0.1", "http://:8001"])
def test_an_endpoint_without_scheme_or_host_is_named(endpoint):
    with pytest.raises(SettingsError, match="AWS_ENDPOINT_URL must be a URL with its scheme"):
        local_endpoint_defaults({"AWS_ENDPOINT_URL": endpoint})


def test_an_endpoint_with_a_port_that_is_no_number_is_named():
    with pytest.raises(SettingsError, match="AWS_ENDPOINT_URL"):
        local_endpoint_defaults({"AWS_ENDPOINT_URL": "http://127.0.0.1:port"})

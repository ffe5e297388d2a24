"""Configuration (CONTRACT §2). The only module that reads the environment, and only when asked.

A plain Pydantic model over `os.environ` rather than pydantic-settings: the latter pulls in asyncio
and costs 60–80 ms of every cold start (issue 17). The behaviour is the one pydantic-settings had
with `env_prefix="AGORA_"`: names are matched without regard to case, values are validated by the
model (so `AGORA_PORT=x` is an error, `AGORA_DEMO=0` is False), unknown variables are ignored.

AWS's own variables (AWS_ENDPOINT_URL, AWS_DEFAULT_REGION, credentials, SSL_CERT_FILE) are read by
botocore and OpenSSL themselves, as every AWS tool does; Agora adds no variable of its own for them.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

ENV_PREFIX = "AGORA_"
_DOMAIN_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# Powertools' service name, pinned here only: the log lines' `service`, and the functions'
# POWERTOOLS_SERVICE_NAME (infra/operations.py), which adds a `service` dimension to every metric
# in Lambda; the alarms read their dimensions from it (infra.cloudwatch.agora).
SERVICE = "agora"
# Read by the test suite and the benchmarks, not by Agora: never warned about.
# AGORA_* variables read outside Settings: tools', and the deploy canary's (jobs/pre_traffic.py,
# services/canary.py), which every cold start of the hook and of migrate warned of (issue 57).
TOOL_VARIABLES = {"fuzz_examples", "mail_corpus_dir", "pre_traffic_version", "canary_secret"}


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    table_prefix: str = "agora-dev-"
    # Tables that live under another name than prefix + stem, `stem=name,…`: a point-in-time
    # restore lands in a new table (`make restore`, infra/restore.py), and the stack points here.
    table_names: str = ""
    token_secret: SecretStr | None = None
    base_url: str = "http://localhost:8000"
    port: int = 8000
    aws_port: int = 8001
    kms_key_id: str = "alias/agora"
    mail_authserv_id: str | None = None
    # How mail in decides a sender is genuine (CONTRACT §2); None: `mail_auth_mode` decides.
    mail_auth: Literal["off", "header", "verify"] | None = None
    # With `verify`: what a mail becomes when no DKIM signature aligned with its From counts:
    # `hold` (a comment waits for approval, a post is rejected) or `accept`.
    mail_unverified: Literal["hold", "accept"] = "hold"
    # Resolvers for mail authentication look-ups, `host:port,...`; empty: the system's.
    dns_servers: str = ""
    game_level_base: int = 100
    game_level_exponent: float = 2.0
    # make run: load demo/community.json unless AGORA_DEMO=0 (only into an empty store).
    demo: bool = True
    # make run: the folder that keeps its data between runs; empty: `.agora-run` in the project.
    data_dir: str = ""
    # Name of the SQS queue that carries one message per mailbox to poll.
    mailbox_queue: str = "agora-mailbox-jobs"
    # Name of the SQS queue that carries chunks of notification recipients (fan-out).
    notify_queue: str = "agora-notification-jobs"
    # Name of the SQS queue that carries batches of the day's digest recipients (fan-out).
    digest_queue: str = "agora-digest-jobs"
    # Mails a second SES takes from this account (its sending quota), shared by every function
    # that sends: chalicelib/mail/outgoing.py splits it between them.
    mail_send_rate: float = Field(default=14.0, gt=0)
    # SQS queue that SES bounce and complaint notifications reach through SNS (infra).
    ses_feedback_queue: str = "agora-ses-feedback"
    # SES configuration set every notification email is sent with: its event destination
    # publishes bounces and complaints to that SNS topic. Empty: none (make run, tests).
    ses_configuration_set: str = ""
    # EventBridge bus that receives the domain events (CONTRACT §2); empty: none are sent.
    event_bus: str = ""
    # Origins allowed to call the API from a browser, comma-separated; empty: same origin only.
    cors_origins: str = ""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # `json` or `text` log lines on stderr; unset: JSON, except a CLI command's plain text
    # (chalicelib.logs). Lambda's stay JSON unless this says otherwise.
    log_format: Literal["json", "text"] | None = None
    # How long a warm container keeps users (with their memberships) and groups; 0: not at all.
    # A privilege change made elsewhere takes effect within this time (chalicelib.store.base).
    cache_seconds: float = Field(default=30.0, ge=0)
    # The one address every outgoing mail is sent from (CONTRACT §2); empty: noreply@<base host>.
    mail_sender: str = ""
    # Mailbox settings may name loopback and private-network POP3 hosts (make run, tests);
    # link-local and cloud metadata addresses never.
    mail_allow_private_hosts: bool = False
    # The longest wait, in minutes, between two scheduled polls of a mailbox that keeps finding
    # nothing (CONTRACT §9): each empty poll doubles the wait from 5 minutes up to this.
    mail_poll_max_minutes: int = Field(default=15, ge=5, le=24 * 60)
    # The domain whose mail Agora receives itself, by push (CONTRACT §13); None (unset): the
    # base URL's host against make run's embedded AWS, none elsewhere; "": none.
    mail_inbound_domain: str | None = None
    # The S3 bucket SES receiving stores the inbound domain's mail in (the stack names it).
    mail_inbound_bucket: str = ""
    # make run's SMTP door on loopback (CONTRACT §13).
    smtp_port: int = Field(default=8025, ge=1, le=65535)
    # Set by `from_environ` from AWS_ENDPOINT_URL (no AGORA_ variable of its own).
    _on_embedded_aws: bool = PrivateAttr(default=False)

    @field_validator("base_url")
    @classmethod
    def _absolute_http_url(cls, value: str) -> str:
        # Every permalink and the mail sender's domain are built from it: a bare host name or a
        # typo would break them all silently.
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "must be an absolute http(s) URL with a host, such as "
                f"https://community.example.org (got {value!r})"
            )
        return value.strip()

    @field_validator("mail_auth", mode="before")
    @classmethod
    def _mail_auth_word(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower() or None
        return value

    @field_validator("mail_unverified", mode="before")
    @classmethod
    def _unverified_word(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower() or "hold"
        return value

    @field_validator("mail_auth")
    @classmethod
    def _header_needs_an_authserv_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value == "header" and not info.data.get("mail_authserv_id"):
            raise ValueError(
                "header needs AGORA_MAIL_AUTHSERV_ID (the server whose Authentication-Results "
                "header to trust); or use verify"
            )
        return value

    @field_validator("mail_inbound_domain")
    @classmethod
    def _domain_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        domain = value.strip().lower().rstrip(".")
        labels = domain.split(".")
        if domain and (len(domain) > 253 or not all(_DOMAIN_LABEL.match(x) for x in labels)):
            raise ValueError(f"must be a domain name such as mail.example.org (got {value!r})")
        return domain

    @property
    def inbound_domain(self) -> str:
        """AGORA_MAIL_INBOUND_DOMAIN, or its default (CONTRACT §2): AGORA_BASE_URL's host against
        make run's embedded AWS, none elsewhere ("": mail in by push is off)."""
        if self.mail_inbound_domain is not None:
            return self.mail_inbound_domain
        if self.on_embedded_aws:
            return (urlsplit(self.base_url).hostname or "").lower()
        return ""

    @field_validator("dns_servers")
    @classmethod
    def _resolver_addresses(cls, value: str) -> str:
        parse_dns_servers(value)  # raises ValueError naming the bad entry
        return value.strip()

    @property
    def mail_auth_mode(self) -> Literal["off", "header", "verify"]:
        """AGORA_MAIL_AUTH, or its default (CONTRACT §2): `header` when AGORA_MAIL_AUTHSERV_ID is
        set, else `off` against `make run`'s embedded AWS (its demo mail is signed by no one) and
        `verify` everywhere else: a CLI polling from a laptop against AWS checks senders as the
        deployed functions do, instead of importing forged mail."""
        if self.mail_auth is not None:
            return self.mail_auth
        if self.mail_authserv_id:
            return "header"
        return "off" if self.on_embedded_aws else "verify"

    @property
    def on_embedded_aws(self) -> bool:
        """AWS_ENDPOINT_URL names `make run`'s embedded AWS (an endpoint on loopback)."""
        return self._on_embedded_aws

    @property
    def dns_server_addresses(self) -> list[tuple[str, int]]:
        return parse_dns_servers(self.dns_servers)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower() or None
        return value

    # What derives from the fields alone is worked out once (the settings are frozen): every link,
    # letter and request asks for the base URL, the sender, the origins or the token secret's name.
    @functools.cached_property
    def allowed_origins(self) -> frozenset[str]:
        """AGORA_CORS_ORIGINS as exact origins (`https://app.example.org`, no path)."""
        return frozenset(
            origin.strip().rstrip("/") for origin in self.cors_origins.split(",") if origin.strip()
        )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings that `environ` (default: the process environment) gives.

        Pointed at `make run`'s embedded AWS, a process (make run's jobs, or a CLI given only the
        endpoint and the key pair) gets `make run`'s own defaults: mailboxes on loopback and
        private networks allowed, and no sender checks (mail_auth_mode)."""
        environ = os.environ if environ is None else environ
        variables = agora_variables(environ)
        embedded = on_embedded_aws(environ)
        if embedded:
            variables.setdefault("mail_allow_private_hosts", "1")
        settings = cls.model_validate(variables)
        settings._on_embedded_aws = embedded
        return settings

    @functools.cached_property
    def public_base_url(self) -> str:
        return self.base_url.rstrip("/")

    @functools.cached_property
    def sender_address(self) -> str:
        """AGORA_MAIL_SENDER, or `noreply@<host of AGORA_BASE_URL>` when it is unset."""
        if self.mail_sender.strip():
            return self.mail_sender.strip()
        return f"noreply@{urlsplit(self.base_url).hostname or 'localhost'}"

    def table_name(self, stem: str) -> str:
        """The table of `stem`: AGORA_TABLE_NAMES' entry for it, else prefix + stem."""
        return table_names(self.table_names, self.table_prefix).get(
            stem, f"{self.table_prefix}{stem}"
        )

    @functools.cached_property
    def token_secret_id(self) -> str:
        """This stage's token secret in Secrets Manager (`agora-dev-token-secret`): the stack
        makes it in AWS, `make run` in its embedded AWS."""
        return f"{self.table_prefix}token-secret"

    @functools.cached_property
    def token_secret_setting(self) -> str:
        """AGORA_TOKEN_SECRET, or unset a reference to the stage's secret, so that a CLI pointed at
        `make run`'s embedded AWS finds the secret `make run` generated with no variable to copy."""
        if self.token_secret is not None and self.token_secret.get_secret_value():
            return self.token_secret.get_secret_value()
        return f"secretsmanager:{self.token_secret_id}"


def table_names(value: str, prefix: str) -> dict[str, str]:
    """AGORA_TABLE_NAMES as stem -> table: tables restored under another name (`make restore`),
    comma-separated. A name holds its stem (`<prefix><stem>.<time>`: no stem has a dot); an
    entry `stem=table` names it outright."""
    found = {}
    for entry in value.split(","):
        stem, equals, table = (part.strip() for part in entry.strip().partition("="))
        if not equals:
            stem, table = stem.removeprefix(prefix).partition(".")[0], stem
            if stem == table or not table.startswith(prefix):
                continue
        if stem and table:
            found[stem] = table
    return found


def parse_dns_servers(value: str) -> list[tuple[str, int]]:
    """`host:port,...` (an IP address, `[v6]:port`, port 53 when left out) as (address, port)."""

    servers = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        host, port = item, "53"
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":") or "53"
        elif item.count(":") == 1:
            host, port = item.split(":")
        try:
            address = str(ipaddress.ip_address(host))
            number = int(port)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address with an optional :port") from None
        if not 0 < number < 65536:
            raise ValueError(f"{item!r}: the port must be 1 to 65535")
        servers.append((address, number))
    return servers


def agora_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """`AGORA_*` variables by field name (`AGORA_TABLE_PREFIX` → `table_prefix`), any case."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if name.upper().startswith(ENV_PREFIX):
            found[name[len(ENV_PREFIX) :].lower()] = value
    return found


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """`AGORA_*` names that no setting reads, each with the closest known name when there is one
    (a misspelt variable would otherwise be ignored without a word)."""
    known = set(Settings.model_fields)
    lines = []
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        field = name[len(ENV_PREFIX) :].lower()
        if field in known or field in TOOL_VARIABLES:
            continue
        close = difflib.get_close_matches(field, known, n=1)
        hint = f"; did you mean {ENV_PREFIX}{close[0].upper()}?" if close else ""
        lines.append(f"{name} is not an Agora setting and is ignored{hint}")
    return lines


class SettingsError(ValueError):
    """The environment does not make valid settings; the message names each variable."""


class MissingSetting(RuntimeError):
    """A job or command lacks a setting it needs (a secret that cannot be read): it refuses to
    start rather than fail on every mail. The message is the one line the operator sees."""


LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# What `make run` uses when the user has not set them (it prints them).
LOCAL_REGION = "us-east-1"
LOCAL_CREDENTIAL = "agora-local"


def on_embedded_aws(environ: Mapping[str, str]) -> bool:
    """AWS_ENDPOINT_URL is on loopback: `make run`'s embedded AWS (AWS itself never is)."""
    try:
        host = urlsplit(environ.get("AWS_ENDPOINT_URL", "").strip()).hostname
    except ValueError:
        return False
    return host in LOOPBACK_HOSTS


def local_endpoint_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """AWS variables to add for a CLI pointed at `make run`'s embedded AWS.

    With AWS_ENDPOINT_URL on loopback, the region and the (dummy) credentials are the ones `make
    run` uses, unless set: the endpoint is the one thing to copy. A malformed endpoint
    (`127.0.0.1:8141`, no scheme) is a SettingsError naming it, not botocore's traceback.
    """
    environ = os.environ if environ is None else environ
    endpoint = environ.get("AWS_ENDPOINT_URL", "").strip()
    if not endpoint:
        return {}
    parts = urlsplit(endpoint)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"AWS_ENDPOINT_URL must be a URL with its scheme, such as http://{endpoint} "
            f"(got {endpoint!r})"
        )
    if not on_embedded_aws(environ):
        return {}
    defaults = {}
    if not (environ.get("AWS_DEFAULT_REGION") or environ.get("AWS_REGION")):
        defaults["AWS_DEFAULT_REGION"] = LOCAL_REGION
    if not (environ.get("AWS_ACCESS_KEY_ID") or environ.get("AWS_PROFILE")):
        defaults["AWS_ACCESS_KEY_ID"] = LOCAL_CREDENTIAL
        defaults["AWS_SECRET_ACCESS_KEY"] = LOCAL_CREDENTIAL
    return defaults


@functools.cache
def get_settings() -> Settings:
    for line in unknown_variables(os.environ):
        print(f"warning: {line}", file=sys.stderr)
    try:
        return Settings.from_environ()
    except ValidationError as error:
        problems = [
            f"{ENV_PREFIX}{str(e['loc'][0]).upper()}: {e['msg'].removeprefix('Value error, ')}"
            for e in error.errors()
        ]
        raise SettingsError("; ".join(problems)) from None


def reload_settings() -> Settings:
    """Forget the cached settings (tests and `make run` change the environment first)."""
    get_settings.cache_clear()
    return get_settings()

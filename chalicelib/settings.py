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
import os
import sys
from collections.abc import Callable, Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

ENV_PREFIX = "AGORA_"
# Read by the test suite and the benchmarks, not by Agora: never warned about.
TOOL_VARIABLES = {"fuzz_examples", "mail_corpus_dir"}


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    table_prefix: str = "agora-dev-"
    token_secret: SecretStr | None = None
    base_url: str = "http://localhost:8000"
    port: int = 8000
    aws_port: int = 8001
    kms_key_id: str = "alias/agora"
    mail_authserv_id: str | None = None
    game_level_base: int = 100
    game_level_exponent: float = 2.0
    # make run: load demo/community.json unless AGORA_DEMO=0.
    demo: bool = True
    # Name of the SQS queue that carries one message per mailbox to poll.
    mailbox_queue: str = "agora-mailbox-jobs"
    # Name of the SQS queue that carries chunks of notification recipients (fan-out).
    notify_queue: str = "agora-notification-jobs"
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
    # How long a warm container keeps users (with their memberships) and groups; 0: not at all.
    # A privilege change made elsewhere takes effect within this time (chalicelib.store.cache).
    cache_seconds: float = Field(default=30.0, ge=0)
    # The one address every outgoing mail is sent from (CONTRACT §2); empty: noreply@<base host>.
    mail_sender: str = ""
    # Mailbox settings may name loopback and private-network POP3 hosts (make run, tests);
    # link-local and cloud metadata addresses never.
    mail_allow_private_hosts: bool = False

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

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @property
    def allowed_origins(self) -> frozenset[str]:
        """AGORA_CORS_ORIGINS as exact origins (`https://app.example.org`, no path)."""
        return frozenset(
            origin.strip().rstrip("/") for origin in self.cors_origins.split(",") if origin.strip()
        )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings that `environ` (default: the process environment) gives."""
        environ = os.environ if environ is None else environ
        return cls.model_validate(agora_variables(environ))

    @property
    def public_base_url(self) -> str:
        return self.base_url.rstrip("/")

    @property
    def sender_address(self) -> str:
        """AGORA_MAIL_SENDER, or `noreply@<host of AGORA_BASE_URL>` when it is unset."""
        if self.mail_sender.strip():
            return self.mail_sender.strip()
        return f"noreply@{urlsplit(self.base_url).hostname or 'localhost'}"


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


@functools.cache
def get_settings() -> Settings:
    from pydantic import ValidationError

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


# What other modules derived from the settings (the log level), forgotten with them. They
# register themselves, so this module imports none of them (no import cycle).
_on_reload: list[Callable[[], None]] = []


def on_reload(forget: Callable[[], None]) -> Callable[[], None]:
    """Have `reload_settings()` call `forget` too."""
    _on_reload.append(forget)
    return forget


def reload_settings() -> Settings:
    """Forget the cached settings (tests and `make run` change the environment first)."""
    get_settings.cache_clear()
    for forget in list(_on_reload):
        forget()
    return get_settings()

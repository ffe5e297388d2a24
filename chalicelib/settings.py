"""Configuration (CONTRACT §2). The only module that reads the environment, and only when asked.

AWS's own variables (AWS_ENDPOINT_URL, AWS_DEFAULT_REGION, credentials, SSL_CERT_FILE) are read by
botocore and OpenSSL themselves, as every AWS tool does; Agora adds no variable of its own for them.
"""

from __future__ import annotations

import functools

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGORA_", frozen=True, extra="ignore")

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

    @property
    def public_base_url(self) -> str:
        return self.base_url.rstrip("/")


@functools.cache
def get_settings() -> Settings:
    return Settings()


def reload_settings() -> Settings:
    """Forget the cached settings (tests and `make run` change the environment first)."""
    get_settings.cache_clear()
    return get_settings()

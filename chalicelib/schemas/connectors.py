"""Connectors (spec "Email-to-post settings", "Email-to-comment settings", "Local connector")."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    field_validator,
    model_validator,
)

from chalicelib.schemas.common import (
    TEXT_END,
    TRIMMED,
    ApiModel,
    GroupRef,
    Guid,
    JsonInt,
    Record,
    SingleLine,
    UserRef,
    UtcDateTime,
    rule_error,
)
from chalicelib.schemas.group_email import OptionalEmailText

# KMS encrypts at most 4 KB of plaintext; a password or secret is far shorter.
SECRET_MAX = 1024
POP3_PORT, POP3S_PORT = 110, 995

_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
# A host name (an IPv4 address is one too) as `_host_name` reads it, for the document (the API
# also takes an IPv6 address).
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_PATTERN = rf"^{TRIMMED}({_LABEL}\.)*{_LABEL}\.?{TRIMMED}{TEXT_END}"


def _host_name(text: str) -> str:
    if not text:
        return text
    try:
        ipaddress.ip_address(text.strip("[]"))
        return text
    except ValueError:
        pass
    labels = text.rstrip(".").split(".")
    if len(text) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
        raise ValueError("must be the host name or IP address of the POP3 server")
    return text.lower()


def _secret_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if len(value) > SECRET_MAX:
        raise ValueError(f"must be at most {SECRET_MAX} characters")
    return value


# Secrets are taken as sent (a plain validator: ApiModel's trimming does not reach it), since
# spaces at either end belong to the password.
SecretText = Annotated[str, PlainValidator(_secret_text)]
# Blank (after trimming) is refused by the model with its own message; the document says so too.
HostName = Annotated[
    str,
    Field(max_length=253, json_schema_extra={"minLength": 1, "pattern": HOST_PATTERN}),
    AfterValidator(_host_name),
]


# --- email-to-post and email-to-comment --------------------------------------------------------


# A push-only connector (CONTRACT §13) names no POP3 server: these take their defaults then.
PUSH_ONLY_DEFAULTS = {
    "serverName": "",
    "serverPort": None,
    "serverUsername": "",
    "isSSL": True,
    "deleteProcessed": False,
}


class MailboxSettingsUpdate(ApiModel):
    """A PUT replaces the settings: every field the spec lists is required, except the password
    (an omitted one keeps the stored one); a body naming no POP3 server nor account (no
    `serverName`, `serverUsername` or `serverPassword`, as `{"isEnabled": true}`) is a push-only
    connector: it takes the mail sent to its group's `inboundAddress` and is never polled."""

    server_name: HostName
    # null: the usual POP3 port for isSSL.
    # JsonInt: 995.0 is the integer 995 as JSON Schema reads it; true and "995" are not.
    server_port: JsonInt | None = Field(ge=1, le=65535)
    server_username: SingleLine = Field(max_length=256)
    # Omitted, null or "" keeps the stored password (CONTRACT §8; the masked GET answers "").
    server_password: SecretText | None = None
    is_enabled: bool
    is_ssl: bool = Field(alias="isSSL")
    delete_processed: bool
    # The address members write to, or "" for none; omitted keeps the stored one.
    email_address: OptionalEmailText | None = None

    @model_validator(mode="before")
    @classmethod
    def _push_only(cls, body: Any) -> Any:
        if not isinstance(body, dict) or any(
            _given(body.get(name)) for name in ("serverName", "serverUsername", "serverPassword")
        ):
            return body
        return {**PUSH_ONLY_DEFAULTS, **{k: v for k, v in body.items() if v is not None}}

    @property
    def push_only(self) -> bool:
        """No POP3 server: the connector receives by push alone (never polled)."""
        return not self.server_name

    @model_validator(mode="after")
    def _needs_a_server(self) -> MailboxSettingsUpdate:
        # Checked here rather than on the field so that an omitted name is reported too.
        if not self.server_name and (self.server_username or self.server_password):
            raise rule_error("serverName", "must not be blank: the POP3 server's host name")
        if self.is_enabled and self.server_name and not self.server_username:
            raise rule_error(
                "serverUsername", "an enabled connector needs the POP3 account's username"
            )
        return self

    @property
    def port(self) -> int:
        if self.server_port is not None:
            return self.server_port
        return POP3S_PORT if self.is_ssl else POP3_PORT

    @property
    def new_password(self) -> str | None:
        return self.server_password or None


def _given(value: Any) -> bool:
    """A POP3 field the body fills in (a blank string or null is none)."""
    return value is not None and not (isinstance(value, str) and not value.strip())


class MailboxPollError(ApiModel):
    """Why the last poll could not reach the mailbox, in plain words (never the password)."""

    on: UtcDateTime
    message: str


class MailboxSettingsFields(Record):
    server_name: str
    server_port: int
    server_username: str
    server_password: SecretText
    is_enabled: bool
    # The spec spells it so, not `isSsl`.
    is_ssl: bool = Field(alias="isSSL")
    delete_processed: bool
    last_processed: UtcDateTime | None = None
    # Response only (CONTRACT §8): the last poll that could not reach the mailbox, or null.
    last_error: MailboxPollError | None = None
    # The address members write to ("" for none).
    email_address: str = ""
    # Response only: when the schedule polls the mailbox next (null while it is disabled).
    next_poll_on: UtcDateTime | None = None


class EmailToPostOut(MailboxSettingsFields):
    type: Literal["connectorEmailToPost"] = "connectorEmailToPost"
    group: GroupRef
    # Response only (CONTRACT §13): `<group slug>@<inbound domain>`, where mail to the group
    # arrives by push while the connector is enabled; null without an inbound domain.
    inbound_address: str | None = None


class EmailToCommentOut(MailboxSettingsFields):
    type: Literal["connectorEmailToComment"] = "connectorEmailToComment"


# --- local connectors --------------------------------------------------------------------------


class ConnectorType(ApiModel):
    id: int
    name: str
    thumb_url: str


class ChatSettingsOut(ApiModel):
    inherit_settings: bool
    application_id: str
    application_secret: SecretText
    allow_guest: bool
    # The group whose settings apply when they are inherited (null: the group's own settings).
    inherited_from: GroupRef | None = None


class LocalConnectorOut(Record):
    id: str
    type: ConnectorType
    name: str
    description: str
    is_enabled: bool
    created_on: UtcDateTime
    author: UserRef
    modified_on: UtcDateTime
    editor: UserRef
    groups: list[GroupRef]
    settings: dict[str, Any]


class LocalConnectorList(ApiModel):
    connectors: list[LocalConnectorOut]


class LocalConnectorUpdate(ApiModel):
    """The PUT body as routed; its `settings` are checked by the connector's kind (below)."""

    inherit_settings: bool | None = None
    is_enabled: bool | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class ChatSettingsUpdate(ApiModel):
    # The spec's answers carry inheritSettings inside settings; the PUT body has it at the top.
    inherit_settings: bool | None = None
    application_id: SingleLine = Field(default="", max_length=256)
    # Omitted, null or "" keeps the stored secret (the masked answer shows "").
    application_secret: SecretText | None = None
    allow_guest: bool = False


class ChatConnectorUpdate(LocalConnectorUpdate):
    settings: ChatSettingsUpdate = Field(default_factory=ChatSettingsUpdate)  # type: ignore[assignment]

    @property
    def inherit(self) -> bool | None:
        if self.inherit_settings is not None:
            return self.inherit_settings
        return self.settings.inherit_settings


class CrmConnectorUpdate(LocalConnectorUpdate):
    @field_validator("settings")
    @classmethod
    def _no_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        if settings:
            raise rule_error("settings", "the CRM connector has no settings: send an empty object")
        return settings


UPDATE_MODELS: dict[str, type[LocalConnectorUpdate]] = {
    "chat": ChatConnectorUpdate,
    "crm": CrmConnectorUpdate,
}


class LocalConnectorStatusUpdate(ApiModel):
    group: Guid
    is_enabled: bool

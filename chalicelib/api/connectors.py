"""Connectors (spec "Email-to-post connector", "Email-to-comment connector", "Local connectors").

Privileges (CONTRACT §5): email-to-post and local connectors need a group administrator of the
group; email-to-comment GET too (the password only for a root group administrator); the
email-to-comment PUT needs a root group administrator.
"""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib import deps
from chalicelib.api.routing import Call, Routes, route, validate
from chalicelib.api.routing.responses import json_response
from chalicelib.auth import Need
from chalicelib.envelope import success_payload
from chalicelib.schemas.connectors import (
    UPDATE_MODELS,
    EmailToCommentOut,
    EmailToPostOut,
    LocalConnectorList,
    LocalConnectorOut,
    LocalConnectorStatusUpdate,
    LocalConnectorUpdate,
    MailboxSettingsUpdate,
)
from chalicelib.schemas.paths import ConnectorGroupPath, ConnectorPath, GroupPath

connectors_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/connector"
group_admin = Routes(connectors_api, Need.GROUP_ADMIN, "groupId")
root_admin = Routes(connectors_api, Need.ROOT_ADMIN)


# --- email-to-post -------------------------------------------------------------------------------


@group_admin("GET", f"{PREFIX}/email-to-post/{{groupId}}", EmailToPostOut)
def get_email_to_post(call: Call[GroupPath, None, None]) -> EmailToPostOut:
    """A group's email-to-post mailbox settings, password included (the spec returns it)."""
    return deps.mailbox_settings_service().email_to_post(call.group)


@group_admin("PUT", f"{PREFIX}/email-to-post/{{groupId}}", EmailToPostOut)
def update_email_to_post(call: Call[GroupPath, None, MailboxSettingsUpdate]) -> EmailToPostOut:
    """Replace a group's email-to-post settings; an omitted password keeps the stored one."""
    return deps.mailbox_settings_service().update_email_to_post(
        call.group, call.body, call.signed_in.user_id
    )


@group_admin("POST", f"{PREFIX}/email-to-post/{{groupId}}/poll", EmailToPostOut)
def poll_email_to_post(call: Call[GroupPath, None, None]) -> Response:
    """Poll now: the group's mailbox is due at once (202; 409 `isEnabled` when disabled)."""
    return accepted(deps.mailbox_settings_service().poll_email_to_post(call.group))


def accepted(answer: EmailToPostOut | EmailToCommentOut) -> Response:
    """202: the poll is asked for, not done; `object` is the settings with `nextPollOn` now."""

    return json_response(202, success_payload(answer))


# --- email-to-comment ----------------------------------------------------------------------------


@group_admin("GET", f"{PREFIX}/email-to-comment/{{groupId}}", EmailToCommentOut)
def get_email_to_comment(call: Call[GroupPath, None, None]) -> EmailToCommentOut:
    """The system-wide email-to-comment settings (password only for a root administrator)."""
    return deps.mailbox_settings_service().email_to_comment(call.signed_in)


@root_admin("PUT", f"{PREFIX}/email-to-comment", EmailToCommentOut)
def update_email_to_comment(call: Call[None, None, MailboxSettingsUpdate]) -> EmailToCommentOut:
    """Replace the system-wide email-to-comment settings."""
    return deps.mailbox_settings_service().update_email_to_comment(
        call.body, call.signed_in.user_id
    )


@root_admin("POST", f"{PREFIX}/email-to-comment/poll", EmailToCommentOut)
def poll_email_to_comment(call: Call[None, None, None]) -> Response:
    """Poll now: the email-to-comment mailbox is due at once (202; 409 when disabled)."""
    return accepted(deps.mailbox_settings_service().poll_email_to_comment())


# --- local connectors ----------------------------------------------------------------------------


@group_admin("GET", f"{PREFIX}/local/list/group/{{groupId}}", LocalConnectorList)
def list_local_connectors(call: Call[GroupPath, None, None]) -> LocalConnectorList:
    """Every local connector with its configuration in the group."""
    return deps.local_connector_service().list(call.group, call.signed_in)


@group_admin("GET", f"{PREFIX}/local/{{connectorId}}/group/{{groupId}}", LocalConnectorOut)
def get_local_connector(call: Call[ConnectorGroupPath, None, None]) -> LocalConnectorOut:
    """One local connector with its configuration in the group."""
    service = deps.local_connector_service()
    connector = service.find(call.path.connectorId)
    return service.get(connector, call.group, call.signed_in)


@group_admin("PUT", f"{PREFIX}/local/{{connectorId}}/group/{{groupId}}", LocalConnectorOut)
def update_local_connector(
    call: Call[ConnectorGroupPath, None, LocalConnectorUpdate],
) -> LocalConnectorOut:
    """Configure a local connector for the group: enabled, inheritance, settings of its kind."""
    service = deps.local_connector_service()
    connector = service.find(call.path.connectorId)
    # `settings` take the shape of the connector's kind, known only once the connector is found.
    update = validate(UPDATE_MODELS[connector.kind], call.raw_body)
    return service.update(connector, call.group, update, call.signed_in)


@route(
    connectors_api,
    "PATCH",
    f"{PREFIX}/local/{{connectorId}}/status",
    need=Need.GROUP_ADMIN,
    group="body.group",
    response=LocalConnectorOut,
)
def update_local_connector_status(
    call: Call[ConnectorPath, None, LocalConnectorStatusUpdate],
) -> LocalConnectorOut:
    """Enable or disable a local connector in the group named by the body."""
    service = deps.local_connector_service()
    # The router found and checked the group the body names, unless it did not exist.
    group = call.group or deps.group_service().get(call.body.group, key="group")
    call.signed_in.require(Need.GROUP_ADMIN, group)
    connector = service.find(call.path.connectorId)
    return service.set_status(connector, group, call.body.is_enabled, call.signed_in)

"""The mail logs of the two connectors (CONTRACT §10)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.auth import Need
from chalicelib.domain.mailboxes import COMMENT_KEY, mailbox_key
from chalicelib.schemas.mail_log import MailLogPage, MailLogQuery
from chalicelib.schemas.paths import GroupPath

mail_log_api = Blueprint(__name__)


@route(
    mail_log_api,
    "GET",
    "/api/v1/en_US/connector/email-to-post/{groupId}/log",
    need=Need.GROUP_ADMIN,
    group="groupId",
    response=MailLogPage,
)
def email_to_post_log(call: Call[GroupPath, MailLogQuery, None]) -> MailLogPage:
    """The group's email-to-post mail log, newest first; `status` lists one outcome only."""
    return deps.mail_log_service().page(mailbox_key(call.group.id), call.query)


@route(
    mail_log_api,
    "GET",
    "/api/v1/en_US/connector/email-to-comment/log",
    need=Need.ROOT_ADMIN,
    response=MailLogPage,
)
def email_to_comment_log(call: Call[None, MailLogQuery, None]) -> MailLogPage:
    """The system-wide email-to-comment mail log, newest first; `status` lists one outcome only."""
    return deps.mail_log_service().page(COMMENT_KEY, call.query)

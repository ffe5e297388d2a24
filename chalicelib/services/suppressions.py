"""Bounces and complaints: SES tells, through SNS and SQS (infra), which addresses to stop mailing.

A permanent (hard) bounce suppresses each recipient that failed; a complaint suppresses each
recipient who complained; a transient bounce (mailbox full, greylisting) changes nothing, since SES
retries those itself. Both SES formats are read: identity notifications (`notificationType`) and
configuration-set events (`eventType`). A suppressed address gets no notification or digest email
(services/notify/delivery.py, services/notify/digests.py); the user's notification list shows an access warning
`EMAIL_SUPPRESSED`; an administrator clears it (`DELETE /api/v1/en_US/user/{userId}/email-suppression`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from chalicelib.domain import audit
from chalicelib.domain.json import JsonObject, JsonValue
from chalicelib.domain.ports.notify import SuppressionStore
from chalicelib.logs import get_logger
from chalicelib.schemas.common import AccessWarning

log = get_logger("suppressions")

CODE = "EMAIL_SUPPRESSED"


class SuppressionService:
    def __init__(self, suppressions: SuppressionStore, clock: Callable[[], datetime]) -> None:
        self.suppressions = suppressions
        self.clock = clock

    def record(self, notification: JsonObject) -> list[str]:
        """Suppress what one SES notification reports; answers the addresses suppressed."""
        kind = str(notification.get("notificationType") or notification.get("eventType") or "")
        suppressed = []
        for found in reported_addresses(kind, notification):
            self.suppressions.suppress(
                found.address, found.reason, found.detail, found.feedback_id, self.clock()
            )
            suppressed.append(found.address.strip().lower())
        if suppressed:
            log.warning("addresses suppressed", extra={"reason": kind, "count": len(suppressed)})
        return suppressed

    def warning_for(self, address: str) -> AccessWarning | None:
        record = self.suppressions.get(address)
        if record is None:
            return None
        why = "bounced for good" if record.reason == "bounce" else "was reported as spam"
        return AccessWarning(
            key="userEmail",
            code=CODE,
            message=(
                f"Email to this address {why} on {record.suppressed_on:%Y-%m-%d}; no notification"
                " or digest is sent to it until an administrator clears it."
            ),
        )

    def clear(self, address: str, user_id: str | None = None) -> bool:
        """Mail the address again (an administrator's decision); False when it was not suppressed.
        Recorded in the audit log as a change of the user `user_id`."""
        entry = audit.entry(
            "user.update",
            target=("user", user_id or address),
            group_id=None,
            before={"emailSuppressed": True},
            after={"emailSuppressed": False},
        )
        return self.suppressions.clear(address, audit=entry)


@dataclass(frozen=True)
class Reported:
    """One address an SES notification says to stop mailing, and why."""

    address: str
    reason: str  # bounce | complaint
    detail: str
    feedback_id: str


def reported_addresses(kind: str, notification: JsonObject) -> list[Reported]:
    """The addresses to suppress from one notification of `kind` (Bounce, Complaint, or any
    other, which suppresses nothing); entries without an address, or not shaped as SES shapes
    them, are left out."""
    if kind == "Bounce":
        found = _bounced(_object(notification.get("bounce")))
    elif kind == "Complaint":
        found = _complained(_object(notification.get("complaint")))
    else:
        found = []
    return [each for each in found if "@" in each.address]


def _bounced(bounce: JsonObject) -> list[Reported]:
    if bounce.get("bounceType") != "Permanent":
        return []
    feedback_id = str(bounce.get("feedbackId", ""))
    return [
        Reported(
            str(recipient.get("emailAddress", "")),
            "bounce",
            str(recipient.get("diagnosticCode") or recipient.get("status") or ""),
            feedback_id,
        )
        for recipient in _objects(bounce.get("bouncedRecipients"))
        # A recipient still being retried ("delayed") has not failed for good.
        if recipient.get("action", "failed") == "failed"
    ]


def _complained(complaint: JsonObject) -> list[Reported]:
    detail = str(complaint.get("complaintFeedbackType") or "")
    feedback_id = str(complaint.get("feedbackId", ""))
    return [
        Reported(str(recipient.get("emailAddress", "")), "complaint", detail, feedback_id)
        for recipient in _objects(complaint.get("complainedRecipients"))
    ]


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _objects(value: JsonValue) -> list[JsonObject]:
    return [each for each in value if isinstance(each, dict)] if isinstance(value, list) else []

"""What a moderation of a comment records in the audit log (CONTRACT §12)."""

from __future__ import annotations

from chalicelib.domain import audit
from chalicelib.domain.comments import Comment, PurgeCandidate


def _audit_fields(record: Comment | None) -> audit.Fields | None:
    """What a moderation changes of a comment, by the API's names (CONTRACT §12)."""
    if record is None:
        return None
    return {
        "isApproved": record.is_approved,
        "approvedOn": record.approved_on,
        "deletedOn": record.deleted_on,
        "deletedById": record.deleted_by_id,
        "spamReports": len(record.spam_reports or ()),
    }


def audited(action: str, read: Comment, changed: Comment) -> list[audit.AuditEntry]:
    return audit.entry(
        action,
        target=("comment", int(read.id)),
        group_id=read.group_id,
        before=_audit_fields(read),
        after=_audit_fields(changed),
    )


def purge_entry(record: Comment | PurgeCandidate) -> list[audit.AuditEntry]:
    """A purge is recorded whatever the comment held: it is gone for good."""
    return audit.entry(
        "comment.purge",
        target=("comment", int(record.id)),
        group_id=record.group_id,
        before=None,
        after=None,
        always=True,
    )

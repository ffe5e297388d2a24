"""`DELETE /api/v1/en_US/user/{userId}/email-suppression` (README: bounces and complaints)."""

from __future__ import annotations

from typing import Literal

from chalicelib.schemas.common import Record


class SuppressionCleared(Record):
    type: Literal["emailSuppression"] = "emailSuppression"
    user_id: str
    user_email: str
    # False when the address was not suppressed (DELETE is idempotent).
    cleared: bool

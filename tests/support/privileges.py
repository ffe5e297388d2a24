"""Who may call what, in the cast of the privilege tests (tests/fixtures.py `with_two_groups`)."""

from __future__ import annotations

from typing import Any

import pytest

# A call on garden's settings: the root administrator and garden's own may; another group's
# administrator and a member of garden are refused; no token, and the caller must sign in.
GARDEN_ADMINISTRATORS_ONLY = pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("root_admin", 200),
        ("garden_admin", 200),
        ("other_admin", 403),
        ("member", 403),
        (None, 401),
    ],
)


def caller(cast: Any, who: str | None) -> str | None:
    """The user id of the cast member named `who` (None: no token)."""
    return getattr(cast, who) if who else None


def statuses(api: Any, user: str | None, calls: list[tuple[str, str, Any]]) -> list[int]:
    """The status of each call (method, path, JSON body or None) made as `user`, in order."""
    return [api.call(method, path, user, body)[0] for method, path, body in calls]

"""The deploy canary's account (issue 48): the PreTraffic hook signs in with it against the API's
new version before any traffic moves (chalicelib/jobs/pre_traffic.py).

It is a plain registered user and nothing more: no membership in any group (`regular`
everywhere), so it is in no member list, may moderate or administer nothing, and receives no
group mail. What it may do as any signed-in user is enough for the hook: the group list (empty
for it), the reads a public group allows, and its own feed key, which the hook makes and
revokes (the one write it undoes). Its password is the stack's canary secret; `migrate` makes
the account, or gives it the secret's password again after a rotation, and otherwise leaves it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from chalicelib.auth import hash_password, verify_password
from chalicelib.domain import audit
from chalicelib.domain.ports.people import UserStore
from chalicelib.domain.users import User

# The stack's canary secret (its name), on the migrate and PreTraffic functions only (infra.build).
SECRET_VARIABLE = "AGORA_CANARY_SECRET"
EMAIL = "pre-traffic-canary@agora.internal"
ALIAS = "Deploy canary"
# The source the hook's sign-in comes from: it invokes the new version directly, so its proxy event
# carries this, a text API Gateway never sends as a caller's address (always an IP address). The
# canary's sign-in from it is held to this source's own limit only (services/security.py): others
# failing to sign in to the account, from anywhere else, cannot lock the hook out of a deploy.
HOOK_SOURCE = "pre-traffic-hook"
# A fixed id, so the hook knows its own user id (its feed key's path) before signing in.
USER_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, f"agora:{EMAIL}"))


@dataclass(frozen=True)
class CanaryAccount:
    user_id: str
    created: bool
    password_changed: bool

    def line(self) -> str:
        if self.created:
            return f"canary account {EMAIL} ({self.user_id}): created, a member of no group"
        if self.password_changed:
            return f"canary account {EMAIL} ({self.user_id}): password set from the secret"
        return f"canary account {EMAIL} ({self.user_id}): already there, nothing changed"


class CanaryAccountService:
    def __init__(self, users: UserStore) -> None:
        self.users = users

    def ensure(self, password: str) -> CanaryAccount:
        """The account exists, with no membership and this password; a second run writes
        nothing. An account that already has the address keeps its id (and gets no role)."""
        if not password:
            raise ValueError("the canary secret is empty")
        user = self.users.by_email(EMAIL) or self.users.get(USER_ID)
        created = user is None
        if user is None:
            user = User.new(id=USER_ID, alias=ALIAS, email=EMAIL, slug="deploy-canary")
        password_changed = not created and not verify_password(user.password_hash, password)
        if not (created or password_changed):
            return CanaryAccount(user.id, created=False, password_changed=False)
        before = None if created else {"email": user.email, "password": user.password_hash}
        user = replace(user, password_hash=hash_password(password))
        if password_changed:
            # Sessions end on a new password, as for any account.
            user = replace(user, token_version=user.token_version + 1)
        entry = audit.entry(
            "user.create" if created else "user.update",
            target=("user", user.id),
            group_id=None,
            before=before,
            after={"email": user.email, "password": user.password_hash},
            secrets={"password"},
        )
        self.users.save(user, audit=entry)
        return CanaryAccount(user.id, created=created, password_changed=password_changed)

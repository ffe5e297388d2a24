"""The first administrator of a deployed community (`python -m chalicelib.cli create-admin`).

An address without an account gets one; an account gets the administrator role in the group (the
root group unless another is named), the given password and, with `--alias`, the given display
name (without it, a new account is named after its address). Whatever already holds is left as it
is, so running the command twice changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from chalicelib.auth import hash_password, verify_password
from chalicelib.domain import audit
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import GroupStore, UserStore
from chalicelib.domain.users import User
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.sanitize import slugify, without_bidi, without_controls
from chalicelib.schemas.common import email_address

MIN_PASSWORD_LENGTH = 8
# A display name shows in lists, mails and mail headers: one line, and short.
MAX_ALIAS_LENGTH = 100


@dataclass(frozen=True)
class AdministratorResult:
    user_id: str
    group_id: str
    created: bool
    promoted: bool
    password_changed: bool
    alias: str = ""
    alias_changed: bool = False
    group_name: str = ""
    root: bool = False

    @property
    def role(self) -> str:
        """The role by its group's name: "root administrator (Agora Community)", or
        'administrator of group "Gardening Club" (<id>)' (a name may be shared, the id not)."""
        if self.root:
            return f"root administrator ({self.group_name})"
        return f'administrator of group "{self.group_name}" ({self.group_id})'

    def line(self, email: str) -> str:
        if self.created:
            return f'created {email} ({self.user_id}) as "{self.alias}", {self.role}'
        changes = [
            *(["now administrator"] if self.promoted else []),
            *(["password changed"] if self.password_changed else []),
            *([f'now named "{self.alias}"'] if self.alias_changed else []),
        ]
        what = ", ".join(changes) if changes else "already administrator, nothing changed"
        return f"{email} ({self.user_id}), {self.role}: {what}"


def _email(text: str) -> str:
    try:
        return email_address(text.strip())
    except ValueError as error:
        raise ValidationFailed.one("email", text, str(error)) from None


def _alias(text: str) -> str:
    if any(c in text for c in "\n\r\v\f\x85\u2028\u2029"):
        raise ValidationFailed.one("alias", text, "must be one line: line breaks are not allowed")
    alias = without_bidi(without_controls(text)).strip()
    if not alias:
        raise ValidationFailed.one("alias", text, "must not be empty")
    if len(alias) > MAX_ALIAS_LENGTH:
        raise ValidationFailed.one("alias", text, f"must be at most {MAX_ALIAS_LENGTH} characters")
    return alias


class AdministratorService:
    def __init__(self, users: UserStore, groups: GroupStore) -> None:
        self.users = users
        self.groups = groups

    def create_or_promote(
        self, email: str, password: str, group_id: str | None = None, alias: str | None = None
    ) -> AdministratorResult:
        address = _email(email)
        display_name = None if alias is None else _alias(alias)
        _check_password(password)
        group, root = self._group(group_id)
        group_id = group.id
        user = self.users.by_email(address)
        created = user is None
        if user is None:
            user = self._new_user(address, display_name)
        promoted, password_changed = _changes(user, group_id, password, created=created)
        alias_changed = not created and display_name is not None and user.alias != display_name
        before = None if created else _audited(user, group_id)
        if alias_changed and display_name is not None:
            user = replace(user, alias=display_name)
        if created or promoted or password_changed or alias_changed:
            self._save(user, group_id, password, before, password_changed=password_changed)
        return AdministratorResult(
            user.id,
            group_id,
            created,
            promoted,
            password_changed,
            user.alias,
            alias_changed,
            group_name=group.name,
            root=root,
        )

    def _save(
        self,
        user: User,
        group_id: str,
        password: str,
        before: dict[str, str | None] | None,
        *,
        password_changed: bool,
    ) -> None:
        """The account as an administrator of the group, its audit entry in the same write
        (`before`: the account as read; None: new)."""
        created = before is None
        user = replace(user, memberships={**user.memberships, group_id: "administrator"})
        if created or password_changed:
            user = replace(user, password_hash=hash_password(password))
        if password_changed:
            # Sessions end on a new password: every token issued before it is refused.
            user = replace(user, token_version=user.token_version + 1)
        entry = audit.entry(
            "admin.create",
            target=("user", user.id),
            group_id=group_id,
            before=before,
            after=_audited(user, group_id),
            secrets={"password"},
        )
        self.users.save(user, audit=entry)

    def _group(self, group_id: str | None) -> tuple[Group, bool]:
        """The group named, which must exist; else the root group, which must exist too; and
        whether it is the root group."""
        root_id = self.groups.root_id()
        if group_id is not None:
            group = self.groups.get(group_id)
            if group is None:
                raise NotFound("groupId", group_id, "group")
            return group, group.id == root_id
        root = None if root_id is None else self.groups.get(root_id)
        if root is None:
            raise ValidationFailed.one(
                "groupId",
                "",
                "there is no root group yet: load the community first "
                "(python -m chalicelib.cli load FILE)",
            )
        return root, True

    @staticmethod
    def _new_user(address: str, display_name: str | None) -> User:
        local = address.split("@", 1)[0]
        return User.new(
            id=str(uuid.uuid4()),
            alias=display_name or local,
            email=address,
            slug=slugify(display_name or local, "administrator"),
        )


def _audited(user: User, group_id: str) -> dict[str, str | None]:
    """What the command changes of the account, by the API's names (CONTRACT §12)."""
    return {
        "alias": user.alias,
        "email": user.email,
        "role": user.memberships.get(group_id),
        "password": user.password_hash,
    }


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed.one(
            "password", "", f"must be at least {MIN_PASSWORD_LENGTH} characters"
        )


def _changes(user: User, group_id: str, password: str, *, created: bool) -> tuple[bool, bool]:
    """(promoted, password changed) of an account that stands: a password that already
    verifies keeps its hash, so a second run writes nothing. A new account is neither."""
    if created:
        return False, False
    promoted = user.memberships.get(group_id) != "administrator"
    return promoted, not verify_password(user.password_hash, password)

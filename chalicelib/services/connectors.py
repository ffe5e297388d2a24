"""Local connectors (chat, CRM): the catalogue from the fixture, configured group by group.

A group's chat configuration may inherit its parent's settings; the inheritance walks up to the
nearest group with settings of its own (the root cannot inherit). The answer shows the effective
settings and, in `inheritedFrom`, the group they come from. The chat `applicationSecret` is stored
as a KMS ciphertext; an inherited secret is shown only to an administrator of the group it comes
from. A group that never configured a connector has it disabled, and a subgroup inherits.

Mailbox settings (email-to-post, email-to-comment) are in `services/mailboxes.py`.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.auth import Caller, Need
from chalicelib.domain import audit
from chalicelib.domain.connectors import Connector, ConnectorConfiguration
from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import GroupStore, UserReader
from chalicelib.domain.users import User
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.schemas.common import AccessWarning
from chalicelib.schemas.connectors import (
    ChatConnectorUpdate,
    ChatSettingsOut,
    ConnectorType,
    LocalConnectorList,
    LocalConnectorOut,
    LocalConnectorUpdate,
)
from chalicelib.services.links import base_url, group_ref, user_ref

if TYPE_CHECKING:
    from chalicelib.services.groups import GroupService
    from chalicelib.services.mailboxes import Cipher
    from chalicelib.store.connectors import ConnectorRepository


def _audit_fields(
    connector: Connector,
    group: Group,
    config: ConnectorConfiguration | None,
    source: ConnectorConfiguration | None,
) -> audit.Fields:
    """What a group's configuration of a connector answers, by the API's names (CONTRACT §12):
    never configured, a disabled connector whose chat settings are blank, or a subgroup's
    inherited. `source` is the configuration whose settings the answer shows: the group's own, or
    the parent's it inherits (its secret compared as that ciphertext)."""
    fields: dict[str, object] = {"isEnabled": bool(config is not None and config.is_enabled)}
    if connector.kind != "chat":
        return fields
    fields["inheritSettings"] = LocalConnectorService._inherits(config, group)
    fields["settings.applicationId"] = (source.application_id if source else None) or ""
    fields["settings.allowGuest"] = bool(source is not None and source.allow_guest)
    fields["settings.applicationSecret"] = source.secret if source else None
    return fields


# The ids of the connector kinds in `type` (the spec gives none).
KIND_TYPES = {"chat": (1, "Chat"), "crm": (2, "CRM")}


def connector_type(kind: str) -> ConnectorType:
    type_id, name = KIND_TYPES[kind]
    return ConnectorType(
        id=type_id, name=name, thumb_url=f"{base_url()}/images/connectors/{kind}.png"
    )


def _secret_context(group_id: str, connector_id: str) -> dict[str, str]:
    # Binds the ciphertext to its configuration: copied to another group it does not decrypt.
    return {
        "agora:table": "connector-groups",
        "agora:group": group_id,
        "agora:connector": connector_id,
    }


@dataclass
class _View:
    """What presenting one connector in one group needs, gathered with a few batched reads."""

    group: Group
    caller: Caller
    configs: dict[str, ConnectorConfiguration]  # connector id → the group's configuration
    ancestors: list[Group]  # the group's parents, nearest first
    # (group id, connector id) → configuration
    ancestor_configs: dict[tuple[str, str], ConnectorConfiguration]
    enabled_groups: dict[str, list[str]]  # connector id → ids of groups where it is enabled
    groups: dict[str, Group]  # group id → group (for `groups` and `inheritedFrom`)
    users: Mapping[str, User]  # user id → user (author, editor)


class LocalConnectorService:
    def __init__(
        self,
        connectors: ConnectorRepository,
        group_service: GroupService,
        groups: GroupStore,
        users: UserReader,
        cipher: Cipher,
        clock: Callable[[], datetime],
    ) -> None:
        self.connectors = connectors
        self.group_service = group_service
        self.groups = groups
        self.users = users
        self.cipher = cipher
        self.clock = clock

    def find(self, connector_id: str) -> Connector:
        connector = self.connectors.get(connector_id)
        if connector is None:
            raise NotFound("connectorId", connector_id, "connector")
        return connector

    # --- reads -----------------------------------------------------------------------------------

    def get(self, connector: Connector, group: Group, caller: Caller) -> LocalConnectorOut:
        config = self.connectors.configuration(group.id, connector.id)
        configs = {connector.id: config} if config is not None else {}
        view = self._gather(
            group, caller, [connector], configs, self.connectors.enabled_groups(connector.id)
        )
        return self._present(connector, view)

    def list(self, group: Group, caller: Caller) -> LocalConnectorList:
        catalogue = sorted(self.connectors.catalogue(), key=lambda c: (c.name.lower(), c.id))
        configs = self.connectors.configurations_of_group(group.id)
        # One Query answers the enabled groups of every connector (the list shows them all).
        view = self._gather(group, caller, catalogue, configs, self.connectors.enabled_groups())
        return LocalConnectorList(connectors=[self._present(c, view) for c in catalogue])

    # --- writes ----------------------------------------------------------------------------------

    def update(
        self,
        connector: Connector,
        group: Group,
        update: LocalConnectorUpdate,
        caller: Caller,
    ) -> LocalConnectorOut:
        stored = self.connectors.configuration(group.id, connector.id)
        record = stored or ConnectorConfiguration(group.id, connector.id)
        if update.is_enabled is not None:
            record = replace(record, is_enabled=update.is_enabled)
        if isinstance(update, ChatConnectorUpdate):
            record = self._apply_chat(record, group, update)
        else:
            record = replace(
                record, inherit_settings=False, application_id=None, allow_guest=None, secret=None
            )
        record = replace(record, editor_id=caller.user_id, modified_on=self.clock())
        # The parent's settings, read once for the entry's before and after (both may inherit).
        parent = functools.cache(lambda: self._parent_settings(connector, group, caller))
        entry = audit.entry(
            "connector.update",
            target=("connector", connector.id),
            group_id=group.id,
            before=self._shown(connector, group, stored, parent),
            after=self._shown(connector, group, record, parent),
            secrets={"settings.applicationSecret"},
        )
        self.connectors.save_configuration(record, audit=entry)
        return self.get(connector, group, caller)

    def set_status(
        self, connector: Connector, group: Group, enabled: bool, caller: Caller
    ) -> LocalConnectorOut:
        stored = self.connectors.configuration(group.id, connector.id)
        entry = audit.entry(
            "connector.update",
            target=("connector", connector.id),
            group_id=group.id,
            before={"isEnabled": bool(stored is not None and stored.is_enabled)},
            after={"isEnabled": enabled},
        )
        self.connectors.set_enabled(
            group.id, connector.id, enabled, caller.user_id, self.clock(), audit=entry
        )
        return self.get(connector, group, caller)

    def _shown(
        self,
        connector: Connector,
        group: Group,
        config: ConnectorConfiguration | None,
        parent: Callable[[], ConnectorConfiguration | None],
    ) -> audit.Fields:
        """The audited fields of the answer `config` gives the group (the parent's settings,
        `parent()`, while it inherits them)."""
        inherits = connector.kind == "chat" and self._inherits(config, group)
        return _audit_fields(connector, group, config, parent() if inherits else config)

    def _parent_settings(
        self, connector: Connector, group: Group, caller: Caller
    ) -> ConnectorConfiguration | None:
        """The configuration an inheriting group shows: its nearest parent's own."""
        ancestors = self.group_service.ancestors(group)
        found = self.connectors.configurations((a.id, connector.id) for a in ancestors)
        view = _View(
            group=group,
            caller=caller,
            configs={},
            ancestors=ancestors,
            ancestor_configs=found,
            enabled_groups={},
            groups={},
            users={},
        )
        return self._inherited_source(connector.id, view)[1]

    def _apply_chat(
        self, record: ConnectorConfiguration, group: Group, update: ChatConnectorUpdate
    ) -> ConnectorConfiguration:
        inherit = update.inherit
        if inherit is not None:
            if inherit and not group.parent_id:
                raise ValidationFailed.one(
                    "inheritSettings",
                    True,
                    "the root group has no parent group to inherit settings from",
                )
            record = replace(record, inherit_settings=inherit)
        # Without `settings` in the body the group's own settings are kept (for when it stops
        # inheriting); with them they are replaced, the secret only when a new one is sent.
        if "settings" not in update.model_fields_set:
            return record
        settings = update.settings
        secret = record.secret
        if settings.application_secret:
            context = _secret_context(group.id, record.connector_id)
            secret = self.cipher.encrypt(settings.application_secret, context)
        return replace(
            record,
            application_id=settings.application_id,
            allow_guest=settings.allow_guest,
            secret=secret,
        )

    # --- presenting ------------------------------------------------------------------------------

    def _gather(
        self,
        group: Group,
        caller: Caller,
        connectors: builtins.list[Connector],
        configs: dict[str, ConnectorConfiguration],
        enabled_groups: dict[str, builtins.list[str]],
    ) -> _View:
        ancestors: builtins.list[Group] = []
        ancestor_configs: dict[tuple[str, str], ConnectorConfiguration] = {}
        inheriting = [
            c.id
            for c in connectors
            if c.kind == "chat" and self._inherits(configs.get(c.id), group)
        ]
        if inheriting:
            ancestors = self.group_service.ancestors(group)
            ancestor_configs = self.connectors.configurations(
                (a.id, connector_id) for a in ancestors for connector_id in inheriting
            )
        shown_group_ids = {
            group_id for c in connectors for group_id in enabled_groups.get(c.id, [])
        }
        known = {group.id: group, **{a.id: a for a in ancestors}}
        groups = {**self.groups.get_many(shown_group_ids - set(known)), **known}
        user_ids = {c.author_id for c in connectors if c.author_id}
        user_ids |= {c.editor_id for c in configs.values() if c.editor_id}
        return _View(
            group=group,
            caller=caller,
            configs=configs,
            ancestors=ancestors,
            ancestor_configs=ancestor_configs,
            enabled_groups=enabled_groups,
            groups=groups,
            users=self.users.get_many(user_ids),
        )

    @staticmethod
    def _inherits(config: ConnectorConfiguration | None, group: Group) -> bool:
        if not group.parent_id:
            return False
        if config is None or config.inherit_settings is None:
            return True
        return bool(config.inherit_settings)

    def _present(self, connector: Connector, view: _View) -> LocalConnectorOut:
        config = view.configs.get(connector.id)
        warnings: builtins.list[AccessWarning] = []
        settings: dict[str, object] = {}
        if connector.kind == "chat":
            chat = self._chat_settings(connector, config, view, warnings)
            settings = chat.model_dump(mode="json", by_alias=True)
        shown = [
            view.groups[g] for g in view.enabled_groups.get(connector.id, []) if g in view.groups
        ]
        # Never edited for this group: the connector as created.
        edited = config if config is not None and config.modified_on is not None else None
        modified_on = (edited.modified_on if edited else None) or connector.created_on
        return LocalConnectorOut(
            id=connector.id,
            type=connector_type(connector.kind),
            name=connector.name,
            description=connector.description or "",
            is_enabled=bool(config is not None and config.is_enabled),
            created_on=connector.created_on,
            author=user_ref(view.users.get(connector.author_id or "")),
            modified_on=modified_on,
            editor=user_ref(
                view.users.get((edited.editor_id if edited else connector.author_id) or "")
            ),
            groups=[group_ref(g) for g in sorted(shown, key=lambda g: (g.name.lower(), g.id))],
            settings=settings,
            access_warnings=warnings,
        )

    def _chat_settings(
        self,
        connector: Connector,
        config: ConnectorConfiguration | None,
        view: _View,
        warnings: builtins.list[AccessWarning],
    ) -> ChatSettingsOut:
        inherits = self._inherits(config, view.group)
        source_group, source = view.group, config
        if inherits:
            source_group, source = self._inherited_source(connector.id, view)
        secret = ""
        if source is not None and source.secret:
            if source_group.id == view.group.id or view.caller.has(Need.GROUP_ADMIN, source_group):
                secret = self.cipher.decrypt(
                    source.secret, _secret_context(source_group.id, connector.id)
                )
            else:
                warnings.append(
                    AccessWarning(
                        key="settings.applicationSecret",
                        code="ACCESS_DENIED",
                        message=(
                            "The secret is inherited from a group you do not administer: "
                            f"{source_group.name}."
                        ),
                    )
                )
        return ChatSettingsOut(
            inherit_settings=inherits,
            application_id=(source.application_id or "") if source is not None else "",
            application_secret=secret,
            allow_guest=bool(source is not None and source.allow_guest),
            inherited_from=group_ref(source_group) if inherits else None,
        )

    def _inherited_source(
        self, connector_id: str, view: _View
    ) -> tuple[Group, ConnectorConfiguration | None]:
        """The nearest parent with settings of its own (the root always has its own)."""
        for ancestor in view.ancestors:
            config = view.ancestor_configs.get((ancestor.id, connector_id))
            if not self._inherits(config, ancestor):
                return ancestor, config
        # A broken chain (a parent that no longer exists): the last group reached.
        last = view.ancestors[-1] if view.ancestors else view.group
        return last, view.ancestor_configs.get((last.id, connector_id))

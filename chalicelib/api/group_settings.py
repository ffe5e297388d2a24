"""The GET and PUT pair of a group's settings document (feed, newsletter, group email): the group
administrator reads it, or replaces it and is recorded as its editor (CONTRACT §5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel

from chalicelib.api.routing import Call, Routes, call_type, made_view
from chalicelib.domain.groups import Group
from chalicelib.schemas.paths import GroupPath

OutT = TypeVar("OutT", bound=BaseModel, covariant=True)
UpdateT = TypeVar("UpdateT", bound=BaseModel, contravariant=True)


class GroupSettingsService(Protocol, Generic[OutT, UpdateT]):
    def get(self, group: Group, /) -> OutT: ...

    def update(self, group: Group, update: UpdateT, editor_id: str, /) -> OutT: ...


def group_settings_routes(
    routes: Routes,
    path: str,
    service: Callable[[], GroupSettingsService[OutT, UpdateT]],
    models: tuple[type[OutT], type[UpdateT]],
    get: tuple[str, str],
    put: tuple[str, str],
) -> None:
    """Declare `GET path` and `PUT path`; `get` and `put` are each view's (name, summary)."""
    out, update = models

    def read(call: Call[GroupPath, None, None]) -> OutT:
        return service().get(call.group)

    def replace(call: Call[GroupPath, None, UpdateT]) -> OutT:
        return service().update(call.group, call.body, call.signed_in.user_id)

    routes("GET", path, out)(made_view(*get, Call[GroupPath, None, None], out, read))
    routes("PUT", path, out)(made_view(*put, call_type(GroupPath, None, update), out, replace))

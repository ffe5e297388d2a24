"""A user's alerts: the red label count, the latest alerts, marking them read.

Readable by the user themself and the root group administrator only: an alert carries titles,
links and authors of posts in every group the user belongs to, private ones included, which an
administrator of one of those groups may not enter. Only the user marks them read, so an
administrator looking never clears the user's red label.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.auth import Caller
from chalicelib.domain.ports.people import GroupStore, UserReader
from chalicelib.errors import Forbidden, NotFound, ValidationFailed
from chalicelib.schemas.alerts import AlertOut, AlertsQuery, UserAlertsOut

if TYPE_CHECKING:
    from chalicelib.store.alerts import AlertRepository


class AlertService:
    def __init__(
        self,
        alerts: AlertRepository,
        users: UserReader,
        groups: GroupStore,
        clock: Callable[[], datetime],
    ) -> None:
        self.alerts = alerts
        self.users = users
        self.groups = groups
        self.clock = clock

    def user(self, user_id: str) -> Any:
        user = self.users.get(user_id)
        if user is None:
            raise NotFound("userId", user_id, "user")
        return user

    @staticmethod
    def require_reader(caller: Caller, user: Any) -> None:
        if caller.user_id == user.id or caller.is_root_admin:
            return
        raise Forbidden("Only the user or a root group administrator may read the user's alerts.")

    @staticmethod
    def require_self(caller: Caller, user: Any) -> None:
        if caller.user_id != user.id:
            raise Forbidden("Only the user may mark their alerts read.")

    def page(self, user: Any, query: AlertsQuery) -> UserAlertsOut:
        after = None
        if query.offset:
            after = self.alerts.get(user.id, query.offset)
            if after is None:
                raise ValidationFailed.one(
                    "offset",
                    query.offset,
                    "is not the id of an alert of this user",
                    query.model_dump(mode="json", by_alias=True),
                )
        state = self.alerts.state(user.id)
        read_on = state.read_on if state is not None else None
        records = self.alerts.page_newest_first(user.id, limit=query.page_size, after=after)
        alerts = [self._out(record, read_on) for record in records]
        return UserAlertsOut(
            user_id=user.id,
            unread_count=self._unread(state),
            read_on=read_on,
            offset=alerts[-1].id if alerts else query.offset,
            alerts=alerts,
        )

    def mark_read(self, user: Any, query: AlertsQuery) -> UserAlertsOut:
        self.alerts.mark_read(user.id, self.clock())
        return self.page(user, query)

    @staticmethod
    def _unread(state: Any) -> int:
        if state is None:
            return 0
        return max(0, int(state.red_total or 0) - int(state.red_read or 0))

    @staticmethod
    def _out(record: Any, read_on: datetime | None) -> AlertOut:
        refs = record.refs or {}
        return AlertOut(
            id=record.alert_id,
            kind=record.kind,
            title=refs.get("title", ""),
            reason=record.reason or "",
            group=refs["group"],
            post=refs["post"],
            author=refs["author"],
            comment_id=refs.get("commentId"),
            url=refs.get("url", ""),
            created_on=record.stored_on,
            show_screen_alert=bool(record.show_screen_alert),
            show_red_label=bool(record.show_red_label),
            is_read=read_on is not None and record.stored_on <= read_on,
        )

"""A user's alerts: the red label count, the latest alerts, marking them read.

Readable by the user themself and the root group administrator only: an alert carries titles,
links and authors of posts in every group the user belongs to, private ones included, which an
administrator of one of those groups may not enter. Only the user marks them read, so an
administrator looking never clears the user's red label.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.auth import Caller
from chalicelib.domain.alerts import Alert
from chalicelib.domain.ports.people import GroupStore, User, UserReader
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

    def user(self, user_id: str) -> User:
        user = self.users.get(user_id)
        if user is None:
            raise NotFound("userId", user_id, "user")
        return user

    @staticmethod
    def require_reader(caller: Caller, user: User) -> None:
        if caller.user_id == user.id or caller.is_root_admin:
            return
        raise Forbidden("Only the user or a root group administrator may read the user's alerts.")

    @staticmethod
    def require_self(caller: Caller, user: User) -> None:
        if caller.user_id != user.id:
            raise Forbidden("Only the user may mark their alerts read.")

    def page(self, user: User, query: AlertsQuery) -> UserAlertsOut:
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
            unread_count=state.unread if state is not None else 0,
            read_on=read_on,
            offset=alerts[-1].id if alerts else query.offset,
            alerts=alerts,
        )

    def mark_read(self, user: User, query: AlertsQuery) -> UserAlertsOut:
        self.alerts.mark_read(user.id, self.clock())
        return self.page(user, query)

    @staticmethod
    def _out(alert: Alert, read_on: datetime | None) -> AlertOut:
        refs = alert.refs
        # Validated from a mapping: the refs are JSON as the API shows them.
        return AlertOut.model_validate(
            {
                "id": alert.alert_id,
                "kind": alert.kind,
                "title": refs.get("title", ""),
                "reason": alert.reason,
                "group": refs["group"],
                "post": refs["post"],
                "author": refs["author"],
                "commentId": refs.get("commentId"),
                "url": refs.get("url", ""),
                "createdOn": alert.stored_on,
                "showScreenAlert": alert.show_screen_alert,
                "showRedLabel": alert.show_red_label,
                "isRead": read_on is not None and alert.stored_on <= read_on,
            }
        )

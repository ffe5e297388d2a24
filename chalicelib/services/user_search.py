"""People search (CONTRACT §10): who an administrator may look for, and the page of them."""

from __future__ import annotations

from chalicelib.domain.groups import Group
from chalicelib.domain.ports.people import PeopleIndex, UserReader
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.sanitize import search_key
from chalicelib.schemas.user_search import UserFound, UserSearchPage, UserSearchQuery
from chalicelib.services.links import user_ref
from chalicelib.services.paging import next_offset


class UserSearchService:
    def __init__(self, index: PeopleIndex, users: UserReader) -> None:
        self.index = index
        self.users = users

    def page(self, group: Group | None, query: UserSearchQuery) -> UserSearchPage:
        """`group` is the group of `groupId`, already privilege-checked; None when the query names
        none (the route let only a root administrator through then) or one that does not exist."""
        if query.group_id is not None and group is None:
            raise NotFound("groupId", query.group_id, "group")
        after = None
        if query.offset:
            # Its place in the list is its alias: the user's record says it (warm: from memory).
            after = self.users.get(query.offset)
            if after is None:
                raise self._not_in_list(query.offset)
        records = self.index.page(
            search_key(query.q),
            group.id if group is not None else None,
            limit=query.page_size,
            after=after,
        )
        if records is None:
            # The same answer as for an id no user has: the search tells no one who exists.
            raise self._not_in_list(query.offset)
        return UserSearchPage(
            offset=next_offset(records, query.offset, lambda r: r.id),
            users=[UserFound(**user_ref(r).model_dump(), email=r.email) for r in records],
        )

    @staticmethod
    def _not_in_list(offset: str | None) -> ValidationFailed:
        return ValidationFailed.one(
            "offset", offset, "the search's list holds no user with this id"
        )

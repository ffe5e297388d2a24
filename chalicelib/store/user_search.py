"""Finding people by the start of their alias, a word of it, or their email (CONTRACT §10).

One item per person, list (everyone, or the members of one group) and prefix: the hash key is
`<list>|<the first 2, 3 or 4 characters>` of a search key (sanitize.search_key), the sort key the
person's alias then id. A search of 2 to 4 characters is one Query on its exact bucket, in alias
order, with no filter; a longer one reads the bucket of its first 4 characters and keeps the
people one of whose terms starts with it (a filtered page: store/base.py `query_page`). A person
appears once per bucket whichever of their terms share its prefix, so a page never repeats anyone,
and the `offset` (a person's id) maps to the sort key with no read of this table.

Every write of a user goes through `SearchIndex.replace`, which deletes the items the old version
had and the new one has not (a changed alias, email or membership), and writes the new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from chalicelib.domain.users import FoundUser, User
from chalicelib.sanitize import MIN_SEARCH_CHARACTERS, search_key
from chalicelib.store.base import Page, frozen, query_page, register, table_meta

# Prefixes of the shortest search's length up to BUCKET_MAX each have their own bucket.
MIN_QUERY = MIN_SEARCH_CHARACTERS
BUCKET_MAX = 4
# The list of every user; a group's members are listed under the group's id.
EVERYONE = "*"
# Roles that make a user a member of a group (`regular` is anyone who is not).
MEMBER_ROLES = {"member", "moderator", "administrator"}
# Terms of one user: the whole alias, its next words (a surname), and the email. Bounded, so a
# hostile alias of a thousand words costs a few items, not a thousand.
MAX_ALIAS_WORDS = 4
MAX_TERM = 100
# DynamoDB's sort key is at most 1,024 bytes; the alias in it only orders the list.
MAX_SORT_ALIAS = 200
SEPARATOR = "\x1f"  # never in a search key (control characters are removed)


@register
class UserSearchRecord(Model):
    Meta = table_meta("user-search")

    bucket = UnicodeAttribute(hash_key=True)
    position = UnicodeAttribute(range_key=True)
    # What a result shows, copied so that a page is one Query (every user write rewrites them).
    id = UnicodeAttribute()
    alias = UnicodeAttribute()
    email = UnicodeAttribute()
    slug = UnicodeAttribute()
    avatar_url = UnicodeAttribute(null=True)
    # "\n" before each term: `contains(terms, "\n" + q)` is "a term starts with q".
    terms = UnicodeAttribute()

    def as_found(self) -> FoundUser:
        """The item as the rules hold it (domain/users.py)."""
        return frozen(self, FoundUser)


class Listed(Protocol):
    """What the index copies of a user: a user record, or a user item as the fixture loader and
    the migrations read it."""

    @property
    def id(self) -> str: ...
    @property
    def alias(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def avatar_url(self) -> str | None: ...
    @property
    def memberships(self) -> Mapping[str, str] | None: ...


def terms_of(alias: str, email: str) -> list[str]:
    """What a person is found by, as search keys: the alias, each later word of it, the email."""
    alias_key = search_key(alias)
    words = alias_key.split(" ")[1:MAX_ALIAS_WORDS]
    found: list[str] = []
    for term in [alias_key, *words, search_key(email)]:
        term = term[:MAX_TERM]
        if term and term not in found:
            found.append(term)
    return found


def position_of(alias: str, user_id: str) -> str:
    return f"{search_key(alias)[:MAX_SORT_ALIAS]}{SEPARATOR}{user_id}"


def lists_of(memberships: Mapping[str, str] | None) -> list[str]:
    return [EVERYONE, *sorted(g for g, role in (memberships or {}).items() if role in MEMBER_ROLES)]


def bucket_of(scope: str, prefix: str) -> str:
    return f"{scope}|{prefix}"


def items_of(user: Listed) -> list[UserSearchRecord]:
    terms = terms_of(user.alias, user.email)
    prefixes = sorted(
        {
            t[:length]
            for t in terms
            for length in range(MIN_QUERY, BUCKET_MAX + 1)
            if len(t) >= length
        }
    )
    position = position_of(user.alias, user.id)
    joined = "".join(f"\n{t}" for t in terms)
    return [
        UserSearchRecord(
            bucket=bucket_of(scope, prefix),
            position=position,
            id=user.id,
            alias=user.alias,
            email=user.email,
            slug=user.slug,
            avatar_url=user.avatar_url,
            terms=joined,
        )
        for scope in lists_of(user.memberships)
        for prefix in prefixes
    ]


def _key(record: UserSearchRecord) -> tuple[str, str]:
    return (record.bucket, record.position)


class SearchIndex:
    def replace(self, changes: Iterable[tuple[Listed | None, Listed]]) -> None:
        """Make the index say what each (old user or None, new user) pair's new version says."""
        with UserSearchRecord.batch_write() as batch:
            for old, new in changes:
                fresh = items_of(new)
                kept = {_key(r) for r in fresh}
                for stale in items_of(old) if old is not None else []:
                    if _key(stale) not in kept:
                        batch.delete(stale)
                for record in fresh:
                    batch.save(record)

    def page(
        self, query_key: str, group_id: str | None, *, limit: int, after: User | None
    ) -> Page | None:
        """One page of the people `query_key` (a search key) finds among everyone or the members
        of `group_id`, after user `after`; None when the list does not hold `after` (a page may
        start only after a person the search finds: no other id tells whether it exists).

        With `after`, the Query starts AT its position and reads one item more: the first item
        read must be `after` (matching the filter, for a long search), and is dropped. Still one
        request, and no read of another item."""
        bucket = bucket_of(group_id or EVERYONE, query_key[:BUCKET_MAX])
        narrower = len(query_key) > BUCKET_MAX
        found = query_page(
            UserSearchRecord,
            bucket,
            limit=limit + (after is not None),
            forward=True,
            range_key_condition=UserSearchRecord.position >= position_of(after.alias, after.id)
            if after is not None
            else None,
            filter_condition=UserSearchRecord.terms.contains(f"\n{query_key}")
            if narrower
            else None,
            last_read_id_of=lambda key: key["position"]["S"].rsplit(SEPARATOR, 1)[-1],
        )
        if after is not None and (not found or found[0].id != after.id):
            return None
        page = Page(item.as_found() for item in found[1 if after is not None else 0 :])
        page.last_read_id = found.last_read_id
        return page

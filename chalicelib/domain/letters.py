"""A letter: one email to one person, as a service writes it and the outgoing mail sends it; and
the news an instant email tells, as plain values the outgoing mail renders."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Identity:
    """Whom a group's mail comes from: the name it goes under, the group's own address (Reply-To;
    "" when the group never saved its email) and its disclaimer (HTML). The service that writes
    a letter looks it up (services/notify/delivery.py) and hands it down on the letter."""

    name: str
    address: str
    disclaimer: str


@dataclass(frozen=True)
class Letter:
    """One email to one person as the notifier and the digest write it, with the group's sending
    `identity`; the outgoing mail adds the identity's name, Reply-To and disclaimer, and the
    unsubscribe link and headers when there is a URL.

    The text part is rendered from `html` (`text` is used only when there is no HTML). `thread`:
    the ids of our own that tie a mail about a post or comment to it (chalicelib/mail/threads.py),
    post first; such a mail is answerable by email when replies by email are on, at
    `reply_address` (the email-to-comment mailbox's; "" when replies by email are off)."""

    to: tuple[str, str]  # (name, address)
    subject: str
    text: str
    html: str
    unsubscribe_url: str | None = None
    thread: tuple[str, ...] = ()
    reply_address: str = ""
    identity: Identity = field(kw_only=True)
    # The Message-ID (without <>) of a mail this letter answers automatically (a rejected mail's
    # notice, CONTRACT §9): RFC 3834's `Auto-Submitted: auto-replied`, `In-Reply-To` and
    # `References` name it, and it is no list mail (no `List-Id`). "": an answer to no mail id.
    answers: str | None = field(default=None, kw_only=True)


class MessageUnbuildable(Exception):
    """A letter that no mail message can be made of (a header value the email package refuses,
    such as a title holding U+2028): building it again fails again, so it is never retried
    (services/notify/delivery.py sends it to the dead-letter queue with this reason)."""


@dataclass(frozen=True)
class News:
    """What an instant email tells (services/notify/delivery.py makes it from the post or comment as
    stored; services/notify/emails.py `instant_email` writes it)."""

    kind: str  # newPost | newComment
    group_name: str
    post_title: str
    author_name: str  # "Someone" when the comment is anonymous or the account is gone
    content_html: str  # the post's or comment's stored (sanitised) HTML
    url: str  # the post's or comment's permalink

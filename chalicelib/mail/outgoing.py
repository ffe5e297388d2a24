"""Agora's own outgoing mail: the SES adapter, the group's sending identity, message building
(disclaimer, automatic-mail and one-click unsubscribe headers) and the notification templates.

Rules that decide who is told live in services/notify.py and services/digests.py; they hand this
module what to send. `chalicelib.deps.outgoing_mail` builds it with the group email settings and
the suppression list.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formataddr
from typing import Any, Protocol

from chalicelib.logs import get_logger
from chalicelib.services.ports.notify import Letter
from chalicelib.services.unsubscribe import add_unsubscribe_headers, with_unsubscribe_link

log = get_logger("notify")

EXCERPT_CHARS = 300


class MessageRejected(Exception):
    """SES refused the message (typically: the sender address is not a verified identity)."""


class AddressSuppressed(Exception):
    """The recipient's address bounced for good or complained: nothing is sent to it."""


class SesMailer:
    """Sends a complete MIME message with SES (raw: our own headers go out as written)."""

    def send(self, message: EmailMessage) -> str:
        from botocore.exceptions import ClientError

        from chalicelib.aws import client
        from chalicelib.settings import get_settings

        # The configuration set publishes bounces and complaints to SNS (services/suppressions.py).
        configuration_set = get_settings().ses_configuration_set
        extra = {"ConfigurationSetName": configuration_set} if configuration_set else {}
        try:
            response = client("ses").send_raw_email(
                RawMessage={"Data": message.as_bytes()}, **extra
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "MessageRejected":
                raise MessageRejected(str(error)) from error
            raise
        return str(response["MessageId"])


@dataclass(frozen=True)
class Identity:
    name: str
    address: str  # "" when the group never saved its email
    disclaimer: str  # HTML


def fallback_address(base_url: str) -> str:
    """`noreply@<host of AGORA_BASE_URL>`: AGORA_MAIL_SENDER's default."""
    from urllib.parse import urlsplit

    return f"noreply@{urlsplit(base_url).hostname or 'localhost'}"


class OutgoingMail:
    """Builds and sends Agora's own emails: group identity, disclaimer, automatic-mail headers."""

    def __init__(
        self,
        mailer: Any,
        identity_of: Callable[[Any], Identity],
        sender: str,
        is_suppressed: Callable[[str], bool] = lambda address: False,
    ) -> None:
        self.mailer = mailer
        self.identity_of = identity_of
        # The platform's one sending identity (AGORA_MAIL_SENDER): a group's own address only ever
        # goes in Reply-To, so no group administrator can make Agora speak as someone else on a
        # verified domain (issue 24).
        self.sender = sender
        self.is_suppressed = is_suppressed
        self._identities: dict[str, Identity] = {}

    def identity(self, group: Any) -> Identity:
        if group.id not in self._identities:
            self._identities[group.id] = self.identity_of(group)
        return self._identities[group.id]

    def send(self, group: Any, letter: Letter) -> str:
        """Send under the group's name from the platform's sender, the group's address as
        Reply-To, with its disclaimer appended; answers the message id.

        `letter.unsubscribe_url` adds RFC 8058 one-click unsubscribe headers and a visible link.
        """
        from chalicelib.sanitize import html_to_text

        to, subject, text, body_html = letter.to, letter.subject, letter.text, letter.html
        unsubscribe_url = letter.unsubscribe_url
        if self.is_suppressed(to[1]):
            raise AddressSuppressed(to[1])
        identity = self.identity(group)
        if unsubscribe_url:
            text, body_html = with_unsubscribe_link(text, body_html, unsubscribe_url)
        if identity.disclaimer:
            text = f"{text}\n\n-- \n{html_to_text(identity.disclaimer)}"
            body_html = f'{body_html}<hr><div class="disclaimer">{identity.disclaimer}</div>'
        reply_to = identity.address if identity.address != self.sender else None
        message = self._message(identity.name, self.sender, reply_to, to, subject, text, body_html)
        add_unsubscribe_headers(message, unsubscribe_url)
        return self.mailer.send(message)

    @staticmethod
    def _message(
        name: str,
        sender: str,
        reply_to: str | None,
        to: tuple[str, str],
        subject: str,
        text: str,
        body_html: str,
    ) -> EmailMessage:
        message = EmailMessage()
        message["From"] = formataddr((name, sender))
        if reply_to:
            message["Reply-To"] = formataddr((name, reply_to))
        message["To"] = formataddr(to)
        message["Subject"] = subject
        # RFC 3834: automatic mail. Agora's mail-in ignores it, so a notification that lands in a
        # connector mailbox never becomes a post; Exchange is asked not to auto-reply to it.
        message["Auto-Submitted"] = "auto-generated"
        message["X-Auto-Response-Suppress"] = "All"
        # Quoted-printable keeps the message 7-bit, as SES asks of raw messages.
        message.set_content(text, cte="quoted-printable")
        message.add_alternative(
            f"<html><body>{body_html}</body></html>", subtype="html", cte="quoted-printable"
        )
        return message


# --- templates -----------------------------------------------------------------------------------


class Told(Protocol):
    """What a notification is about (services/notify.py `Occurrence`)."""

    kind: str  # newPost | newComment
    group: Any
    post: Any
    url: str

    @property
    def author_name(self) -> str: ...

    @property
    def content_html(self) -> str: ...

    @property
    def headline(self) -> str: ...


class Subscription(Protocol):
    """Why the recipient is told (services/notify.py `Recipient`)."""

    @property
    def reason(self) -> str: ...


def excerpt(markup: str, limit: int = EXCERPT_CHARS) -> str:
    from chalicelib.sanitize import html_to_text

    text = " ".join(html_to_text(markup).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def instant_email(occurrence: Told, recipient: Subscription) -> tuple[str, str, str]:
    """Subject, text and HTML of the instant email: title, link, a short excerpt."""
    group, post = occurrence.group, occurrence.post
    if occurrence.kind == "newPost":
        intro = f"{occurrence.author_name} posted in {group.name}:"
    else:
        intro = f"{occurrence.author_name} commented on “{post.title}” in {group.name}:"
    summary = excerpt(occurrence.content_html)
    why = f"You receive this email because you follow “{recipient.reason}”."
    subject = f"[{group.name}] {occurrence.headline}"
    text = f"{intro}\n\n{occurrence.headline}\n{occurrence.url}\n\n{summary}\n\n{why}"
    e = html.escape
    body_html = (
        f"<p>{e(intro)}</p>"
        f'<h2><a href="{e(occurrence.url)}">{e(occurrence.headline)}</a></h2>'
        f"<p>{e(summary)}</p>"
        f'<p><a href="{e(occurrence.url)}">{e(occurrence.url)}</a></p>'
        f"<p><small>{e(why)}</small></p>"
    )
    return subject, text, body_html

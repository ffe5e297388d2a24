"""Agora's own outgoing mail, from a letter to SES: the SES adapter and the stack's one sending
rate; the message built from the letter (the group's sending identity, disclaimer, automatic-mail
and one-click unsubscribe headers), laid out in one inline-styled page with its text part.

Who is told and what the email says are decided in services/notify (delivery.py, digests.py,
emails.py); they hand this module the letter, the group's sending identity included: it takes
plain values only. `chalicelib.deps.outgoing_mail` builds it with the suppression list.
"""

from __future__ import annotations

import email.policy
import html
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.header import Header
from email.message import EmailMessage
from email.utils import formataddr
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError
from inscriptis import get_text

from chalicelib.aws import client
from chalicelib.domain.groups import Group
from chalicelib.domain.letters import Identity, Letter, MessageUnbuildable
from chalicelib.domain.ports.notify import Mailer, SendDeferred
from chalicelib.logs import get_logger
from chalicelib.sanitize import text_to_html
from chalicelib.settings import get_settings

if TYPE_CHECKING:
    from inscriptis.model.config import ParserConfig

log = get_logger("notify")


class MessageRejected(Exception):
    """SES refused the message (typically: the sender address is not a verified identity)."""


class AddressSuppressed(Exception):
    """The recipient's address bounced for good or complained: nothing is sent to it."""


class SesMailer:
    """Sends a complete MIME message with SES (raw: our own headers go out as written)."""

    def send(self, message: EmailMessage) -> str:

        # The configuration set publishes bounces and complaints to SNS (services/suppressions.py).
        configuration_set = get_settings().ses_configuration_set
        extra = {"ConfigurationSetName": configuration_set} if configuration_set else {}
        data = serialised(message)
        try:
            response = client("ses").send_raw_email(RawMessage={"Data": data}, **extra)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "MessageRejected":
                raise MessageRejected(str(error)) from error
            raise
        return str(response["MessageId"])


# What the email package raises on a value it cannot put in a message: never an AWS fault.
BUILD_ERRORS = (ValueError, TypeError, LookupError, UnicodeError)


def serialised(message: EmailMessage) -> bytes:
    try:
        return message.as_bytes()
    except BUILD_ERRORS as error:
        raise MessageUnbuildable(f"{type(error).__name__}: {error}") from error


# -----------------------------------------------------------------------------------------------
# One sending rate for the whole stack: SES takes `AGORA_MAIL_SEND_RATE` mails a second from the
# account (14 at first), whichever function sends them.
#
# Every mail takes a moment on one clock before it goes: an item of the counters table holding the
# next free moment (in nanoseconds), which each sender moves on by 1/rate with a conditional ADD
# (store/sending.py `SlotClock.take_slot`), then sleeps until the moment it took. Moments are
# handed out once and 1/rate apart, so no second ever holds more than the rate, however many
# functions and executions send; whoever has mail takes the moments the others leave.
#
# Instant mail goes first. Instant senders take the next free moment whatever it is and hold the
# clock until the end of the moment they took; the digests take a moment only while the clock is
# not held, and a digest worker whose deadline comes while it waits puts its users back on the
# queue (`SendDeferred`). One item written once per mail: 3 million digests a month are 3 million
# writes ($3.75 on demand), beside SES's $300. Why not one paced queue: the digests are built by
# the worker that claims them and an instant email by the worker that claims its (user,
# occurrence); a single paced consumer would split each claim from its send, and a queue cannot
# put one kind of message before another.
#
# The jobs drive it (which function sends, as instant mail or not, until which deadline);
# chalicelib/deps.py builds a function's `SendingRate` on the stack's slot clock. Nothing here
# reads the network or the clock at import: the clock, the sleep and the slot store are given
# (fakes in the tests and in `make simulate`).


@dataclass(frozen=True)
class Sender:
    """A function that sends mail: its logical id in the template, the most executions of it
    its trigger starts at once (None: not an SQS trigger), and whether its mail goes first."""

    logical_id: str
    workers: int | None
    instant: bool


# Chalice function name -> how it sends. `workers` is how many senders may wait on the clock
# together (infra/operations.py reads them into the template), not a share of the rate.
SENDERS: dict[str, Sender] = {
    # Each execution sends about 10 mails a second of its own round trips (the claim, SES, the
    # record): 4 keep the whole rate for a burst, ahead of the digests' 2, and leave most of a
    # new account's 10 concurrent executions to the API and the mail polls.
    "deliver-notifications": Sender("DeliverNotifications", workers=4, instant=True),
    "deliver-digests": Sender("DeliverDigests", workers=2, instant=False),
    # Instant emails of events with 25 recipients or fewer, and mailbox failure emails.
    "drain-outbox": Sender("DrainOutbox", workers=None, instant=True),
}

# The counters item every sender's moments come from.
SLOT_CLOCK = "mail-send-slots"
# How long a sender that waits for instant mail sleeps at least before it looks again (a clock's
# rounding may wake it a nanosecond before the hold ends).
_RETRY_S = 1e-6


class SlotStore(Protocol):
    """store/sending.py `SlotClock` (a fake in the tests and `make simulate`)."""

    def take_slot(self, name: str, now: int, interval: int, *, first: bool) -> Slot: ...


class Slot(Protocol):
    """A moment asked for: `taken`, at `at` (ns); else the clock is held until `at`."""

    @property
    def taken(self) -> bool: ...
    @property
    def at(self) -> int: ...


class SendingRate:
    """This sender's way to the shared rate: `wait()` takes the next moment it may send at and
    sleeps until it; at most `rate` of them in any second across every sender of the stack.

    `instant`: takes the next free moment and holds the clock; otherwise (digests) waits while
    instant mail holds it, and `expired` (a deadline's; None: never) ends that wait with
    `SendDeferred`. Thread-safe: the moments come from the store one request at a time.
    """

    def __init__(
        self,
        rate: float,
        slots: SlotStore,
        *,
        instant: bool,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        expired: Callable[[], bool] | None = None,
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be above 0")
        self.rate = rate
        # Whole nanoseconds, rounded up: 14 moments a second are 1.000000008 s from first to
        # fifteenth, never under a second.
        self.interval = math.ceil(1e9 / rate)
        self.instant = instant
        self.slots = slots
        self.clock = clock
        self.sleep = sleep
        self.expired = expired

    def wait(self) -> float:
        """Block until a send may go; answers the moment it may (the clock's)."""
        while True:
            now = self.clock()
            slot = self.slots.take_slot(
                SLOT_CLOCK, round(now * 1e9), self.interval, first=self.instant
            )
            if slot.taken:
                at = slot.at / 1e9
                # A sleep may wake a little early: look at the clock again.
                while now < at:
                    self.sleep(at - now)
                    now = self.clock()
                return now
            if self.expired is not None and self.expired():
                raise SendDeferred("instant mail is using the sending rate; sent later")
            # Instant mail holds the clock: look again when its hold ends.
            self.sleep(max(slot.at / 1e9 - now, _RETRY_S))


class PacedMail:
    """A mailer (`is_suppressed`, `send`) whose sends wait for their moment; the rest is as given.

    One send at a time: threads that prepare digests side by side would otherwise each take a
    moment and then reach SES together, bunched (the send is a few milliseconds of building the
    message and one SES call).
    """

    def __init__(self, mail: Mailer, pacer: SendingRate) -> None:
        self.mail = mail
        self.pacer = pacer
        self._one_at_a_time = threading.Lock()

    def is_suppressed(self, address: str) -> bool:
        return self.mail.is_suppressed(address)

    def send(self, group: object, letter: Letter) -> str:
        with self._one_at_a_time:
            self.pacer.wait()
            return self.mail.send(group, letter)


class RawMailer(Protocol):
    """Sends a complete message and answers its id (`SesMailer`; tests record what was sent)."""

    def send(self, message: EmailMessage) -> str: ...


class OutgoingMail:
    """Builds and sends Agora's own emails: group identity, disclaimer, automatic-mail headers."""

    def __init__(
        self,
        mailer: RawMailer,
        sender: str,
        is_suppressed: Callable[[str], bool] = lambda address: False,
        site_host: str = "localhost",
    ) -> None:
        self.mailer = mailer
        # The platform's one sending identity (AGORA_MAIL_SENDER): a group's own address only ever
        # goes in Reply-To, so no group administrator can make Agora speak as someone else on a
        # verified domain (issue 24).
        self.sender = sender
        self._suppressed = is_suppressed
        self._answers: dict[str, bool] = {}
        # AGORA_BASE_URL's host: List-Id names the group under it.
        self.site_host = site_host

    def is_suppressed(self, address: str) -> bool:
        """Whether the address bounced for good or complained: asked of the list once per address
        while this mail lives (a drain's batch, a chunk, a digest run). The services ask before
        they claim a send, and `send` makes sure: one read, not two."""
        key = address.strip().lower()
        if key not in self._answers:
            self._answers[key] = self._suppressed(address)
        return self._answers[key]

    def send(self, group: Group, letter: Letter) -> str:
        """Send under the group's name (`letter.identity`) from the platform's sender; answers
        the message id.

        Reply-To is the email-to-comment mailbox's address (`letter.reply_address`) on a letter
        about a post or comment (`letter.thread`) when replies by email are on, the group's own address otherwise; the
        group's address is then named in the footer. `letter.unsubscribe_url` adds RFC 8058
        one-click unsubscribe headers and a visible link; the group's disclaimer ends the footer.
        A letter no message can be made of raises `MessageUnbuildable` (it would fail again).
        """
        to = letter.to
        if self.is_suppressed(to[1]):
            raise AddressSuppressed(to[1])
        try:
            message = self.build(group, letter)
        except BUILD_ERRORS as error:
            raise MessageUnbuildable(f"{type(error).__name__}: {error}") from error
        return str(self.mailer.send(message))

    def build(self, group: Group, letter: Letter) -> EmailMessage:
        """The complete message `send` sends (tests read it as a mail client would)."""

        identity = letter.identity
        group_address = identity.address if identity.address != self.sender else ""
        replies = letter.reply_address if letter.thread else ""
        footer = _footer(identity, bool(replies), group_address, letter.unsubscribe_url)
        content = letter.html or text_to_html(letter.text)
        body_html = mail_layout(letter.subject, content, footer)
        # The footer goes under a signature line ("-- "): mail clients leave it out of a reply.
        text = f"{mail_text(content)}\n\n-- \n{mail_text(footer)}\n"
        message = EmailMessage(policy=MAIL_POLICY)
        message["From"] = formataddr((identity.name, self.sender))
        reply_to = replies or group_address
        if reply_to:
            message["Reply-To"] = formataddr((identity.name, reply_to))
        message["To"] = formataddr(letter.to)
        message["Subject"] = letter.subject
        if letter.answers is not None:
            _answer_headers(message, letter.answers)
        else:
            message.set_raw("List-Id", list_id(identity.name, group, self.site_host))
        if letter.thread:
            # Ids of our own (mail/threads.py): SES replaces Message-ID, so these thread the mail.
            if len(letter.thread) > 1:
                message.set_raw("In-Reply-To", f"<{letter.thread[-2]}>")
            message.set_raw("References", folded_ids(letter.thread))
        # RFC 3834: automatic mail. Agora's mail-in ignores it, so a notification that lands in a
        # connector mailbox never becomes a post; Exchange is asked not to auto-reply to it.
        if "Auto-Submitted" not in message:
            message["Auto-Submitted"] = "auto-generated"
        message["X-Auto-Response-Suppress"] = "All"
        add_unsubscribe_headers(message, letter.unsubscribe_url)
        # Quoted-printable keeps the message 7-bit, as SES asks of raw messages.
        message.set_content(text, cte="quoted-printable")
        message.add_alternative(body_html, subtype="html", cte="quoted-printable")
        return message


# Headers set with `set_raw` go out exactly as written (List-Unsubscribe, List-Id, References):
# the default policy refolds a long one, and a long URL with no space to fold at becomes RFC 2047
# encoded words, which no mail client reads as a URL. Headers set by item are folded as usual.
MAIL_POLICY = email.policy.default.clone(refold_source="none")


def _answer_headers(message: EmailMessage, answered: str) -> None:
    """An automatic answer to a mail (RFC 3834 §3.1.5, §5): `Auto-Submitted: auto-replied`, and
    `In-Reply-To` and `References` its Message-ID when it had one."""
    message["Auto-Submitted"] = "auto-replied"
    if answered.isascii() and re.fullmatch(r"[!-;=?-~]{1,900}", answered):  # no <, >, space
        message.set_raw("In-Reply-To", f"<{answered}>")
        message.set_raw("References", f"<{answered}>")


def folded_ids(ids: tuple[str, ...]) -> str:
    """`<a> <b> …`, folded between ids (never inside one) to keep lines under 78 characters."""
    lines = [""]
    for value in ids:
        token = f"<{value}>"
        if lines[-1] and len(lines[-1]) + 1 + len(token) > 64:
            lines.append(token)
        else:
            lines[-1] = f"{lines[-1]} {token}".strip()
    return "\r\n ".join(lines)


def list_id(name: str, group: Group, host: str) -> str:
    """RFC 2919 `List-Id`: the group's name as the phrase, `<slug.host>` as the id."""
    label = re.sub(r"[^a-z0-9-]", "-", str(getattr(group, "slug", "") or group.id).lower())
    return f"{_phrase(name)} <{label}.{host}>" if name else f"<{label}.{host}>"


def _phrase(name: str) -> str:
    """A display name as RFC 5322 and 2047 write one (quoted, or encoded words when not ASCII)."""

    name = " ".join(name.split())
    if not name.isascii():
        return Header(name, "utf-8", maxlinelen=998).encode()
    if re.search(r'[()<>\[\]:;@\\,."]', name):
        return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return name


def _footer(
    identity: Identity, replies: bool, group_address: str, unsubscribe_url: str | None
) -> str:
    """Below the content: how to answer (by replying, when replies by email are on; the group's
    own address then), the unsubscribe link, the group's disclaimer."""
    e = html.escape
    parts = []
    if replies:
        write = (
            f' To write to the group instead: <a href="mailto:{e(group_address)}">'
            f"{e(group_address)}</a>"
            if group_address
            else ""
        )
        parts.append(f"<p>Reply to this email to comment.{write}</p>")
    if unsubscribe_url:
        parts.append(unsubscribe_paragraph(unsubscribe_url))
    if identity.disclaimer:
        parts.append(f"<div>{identity.disclaimer}</div>")
    return "".join(parts)


# --- the look: a small inline-styled layout, and the text part made from it -----------------------

FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
# Mail clients drop <style> and most CSS: every style is inline, the layout a single table.
_PAGE = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width,initial-scale=1">'
    "<title>{title}</title></head>"
    '<body style="margin:0;padding:0;background-color:#f3f4f6">'
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"'
    ' style="background-color:#f3f4f6"><tr><td align="center" style="padding:24px 12px">'
    '<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0"'
    ' style="width:100%;max-width:600px;background-color:#ffffff;border:1px solid #e5e7eb">'
    '<tr><td style="padding:24px;font-family:{font};font-size:16px;line-height:1.5;'
    'color:#111827">{content}</td></tr>'
    '<tr><td style="padding:16px 24px;border-top:1px solid #e5e7eb;font-family:{font};'
    'font-size:13px;line-height:1.5;color:#4b5563">{footer}</td></tr>'
    "</table></td></tr></table></body></html>"
)


def mail_layout(title: str, content_html: str, footer_html: str) -> str:
    """The HTML part: the content in a card, the footer (why it came, how to stop it) below."""
    return _PAGE.format(
        title=html.escape(title), font=FONT, content=content_html, footer=footer_html
    )


def mail_text(markup: str) -> str:
    """The text part of a mail, rendered from its HTML by inscriptis: paragraphs stay apart,
    list items keep their bullets and numbers, a link shows its address after its text.

    inscriptis (Apache-2.0, on lxml that Lambda ships for mail-in already) lays the text out
    from a CSS model of the HTML; html2text was the other choice, but it is GPL-3.0.
    """

    text = get_text(markup, _text_config())
    # A link whose text is its address needs it once: "[https://x](https://x)" reads "https://x",
    # "[a@b](mailto:a@b)" reads "a@b".
    text = re.sub(r"\[(\S+)\]\((?:mailto:)?\1\)", r"\1", text)
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


_CONFIG: list[ParserConfig] = []


def _text_config() -> ParserConfig:
    if not _CONFIG:
        from inscriptis.css_profiles import STRICT_CSS_PROFILE
        from inscriptis.html_properties import Display
        from inscriptis.model.config import ParserConfig
        from inscriptis.model.html_element import HtmlElement

        css = STRICT_CSS_PROFILE.copy()
        # A quotation is set off as in a plain-text mail: indented, a blank line around it.
        css["blockquote"] = HtmlElement(
            display=Display.block, margin_before=1, margin_after=1, padding_inline=4
        )
        _CONFIG.append(ParserConfig(css=css, display_links=True))
    return _CONFIG[0]


# -----------------------------------------------------------------------------------------------
# The one-click unsubscribe of an outgoing email (RFC 8058): its headers and its footer link.
#
# The URL is made where the email is written (services/notify/emails.py `unsubscribe_url`); the
# mail only carries it.


def unsubscribe_paragraph(url: str) -> str:
    """The visible unsubscribe link of an email's footer."""
    return f'<p><a href="{html.escape(url)}">Unsubscribe</a> from these emails.</p>'


def add_unsubscribe_headers(message: EmailMessage, url: str | None) -> None:
    """RFC 8058 one-click unsubscribe (RFC 2369 header), as large mailbox providers require.

    Set raw: written exactly so, `<https://…>` on one line (the URL is short enough: well under
    RFC 5322's 998 characters), never folded into RFC 2047 encoded words, which no mail client or
    provider reads as a URL (the message's policy must not refold raw headers:
    chalicelib/mail/outgoing.py `MAIL_POLICY`)."""
    if url:
        message.set_raw("List-Unsubscribe", f"<{url}>")
        message.set_raw("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")

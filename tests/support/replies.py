"""Replies to a notification as Thunderbird and Gmail write them: `Re:` subject, the original
quoted under an attribution line, `In-Reply-To` the notification's Message-ID (SES's) and
`References` the notification's own followed by that id. Nothing else ties them to the post."""

from __future__ import annotations

from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import format_datetime, make_msgid

from tests.support.mail_messages import SENT_ON


def _threading(notification: EmailMessage) -> tuple[str, str]:
    original = str(notification["Message-ID"]).strip()
    references = " ".join(str(notification["References"] or "").split())
    return original, f"{references} {original}".strip()


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _text_of(notification: EmailMessage) -> str:
    body = notification.get_body(preferencelist=("plain",))
    assert body is not None
    return str(body.get_content())


def thunderbird_reply(notification: EmailMessage, sender: str, body: str, to: str) -> bytes:
    """Plain text, bottom of the quote below the attribution "On <date>, <name> wrote:"."""
    original, references = _threading(notification)
    reply = EmailMessage(policy=default_policy)
    reply["Message-ID"] = make_msgid(domain="agora.example")
    reply["Date"] = format_datetime(SENT_ON)
    reply["MIME-Version"] = "1.0"
    reply["User-Agent"] = "Mozilla Thunderbird"
    reply["Subject"] = f"Re: {notification['Subject']}"
    reply["To"] = to
    reply["References"] = references
    reply["Content-Language"] = "en-US"
    reply["From"] = sender
    reply["In-Reply-To"] = original
    name = notification["From"].addresses[0].display_name
    reply.set_content(
        f"{body}\n\nOn 26/11/2026 08:00, {name} wrote:\n{_quoted(_text_of(notification))}\n"
    )
    return reply.as_bytes()


def gmail_reply(notification: EmailMessage, sender: str, body: str, to: str) -> bytes:
    """multipart/alternative: text with the quote under "On <date> <name> <address> wrote:",
    HTML with the original in a `gmail_quote` blockquote."""
    original, references = _threading(notification)
    reply = EmailMessage(policy=default_policy)
    reply["MIME-Version"] = "1.0"
    reply["References"] = references
    reply["In-Reply-To"] = original
    reply["From"] = sender
    reply["Date"] = format_datetime(SENT_ON)
    reply["Message-ID"] = make_msgid(domain="mail.gmail.com")
    reply["Subject"] = f"Re: {notification['Subject']}"
    reply["To"] = to
    author = notification["From"].addresses[0]
    attribution = (
        f"On Thu, Nov 26, 2026 at 8:00\u202fAM {author.display_name} <{author.addr_spec}> wrote:"
    )
    reply.set_content(f"{body}\n\n{attribution}\n\n{_quoted(_text_of(notification))}\n")
    original_html = notification.get_body(preferencelist=("html",))
    assert original_html is not None
    reply.add_alternative(
        f'<div dir="ltr">{body}</div><br><div class="gmail_quote"><div dir="ltr" '
        f'class="gmail_attr">{attribution}<br></div><blockquote class="gmail_quote" '
        'style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);'
        f'padding-left:1ex">{original_html.get_content()}</blockquote></div>',
        subtype="html",
    )
    return reply.as_bytes()

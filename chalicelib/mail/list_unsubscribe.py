"""The one-click unsubscribe of an outgoing email (RFC 8058): its headers and its footer link.

The URL is made where the email is written (services/notify/unsubscribe.py `unsubscribe_url`); the mail
only carries it.
"""

from __future__ import annotations

import html
from email.message import EmailMessage


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

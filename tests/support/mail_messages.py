"""Well-formed mail for the mail-in tests and the bench: one builder, so every test's message has
the same headers in the same order and differs only in what the test is about."""

from __future__ import annotations

from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

GARDEN_ADDRESS = "garden@community.example"
SENT_ON = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def email_message(
    sender: str,
    subject: str,
    body: str,
    *,
    to: str = GARDEN_ADDRESS,
    sent_on: datetime = SENT_ON,
    message_id: str | None = "auto",
    html: str | None = None,
    headers: dict[str, str] | None = None,
) -> EmailMessage:
    """A text mail (with an HTML alternative when `html` is given). `message_id="auto"` makes a
    fresh Message-ID, None leaves the header out, anything else is used as it is."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = format_datetime(sent_on)
    if message_id == "auto":
        message["Message-ID"] = make_msgid(domain="mail.example")
    elif message_id:
        message["Message-ID"] = message_id
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    return message


def ses_event(
    message_id: str,
    recipients: list[str],
    invocation: str = "Event",
    *,
    source: str = "ann@example.org",
    timestamp: str = "2026-11-01T12:00:05.000Z",
) -> dict:
    """SES receiving's event for a Lambda action of a receipt rule (the parts Agora reads, and
    more): one shape for the moto tier (tests/jobs) and the rehearsal, so they cannot drift."""
    return {
        "Records": [
            {
                "eventSource": "aws:ses",
                "eventVersion": "1.0",
                "ses": {
                    "mail": {
                        "timestamp": timestamp,
                        "source": source,
                        "messageId": message_id,
                        "destination": recipients,
                        "headersTruncated": False,
                        "commonHeaders": {"from": [source], "to": recipients},
                    },
                    "receipt": {
                        "timestamp": timestamp,
                        "processingTimeMillis": 120,
                        "recipients": recipients,
                        "spamVerdict": {"status": "PASS"},
                        "virusVerdict": {"status": "PASS"},
                        "spfVerdict": {"status": "PASS"},
                        "dkimVerdict": {"status": "PASS"},
                        "dmarcVerdict": {"status": "PASS"},
                        "action": {"type": "Lambda", "invocationType": invocation},
                    },
                },
            }
        ]
    }

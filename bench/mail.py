"""Mail: mails per second ingested from one Dovecot mailbox, against a bare `poplib` download.

The same 1,000 mails, the same real Dovecot (tests/support/dovecot.py), plain POP3 on loopback.
The download goes first, since it leaves the mailbox as it was; the ingest then turns mails into
posts (and deletes them from the server, as a poll does) with DynamoDB in moto, in-process, for at
most INGEST_SECONDS: the rate is the mails posted over the time taken.
"""

from __future__ import annotations

import poplib
import time
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from bench.report import Figure, skipped
from bench.world import in_process_aws
from tests.fixtures import Community

MAIL_COUNT = 1000
# Ingest stops taking new mails after this long (the poll's own deadline hook): in-process moto
# makes each mail's dozen DynamoDB calls slow, and the whole bench has ten minutes.
INGEST_SECONDS = 60.0
NAMES = [("mail_ingest_over_poplib", "mails/s")]


def a_mail(number: int, sender: str) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "garden@community.example"
    message["Subject"] = f"Allotment news {number}"
    message["Date"] = format_datetime(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    message["Message-ID"] = make_msgid(domain="mail.example")
    text = f"Tomatoes are in, plot {number}.\n\nBring a basket on Saturday.\n"
    message.set_content(text)
    message.add_alternative(f"<p>Tomatoes are in, plot <b>{number}</b>.</p>", subtype="html")
    return message.as_bytes()


def download_all(host: str, port: int, user: str, password: str) -> int:
    """What any POP3 client does at least: log in, RETR every message, QUIT (no DELE)."""
    server = poplib.POP3(host, port, timeout=30)
    try:
        server.user(user)
        server.pass_(password)
        count, _ = server.stat()
        for number in range(1, count + 1):
            server.retr(number)
    finally:
        server.quit()
    return count


def mail_figures(count: int = MAIL_COUNT, budget_seconds: float = INGEST_SECONDS) -> list[Figure]:
    from tests.support.dovecot import Dovecot, DovecotUnavailable

    try:
        dovecot = Dovecot()
    except DovecotUnavailable as reason:
        return skipped(NAMES, str(reason))
    with dovecot, in_process_aws():
        from chalicelib.services.mail_in import MailboxConfig, MailIngestor

        community = Community()
        community.group("home")
        community.user("root-admin", {community.root: "administrator"})
        garden = community.group("garden")
        community.user("ann", {garden: "member"}, email="ann@example.org")
        community.load()

        dovecot.add_user("garden", "garden-password")
        for number in range(count):
            dovecot.deliver("garden", a_mail(number, "Ann <ann@example.org>"))

        started = time.perf_counter()
        downloaded = download_all(dovecot.host, dovecot.pop3_port, "garden", "garden-password")
        download_seconds = time.perf_counter() - started

        mailbox = MailboxConfig(
            key=f"post#{garden}",
            kind="post",
            group_id=garden,
            host=dovecot.host,
            port=dovecot.pop3_port,
            username="garden",
            password="garden-password",
            is_ssl=False,
            delete_processed=True,
        )
        ingestor = MailIngestor.default(max_messages=count)
        started = time.perf_counter()
        result = ingestor.poll(mailbox, lambda: time.perf_counter() - started > budget_seconds)
        ingest_seconds = time.perf_counter() - started

    note = None
    if downloaded != count or result.posted != result.seen:
        note = f"downloaded {downloaded} of {count}; {result.line()}"
    return [
        Figure(
            "mail_ingest_over_poplib",
            result.posted / ingest_seconds,
            downloaded / download_seconds,
            "mails/s",
            note,
        )
    ]

"""Mail: mails per second ingested from one Dovecot mailbox, against a bare `poplib` download.

The same 1,000 mails, the same real Dovecot (tests/support/dovecot.py), plain POP3 on loopback.
The download goes first, since it leaves the mailbox as it was; the ingest then turns mails into
posts (and deletes them from the server, as a poll does) with DynamoDB in moto, in-process, for at
most INGEST_SECONDS: the rate is the mails posted over the time taken.

`ddb_requests_per_mail` counts every DynamoDB request of that ingest (mail-in's own, and the
notification handler's, which reads a group's and an author's subscribers once per poll) per mail
posted, against issue 14's
budget of 3. `mail_parse_hostile` is the slowest `parse_mail` of hostile inputs in ms per MB,
against an ordinary mail of the same size.

`mail_ingest_verify` (its own family, `--only mail_verify`): mails/s of an ingest with
`AGORA_MAIL_AUTH=verify` (each mail DKIM-signed, keys and DMARC policy from a DNS server on
loopback: tests/support/dns_server.py), against the same mails ingested with verification off
in the same run. The `mail` family's figures are taken with verification off, as before.
"""

from __future__ import annotations

import poplib
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime

from bench.report import Figure, skipped
from bench.world import in_process_aws
from chalicelib import deps
from tests.fixtures import Community, counting_dynamodb
from tests.support.mail_messages import email_message

MAIL_COUNT = 1000
# Ingest stops taking new mails after this long (the poll's own deadline hook): in-process moto
# makes each mail's dozen DynamoDB calls slow, and the whole bench has ten minutes.
INGEST_SECONDS = 60.0
NAMES = [
    ("mail_ingest_over_poplib", "mails/s"),
    ("ddb_requests_per_mail", "requests"),
    ("mail_parse_hostile", "ms/MB"),
]
# Issue 14's budget of DynamoDB requests per imported mail.
DDB_REQUESTS_BUDGET = 3.0


def a_mail(number: int, sender: str) -> bytes:
    return email_message(
        sender,
        f"Allotment news {number}",
        f"Tomatoes are in, plot {number}.\n\nBring a basket on Saturday.\n",
        sent_on=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
        html=f"<p>Tomatoes are in, plot <b>{number}</b>.</p>",
    ).as_bytes()


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


def garden_community(ann_email: str) -> str:
    """Loads the home group, a root administrator and the group garden with ann a member (at
    `ann_email`, the sender of the bench's mail); answers garden's id."""
    community = Community()
    community.group("home")
    community.user("root-admin", {community.root: "administrator"})
    garden = community.group("garden")
    community.user("ann", {garden: "member"}, email=ann_email)
    community.load()
    return garden


def past(deadline: float) -> Callable[[], bool]:
    """The ingestor's `stop` question: has the clock passed `deadline` (perf_counter)?"""
    return lambda: time.perf_counter() > deadline


def mail_figures(count: int = MAIL_COUNT, budget_seconds: float = INGEST_SECONDS) -> list[Figure]:
    from tests.support.dovecot import Dovecot, DovecotMailbox, DovecotUnavailable

    try:
        dovecot = Dovecot()
    except DovecotUnavailable as reason:
        return [*skipped(NAMES[:2], str(reason)), parse_figure()]
    with dovecot, in_process_aws():
        garden = garden_community("ann@example.org")

        dovecot.add_user("garden", "garden-password")
        for number in range(count):
            dovecot.deliver("garden", a_mail(number, "Ann <ann@example.org>"))

        started = time.perf_counter()
        downloaded = download_all(dovecot.host, dovecot.pop3_port, "garden", "garden-password")
        download_seconds = time.perf_counter() - started

        mailbox = DovecotMailbox(dovecot, "garden", "garden-password").connector(garden)
        from chalicelib.jobs.outbox import drain_in_process

        ingestor = deps.mail_ingestor(max_messages=count)
        ingestor.mail.prepare()
        with counting_dynamodb() as counter:
            started = time.perf_counter()
            deadline = started + budget_seconds
            result = ingestor.poll(mailbox, past(deadline))
            ingest_seconds = time.perf_counter() - started
            # What the posts announced (their outbox items) is told by the drain: counted too,
            # not timed (in AWS it runs in its own function).
            drain_in_process()
        requests = counter.total

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
        ),
        Figure(
            "ddb_requests_per_mail",
            requests / max(result.posted, 1),
            DDB_REQUESTS_BUDGET,
            "requests",
            f"by operation: {dict(sorted(counter.requests.items()))}",
        ),
        parse_figure(),
    ]


def hostile_inputs() -> dict[str, bytes]:
    nested = b"".join(
        b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
        for i in range(2000)
    )
    parts = b"".join(b"--p\r\nContent-Type: text/plain\r\n\r\npart\r\n" for _ in range(190))
    head = b"From: ann@example.org\r\nSubject: hostile\r\n"
    return {
        "nested 2,000": head + nested + b"Content-Type: text/plain\r\n\r\nx\r\n",
        "190 parts": head + b'Content-Type: multipart/mixed; boundary="p"\r\n\r\n' + parts,
        "1 MB line": head + b"\r\n" + b"y" * 1_000_000 + b"\r\n",
        "600 KB text": head + b"\r\n" + b"word word word word\r\n" * 30_000,
        "random 20 KB": random.Random(14).randbytes(20_000),
        "1 MB of headers": head + b"X-Junk: " + b"z" * 1_000_000 + b"\r\n\r\nbody\r\n",
        "20,000 recipients": head + b"To: " + b"x@y.example, " * 20_000 + b"\r\n\r\nx\r\n",
        "50,000 encoded words": b"From: ann@example.org\r\nSubject: "
        + b"=?utf-8?q?abc?= " * 50_000
        + b"\r\n\r\nx\r\n",
        "20,000 parameters": head
        + b"Content-Type: text/plain; "
        + b"a=b; " * 20_000
        + b"\r\n\r\nx",
    }


def parse_figure() -> Figure:
    """The slowest hostile input's parse time per MB, against an ordinary mail's."""
    from chalicelib.mail.parse import MailParseError, parse_mail

    def ms_per_mb(raw: bytes) -> float:
        started = time.perf_counter()
        try:
            parse_mail(raw)
        except MailParseError:
            pass
        elapsed_ms = (time.perf_counter() - started) * 1000
        return elapsed_ms / max(len(raw) / 1_000_000, 0.001)

    ordinary = a_mail(0, "Ann <ann@example.org>")
    ordinary = ordinary.replace(b"Bring a basket on Saturday.", b"Bring a basket. " * 60_000)
    worst_name, worst = max(
        ((name, ms_per_mb(raw)) for name, raw in hostile_inputs().items()), key=lambda x: x[1]
    )
    return Figure(
        "mail_parse_hostile", worst, ms_per_mb(ordinary), "ms/MB", f"slowest: {worst_name}"
    )


VERIFY_COUNT = 200
VERIFY_NAMES = [("mail_ingest_verify", "mails/s")]


def verify_figures(count: int = VERIFY_COUNT, budget_seconds: float = 30.0) -> list[Figure]:
    """Ingest rate with DKIM and DMARC verified by Agora, against verification off."""
    from chalicelib.mail.authentication import DnsTxt, SenderVerifier
    from tests.support.dkim_signing import SELECTOR, dkim_record, signed
    from tests.support.dns_server import DnsServer
    from tests.support.dovecot import Dovecot, DovecotMailbox, DovecotUnavailable

    try:
        dovecot = Dovecot()
    except DovecotUnavailable as reason:
        return skipped(VERIFY_NAMES, str(reason))
    records = {
        f"{SELECTOR}._domainkey.signed.example": [dkim_record()],
        "_dmarc.signed.example": ["v=DMARC1; p=reject"],
    }
    rates: dict[str, float] = {}
    notes: list[str] = []
    with dovecot, in_process_aws(), DnsServer(records) as resolver:
        garden = garden_community("ann@signed.example")
        for mode in ("off", "verify"):
            user = f"garden-{mode}"
            dovecot.add_user(user, "garden-password")
            for number in range(count):
                raw = a_mail(number, "Ann <ann@signed.example>").replace(b"\n", b"\r\n")
                dovecot.deliver(user, signed(raw, "signed.example"))
            mailbox = DovecotMailbox(dovecot, user, "garden-password").connector(garden)
            verifier = None
            if mode == "verify":
                verifier = SenderVerifier(DnsTxt([("127.0.0.1", resolver.port)]))
            ingestor = deps.mail_ingestor(max_messages=count, verifier=verifier)
            ingestor.mail.prepare()
            started = time.perf_counter()
            deadline = started + budget_seconds
            result = ingestor.poll(mailbox, past(deadline))
            rates[mode] = result.posted / (time.perf_counter() - started)
            if result.posted != result.seen:
                notes.append(f"{mode}: {result.line()}")
    return [
        Figure(
            "mail_ingest_verify",
            rates["verify"],
            rates["off"],
            "mails/s",
            "; ".join(notes) or f"{count} signed mails; reference: the same with verification off",
        )
    ]

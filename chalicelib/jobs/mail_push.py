"""Mail in by push (CONTRACT §13): a mail for the inbound domain, handed over by its receiving
server, goes through the same mail-in pipeline as a polled one (`MailIngestor.receive`).

Two doors, one entry (`deliver`: the raw mail and its envelope recipients):
- AWS: SES receiving stores the raw mail in the inbound bucket (its S3 action), then invokes
  `receive-mail` (its Lambda action, asynchronously) with the SES event; `handle_ses_event` reads
  the mail from the bucket and delivers it. Before both, SES asks `mail-verdict` (a Lambda action,
  RequestResponse): `verdict` stops the rule for a mail none of whose recipients is Agora's.
- make run: its SMTP door (agora_local/smtp_door.py) refuses an unknown recipient at RCPT with
  `recipient_known` and delivers each accepted mail here.

Exactly once: a mail's entry (Message-ID or content hash, CONTRACT §9) makes a redelivery a skip,
and a short lease per (mailbox, mail) keeps two deliveries of one mail from running side by
side. A delivery whose mail `failed` (the platform, a DNS look-up) raises `MailNotTaken`: SES's
asynchronous invocation retries it (then its dead-letter queue), the SMTP door answers 451.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from chalicelib import deps
from chalicelib.clock import utc_now
from chalicelib.domain.audit import acting_as_job
from chalicelib.logs import get_logger

if TYPE_CHECKING:
    from chalicelib.domain.mailboxes import Mailbox
    from chalicelib.jobs.mail_poll import Leases
    from chalicelib.services.inbound import InboundAddresses
    from chalicelib.services.mail_in import MailIngestor
    from chalicelib.services.mail_in.rules import PollResult

log = get_logger("mail_push")

# Where SES's S3 action puts each mail: `<prefix><SES message id>` (infra/inbound.py).
INBOUND_PREFIX = "inbound/"
# A delivery holds its (mailbox, mail) this long at most; another waits this long for it.
LEASE = timedelta(seconds=120)
LEASE_WAIT_SECONDS = 8.0


class MailNotTaken(Exception):
    """A pushed mail could not be handled now (its log entry says why): deliver it again."""


def inbound_addresses() -> InboundAddresses:
    from chalicelib.services.inbound import InboundAddresses
    from chalicelib.settings import get_settings

    return InboundAddresses(get_settings().inbound_domain, deps.groups(), deps.mailboxes())


@dataclass(frozen=True)
class MailPush:
    """What a pushed mail's delivery is made of, composed in one place (`composed`): the
    addresses Agora takes mail at, the mail-in pipeline's entry (made for each delivery), and the
    leases that keep two deliveries of one mail apart. Tests replace a part with
    `dataclasses.replace`."""

    addresses: InboundAddresses
    ingestor: Callable[[], MailIngestor]
    leases: Leases


def composed() -> MailPush:
    """The delivery's production parts: the one place this job asks the composition root."""
    return MailPush(inbound_addresses(), deps.mail_ingestor, deps.mail())


def recipient_known(address: str, addresses: InboundAddresses | None = None) -> bool:
    """Whether Agora takes mail for `address` (the SMTP door's RCPT)."""
    return (addresses or inbound_addresses()).mailbox_of(address) is not None


def deliver(
    raw: bytes,
    recipients: Iterable[str],
    *,
    received_on: datetime | None = None,
    parts: MailPush | None = None,
) -> list[str]:
    """Hand a pushed mail to each mailbox its recipients name (each once); answers one line per
    mailbox. Raises MailNotTaken when any of them failed for now (after handling the others)."""
    from chalicelib.jobs.mail_poll import emit_outcomes

    parts = parts or composed()
    mailboxes = parts.addresses.mailboxes_of(recipients)
    if not mailboxes:
        log.info("pushed mail for no mailbox of Agora's")
        return []
    ingestor = parts.ingestor()
    lines, failed = [], []
    with acting_as_job("receive-mail"):
        for mailbox in mailboxes:
            result = _receive_leased(ingestor, parts.leases, mailbox, raw, received_on)
            emit_outcomes(result)
            lines.append(result.line())
            if result.error:
                failed.append(result.line())
    log.info("pushed mail handled", extra={"summary": "; ".join(lines)})
    if failed:
        raise MailNotTaken("; ".join(failed))
    return lines


def _receive_leased(
    ingestor: MailIngestor,
    leases: Leases,
    mailbox: Mailbox,
    raw: bytes,
    received_on: datetime | None,
) -> PollResult:
    key = f"{mailbox.key}#push#{mail_key(raw)}"
    owner = str(uuid.uuid4())
    waited_until = time.monotonic() + LEASE_WAIT_SECONDS
    while True:
        now = utc_now()
        if leases.acquire_lease(key, owner, now, now + LEASE):
            break
        if time.monotonic() > waited_until:
            raise MailNotTaken(f"{mailbox.key}: another delivery of this mail is under way")
        time.sleep(0.1)
    try:
        return ingestor.receive(mailbox, raw, received_on)
    finally:
        leases.release_lease(key, owner)


def mail_key(raw: bytes) -> str:
    """What makes two deliveries the same mail (its Message-ID, else its content), hashed."""
    from chalicelib.mail.parse import content_hash, headers_of

    message_id = headers_of(raw).message_id
    said = f"message-id:{message_id}" if message_id else f"sha256:{content_hash(raw)}"
    return hashlib.sha256(said.encode("utf-8")).hexdigest()[:32]


# --- AWS: SES receiving ---------------------------------------------------------------------------


def ses_records(event: Mapping[str, Any]) -> list[tuple[str, list[str], datetime | None]]:
    """(SES message id, envelope recipients, receipt time) of each record of an SES event."""
    found = []
    for record in event.get("Records") or []:
        ses = record.get("ses") or {}
        mail, receipt = ses.get("mail") or {}, ses.get("receipt") or {}
        message_id = str(mail.get("messageId") or "")
        recipients = [str(r) for r in receipt.get("recipients") or mail.get("destination") or []]
        if message_id:
            found.append((message_id, recipients, _timestamp(mail.get("timestamp"))))
    return found


def _timestamp(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def handle_ses_event(
    event: Mapping[str, Any],
    *,
    read: Callable[[str], bytes] | None = None,
    deliver_mail: Callable[..., list[str]] = deliver,
) -> str:
    """`receive-mail`: each mail of the event read from the inbound bucket and delivered."""
    read = read or read_inbound
    lines: list[str] = []
    for message_id, recipients, received_on in ses_records(event):
        raw = read(INBOUND_PREFIX + message_id)
        lines += deliver_mail(raw, recipients, received_on=received_on)
    return "\n".join(lines)


def read_inbound(key: str) -> bytes:
    from chalicelib.aws import client
    from chalicelib.settings import get_settings

    bucket = get_settings().mail_inbound_bucket
    return bytes(client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def verdict(event: Mapping[str, Any], addresses: InboundAddresses | None = None) -> dict[str, str]:
    """`mail-verdict`, SES's RequestResponse action before the mail is stored: CONTINUE when a
    recipient is Agora's, else STOP_RULE (the mail is dropped: nothing bounces to a sender
    that may be forged)."""
    addresses = addresses or inbound_addresses()
    for _, recipients, _ in ses_records(event):
        if addresses.mailboxes_of(recipients):
            return {"disposition": "CONTINUE"}
    return {"disposition": "STOP_RULE"}

"""`make run`'s SMTP door (CONTRACT §13): mail for AGORA_MAIL_INBOUND_DOMAIN, by push, on
`127.0.0.1:AGORA_SMTP_PORT`.

An aiosmtpd server on loopback. It refuses, before the mail is accepted, what Agora would not take
(so nothing bounces to a sender who may be forged):
- a recipient that is none of Agora's addresses (an unknown local part, a group whose connector
  is disabled, another domain), at RCPT: `550 5.1.1`;
- a mail over the size mail in accepts, at MAIL (its SIZE, which EHLO advertises) or at DATA:
  `552`.
Each accepted mail goes, with its envelope recipients, to the entry the AWS function uses
(chalicelib/jobs/mail_push.py `deliver`, the same mail-in pipeline as a polled mail) before the
door answers 250: what it acknowledged is stored, and make run's stop (its intake) waits for it. A
mail that could not be handled now is answered 451, so the sending server tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from agora_local.folder_lock import port_user
from agora_local.lifecycle import Intake
from chalicelib.logs import get_logger

log = get_logger("smtp_door")


class Door:
    """The aiosmtpd handler: RCPT checks each recipient, DATA delivers the mail."""

    def __init__(
        self,
        intake: Intake | None = None,
        known: Callable[[str], bool] | None = None,
        deliver: Callable[[bytes, Iterable[str]], Any] | None = None,
    ) -> None:
        from chalicelib.jobs import mail_push

        self.intake = intake or Intake()
        self.known = known or mail_push.recipient_known
        self.deliver = deliver or (lambda raw, rcpts: mail_push.deliver(raw, rcpts))

    async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        loop = asyncio.get_running_loop()
        try:
            known = await loop.run_in_executor(None, self.known, address)
        except Exception:
            log.exception("could not check a recipient", extra={"recipient": address})
            return "451 4.3.0 Cannot check this recipient now; try again later"
        if not known:
            return f"550 5.1.1 <{address}>: no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(  # noqa: N802 - aiosmtpd's hook name
        self, server: Any, session: Any, envelope: Any
    ) -> str:
        from chalicelib.jobs.mail_push import MailNotTaken

        if not self.intake.enter():
            return "421 4.3.2 Agora is stopping; try again later"
        try:
            raw = bytes(envelope.original_content or b"")
            recipients = list(envelope.rcpt_tos)
            loop = asyncio.get_running_loop()
            lines = await loop.run_in_executor(None, self.deliver, raw, recipients)
        except MailNotTaken as error:
            log.warning("pushed mail not handled now", extra={"why": str(error)})
            return "451 4.3.0 The mail could not be handled now; try again later"
        except Exception:
            log.exception("pushed mail failed")
            return "451 4.3.0 The mail could not be handled now; try again later"
        finally:
            self.intake.leave()
        log.info("pushed mail accepted", extra={"summary": "; ".join(lines or [])})
        return "250 2.0.0 OK: accepted"


def start_smtp_door(port: int, intake: Intake | None = None, host: str = "127.0.0.1") -> Any:
    """The door, serving on its own thread (its `stop()` ends it); the SIZE it advertises and
    enforces is mail in's own limit."""
    from aiosmtpd.controller import Controller

    from chalicelib.services.mail_in.ingest import MAX_MAIL_BYTES

    controller = Controller(
        Door(intake),
        hostname=host,
        port=port,
        data_size_limit=MAX_MAIL_BYTES,
        enable_SMTPUTF8=True,
        server_hostname="agora.local",
        ident="Agora SMTP door",
    )
    controller.start()
    return controller


def open_door(settings: Any, intake: Intake) -> tuple[Any, str]:
    """(the door or None, make run's banner line about it). Off without an inbound domain; on
    the default port, a port already taken leaves it off with a line that says so (make run
    refuses to start on a taken AGORA_SMTP_PORT given outright, before anything starts)."""
    domain, port = settings.inbound_domain, settings.smtp_port
    if not domain:
        return None, "SMTP door:          off (AGORA_MAIL_INBOUND_DOMAIN is empty)"
    try:
        door = start_smtp_door(port, intake)
    except Exception as error:
        log.warning("SMTP door not started", extra={"port": port, "error": str(error)})
        # What holds the port, as make run's own busy-port line says it (issue 56); an error
        # that is not a taken port is said as it is, not as one.
        user = port_user(port)
        if user is None and not isinstance(error, OSError):
            return None, f"SMTP door:          off: it did not start ({error})"
        held = f"used by {user}" if user else f"not free ({error})"
        return None, (
            f"SMTP door:          off: port {port} (AGORA_SMTP_PORT) is {held}; "
            "set AGORA_SMTP_PORT to another port"
        )
    return door, f"SMTP door:          smtp://127.0.0.1:{port} (mail to <group slug>@{domain})"

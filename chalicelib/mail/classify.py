"""Mail that is not a member writing: auto-replies, bounces and spam (rules in chalicelib/mail/parse.py's
docstring)."""

from __future__ import annotations

import re
from email.message import Message

from chalicelib.mail.headers import header_text

_PRECEDENCE_REASONS = {
    "bulk": "Precedence: bulk",
    "junk": "Precedence: junk",
    "auto_reply": "Precedence: auto_reply",
    "list": "Precedence: list (mailing-list mail, not written to the community)",
}
_AUTO_SUBJECT_MARKER = re.compile(r"\[\s*auto[\s_-]*generated\s*\]", re.IGNORECASE)
_AUTO_SUBJECT_PREFIX = re.compile(
    r"^\s*(?:auto|auto[ -]?reply|automatic reply|auto[ -]?response|out of (?:the )?office"
    r"|out of office reply|abwesenheitsnotiz|automatische antwort|automatisch antwoord"
    r"|r[ée]ponse automatique|respuesta autom[áa]tica|risposta automatica|autosvar"
    r"|automatisk svar)\s*:",
    re.IGNORECASE,
)


def auto_reason_of(message: Message, subject: str) -> str | None:
    auto_submitted = header_text(message, "Auto-Submitted")
    if auto_submitted is not None:
        keyword = auto_submitted.split(";")[0].strip().lower()
        if keyword != "no":
            return f"Auto-Submitted: {keyword or '(empty)'}"
    for name in ("X-Autoreply", "X-Autorespond", "X-Autoresponse"):
        if header_text(message, name) is not None:
            return f"{name} header"
    precedence = (header_text(message, "Precedence") or "").strip().lower()
    if precedence in _PRECEDENCE_REASONS:
        return _PRECEDENCE_REASONS[precedence]
    if _AUTO_SUBJECT_MARKER.search(subject) or _AUTO_SUBJECT_PREFIX.match(subject):
        return f"auto-reply subject: {subject[:80]}"
    return None


_DAEMON_SENDER = re.compile(r"^(?:mailer[-_]?daemon|postmaster)@", re.IGNORECASE)


def bounce_reason_of(message: Message, from_address: str | None) -> str | None:
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type", "", header="content-type") or "")
        if report_type.lower() == "delivery-status":
            return "delivery status report (multipart/report)"
    if from_address and _DAEMON_SENDER.match(from_address):
        return f"sent by {from_address.split('@')[0]}"
    return_path = header_text(message, "Return-Path")
    if return_path is not None and return_path.strip() in ("<>", ""):
        return "empty return path"
    if header_text(message, "X-Failed-Recipients") is not None:
        return "X-Failed-Recipients header"
    return None


def is_spam_mail(message: Message) -> bool:
    flag = (header_text(message, "X-Spam-Flag") or "").strip().lower()
    status = (header_text(message, "X-Spam-Status") or "").strip().lower()
    return flag == "yes" or status.startswith("yes")

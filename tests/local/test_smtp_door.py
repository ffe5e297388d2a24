"""make run's SMTP door (CONTRACT §13): mail sent with smtplib to a group's address becomes its
post, through the same pipeline as a polled mail; what Agora would not take is refused before
the mail is accepted."""

from __future__ import annotations

import json
import smtplib
import time
from email.utils import make_msgid

import pytest

from tests.support import REPO_ROOT
from tests.support.mail_messages import email_message
from tests.support.running import start_agora

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
GROUPS = {g["slug"]: g["id"] for g in DEMO["groups"]}
DOMAIN = "community.example"  # AGORA_BASE_URL's host in the suite: make run's inbound domain
SETTINGS = "/api/v1/en_US/connector/email-to-post/{}"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def agora():
    running = start_agora()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def admin(agora):
    return {"X-Auth": agora.token()}


@pytest.fixture(scope="module")
def push_only(agora, admin):
    """Photography's connector, push only: enabled with no POP3 server."""
    group = GROUPS["photography"]
    status, body = agora.request("PUT", SETTINGS.format(group), {"isEnabled": True}, admin)
    assert status == 200, body
    return body["object"]


def send(agora, raw: bytes, to: list[str]) -> dict:
    with smtplib.SMTP("127.0.0.1", agora.smtp_port, timeout=30) as smtp:
        return smtp.sendmail(agora.admin_email, to, raw)


def a_mail(agora, subject: str, to: str, message_id: str | None = "auto") -> bytes:
    body = f"{subject}: sent through the door."
    return email_message(agora.admin_email, subject, body, to=to, message_id=message_id).as_bytes()


def log_entries(agora, admin, group: str) -> list[dict]:
    status, body = agora.request("GET", SETTINGS.format(group) + "/log?pageSize=100", None, admin)
    assert status == 200, body
    return body["object"]["entries"]


def posts_titled(agora, admin, group: str, title: str) -> list[dict]:
    path = f"/api/v1/en_US/post/list/{group}?pageSize=100"
    status, body = agora.request("GET", path, None, admin)
    assert status == 200, body
    return [p for p in body["object"]["posts"] if p["title"] == title]


def test_the_banner_names_the_door(agora):
    assert any(
        line.startswith("SMTP door:") and f"127.0.0.1:{agora.smtp_port}" in line
        for line in agora.output
    ), "".join(agora.output)


def test_a_mail_through_the_door_is_its_post_within_ten_seconds(agora, admin, push_only):
    group = GROUPS["photography"]
    assert push_only["inboundAddress"] == f"photography@{DOMAIN}"
    assert push_only["nextPollOn"] is None  # push only: never polled
    started = time.monotonic()
    send(agora, a_mail(agora, "Light at dusk", f"photography@{DOMAIN}"), [f"photography@{DOMAIN}"])
    while not posts_titled(agora, admin, group, "Light at dusk"):
        assert time.monotonic() - started < 10, "no post within 10 s"
        time.sleep(0.2)
    [entry] = [e for e in log_entries(agora, admin, group) if e["subject"] == "Light at dusk"]
    assert entry["status"] == "posted" and entry["via"] == "push"


def test_the_same_mail_twice_is_one_post(agora, admin, push_only):
    group = GROUPS["photography"]
    raw = a_mail(agora, "Said twice", f"photography@{DOMAIN}", message_id=make_msgid("twice"))
    assert send(agora, raw, [f"photography@{DOMAIN}"]) == {}
    assert send(agora, raw, [f"Photography@{DOMAIN.upper()}"]) == {}  # a retrying server
    assert len(posts_titled(agora, admin, group, "Said twice")) == 1
    assert [e["subject"] for e in log_entries(agora, admin, group)].count("Said twice") == 1


@pytest.mark.parametrize(
    "address",
    [f"nobody@{DOMAIN}", f"masterclass@{DOMAIN}", "photography@elsewhere.example"],
)
def test_an_unknown_recipient_is_refused_at_rcpt_with_550_5_1_1(agora, admin, address):
    # masterclass: a group whose connector is not enabled.
    off = {"isEnabled": False}
    status, _ = agora.request("PUT", SETTINGS.format(GROUPS["masterclass"]), off, admin)
    assert status == 200
    with smtplib.SMTP("127.0.0.1", agora.smtp_port, timeout=30) as smtp:
        smtp.ehlo()
        smtp.mail(agora.admin_email)
        code, message = smtp.rcpt(address)
    assert code == 550 and message.startswith(b"5.1.1"), message


def test_a_mail_to_a_known_and_an_unknown_recipient_reaches_the_known_one(agora, admin, push_only):
    group = GROUPS["photography"]
    raw = a_mail(agora, "Half known", f"photography@{DOMAIN}")
    refused = send(agora, raw, [f"photography@{DOMAIN}", f"nobody@{DOMAIN}"])
    assert refused == {f"nobody@{DOMAIN}": (550, refused[f"nobody@{DOMAIN}"][1])}
    assert len(posts_titled(agora, admin, group, "Half known")) == 1


def test_an_oversized_mail_is_refused_with_552(agora, admin, push_only):
    group = GROUPS["photography"]
    with smtplib.SMTP("127.0.0.1", agora.smtp_port, timeout=30) as smtp:
        smtp.ehlo()
        limit = int(smtp.esmtp_features["size"])
        assert limit == 10 * 1024 * 1024  # what mail in accepts
        # Said at MAIL FROM (SIZE) …
        code, _ = smtp.mail(agora.admin_email, [f"SIZE={limit + 1}"])
        assert code == 552
        smtp.rset()
        # … or found at DATA (a client that did not say its size).
        line = b"x" * 76 + b"\r\n"
        raw = a_mail(agora, "Far too big", f"photography@{DOMAIN}") + line * (limit // 78 + 10)
        assert smtp.mail(agora.admin_email)[0] == 250
        assert smtp.rcpt(f"photography@{DOMAIN}")[0] == 250
        code, _ = smtp.data(raw)
    assert code == 552
    assert posts_titled(agora, admin, group, "Far too big") == []


def test_a_stranger_through_the_door_learns_why_the_mail_was_not_posted(agora, admin, push_only):
    """The sender learns why: make run (AGORA_MAIL_AUTH off: anyone is proven) answers a
    stranger's mail with one notice through the embedded SES, and its log entry says so."""
    group, stranger = GROUPS["photography"], "stranger@elsewhere.example"
    raw = email_message(
        stranger, "Cameras for sale", "Cheap.", to=f"photography@{DOMAIN}"
    ).as_bytes()
    assert send(agora, raw, [f"photography@{DOMAIN}"]) == {}
    [entry] = [e for e in log_entries(agora, admin, group) if e["subject"] == "Cameras for sale"]
    assert entry["status"] == "rejected" and entry["noticeSent"] is True

    def notices() -> list[dict]:
        messages = agora.moto_api("data.json")["ses"]["RawMessage"]
        return [m for m in messages if any(stranger in to for to in m["destinations"])]

    started = time.monotonic()
    while not notices():
        assert time.monotonic() - started < 10, "no notice within 10 s"
        time.sleep(0.2)
    [notice] = notices()
    assert "Auto-Submitted: auto-replied" in notice["raw_data"]
    assert "Cameras for sale" in notice["raw_data"]


def test_a_taken_default_port_leaves_the_door_off_and_names_what_holds_it():
    """On the default AGORA_SMTP_PORT (not given outright, so make run starts without the door)
    the banner's line says what listens there, as make run's busy-port line does."""
    import os
    import socket
    from types import SimpleNamespace

    from agora_local.lifecycle import Intake
    from agora_local.smtp_door import open_door

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = SimpleNamespace(inbound_domain=DOMAIN, smtp_port=port)
        door, line = open_door(settings, Intake())
    assert door is None
    assert line.startswith(f"SMTP door:          off: port {port} (AGORA_SMTP_PORT) is used by "), (
        line
    )
    assert f"pid {os.getpid()} (" in line, line

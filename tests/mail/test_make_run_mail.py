"""Mail in against `make run` as a user runs it (issue 23): a CLI `poll-mail` given ONLY the
variables `make run` prints finds the token secret `make run` generated (its embedded Secrets
Manager), so every subscriber gets exactly one instant mail and the digest item is queued."""

from __future__ import annotations

import email
import email.policy
import json
import os
import secrets
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import parseaddr

import pytest

from tests.mail.test_ingest import mail
from tests.support import REPO_ROOT
from tests.support.notify import DIGEST, INSTANT
from tests.support.running import run_module, start_agora, this_clock

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
GARDENING = next(g["id"] for g in DEMO["groups"] if g["slug"] == "gardening")
USERS = {u["email"].split("@")[0]: u["id"] for u in DEMO["users"]}


@pytest.fixture(scope="module")
def running():
    agora = start_agora(as_a_user=True)
    yield agora
    agora.stop()


def cli(running, *command: str) -> subprocess.CompletedProcess:
    """The CLI in a shell given nothing but the `export` lines `make run` printed, pasted as
    they are (and what any process has)."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    env.update(this_clock())
    script = "\n".join([*running.export_lines, 'exec "$@"'])
    return subprocess.run(
        ["bash", "-c", script, "cli", sys.executable, "-m", "chalicelib.cli", *command],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def subscribe_to_gardening(running, auth: dict, name: str, alert: int) -> None:
    """The demo member `name` is told of Gardening Club's new posts by `alert` (instant, digest)."""
    status, body = running.request(
        "POST",
        f"/api/v1/en_US/user/{USERS[name]}/notifications/group/1",
        {"groupId": GARDENING, "emailAlertId": alert},
        headers=auth,
    )
    assert status == 200, body


def sent_to(running) -> Counter[str]:
    """Recipients of every mail the embedded SES accepted (moto's model data)."""
    data = running.moto_api("data.json")
    return Counter(parseaddr(to)[1] for m in data["ses"]["RawMessage"] for to in m["destinations"])


@pytest.mark.slow
def test_cli_poll_mail_with_only_make_runs_variables_notifies_each_subscriber_once(
    running, mailbox
):
    assert [line.split("=", 1)[0] for line in running.export_lines] == [
        "export AWS_ENDPOINT_URL",
        "export AWS_DEFAULT_REGION",
        "export AWS_ACCESS_KEY_ID",  # make run's own key pair (CONTRACT §2)
        "export AWS_SECRET_ACCESS_KEY",
        "export AGORA_MAIL_ALLOW_PRIVATE_HOSTS",  # its demo mailboxes are on loopback
        "export AGORA_BASE_URL",  # the site on make run's own port: the CLI's links and permalinks
        "export AGORA_SMTP_PORT",  # a setting the test gave make run (its SMTP door's free port)
    ]
    assert running.printed["AWS_ACCESS_KEY_ID"].startswith("AGORALOCAL")
    assert running.printed["AGORA_BASE_URL"] == running.base.replace("127.0.0.1", "localhost")
    auth = {"X-Auth": running.token()}
    settings = mailbox.api_settings()
    path = f"/api/v1/en_US/connector/email-to-post/{GARDENING}"
    status, body = running.request("PUT", path, settings, headers=auth)
    assert status == 200, body
    for name, alert in (("sam", INSTANT), ("mia", INSTANT), ("pat", DIGEST)):
        subscribe_to_gardening(running, auth, name, alert)
    mailbox.deliver(mail("gus@agora.example", "Seedlings to give away", "Tomatoes, come by."))

    polled = cli(running, "poll-mail")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert "Gardening Club (gardening): seen 1, posted 1" in polled.stdout

    # Delivered by the CLI itself, or (past the inline limit) by make run's scheduler.
    instant = {"sam@agora.example", "mia@agora.example"}
    deadline = time.monotonic() + 120
    while not instant <= set(sent_to(running)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sent_to(running) == Counter(instant)

    digests = cli(running, "send-digests")
    assert digests.returncode == 0, digests.stdout + digests.stderr
    assert digests.stdout.strip() == "sent 1 digest(s)"
    assert sent_to(running) == Counter(instant | {"pat@agora.example"})


def raw_sent(running) -> list[tuple[list[str], EmailMessage]]:
    """Every mail the embedded SES accepted, as a recipient reads it: with the Message-ID that
    SES writes (moto leaves it out), `<{SES id}@email.amazonses.com>`."""
    data = running.moto_api("data.json")
    found = []
    for sent in data["ses"]["RawMessage"]:
        message = email.message_from_string(sent["raw_data"], policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        del message["Message-ID"]
        message["Message-ID"] = f"<{sent['id']}@email.amazonses.com>"
        found.append((sent["destinations"], message))
    return found


@pytest.mark.slow
def test_replies_to_a_notification_from_thunderbird_and_gmail_become_comments_on_its_post(
    running, mailbox, dovecot
):
    """A member answers the instant email of a new post with their mail client's Reply: only
    `In-Reply-To`/`References` tie the reply to the post (no permalink in the subject); each
    reply becomes one comment on that post, without the quoted notification."""
    from tests.support.dovecot import DovecotMailbox
    from tests.support.replies import gmail_reply, thunderbird_reply

    auth = {"X-Auth": running.token()}
    replies_box = DovecotMailbox(server=dovecot, user=f"re{secrets.token_hex(4)}", password="pw")
    dovecot.add_user(replies_box.user, replies_box.password)
    for path, box, address in (
        (f"/api/v1/en_US/connector/email-to-post/{GARDENING}", mailbox, {}),
        (
            "/api/v1/en_US/connector/email-to-comment",
            replies_box,
            {"emailAddress": "replies@agora.example"},
        ),
    ):
        settings = {**box.api_settings(), **address}
        status, body = running.request("PUT", path, settings, headers=auth)
        assert status == 200, body
    subscribe_to_gardening(running, auth, "mia", INSTANT)
    title = f"Cuttings to share {secrets.token_hex(3)}"
    mailbox.deliver(mail("gus@agora.example", title, "Fuchsia and sage.\n\nCome by Saturday."))
    polled = cli(running, "poll-mail")
    assert polled.returncode == 0, polled.stdout + polled.stderr

    deadline = time.monotonic() + 120
    notification = None
    while notification is None and time.monotonic() < deadline:
        notification = next(
            (
                m
                for to, m in raw_sent(running)
                if "mia@agora.example" in {parseaddr(a)[1] for a in to}
                and title in str(m["Subject"])
            ),
            None,
        )
        time.sleep(0 if notification else 0.2)
    assert notification is not None, "mia got no instant email of the post"

    status, body = running.request(
        "GET", f"/api/v1/en_US/post/list/{GARDENING}?pageSize=5", headers=auth
    )
    assert status == 200, body
    [post] = [p for p in body["object"]["posts"] if p["title"] == title]
    # The CLI sent it with make run's printed address: its links and ids name this site.
    site = running.printed["AGORA_BASE_URL"]
    assert post["url"].startswith(f"{site}/gardening/")
    assert str(notification["List-Unsubscribe"]).startswith(f"<{site}/api/v1/en_US/unsubscribe?")
    assert str(notification["References"]) == f"<post.{post['id']}@localhost>"

    # Thunderbird answers at the Reply-To: the mailbox's address with Mia's reply key (§9).
    reply_to = notification["Reply-To"].addresses[0].addr_spec
    assert reply_to.startswith("replies+") and reply_to.endswith("@agora.example")
    mia = "Mia <mia@agora.example>"
    replies_box.deliver(thunderbird_reply(notification, mia, "Two sage cuttings for me!", reply_to))
    replies_box.deliver(gmail_reply(notification, mia, "And a fuchsia, please.", "x@y"))
    # A new mail naming the permalink in its subject, as before replies by email.
    replies_box.deliver(mail("mia@agora.example", f"Re: {post['url']}", "Rosemary too?"))
    polled = cli(running, "poll-mail")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert "comments: seen 3, posted 0, commented 3," in polled.stdout, polled.stdout

    status, body = running.request("GET", f"/api/v1/en_US/post/{post['id']}/comments", headers=auth)
    assert status == 200, body
    assert sorted(c["content"] for c in body["object"]["comments"]) == [
        "<p>And a fuchsia, please.</p>",
        "<p>Rosemary too?</p>",
        "<p>Two sage cuttings for me!</p>",
    ]
    status, body = running.request(
        "GET", "/api/v1/en_US/connector/email-to-comment/log", headers=auth
    )
    assert status == 200, body
    reasons = [entry["reason"] for entry in body["object"]["entries"]]
    assert reasons.count("approved; sender verified: reply key of mia@agora.example") == 1


PHOTOGRAPHY = next(g["id"] for g in DEMO["groups"] if g["slug"] == "photography")


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.slow
def test_next_poll_poll_now_and_the_back_off_of_a_broken_mailbox_over_http(running, mailbox):
    """One mailbox with a wrong password: saved, it is due in 5 minutes; "poll now" makes it due
    at once; each failed poll says why and waits 30 minutes or more; the third failure in a row
    sends its administrator one email, the fourth none."""
    auth = {"X-Auth": running.token()}
    path = f"/api/v1/en_US/connector/email-to-post/{PHOTOGRAPHY}"
    wrong = {**mailbox.api_settings(), "serverPassword": "not-" + mailbox.password}
    saved_at = datetime.now(UTC)
    status, body = running.request("PUT", path, wrong, headers=auth)
    assert status == 200, body
    assert saved_at + timedelta(minutes=4) < _moment(body["object"]["nextPollOn"])
    assert _moment(body["object"]["nextPollOn"]) < saved_at + timedelta(minutes=6)
    before = sent_to(running)[running.admin_email]

    status, body = running.request("POST", f"{path}/poll", None, headers=auth)
    assert status == 202, body
    assert _moment(body["object"]["nextPollOn"]) <= datetime.now(UTC)
    errors_on = []
    for attempt in range(4):
        asked_at = datetime.now(UTC)
        if attempt:
            # Poll now again within the minute: refused, and the back-off stands (CONTRACT §5).
            status, headers, payload = running.raw("POST", f"{path}/poll", None, auth)
            assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60, payload
            _, body = running.request("GET", path, headers=auth)
            assert _moment(body["object"]["nextPollOn"]) > asked_at + timedelta(minutes=25)
            # The operator's command polls every enabled mailbox at once.
            cli(running, "poll-mail")
        else:
            # The CLI polls what the schedule would (make run's own schedule may get there first:
            # then the CLI finds the mailbox leased and the schedule's poll says why a moment later).
            cli(running, "poll-mail", "--due")
        settings = _failed_poll(running, path, auth, errors_on)
        assert settings["lastError"]["message"].startswith(
            "The mail server refused the user name or password"
        )
        assert mailbox.password not in json.dumps(settings["lastError"])
        assert _moment(settings["nextPollOn"]) >= asked_at + timedelta(minutes=30)
        errors_on.append(settings["lastError"]["on"])
    assert len(set(errors_on)) == 4  # four polls, each one failed

    deadline = time.monotonic() + 60
    while sent_to(running)[running.admin_email] == before and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # a second email would be drained by now
    assert sent_to(running)[running.admin_email] == before + 1

    # Disabled: nothing to poll.
    status, body = running.request("PUT", path, {**wrong, "isEnabled": False}, headers=auth)
    assert status == 200 and body["object"]["nextPollOn"] is None
    status, body = running.request("POST", f"{path}/poll", None, headers=auth)
    assert status == 409 and body["errors"][0]["key"] == "isEnabled"


def _failed_poll(running, path: str, auth: dict, seen: list[str]) -> dict:
    """The mailbox's settings once a poll not yet seen has recorded its error (within 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        settings = running.request("GET", path, headers=auth)[1]["object"]
        error = settings["lastError"]
        if (error and error["on"] not in seen) or time.monotonic() > deadline:
            return settings
        time.sleep(0.2)


TOMATOES = next(g["id"] for g in DEMO["groups"] if g["slug"] == "gardening-tomatoes")


def mail_to_tomatoes(running, mailbox, auth: dict, subject: str, text: str) -> tuple[str, str]:
    """Tomato Growers' email-to-post connector set to `mailbox`, which then holds a mail of Gus
    whose title is `subject` and a suffix no other run wrote: the connector's path, the title."""
    path = f"/api/v1/en_US/connector/email-to-post/{TOMATOES}"
    status, body = running.request("PUT", path, mailbox.api_settings(), headers=auth)
    assert status == 200, body
    title = f"{subject} {secrets.token_hex(3)}"
    mailbox.deliver(mail("gus@agora.example", title, text))
    return path, title


@pytest.mark.slow
def test_a_cli_given_only_the_endpoint_and_key_pair_polls_as_make_runs_jobs_do(running, mailbox):
    """Issue 51: given the endpoint and the key pair alone, `poll-mail` refused the loopback
    mailboxes (private hosts) and pushed them 30 minutes out. Pointed at make run's embedded AWS,
    the CLI takes make run's defaults: loopback hosts allowed, senders read as they come."""
    auth = {"X-Auth": running.token()}
    path, title = mail_to_tomatoes(
        running, mailbox, auth, "Blight on the cherry tomatoes", "Pick off the lower leaves."
    )
    only = ("AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    env.update(this_clock())
    env.update({name: running.printed[name] for name in only}, PYTHONPATH=str(REPO_ROOT))

    polled = run_module("chalicelib.cli", "poll-mail", env=env)

    assert polled.returncode == 0, polled.stdout + polled.stderr
    status, body = running.request("GET", path, headers=auth)
    assert body["object"]["lastError"] is None, body["object"]["lastError"]
    status, body = running.request(
        "GET", f"/api/v1/en_US/post/list/{TOMATOES}?pageSize=5", headers=auth
    )
    assert [p["source"] for p in body["object"]["posts"] if p["title"] == title] == ["email"]


@pytest.mark.slow
def test_make_runs_own_schedule_reads_unsigned_mail_as_its_cli_does(running, mailbox):
    """make run sets its endpoint after reading its settings: read again, its jobs take the
    embedded AWS's defaults too (no sender check), not `verify`'s, which rejects the demo's
    unsigned mail."""
    auth = {"X-Auth": running.token()}
    path, title = mail_to_tomatoes(running, mailbox, auth, "Tomato feed", "Comfrey tea works.")

    status, body = running.request("POST", f"{path}/poll", None, headers=auth)

    assert status == 202, body
    listing = f"/api/v1/en_US/connector/email-to-post/{TOMATOES}/log?pageSize=5"
    deadline = time.monotonic() + 150
    entry: dict = {}
    while time.monotonic() < deadline:
        entries = running.request("GET", listing, headers=auth)[1]["object"]["entries"]
        entry = next((e for e in entries if e["subject"] == title), {})
        if entry.get("status") == "failed":
            # An attempt that failed (seen once on a loaded machine) is the platform's fault,
            # retried by the next poll (CONTRACT §9): asked for once poll now allows (a minute).
            running.request("POST", f"{path}/poll", None, headers=auth)
            time.sleep(1)
        elif entry:
            break
        time.sleep(0.5)
    assert entry.get("status") == "posted", (entry.get("reason"), entry)

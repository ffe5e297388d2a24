"""Mail in against `make run` as a user runs it (issue 23): a CLI `poll-mail` given ONLY the
variables `make run` prints finds the token secret `make run` generated (its embedded Secrets
Manager), so every subscriber gets exactly one instant mail and the digest item is queued."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from email.utils import parseaddr

import pytest

from tests.mail.test_ingest import mail
from tests.support import REPO_ROOT
from tests.support.running import start_agora

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
GARDENING = next(g["id"] for g in DEMO["groups"] if g["slug"] == "gardening")
USERS = {u["email"].split("@")[0]: u["id"] for u in DEMO["users"]}
INSTANT, DIGEST = 1, 2


@pytest.fixture(scope="module")
def running():
    agora = start_agora(as_a_user=True)
    yield agora
    agora.stop()


def cli(running, *command: str) -> subprocess.CompletedProcess:
    """The CLI with nothing but what `make run` printed (and what any process has)."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    env.update(running.printed, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "chalicelib.cli", *command],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def sent_to(running) -> Counter[str]:
    """Recipients of every mail the embedded SES accepted (moto's model data)."""
    with urllib.request.urlopen(running.aws_endpoint + "/moto-api/data.json", timeout=30) as r:
        data = json.load(r)
    return Counter(parseaddr(to)[1] for m in data["ses"]["RawMessage"] for to in m["destinations"])


@pytest.mark.slow
def test_cli_poll_mail_with_only_make_runs_variables_notifies_each_subscriber_once(
    running, mailbox
):
    assert set(running.printed) == {
        "AWS_ENDPOINT_URL",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AGORA_MAIL_ALLOW_PRIVATE_HOSTS",  # its demo mailboxes are on loopback (CONTRACT §2)
    }
    auth = {"X-Auth": running.login()}
    settings = mailbox.api_settings()
    path = f"/api/v1/en_US/connector/email-to-post/{GARDENING}"
    status, body = running.request("PUT", path, settings, headers=auth)
    assert status == 200, body
    for name, alert in (("sam", INSTANT), ("mia", INSTANT), ("pat", DIGEST)):
        status, body = running.request(
            "POST",
            f"/api/v1/en_US/user/{USERS[name]}/notifications/group/1",
            {"groupId": GARDENING, "emailAlertId": alert},
            headers=auth,
        )
        assert status == 200, body
    mailbox.deliver(mail("gus@agora.example", "Seedlings to give away", "Tomatoes, come by."))

    polled = cli(running, "poll-mail")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert f"post#{GARDENING}: seen 1, posted 1" in polled.stdout

    # Delivered by the CLI itself, or (past the inline limit) by make run's scheduler.
    instant = {"sam@agora.example", "mia@agora.example"}
    deadline = time.monotonic() + 120
    while not instant <= set(sent_to(running)) and time.monotonic() < deadline:
        time.sleep(1)
    assert sent_to(running) == Counter(instant)

    digests = cli(running, "send-digests")
    assert digests.returncode == 0, digests.stdout + digests.stderr
    assert digests.stdout.strip() == "sent 1 digest(s)"
    assert sent_to(running) == Counter(instant | {"pat@agora.example"})

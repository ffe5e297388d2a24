"""The stage's data before the rehearsal, written by an operator (the repository's code, the
operator's own credentials, before moto enforces IAM): the demo community, the comments
mailbox on the test's Dovecot, Sam told at once and Pat by digest of the gardening group's
posts, and a post whose email can never be built (a title holding U+2028, issue 47).

    python -m tests.rehearsal.world POP3_PORT USER PASSWORD

prints what the rehearsal's events are made of, as JSON: the address of Sam's reply (its reply
key), a notification chunk for Mia about a fine post and one about the poison post. A new post
by Gus waits in the outbox (its stream) for the drain, and so does a stranger's rejection notice
whose address is suppressed since: the drain cannot send it and writes its entry's noticeSent
back to false.

    python -m tests.rehearsal.world slow-mailbox POP3_PORT

connects the photography group to mail by POP3 on that port (a maildrop a test makes
slow), and prints its mailbox key and group id.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from tests.support import REPO_ROOT

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
GARDENING = next(g["id"] for g in DEMO["groups"] if g["slug"] == "gardening")
USERS = {u["email"].split("@")[0]: u["id"] for u in DEMO["users"]}
# On the inbound domain (the stack's MailInboundDomain): it receives by push as well as by POP3.
COMMENTS_ADDRESS = "comments@in.community.example.org"
POISON_POST = "00000000-0000-4000-8000-0000000fa115"
NEW_POST = "00000000-0000-4000-8000-00000005eed5"
INSTANT, DIGEST = 1, 2
# A stranger's rejected mail to the comments mailbox: its notice is due, its address suppressed.
STRANGER = "stranger@example.net"
NOTICE_ENTRY = "00000000-0000-4000-8000-0000000e0717"


def main(argv: list[str]) -> int:
    from chalicelib import deps
    from chalicelib.aws import client
    from chalicelib.deps import posts
    from chalicelib.domain.announcements import PostCreated
    from chalicelib.schemas.connectors import MailboxSettingsUpdate
    from chalicelib.services.notify.delivery import Recipient, chunk_body
    from chalicelib.settings import get_settings
    from tests.support.notify import subscribe

    if argv[1] == "slow-mailbox":
        return slow_mailbox(int(argv[2]))
    port, user, password = int(argv[1]), argv[2], argv[3]
    post = next(p for p in DEMO["posts"] if p["groupId"] == GARDENING)
    poison = {**post, "id": POISON_POST, "slug": "broken", "title": "Broken\u2028title"}
    deps.fixture_service().load({**DEMO, "posts": [*DEMO["posts"], poison]})
    # The stack's sending identity (MailSenderDomain, else BaseUrl's host) and configuration set.
    host = get_settings().public_base_url.split("://", 1)[1].split("/")[0]
    client("ses").verify_domain_identity(Domain=host)
    client("ses").create_configuration_set(
        ConfigurationSet={"Name": get_settings().ses_configuration_set}
    )
    update = MailboxSettingsUpdate.model_validate(
        {
            "serverName": "127.0.0.1",
            "serverPort": port,
            "serverUsername": user,
            "serverPassword": password,
            "isEnabled": True,
            "isSSL": False,
            "deleteProcessed": True,
            "emailAddress": COMMENTS_ADDRESS,
        }
    )
    mailboxes = deps.mailbox_settings_service()
    mailboxes.update_email_to_comment(update, USERS["ann"])
    mailboxes.poll_email_to_comment()  # due now, as after "poll now"
    subscribe(USERS["sam"], "group", GARDENING, 1, email=INSTANT)
    subscribe(USERS["pat"], "group", GARDENING, 1, email=DIGEST)
    # A post mail in stored a moment ago: its PostCreated waits in the outbox's stream.
    posts().insert(
        announcements=[PostCreated(NEW_POST, GARDENING, USERS["gus"])],
        id=NEW_POST,
        group_id=GARDENING,
        author_id=USERS["gus"],
        title="Seed swap on Saturday",
        slug="seed-swap",
        content="<p>Bring your spare seeds.</p>",
        created_on=datetime.now(UTC),
        source="email",
    )
    notice_not_sendable()
    mia = [Recipient(USERS["mia"], email_alert_id=INSTANT, reason="All new group posts")]
    print(
        json.dumps(
            {
                "reply_to": deps.reply_keys().address(COMMENTS_ADDRESS, USERS["sam"], post["id"]),
                "post": post["id"],
                "chunk": chunk_body(PostCreated(post["id"], GARDENING, post["authorId"]), mia),
                "poison_chunk": chunk_body(
                    PostCreated(POISON_POST, GARDENING, post["authorId"]), mia
                ),
            }
        )
    )
    return 0


def slow_mailbox(port: int) -> int:
    """The photography group's email-to-post connector, on POP3 at `port` of
    loopback, saved by an administrator as the API saves it (due in 5 minutes, not now)."""
    from chalicelib import deps
    from chalicelib.schemas.connectors import MailboxSettingsUpdate

    group_id = next(g["id"] for g in DEMO["groups"] if g["slug"] == "photography")
    update = MailboxSettingsUpdate.model_validate(
        {
            "serverName": "127.0.0.1",
            "serverPort": port,
            "serverUsername": "slow",
            "serverPassword": "slow-password",
            "isEnabled": True,
            "isSSL": False,
            "deleteProcessed": False,
        }
    )
    group = deps.groups().get(group_id)
    deps.mailbox_settings_service().update_email_to_post(group, update, USERS["ann"])
    print(json.dumps({"mailbox": f"post#{group_id}", "group": group_id}))
    return 0


def notice_not_sendable() -> None:
    """The entry of a stranger's rejected mail, written with noticeSent (its notice committed to
    the outbox with it), and the stranger's address suppressed since."""
    from chalicelib import deps
    from chalicelib.domain.announcements import RejectionNoticeDue
    from chalicelib.domain.mailboxes import COMMENT_KEY
    from chalicelib.store.mail import MailRepository

    now, reason = datetime.now(UTC), f"unknown sender {STRANGER}"
    log = MailRepository()
    values = {"sender": STRANGER, "subject": "Hello?", "status": "rejected", "reason": reason}
    log.save_entry(log.new_entry(COMMENT_KEY, NOTICE_ENTRY, now, notice_sent=True, **values))
    deps.suppressions().suppress(STRANGER, "bounce", "550 5.1.1", "rehearsal", now)
    due = RejectionNoticeDue(
        mailbox=COMMENT_KEY,
        group_id=None,
        log_entry_id=NOTICE_ENTRY,
        to=STRANGER,
        subject="Hello?",
        message_id=None,
        reason=reason,
        day=now.date().isoformat(),
    )
    deps.outbox().save([due])


if __name__ == "__main__":
    sys.exit(main(sys.argv))

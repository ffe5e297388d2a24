"""Reply keys (CONTRACT §9, chalicelib/mail/threads.py): what a key holds and how it survives
mail, then keyed replies through a real Dovecot in `verify` mode with `hold`: from the
recipient's own address, unsigned, a comment as a signed one would be; from another address,
rejected; a tampered key, ignored (and the comment it becomes held, saying why)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib import deps
from chalicelib.mail.threads import ReplyKeys
from tests.mail.test_authentication import entries_by_subject, members  # noqa: F401
from tests.support.mail_messages import email_message

POST = "0a673c21-1ca9-537f-871c-70bf10dcf840"
USER = "6f1c1a43-9c55-5a4f-8f55-3d2f5b0f6a11"
OTHER = "9b2e4f58-3a1d-5c7e-b0c4-1f2a3b4c5d6e"


def keys(*secrets: str) -> ReplyKeys:
    return ReplyKeys(lambda: list(secrets or ["the token secret"]))


# --- the key ----------------------------------------------------------------------------------


@pytest.mark.fast
def test_a_key_names_its_recipient_and_its_post_or_comment_in_a_short_lowercase_local_part():
    made = keys()
    post_key, comment_key = made.key(USER, POST), made.key(USER, POST, 4_000_000_123)
    assert post_key is not None and comment_key is not None
    for key in (post_key, comment_key):
        assert key.isascii() and key == key.lower() and key.isalnum()
        assert len(f"replies+{key}") <= 64  # RFC 5321's limit of a local part
    keyed = made.read([f"replies+{post_key}@community.example"])
    assert keyed is not None and (keyed.post_id, keyed.comment_id) == (POST, None)
    assert keyed.is_for(USER) and not keyed.is_for(OTHER)
    keyed = made.read([f"REPLIES+{comment_key.upper()}@COMMUNITY.EXAMPLE"])  # an MTA upper-cased it
    assert keyed is not None and (keyed.post_id, keyed.comment_id) == (None, 4_000_000_123)
    assert made.address("replies@community.example", USER, POST) == (
        f"replies+{post_key}@community.example"
    )


@pytest.mark.fast
def test_a_key_made_before_a_rotation_still_reads_and_another_secrets_key_does_not():
    old = keys("old secret").key(USER, POST)
    assert keys("new secret", "old secret").read([f"r+{old}@x.example"]) is not None
    assert keys("new secret").read([f"r+{old}@x.example"]) is None


@pytest.mark.fast
def test_the_address_stays_plain_without_a_uuid_post_id_or_room_for_the_key():
    assert keys().key(USER, "p1") is None
    assert keys().address("replies@community.example", USER, "p1") == "replies@community.example"
    assert keys().address("no-at-sign", USER, POST) == "no-at-sign"
    # A local part that the key would take past 64 octets keeps the plain address.
    long_local = f"{'r' * 13}@community.example"
    assert keys().address(long_local, USER, POST) != long_local
    longer = f"{'r' * 14}@community.example"
    assert keys().address(longer, USER, POST) == longer


@pytest.mark.fast
def test_a_key_changed_anywhere_in_any_way_does_not_verify():
    made = keys()
    for key in (made.key(USER, POST), made.key(USER, POST, 7)):
        assert key is not None
        for position in range(len(key)):
            for letter in "abcdefghijklmnopqrstuvwxyz234567":
                changed = key[:position] + letter + key[position + 1 :]
                if changed != key:
                    assert made.read([f"replies+{changed}@x.example"]) is None, changed
        assert made.read([f"replies+{key[:-1]}@x.example", f"replies+{key}x@x.example"]) is None


@pytest.mark.fast
@given(st.lists(st.text(max_size=120), max_size=4))
def test_reading_any_addresses_never_raises_and_finds_no_key_we_did_not_make(addresses):
    assert keys().read(addresses) is None


@pytest.mark.fast
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=200), max_size=3))
def test_any_delivered_to_headers_give_plain_addresses_or_none(values):
    from chalicelib.mail.parse import parse_mail

    head = b"From: ann@example.org\r\nTo: replies@community.example\r\n"
    for value in values:
        head += b"Delivered-To: " + " ".join(value.split()).encode() + b"\r\n"
    parsed = parse_mail(head + b"\r\nHello.\r\n")
    assert parsed.to_addresses[0] == "replies@community.example"
    for address in parsed.to_addresses:
        local, at, domain = address.rpartition("@")
        assert at and local and domain and address == address.lower() and " " not in address


@pytest.mark.fast
def test_a_key_in_delivered_to_is_read_after_to_and_cc():
    from chalicelib.mail.parse import parse_mail

    key = keys().key(USER, POST)
    raw = (
        "From: ann@example.org\r\nTo: Replies <replies@community.example>\r\n"
        f"Cc: someone@example.org\r\nDelivered-To: replies+{key}@community.example\r\n"
        "Subject: Re: hello\r\n\r\nHello.\r\n"
    )
    parsed = parse_mail(raw.encode())
    assert parsed.to_addresses == (
        "replies@community.example",
        "someone@example.org",
        f"replies+{key}@community.example",
    )
    assert keys().read(parsed.to_addresses) is not None


# --- what a keyed reply becomes (fakes) ----------------------------------------------------------


def replies_box():
    """The email-to-comment mailbox, its address set (keys are read at its domain only)."""
    from tests.mail.test_mail_in_fast import comments_box

    return replace(comments_box(), email_address="replies@community.example")


def keyed_plan(world, key: str | None, box=None, *, at="community.example", made=None, **options):
    from tests.mail.test_mail_in_fast import mail, plan_of

    planning = {name: options.pop(name) for name in ("verifier",) if name in options}
    to = f"replies+{key}@{at}"
    raw = mail(subject="Re: [Garden] Hello", **options).replace(
        b"To: inbox@community.example", f"To: {to}".encode()
    )
    return plan_of(world, raw, box or replies_box(), reply_keys=made or keys(), **planning)


@pytest.mark.fast
def test_the_key_names_what_the_reply_answers_over_its_references():
    from tests.mail.test_mail_in_fast import World, posts_box

    world = World()
    key = keys().key("ann", "p1", 7)
    references = {"References": "<post.p1@community.example>"}
    plan = keyed_plan(world, key, headers=references)
    assert (plan.status, plan.post.id, plan.parent_comment_id) == ("commented", "p1", 7)
    assert plan.notes[0] == "sender verified: reply key of ann@example.org"
    # The comment deleted since: the reply goes to its post.
    world.first_comment.values["is_deleted"] = True
    assert keyed_plan(world, key).parent_comment_id == 0
    # Another member's key, or a key on an email-to-post mailbox (ignored there).
    assert keyed_plan(world, keys().key("mod", "p1", 7)).reason == "reply key of another member"
    assert keyed_plan(world, key, box=posts_box()).status == "posted"


@pytest.mark.fast
def test_a_key_whose_comment_or_post_is_gone_is_refused_never_reaimed():
    """Purged within a month of its deletion, the key's comment is gone: the reply is refused,
    whatever its References or subject name (an approved comment elsewhere, before)."""
    from tests.mail.test_mail_in_fast import World

    world = World()
    world.posts.add(id="p2", group_id="g1", slug="other", title="Other")
    references = {"References": "<post.p2@community.example>"}
    del world.comments.rows[7]

    plan = keyed_plan(world, keys().key("ann", "p1", 7), headers=references)

    assert (plan.status, plan.reason) == ("rejected", "the comment you replied to no longer exists")
    gone = keyed_plan(world, keys().key("ann", "a1f0e6a4-6f53-4c8e-9d0e-3b3f0e9a4a11"))
    assert (gone.status, gone.reason) == ("rejected", "the post you replied to no longer exists")


@pytest.mark.fast
def test_a_key_never_outranks_dmarc():
    from tests.mail.test_mail_in_fast import Verifier, World

    plan = keyed_plan(World(), keys().key("ann", "p1", 7), verifier=Verifier(spoofed=True))

    assert (plan.status, plan.reason) == ("rejected", "spoofed: DMARC reject")


@pytest.mark.fast
def test_a_key_is_read_at_the_mailboxs_own_domain_only():
    from tests.mail.test_mail_in_fast import World, comments_box

    world = World()
    key = keys().key("ann", "p1", 7)
    assert keyed_plan(world, key).parent_comment_id == 7
    # At another domain, or to a mailbox without an address: no key (the mail's own rules).
    assert keyed_plan(world, key, at="elsewhere.example").reason.startswith("the subject names")
    assert keyed_plan(world, key, box=comments_box()).reason.startswith("the subject names")
    assert keys().read([f"replies+{key}@Community.Example"], "community.example") is not None
    assert keys().read([f"replies+{key}@evil.example"], "community.example") is None


DAY = datetime(2030, 5, 17, 9, 30, tzinfo=UTC)


def at(moment: datetime) -> ReplyKeys:
    return ReplyKeys(lambda: ["the token secret"], lambda: moment)


@pytest.mark.fast
@pytest.mark.parametrize(("days", "reads"), [(0, True), (90, True), (91, False), (5000, False)])
def test_a_key_reads_for_90_days_from_the_day_it_was_made(days, reads):
    key = at(DAY).key(USER, POST, 12)

    found = at(DAY + timedelta(days=days, hours=14)).read([f"replies+{key}@x.example"])

    assert (found is not None) is reads
    assert at(DAY - timedelta(days=1)).read([f"replies+{key}@x.example"]) is not None


def legacy_key(user_id: str, comment_id: int, secret: str = "the token secret") -> str:
    """A key as the release before made it: kind byte 2 (comment), a 6-byte recipient, no day."""
    import base64
    import hashlib
    import hmac

    from chalicelib.mail.threads import derived

    key = derived(secret)
    recipient = hmac.new(key, b"user\0" + user_id.encode(), hashlib.sha256).digest()[:6]
    payload = bytes([2]) + recipient + comment_id.to_bytes(8, "big")
    raw = payload + hmac.new(key, b"key\0" + payload, hashlib.sha256).digest()[:8]
    return base64.b32encode(raw).decode().rstrip("=").lower()


@pytest.mark.fast
def test_a_key_of_the_release_before_counts_as_made_on_the_legacy_day():
    from chalicelib.mail.threads import LEGACY_DAY

    key = legacy_key(USER, 12)
    legacy = datetime(LEGACY_DAY.year, LEGACY_DAY.month, LEGACY_DAY.day, 23, tzinfo=UTC)

    found = at(legacy + timedelta(days=90)).read([f"replies+{key}@x.example"])

    assert found is not None and found.comment_id == 12 and found.is_for(USER)
    assert not found.is_for(OTHER)
    assert at(legacy + timedelta(days=91)).read([f"replies+{key}@x.example"]) is None


# --- keyed replies through Dovecot, verify mode, hold --------------------------------------------


def keyed_mail(sender: str, subject: str, body: str, key: str, header: str = "To") -> bytes:
    address = f"comments+{key}@community.example"
    to = address if header == "To" else "comments@community.example"
    headers = {header: address} if header != "To" else None
    raw = email_message(sender, subject, body, to=to, headers=headers).as_bytes()
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def test_keyed_replies_from_the_right_and_the_wrong_address_and_a_tampered_key(
    members,  # noqa: F811
    community,
):
    from chalicelib.store.comments import CommentRecord

    mailbox, _ = members
    ids = {user["email"]: user["id"] for user in community.users}
    post = community.posts[0]["id"]
    bob = deps.reply_keys().key(ids["bob@nodmarc.example"], post)
    assert bob is not None
    tampered = bob[:-1] + ("a" if bob[-1] != "a" else "b")
    permalink = "Re: https://community.example/garden/hello"
    # Unsigned, from a domain without DMARC: held in `hold` mode, unless keyed.
    mailbox.deliver(keyed_mail("bob@nodmarc.example", "Keyed", "Keyed reply.", bob, "Delivered-To"))
    mailbox.deliver(keyed_mail("ann@signed.example", "Stolen", "Not mine.", bob))
    mailbox.deliver(keyed_mail("bob@nodmarc.example", permalink, "Tampered.", tampered, "Cc"))

    comments_box = replace(mailbox.connector("system"), email_address="comments@community.example")
    result = deps.mail_ingestor().poll(comments_box, lambda: False)

    assert (result.commented, result.rejected) == (2, 1)
    entries = entries_by_subject(comments_box)
    assert entries["Keyed"].status == "commented"
    assert entries["Keyed"].reason == (
        "approved; sender verified: reply key of bob@nodmarc.example"
    )
    assert (entries["Stolen"].status, entries["Stolen"].reason) == (
        "rejected",
        "reply key of another member",
    )
    assert entries[permalink].reason.startswith("awaiting approval; sender not verified")
    found = {c.content: c for c in CommentRecord.scan()}
    keyed, held = found["<p>Keyed reply.</p>"], found["<p>Tampered.</p>"]
    assert (keyed.post_id, keyed.is_approved, keyed.held_because) == (post, True, None)
    assert held.is_approved is False
    assert held.held_because == (
        "sender not verified: nodmarc.example publishes no DMARC policy (the mail has no DKIM "
        "signature of nodmarc.example)"
    )


ELSEWHERE = "Re: https://community.example/garden/hello (elsewhere)"


def test_a_keyed_spoof_a_purged_comments_key_and_a_key_at_another_domain_through_dovecot(
    members,  # noqa: F811
    community,
):
    """ann's domain publishes p=reject: an unsigned mail From her with her own key is spoofed, as
    it is without the key. bob's key of a comment purged since is refused, though its References
    name a live post. bob's valid key at another domain is no key: his unsigned mail is held."""
    from chalicelib.store.comments import CommentRecord

    mailbox, _ = members
    ids = {user["email"]: user["id"] for user in community.users}
    post = community.posts[0]["id"]
    ann = deps.reply_keys().key(ids["ann@signed.example"], post)
    purged = deps.reply_keys().key(ids["bob@nodmarc.example"], post, 999_999)
    bob = deps.reply_keys().key(ids["bob@nodmarc.example"], post)
    assert ann and purged and bob
    mailbox.deliver(keyed_mail("ann@signed.example", "Spoof", "Ann never wrote this.", ann))
    mailbox.deliver(
        keyed_mail("bob@nodmarc.example", "Purged", "To a comment gone.", purged).replace(
            b"\r\nSubject:", f"\r\nReferences: <post.{post}@community.example>\r\nSubject:".encode()
        )
    )
    mailbox.deliver(
        keyed_mail("bob@nodmarc.example", ELSEWHERE, "Key at evil.", bob).replace(
            b"@community.example", b"@evil.example"
        )
    )
    comments_box = replace(mailbox.connector("system"), email_address="comments@community.example")

    result = deps.mail_ingestor().poll(comments_box, lambda: False)

    entries = entries_by_subject(comments_box)
    assert {subject: entry.status for subject, entry in entries.items()} == {
        "Spoof": "rejected",
        "Purged": "rejected",
        ELSEWHERE: "commented",
    }
    assert entries["Spoof"].reason.startswith("spoofed: signed.example publishes DMARC p=reject")
    assert entries["Purged"].reason == "the comment you replied to no longer exists"
    assert entries[ELSEWHERE].reason.startswith("awaiting approval; sender not verified")
    assert [c.content for c in CommentRecord.scan()] == ["<p>Key at evil.</p>"]
    assert result.failed == 0 and mailbox.count() == 0


@pytest.mark.fast
def test_the_openapi_document_has_held_because_on_comments_as_a_read_only_field():
    import app  # noqa: F401 - registers the routes
    from chalicelib.api.openapi_document import openapi_document

    field = openapi_document()["components"]["schemas"]["CommentOut"]["properties"]["heldBecause"]
    assert field["readOnly"] is True
    assert field["anyOf"] == [{"type": "string"}, {"type": "null"}]

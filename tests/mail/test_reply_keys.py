"""Reply keys (CONTRACT §9, chalicelib/services/notify/emails.py): what a key holds and how it survives
mail, then keyed replies through a real Dovecot in `verify` mode with `hold`: from the
recipient's own address, unsigned, a comment as a signed one would be; from another address,
rejected; a tampered key, ignored (and the comment it becomes held, saying why)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib import deps
from chalicelib.services.notify.emails import ReplyKeys
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


def keyed_plan(world, key: str | None, box=None, **options):
    from tests.mail.test_mail_in_fast import comments_box, mail, plan_of

    to = f"replies+{key}@community.example"
    raw = mail(subject="Re: [Garden] Hello", **options).replace(
        b"To: inbox@community.example", f"To: {to}".encode()
    )
    return plan_of(world, raw, box or comments_box(), reply_keys=keys())


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

    comments_box = mailbox.connector("system")
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


@pytest.mark.fast
def test_the_openapi_document_has_held_because_on_comments_as_a_read_only_field():
    import app  # noqa: F401 - registers the routes
    from chalicelib.openapi import openapi_document

    field = openapi_document()["components"]["schemas"]["CommentOut"]["properties"]["heldBecause"]
    assert field["readOnly"] is True
    assert field["anyOf"] == [{"type": "string"}, {"type": "null"}]

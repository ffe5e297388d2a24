"""AGORA_MAIL_AUTH=verify: Agora checks DKIM and DMARC itself (chalicelib/mail/authentication.py).

Mails are signed here with dkimpy under a key made for the test; the keys and DMARC records are
served by a small DNS server on loopback (tests/support/dns_server.py), and mail comes through a
real Dovecot. The rules alone are tested with a dict standing in for DNS.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib import deps
from chalicelib.mail.authentication import (
    DmarcPolicy,
    DnsTxt,
    DnsUnavailable,
    SenderVerifier,
    aligned,
    parse_dmarc_record,
    policy_names,
)
from tests.support.dkim_signing import SELECTOR, dkim_record, signed
from tests.support.dns_server import DnsServer
from tests.support.mail_messages import email_message


def mail(sender: str, body: str = "The roses are out.", subject: str = "Roses") -> bytes:
    return (
        email_message(sender, subject, body)
        .as_bytes()
        .replace(b"\r\n", b"\n")
        .replace(b"\n", b"\r\n")
    )


def altered(raw: bytes) -> bytes:
    return raw.replace(b"The roses are out.", b"Send your password.")


# --- the rules, with a dict for DNS ------------------------------------------------------------


class FakeDns:
    def __init__(self, records: dict[str, list[str]], failing: set[str] = frozenset()) -> None:
        self.records, self.failing = records, failing

    def __call__(self, name: str) -> list[bytes] | None:
        name = name.rstrip(".")
        if name in self.failing:
            raise DnsUnavailable(f"the DNS look-up of {name} timed out")
        values = self.records.get(name)
        return [value.encode() for value in values] if values else None


RECORDS = {
    "_dmarc.strict.example": ["v=DMARC1; p=reject; rua=mailto:d@strict.example"],
    "_dmarc.relaxed.example": ["v=DMARC1; p=none"],
    "_dmarc.parent.example": ["v=DMARC1; p=none; sp=quarantine"],
}


def records(**extra: list[str]) -> dict[str, list[str]]:
    found = dict(RECORDS)  # keys added here: the key pair is made on first use, not at import
    found[f"{SELECTOR}._domainkey.strict.example"] = [dkim_record()]
    found[f"{SELECTOR}._domainkey.parent.example"] = [dkim_record()]
    found.update(extra)
    return found


@pytest.mark.fast
def test_a_mail_signed_by_its_from_domain_is_genuine():
    verdict = SenderVerifier(FakeDns(records())).verify(
        signed(mail("ann@strict.example"), "strict.example"), "strict.example", last_attempt=False
    )

    assert not verdict.spoofed
    assert verdict.reason == "sender verified: DKIM signature of strict.example (DMARC p=reject)"


@pytest.mark.fast
def test_an_altered_body_under_p_reject_is_spoofed():
    raw = altered(signed(mail("ann@strict.example"), "strict.example"))

    verdict = SenderVerifier(FakeDns(records())).verify(raw, "strict.example", last_attempt=False)

    assert verdict.spoofed and verdict.reason.startswith("spoofed: strict.example publishes")
    assert "the body was changed after signing" in verdict.reason


@pytest.mark.fast
def test_a_signature_of_another_domain_does_not_count():
    raw = signed(mail("ann@strict.example"), "parent.example")

    verdict = SenderVerifier(FakeDns(records())).verify(raw, "strict.example", last_attempt=False)

    assert verdict.spoofed and "signature of parent.example is not aligned" in verdict.reason


@pytest.mark.fast
def test_a_subdomain_gets_its_parents_subdomain_policy():
    verifier = SenderVerifier(FakeDns(records()))

    unsigned = verifier.verify(
        mail("x@news.parent.example"), "news.parent.example", last_attempt=False
    )
    relaxed = verifier.verify(
        signed(mail("x@news.parent.example"), "parent.example"),
        "news.parent.example",
        last_attempt=False,
    )

    assert unsigned.spoofed and "parent.example publishes DMARC p=quarantine" in unsigned.reason
    assert not relaxed.spoofed and "verified" in relaxed.reason


@pytest.mark.fast
def test_p_none_and_no_record_are_accepted_saying_so():
    verifier = SenderVerifier(FakeDns(records()))

    none = verifier.verify(mail("a@relaxed.example"), "relaxed.example", last_attempt=False)
    absent = verifier.verify(mail("a@nodmarc.example"), "nodmarc.example", last_attempt=False)

    assert not none.spoofed and "relaxed.example publishes DMARC p=none" in none.reason
    assert not absent.spoofed and "nodmarc.example publishes no DMARC policy" in absent.reason


@pytest.mark.fast
def test_dns_failures_are_temporary_until_the_last_attempt():
    failing = FakeDns(records(), failing={"_dmarc.strict.example"})
    key_failing = FakeDns(records(), failing={f"{SELECTOR}._domainkey.strict.example"})
    raw = signed(mail("ann@strict.example"), "strict.example")

    with pytest.raises(DnsUnavailable):
        SenderVerifier(failing).verify(raw, "strict.example", last_attempt=False)
    with pytest.raises(DnsUnavailable):
        SenderVerifier(key_failing).verify(raw, "strict.example", last_attempt=False)
    last = SenderVerifier(failing).verify(raw, "strict.example", last_attempt=True)
    last_key = SenderVerifier(key_failing).verify(raw, "strict.example", last_attempt=True)

    assert last.spoofed and last.reason.startswith("sender could not be verified: the DNS look-up")
    assert last_key.spoofed and "(DKIM key)" in last_key.reason


@pytest.mark.fast
def test_an_unreachable_key_does_not_matter_without_a_strict_policy():
    raw = signed(mail("a@relaxed.example"), "relaxed.example")
    lookup = FakeDns(records(), failing={f"{SELECTOR}._domainkey.relaxed.example"})

    verdict = SenderVerifier(lookup).verify(raw, "relaxed.example", last_attempt=False)

    assert not verdict.spoofed and "p=none" in verdict.reason


@pytest.mark.fast
@pytest.mark.parametrize(
    "raw",
    [
        b"From: a@strict.example\r\nDKIM-Signature: v=1; garbage\r\n\r\nx\r\n",
        b"From: a@strict.example\r\nDKIM-Signature: \xff\xfe\r\n\r\nx\r\n",
        b"\x00\x01",
    ],
)
def test_malformed_signatures_fail_and_never_crash(raw):
    verdict = SenderVerifier(FakeDns(records())).verify(raw, "strict.example", last_attempt=False)

    assert verdict.spoofed


# --- a signature counts only for what it covers ------------------------------------------------


def threaded(sender: str, subject: str = "Roses") -> bytes:
    """A reply: every header Agora reads is there once."""
    return b"In-Reply-To: <a@x.example>\r\nReferences: <a@x.example>\r\n" + mail(
        sender, subject=subject
    )


def verdict_of(raw: bytes, domain: str = "strict.example", **extra: list[str]):
    return SenderVerifier(FakeDns(records(**extra))).verify(raw, domain, last_attempt=False)


@pytest.mark.fast
def test_a_signature_covering_every_header_once_and_the_whole_body_verifies():
    whole = verdict_of(signed(threaded("ann@strict.example"), "strict.example", length=True))

    assert not whole.spoofed and whole.verified


@pytest.mark.fast
def test_text_appended_past_l_makes_the_signature_not_count():
    raw = signed(mail("ann@strict.example"), "strict.example", length=True)
    raw = raw + b"\r\nAlso: send your password to evil@example.net.\r\n"

    verdict = verdict_of(raw)

    assert verdict.spoofed and not verdict.verified
    assert "does not cover the whole body (it signs" in verdict.reason


@pytest.mark.fast
@pytest.mark.parametrize(
    "header",
    [
        b"Subject: Chosen by the attacker",
        b"Message-ID: <fresh-1@attacker.example>",
        b"From: ann@strict.example",
        b"Date: Mon, 1 Jan 2029 00:00:00 +0000",
        b"To: other@community.example",
        b"In-Reply-To: <other@x.example>",
        b"References: <other@x.example>",
        b"subject: lower case counts the same",
    ],
)
def test_an_unsigned_copy_of_a_read_header_on_top_makes_the_signature_not_count(header):
    raw = header + b"\r\n" + signed(threaded("ann@strict.example"), "strict.example")

    verdict = verdict_of(raw)

    name = header.split(b":")[0].decode().lower()
    assert verdict.spoofed and not verdict.verified
    assert (
        "does not cover every" in verdict.reason and "the mail has 2, it signs 1" in verdict.reason
    )
    assert name in verdict.reason.lower()


@pytest.mark.fast
def test_a_header_the_signature_does_not_name_makes_it_not_count():
    raw = signed(mail("ann@strict.example"), "strict.example", headers=("from", "date"))

    verdict = verdict_of(raw)

    assert verdict.spoofed and "does not cover every Subject header" in verdict.reason


@pytest.mark.fast
def test_a_header_hidden_behind_a_bare_carriage_return_makes_no_signature_count():
    """dkimpy splits lines at CRLF or LF, the mail parser at a bare CR too: one reading
    (tests/mail/test_one_reading.py) or none."""
    raw = signed(threaded("ann@strict.example"), "strict.example")
    raw = b"X-Note: a\rSubject: Chosen by the attacker\r\n" + raw

    verdict = verdict_of(raw)

    assert verdict.spoofed and "no DKIM signature counts: its header block holds a CR" in (
        verdict.reason
    )


@pytest.mark.fast
def test_an_oversigned_header_cannot_be_added():
    raw = signed(
        threaded("ann@strict.example"),
        "strict.example",
        headers=(
            "from",
            "to",
            "subject",
            "subject",
            "date",
            "message-id",
            "in-reply-to",
            "references",
        ),
    )
    assert verdict_of(raw).verified
    added = b"Subject: Chosen by the attacker\r\n" + raw

    verdict = verdict_of(added)

    assert verdict.spoofed and "does not verify" in verdict.reason


# --- DMARC by the Public Suffix List ---------------------------------------------------------


PSD_RECORDS = {
    "_dmarc.psd.example": ["v=DMARC1; p=reject; psd=y"],
    f"{SELECTOR}._domainkey.attacker.psd.example": [dkim_record()],
    f"{SELECTOR}._domainkey.attacker.co.uk": [dkim_record()],
}


@pytest.mark.fast
def test_a_public_suffix_domains_policy_does_not_align_its_registrants():
    raw = signed(mail("ann@victim.psd.example"), "attacker.psd.example")

    verdict = SenderVerifier(FakeDns(records(**PSD_RECORDS))).verify(
        raw, "victim.psd.example", last_attempt=False
    )

    assert verdict.spoofed and not verdict.verified
    assert "signature of attacker.psd.example is not aligned" in verdict.reason
    assert "psd.example publishes DMARC p=reject" in verdict.reason


@pytest.mark.fast
def test_a_record_at_a_listed_public_suffix_applies_only_with_psd_y():
    raw = signed(mail("ann@victim.co.uk"), "attacker.co.uk")
    plain_record = records(**PSD_RECORDS, **{"_dmarc.co.uk": ["v=DMARC1; p=reject"]})
    psd_record = records(**PSD_RECORDS, **{"_dmarc.co.uk": ["v=DMARC1; p=reject; psd=y"]})

    ignored = SenderVerifier(FakeDns(plain_record)).verify(raw, "victim.co.uk", last_attempt=False)
    applied = SenderVerifier(FakeDns(psd_record)).verify(raw, "victim.co.uk", last_attempt=False)

    assert not ignored.verified and "victim.co.uk publishes no DMARC policy" in ignored.reason
    assert "signature of attacker.co.uk is not aligned" in ignored.reason
    assert applied.spoofed and "co.uk publishes DMARC p=reject" in applied.reason


@pytest.mark.fast
def test_the_policy_walk_has_no_depth_cut_off():
    deep = "a.b.c.d.e.f.strict.example"

    unsigned = verdict_of(mail(f"x@{deep}"), deep)
    relaxed = verdict_of(signed(mail(f"x@{deep}"), "strict.example"), deep)

    assert unsigned.spoofed and "strict.example publishes DMARC p=reject" in unsigned.reason
    assert relaxed.verified


@pytest.mark.fast
def test_psd_n_makes_a_subdomain_an_organisation_of_its_own():
    extra = {"_dmarc.team.strict.example": ["v=DMARC1; p=reject; psd=n"]}
    raw = signed(mail("x@news.team.strict.example"), "strict.example")

    verdict = verdict_of(raw, "news.team.strict.example", **extra)

    assert verdict.spoofed and "signature of strict.example is not aligned" in verdict.reason


@pytest.mark.fast
def test_only_a_verified_signature_is_verified():
    verifier = SenderVerifier(FakeDns(records()))

    genuine = verifier.verify(
        signed(mail("ann@strict.example"), "strict.example"), "strict.example", last_attempt=False
    )
    none = verifier.verify(mail("a@relaxed.example"), "relaxed.example", last_attempt=False)

    assert genuine.verified and not none.verified and not none.spoofed


# --- DMARC record parsing -------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v=DMARC1; p=reject", ("reject", None, False)),
        ("v=DMARC1;p=quarantine;sp=none;adkim=s", ("quarantine", "none", True)),
        (" V = dmarc1 ; P = Reject ; ", ("reject", None, False)),
        ("v=DMARC1; rua=mailto:x@y.example", ("none", None, False)),  # RFC 7489 §6.6.3
        ("v=DMARC1; p=bogus; sp=bogus", None),
        ("v=spf1 -all", None),
        ("p=reject; v=DMARC1", None),  # v= must come first
        ("", None),
    ],
)
def test_dmarc_records(text, expected):
    record = parse_dmarc_record(text)

    found = record and (record.policy, record.subdomain_policy, record.strict_dkim)
    assert found == expected


POLICY = st.sampled_from(["none", "quarantine", "reject"])
NOISE = st.text(alphabet=st.characters(exclude_characters=";="), max_size=20)


@pytest.mark.fast
@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_property_any_text_is_a_record_or_none(text):
    record = parse_dmarc_record(text)

    assert record is None or record.policy in ("none", "quarantine", "reject")


@pytest.mark.fast
@given(
    POLICY,
    st.one_of(st.none(), POLICY),
    st.booleans(),
    st.lists(st.tuples(st.sampled_from(["rua", "ruf", "fo", "pct", "ri", "x"]), NOISE), max_size=4),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_property_written_records_read_back(policy, subdomain, strict, others, upper):
    tags = [f"p={policy}"] + ([f"sp={subdomain}"] if subdomain else [])
    tags += ["adkim=s" if strict else "adkim=r"] + [f"{name}={value}" for name, value in others]
    text = "; ".join(["v=DMARC1", *tags])

    record = parse_dmarc_record(text.upper() if upper else text)

    assert record is not None
    assert (record.policy, record.subdomain_policy, record.strict_dkim) == (
        policy,
        subdomain,
        strict,
    )


LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)


@pytest.mark.fast
@given(st.lists(LABEL, min_size=1, max_size=30))
@settings(max_examples=200, deadline=None)
def test_property_the_policy_walk_looks_at_every_parent(labels):
    domain = ".".join(labels)

    names = policy_names(domain)

    assert names == [".".join(labels[i:]) for i in range(len(labels))]


@pytest.mark.fast
@given(st.lists(LABEL, min_size=2, max_size=4), st.lists(LABEL, min_size=2, max_size=4))
@settings(max_examples=200, deadline=None)
def test_property_strict_alignment_is_equality(signing, sender):
    policy = DmarcPolicy(domain=".".join(sender), policy="reject", strict_dkim=True)

    assert aligned(".".join(signing), ".".join(sender), policy) == (signing == sender)


@pytest.mark.fast
def test_relaxed_alignment_never_reaches_across_organisations():
    policy = DmarcPolicy(domain="bank.example", policy="reject", strict_dkim=False)

    assert aligned("mail.bank.example", "bank.example", policy)
    assert aligned("bank.example", "news.bank.example", policy)
    assert not aligned("bank-example.evil", "bank.example", policy)
    assert not aligned("evilbank.example", "bank.example", policy)
    assert not aligned("example", "bank.example", policy)
    # Organisations under a public suffix of the list are organisations of their own.
    assert not aligned("attacker.co.uk", "victim.co.uk", policy)
    assert not aligned("co.uk", "victim.co.uk", policy)
    assert not aligned("attacker.github.io", "victim.github.io", policy)
    assert aligned("mail.victim.co.uk", "victim.co.uk", policy)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("domain", "tags", "organisation"),
    [
        ("victim.example", {}, "victim.example"),
        ("a.b.c.d.e.f.victim.example", {}, "victim.example"),
        ("news.victim.co.uk", {}, "victim.co.uk"),
        ("x.y.victim.github.io", {}, "victim.github.io"),
        ("co.uk", {}, "co.uk"),
        ("victim.psd.example", {"psd.example": "y"}, "victim.psd.example"),
        ("a.victim.psd.example", {"psd.example": "y"}, "victim.psd.example"),
        ("psd.example", {"psd.example": "y"}, "psd.example"),
        ("x.team.corp.example", {"team.corp.example": "n"}, "team.corp.example"),
        ("x.team.corp.example", {"other.example": "y"}, "corp.example"),
    ],
)
def test_the_organisational_domain_comes_from_the_public_suffix_list_and_psd(
    domain, tags, organisation
):
    from chalicelib.mail.authentication import organisational_domain

    assert organisational_domain(domain, tags) == organisation


def test_the_public_suffix_list_is_shipped_not_downloaded():
    """Parsed from the package's own file in a process with no network at all."""
    import subprocess
    import sys

    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from chalicelib.mail.authentication import organisational_domain\n"
        "print(organisational_domain('a.b.victim.co.uk'))\n"
    )
    from tests.support import REPO_ROOT

    found = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "victim.co.uk"


# --- through DNS and a real Dovecot ---------------------------------------------------------


def real_records() -> dict[str, list[str]]:
    return {
        f"{SELECTOR}._domainkey.signed.example": [dkim_record()],
        "_dmarc.signed.example": ["v=DMARC1; p=reject"],
        "_dmarc.nodmarc.example": [],
        "_dmarc.spf-only.example": ["v=spf1 -all"],
    }


@pytest.fixture
def members(community, mailbox, dovecot, monkeypatch):
    from chalicelib.settings import reload_settings

    garden = community.group("garden")
    users = {}
    for address in ("ann@signed.example", "bob@nodmarc.example"):
        users[address] = community.user(address.split("@")[0], {garden: "member"}, email=address)
    community.post(garden, users["ann@signed.example"], title="Hello", slug="hello")
    community.load()
    with DnsServer(real_records()) as server:
        monkeypatch.setenv("AGORA_MAIL_AUTH", "verify")
        monkeypatch.setenv("AGORA_DNS_SERVERS", server.address)
        reload_settings()
        yield mailbox, mailbox.connector(garden)
    monkeypatch.undo()
    reload_settings()


def entries_by_subject(config) -> dict[str, object]:
    from chalicelib.store.mail import MailRecord

    return {entry.subject: entry for entry in MailRecord.received.query(config.key)}


def test_verify_posts_signed_mail_and_rejects_spoofs(members):
    from chalicelib.store.posts import PostRecord

    mailbox, config = members
    genuine = signed(mail("ann@signed.example", subject="Genuine"), "signed.example")
    mailbox.deliver(genuine)
    mailbox.deliver(
        altered(signed(mail("ann@signed.example", subject="Altered"), "signed.example"))
    )
    mailbox.deliver(mail("ann@signed.example", subject="Unsigned"))
    mailbox.deliver(mail("bob@nodmarc.example", subject="No DMARC"))
    # Text past l=, and a second Subject (with a fresh Message-ID) on top of a genuine mail.
    mailbox.deliver(
        signed(mail("ann@signed.example", subject="Appended"), "signed.example", length=True)
        + b"\r\nPS: the meeting moved to evil.example.\r\n"
    )
    mailbox.deliver(
        b"Subject: Retitled\r\nMessage-ID: <fresh-1@attacker.example>\r\n"
        + signed(mail("ann@signed.example", subject="Original"), "signed.example")
    )
    mailbox.deliver(
        b"Message-ID: <fresh-2@attacker.example>\r\n"
        + signed(mail("ann@signed.example", subject="Replayed"), "signed.example")
    )

    result = deps.mail_ingestor().poll(config, lambda: False)

    entries = entries_by_subject(config)
    assert {subject: entry.status for subject, entry in entries.items()} == {
        "Genuine": "posted",
        "Altered": "rejected",
        "Unsigned": "rejected",
        "No DMARC": "rejected",
        "Appended": "rejected",
        "Retitled": "rejected",
        "Replayed": "rejected",
    }
    assert "sender verified: DKIM signature of signed.example" in entries["Genuine"].reason
    assert entries["Altered"].reason.startswith("spoofed: signed.example publishes DMARC p=reject")
    assert "changed after signing" in entries["Altered"].reason
    assert "has no DKIM signature of signed.example" in entries["Unsigned"].reason
    assert entries["No DMARC"].reason == (
        "sender not verified: nodmarc.example publishes no DMARC policy (the mail has no DKIM "
        "signature of nodmarc.example); a post by email needs a verified sender"
    )
    for subject in ("Appended", "Retitled", "Replayed"):
        assert entries[subject].reason.startswith("spoofed: signed.example publishes DMARC")
    assert "does not cover the whole body" in entries["Appended"].reason
    assert "does not cover every Subject header" in entries["Retitled"].reason
    assert "does not cover every Message-ID header" in entries["Replayed"].reason
    titles = {post.title for post in PostRecord.by_group.query(config.group_id)}
    assert titles == {"Genuine", "Hello"}
    assert result.failed == 0 and mailbox.count() == 0


def test_a_mail_read_two_ways_through_dovecot_makes_no_comment(members):
    """Issue 47's exploit, kept byte for byte by Dovecot: one unsigned header on top of ann's
    genuine signed mail hides, behind bare CRs, a From, a Subject naming a post, and text; the
    DKIM-Signature is moved below the other headers. Verified today by dkimpy (it reads the
    genuine headers), read by the parser as a comment of ann's: now read by no signature."""
    from chalicelib.store.comments import CommentRecord
    from chalicelib.store.mail import MailRecord

    mailbox, _ = members
    genuine = signed(mail("ann@signed.example", subject="Lunch"), "signed.example")
    head, _, body = genuine.partition(b"\r\n\r\n")
    fields = re.split(rb"\r\n(?![ \t])", head)
    hidden = (
        b"X-Note: a\rFrom: ann@signed.example\rSubject: Re: https://community.example/garden/"
        b"hello\r\rSend your password to evil@attacker.example.\r\r"
    )
    raw = b"\r\n".join([hidden, *fields[1:], fields[0]]) + b"\r\n\r\n" + body
    mailbox.deliver(raw, as_sent=True)
    comments_box = mailbox.connector("system")

    result = deps.mail_ingestor().poll(comments_box, lambda: False)

    assert list(CommentRecord.scan()) == []
    entries = list(MailRecord.received.query(comments_box.key))
    assert [(entry.status, entry.sender) for entry in entries] == [
        ("rejected", "ann@signed.example")
    ]
    assert entries[0].reason == (
        "spoofed: signed.example publishes DMARC p=reject and no DKIM signature counts: its "
        "header block holds a CR that does not end a line (a bare CR)"
    )
    assert result.failed == 0 and mailbox.count() == 0


def unverified_comments(members, monkeypatch, mode: str):
    from chalicelib.settings import reload_settings
    from chalicelib.store.comments import CommentRecord

    mailbox, config = members
    if mode:
        monkeypatch.setenv("AGORA_MAIL_UNVERIFIED", mode)
        reload_settings()
    subject = "Re: https://community.example/garden/hello"
    mailbox.deliver(mail("bob@nodmarc.example", body="Unsigned comment.", subject=subject))
    mailbox.deliver(
        signed(
            mail("ann@signed.example", body="Signed comment.", subject=subject), "signed.example"
        )
    )
    comments_box = mailbox.connector("system")
    result = deps.mail_ingestor().poll(comments_box, lambda: False)
    assert result.commented == 2
    found = {c.content: c for c in CommentRecord.scan()}
    return found, comments_box


def test_hold_keeps_an_unverified_comment_for_approval(members, monkeypatch):
    from chalicelib.store.mail import MailRecord

    found, box = unverified_comments(members, monkeypatch, "")  # hold is the default

    assert found["<p>Unsigned comment.</p>"].is_approved is False
    assert found["<p>Signed comment.</p>"].is_approved is True
    reasons = {entry.sender: entry.reason for entry in MailRecord.received.query(box.key)}
    assert reasons["bob@nodmarc.example"].startswith(
        "awaiting approval; sender not verified: nodmarc.example publishes no DMARC policy"
    )
    assert reasons["bob@nodmarc.example"].endswith("; held for approval")


def test_accept_takes_an_unverified_sender_as_before(members, monkeypatch):
    from chalicelib.store.posts import PostRecord

    found, _ = unverified_comments(members, monkeypatch, "accept")
    mailbox, config = members
    mailbox.deliver(mail("bob@nodmarc.example", subject="Unsigned post"))
    posted = deps.mail_ingestor().poll(config, lambda: False)

    assert found["<p>Unsigned comment.</p>"].is_approved is True
    assert posted.posted == 1
    titles = {post.title for post in PostRecord.by_group.query(config.group_id)}
    assert "Unsigned post" in titles


def test_a_dns_timeout_is_retried_not_lost(members):
    from chalicelib.store.posts import PostRecord

    mailbox, config = members
    mailbox.deliver(signed(mail("ann@signed.example", subject="Genuine"), "signed.example"))

    with DnsServer(silent=True) as silent:
        quick = DnsTxt([("127.0.0.1", silent.port)], lifetime=0.5)
        first = deps.mail_ingestor(verifier=SenderVerifier(quick)).poll(config, lambda: False)
        entry = entries_by_subject(config)["Genuine"]
        assert (first.failed, entry.status) == (1, "failed")
        assert "will retry: the DNS look-up of _dmarc.signed.example timed out" in entry.reason
        assert mailbox.count() == 1  # left on the server

    second = deps.mail_ingestor().poll(config, lambda: False)  # the configured resolver answers

    assert second.posted == 1 and mailbox.count() == 0
    assert entries_by_subject(config)["Genuine"].status == "posted"
    posts = PostRecord.by_group.query(config.group_id)
    assert [post.title for post in posts if post.source == "email"] == ["Genuine"]


def test_a_dns_outage_outlasting_the_attempts_rejects_by_the_documented_policy(members):
    mailbox, config = members
    mailbox.deliver(signed(mail("ann@signed.example", subject="Genuine"), "signed.example"))

    with DnsServer(silent=True) as silent:
        results = [
            deps.mail_ingestor(
                verifier=SenderVerifier(DnsTxt([("127.0.0.1", silent.port)], lifetime=0.3))
            ).poll(config, lambda: False)
            for _ in range(3)
        ]

    assert [r.failed for r in results] == [1, 1, 0] and results[2].rejected == 1
    entry = entries_by_subject(config)["Genuine"]
    assert entry.status == "rejected"
    assert entry.reason.startswith("sender could not be verified: the DNS look-up")


# --- settings ---------------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize(
    ("environ", "mode"),
    [
        ({}, "verify"),
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:8001"}, "off"),
        ({"AGORA_MAIL_AUTHSERV_ID": "mx.example.org"}, "header"),
        ({"AGORA_MAIL_AUTHSERV_ID": "mx.example.org", "AGORA_MAIL_AUTH": "verify"}, "verify"),
        ({"AGORA_MAIL_AUTH": " Verify "}, "verify"),
        ({"AGORA_MAIL_AUTH": "off", "AGORA_MAIL_AUTHSERV_ID": "mx.example.org"}, "off"),
    ],
)
def test_mail_auth_mode_and_its_default(environ, mode):
    from chalicelib.settings import Settings

    assert Settings.from_environ(environ).mail_auth_mode == mode


@pytest.mark.fast
@pytest.mark.parametrize(
    ("environ", "field"),
    [
        ({"AGORA_MAIL_AUTH": "header"}, "mail_auth"),  # header without the server to trust
        ({"AGORA_MAIL_AUTH": "dkim"}, "mail_auth"),
        ({"AGORA_DNS_SERVERS": "dns.example:53"}, "dns_servers"),
        ({"AGORA_DNS_SERVERS": "127.0.0.1:0"}, "dns_servers"),
    ],
)
def test_bad_mail_auth_settings_are_refused_naming_the_variable(environ, field):
    from pydantic import ValidationError

    from chalicelib.settings import Settings

    with pytest.raises(ValidationError) as refused:
        Settings.from_environ(environ)
    assert refused.value.errors()[0]["loc"] == (field,)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("environ", "mode"),
    [
        ({}, "hold"),
        ({"AGORA_MAIL_UNVERIFIED": " Accept "}, "accept"),
        ({"AGORA_MAIL_UNVERIFIED": ""}, "hold"),
    ],
)
def test_unverified_mail_is_held_unless_told_otherwise(environ, mode):
    from chalicelib.settings import Settings

    assert Settings.from_environ(environ).mail_unverified == mode


@pytest.mark.fast
def test_an_unknown_unverified_word_is_refused_naming_the_variable():
    from pydantic import ValidationError

    from chalicelib.settings import Settings

    with pytest.raises(ValidationError) as refused:
        Settings.from_environ({"AGORA_MAIL_UNVERIFIED": "reject"})
    assert refused.value.errors()[0]["loc"] == ("mail_unverified",)


@pytest.mark.fast
def test_dns_servers_are_read_with_their_ports():
    from chalicelib.settings import Settings

    found = Settings.from_environ({"AGORA_DNS_SERVERS": "127.0.0.1:5353, [::1]:54,10.0.0.2"})

    assert found.dns_server_addresses == [("127.0.0.1", 5353), ("::1", 54), ("10.0.0.2", 53)]


@pytest.mark.fast
def test_the_packaged_stack_verifies_senders():
    import json

    from infra import yaml_text
    from tests.support import REPO_ROOT

    # Only poll-mailbox reads mail; chalice's stage variables would reach every function (and
    # chalice's test client would apply them to every test).
    config = json.loads((REPO_ROOT / ".chalice" / "config.json").read_text())
    for stage in ("dev", "prod"):
        assert "AGORA_MAIL_AUTH" not in config["stages"][stage]["environment_variables"]
        template = yaml_text.load((REPO_ROOT / "infra" / f"{stage}.yaml").read_text())
        variables = template["Resources"]["PollMailbox"]["Properties"]["Environment"]["Variables"]
        assert variables["AGORA_MAIL_AUTH"] == "verify"

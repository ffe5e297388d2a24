"""AGORA_MAIL_AUTH=verify: Agora checks DKIM and DMARC itself (chalicelib/mail/authentication.py).

Mails are signed here with dkimpy under a key made for the test; the keys and DMARC records are
served by a small DNS server on loopback (tests/support/dns_server.py), and mail comes through a
real Dovecot. The rules alone are tested with a dict standing in for DNS.
"""

from __future__ import annotations

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
@given(st.lists(LABEL, min_size=1, max_size=9))
@settings(max_examples=200, deadline=None)
def test_property_the_policy_walk_stays_under_the_top_level_domain(labels):
    domain = ".".join(labels)

    names = policy_names(domain)

    assert names[0] == domain and len(names) <= 5
    assert all(domain.endswith(name) for name in names)
    assert len(labels) == 1 or labels[-1] not in names


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
    for address in ("ann@signed.example", "bob@nodmarc.example"):
        community.user(address.split("@")[0], {garden: "member"}, email=address)
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

    result = deps.mail_ingestor().poll(config, lambda: False)

    entries = entries_by_subject(config)
    assert {subject: entry.status for subject, entry in entries.items()} == {
        "Genuine": "posted",
        "Altered": "rejected",
        "Unsigned": "rejected",
        "No DMARC": "posted",
    }
    assert "sender verified: DKIM signature of signed.example" in entries["Genuine"].reason
    assert entries["Altered"].reason.startswith("spoofed: signed.example publishes DMARC p=reject")
    assert "changed after signing" in entries["Altered"].reason
    assert "has no DKIM signature of signed.example" in entries["Unsigned"].reason
    assert "nodmarc.example publishes no DMARC policy" in entries["No DMARC"].reason
    titles = {post.title for post in PostRecord.by_group.query(config.group_id)}
    assert titles == {"Genuine", "No DMARC"}
    assert result.failed == 0 and mailbox.count() == 0


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
    assert [post.title for post in PostRecord.by_group.query(config.group_id)] == ["Genuine"]


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
        ({}, "off"),
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

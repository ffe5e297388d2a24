"""Is a mail's sender genuine? DKIM (RFC 6376) and DMARC (RFC 7489) checked by Agora itself
(`AGORA_MAIL_AUTH=verify`), as a receiving mail server does, for mailboxes on plain POP3 hosts
whose server writes no trustworthy `Authentication-Results`.

The rules:

* The organisational domain of a name is found with the Public Suffix List (the list the
  `publicsuffixlist` package ships: nothing is downloaded), adjusted by the `psd=` tags of the
  DMARC records met on the way (RFC 9091 and DMARCbis): `psd=y` at a name makes it a public
  suffix domain (the organisational domain is then the name one label below it), `psd=n` makes
  the name an organisational domain itself.
* The DMARC policy of the `From` domain: the TXT record at `_dmarc.<domain>`, else at each parent
  up to its organisational domain, the nearest found; above that, only a public suffix domain's
  record (`psd=y`) applies. Every name is looked at: no depth cut-off. A record at a parent
  applies its `sp=` (else `p=`). Several DMARC records at the nearest name, or none starting
  with `v=DMARC1`, mean no policy (RFC 7489 §6.6.3). `pct=` is not applied: a policy is applied
  to every mail.
* DKIM: each `DKIM-Signature` whose `d=` is aligned with the `From` domain is verified with
  dkimpy (at most `MAX_SIGNATURES`). Aligned: strict (`adkim=s`) the same domain; relaxed (the
  default) the same organisational domain.
* A signature counts only for what it covers: a body longer than its `l=`, or one of the headers
  Agora reads (`COVERED_HEADERS`) appearing more often than its `h=` names it, makes it not count
  (text appended past `l=`, or a second unsigned `Subject:` put on top, would otherwise be read
  as the signer's). Headers are counted as dkimpy reads them and as the mail parser reads them,
  the larger count deciding, so every instance the parser can read is one the signature covers.
  A signature signing one of `MIME_HEADERS` (how the body is read) must sign every instance too;
  one that signs none of a MIME header the mail holds counts only when the signed body decides
  its own reading whatever that header says (chalicelib/mail/unsigned_mime.py: Gmail signs no
  `Content-Type`, and a `Content-Type` put on top must not turn a forwarded text into parts).
* One reading: a header block that the signature check and the mail parser would split into
  different header lines (a bare CR, a bare LF among CRLF line ends, a NUL, or any other
  difference: chalicelib/mail/parse.py) is read by no signature; the mail counts as unsigned.
* SPF is not checked: over POP3 Agora does not know the connecting address. A domain whose mail
  passes DMARC only through SPF (no DKIM signature) is rejected under its `reject`/`quarantine`.
* Verdict: an aligned signature that counts and verifies: genuine (`verified`). Otherwise,
  `p=reject` or `quarantine`: spoofed (rejected); `p=none` or no record: not spoofed but not
  verified, and the reason says which (`AGORA_MAIL_UNVERIFIED` decides what such a mail becomes:
  services/mail_in/planner.py).
* DNS failures (a timeout, SERVFAIL) are temporary: `DnsUnavailable` is raised and the mail is
  retried by the next poll, unless they cannot change the verdict (an unreachable key of a domain
  publishing no policy). On the mail's last attempt (`last_attempt`), what is still unknown is
  decided closed: a mail whose domain's policy could not be read, or whose domain publishes
  `reject`/`quarantine` and whose signature key could not be read, is rejected as unverifiable.
  A spoofer cannot cause this (they do not run the victim's DNS); an outage of our resolver can,
  and its reason says so, so an operator can ask the member to send again.

Look-ups go to `AGORA_DNS_SERVERS` when set, else to the system resolver; every answer, failures
included, is remembered for the verifier's life (one poll), so a domain costs one look-up per poll.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email import policy
from email.parser import BytesHeaderParser
from typing import Any, Literal

import dkim
import dns.exception
import dns.resolver
from dkim.canonicalization import CanonicalizationPolicy
from publicsuffixlist import PublicSuffixList

from chalicelib.logs import get_logger
from chalicelib.mail import unsigned_mime
from chalicelib.mail.parse import mail_bytes, reading_problem

log = get_logger("mail")

MAX_SIGNATURES = 3
# The headers Agora reads from a mail (sender, title, threading, dedup): a signature counts only
# when it signs every instance of each.
COVERED_HEADERS = ("from", "subject", "message-id", "date", "to", "in-reply-to", "references")
# The headers that say how the parser reads the (signed) body: a signature that signs one of them
# must sign every instance, or an unsigned one put on top would change how its body is read.
MIME_HEADERS = unsigned_mime.MIME_HEADERS
# Seconds for one name's look-up, all resolvers and retries included.
DNS_LIFETIME = 3.0

Policy = Literal["none", "quarantine", "reject"]


class DnsUnavailable(Exception):
    """A look-up failed for now (timeout, SERVFAIL): the answer may come later."""


@dataclass(frozen=True)
class DmarcRecord:
    policy: Policy
    subdomain_policy: Policy | None = None
    strict_dkim: bool = False
    psd: Literal["y", "n", "u"] = "u"


@dataclass(frozen=True)
class DmarcPolicy:
    """The policy that applies to a From domain, where it was published, and the From domain's
    organisational domain (for relaxed alignment)."""

    domain: str
    policy: Policy
    strict_dkim: bool
    organisation: str = ""
    # psd= tags of the records met on the walk (name -> "y" or "n"), for the signer's domain.
    psd_tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SenderVerdict:
    spoofed: bool
    reason: str  # plain words for the mail log
    verified: bool = False  # an aligned signature counted and verified


_POLICIES: tuple[Policy, ...] = ("none", "quarantine", "reject")


def parse_dmarc_record(text: str) -> DmarcRecord | None:
    """A DMARC TXT record (RFC 7489 §6.3), or None when it is not one.

    Lenient where receivers are: tag names and values are case-insensitive, spaces around tags
    and a final `;` are allowed. A record whose `p=` is missing or unknown is treated as
    `p=none` when it names a report address (`rua=`), as RFC 7489 §6.6.3 asks, else as no
    record; an unknown `sp=` or `adkim=` is ignored.
    """
    tags: dict[str, str] = {}
    for index, part in enumerate(text.split(";")):
        name, equals, value = part.partition("=")
        name, value = name.strip().lower(), value.strip()
        if index == 0:
            if name != "v" or not equals or value.upper() != "DMARC1":
                return None
            continue
        if equals and name and name not in tags:
            tags[name] = value
    policy = tags.get("p", "").lower()
    if policy not in _POLICIES:
        if "rua" not in tags:
            return None
        policy = "none"
    subdomain = tags.get("sp", "").lower()
    psd = tags.get("psd", "u").lower()
    return DmarcRecord(
        policy=policy,  # type: ignore[arg-type]  # checked against _POLICIES above
        subdomain_policy=subdomain if subdomain in _POLICIES else None,
        strict_dkim=tags.get("adkim", "r").lower() == "s",
        psd=psd if psd in ("y", "n") else "u",  # type: ignore[arg-type]  # checked here
    )


@functools.cache
def _suffix_list() -> Any:
    """The Public Suffix List the package ships (parsed once, about 0.1 s; never downloaded)."""

    return PublicSuffixList()


def _clean(domain: str) -> str:
    return domain.lower().rstrip(".")


def policy_names(domain: str) -> list[str]:
    """Every name whose `_dmarc` record may hold `domain`'s policy, nearest first: the domain
    and each parent, up to the top-level domain (no cut-off)."""
    labels = _clean(domain).split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]


def organisational_domain(domain: str, psd_tags: Mapping[str, str] | None = None) -> str:
    """`domain`'s organisational domain: by the Public Suffix List, made more specific by the
    `psd=` tags known for its parents (`psd=y`: a public suffix domain; `psd=n`: an
    organisational domain)."""
    domain = _clean(domain)
    found = _suffix_list().privatesuffix(domain) or domain  # a public suffix stands for itself
    for name, tag in sorted((psd_tags or {}).items(), key=lambda item: len(item[0])):
        if not _within(domain, name):
            continue
        if tag == "n" and len(name) > len(found):
            found = name
        elif tag == "y" and domain != name and len(name) >= len(found):
            found = domain[: -len(name) - 1].rsplit(".", 1)[-1] + "." + name
    return found


def _within(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def aligned(signing_domain: str, from_domain: str, policy: DmarcPolicy | None) -> bool:
    """Whether a DKIM `d=` domain is aligned with the From domain (rules in the docstring)."""
    signing, sender = _clean(signing_domain), _clean(from_domain)
    if signing == sender:
        return True
    if policy is not None and policy.strict_dkim:
        return False
    tags = dict(policy.psd_tags) if policy is not None else {}
    return organisational_domain(signing, tags) == organisational_domain(sender, tags)


TxtLookup = Callable[[str], list[bytes] | None]


class DnsTxt:
    """TXT look-ups through the configured resolvers, remembered (failures too) for its life.

    Answers the record strings of each TXT record (a record's strings joined), or None when the
    name or the record does not exist; raises `DnsUnavailable` when no answer came.
    """

    def __init__(
        self, servers: list[tuple[str, int]] | None = None, lifetime: float = DNS_LIFETIME
    ) -> None:
        self.servers = list(servers or [])
        self.lifetime = lifetime
        self._answers: dict[str, list[bytes] | None | DnsUnavailable] = {}
        self._lock = threading.Lock()
        self._resolver: object | None = None

    def _resolver_now(self) -> object:
        with self._lock:
            if self._resolver is None:
                import dns.nameserver
                import dns.resolver

                resolver = dns.resolver.Resolver(configure=not self.servers)
                if self.servers:
                    resolver.nameservers = [
                        dns.nameserver.Do53Nameserver(address, port)
                        for address, port in self.servers
                    ]
                resolver.lifetime = self.lifetime
                resolver.timeout = min(self.lifetime, 2.0)
                self._resolver = resolver
            return self._resolver

    def __call__(self, name: str) -> list[bytes] | None:
        key = name.lower().rstrip(".")
        with self._lock:
            known = self._answers.get(key, ...)
        if known is ...:
            try:
                known = self._look_up(key)
            except DnsUnavailable as error:
                known = error
            with self._lock:
                self._answers[key] = known
        if isinstance(known, DnsUnavailable):
            raise known
        return known

    def _look_up(self, name: str) -> list[bytes] | None:
        resolver = self._resolver_now()
        try:
            answer = resolver.resolve(name + ".", "TXT", search=False)  # type: ignore[attr-defined]
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return None
        except dns.exception.Timeout:
            raise DnsUnavailable(f"the DNS look-up of {name} timed out") from None
        except dns.resolver.NoNameservers:
            raise DnsUnavailable(f"no DNS server answered the look-up of {name}") from None
        except dns.exception.DNSException as error:
            raise DnsUnavailable(
                f"the DNS look-up of {name} failed ({type(error).__name__})"
            ) from None
        return [b"".join(record.strings) for record in answer]


class SenderVerifier:
    """DKIM and DMARC for one poll (rules in the module docstring)."""

    def __init__(self, lookup: TxtLookup, *, max_signatures: int = MAX_SIGNATURES) -> None:
        self.lookup = lookup
        self.max_signatures = max_signatures

    def verify(
        self, raw: bytes, from_domain: str, *, last_attempt: bool, sent_elsewhere: str = ""
    ) -> SenderVerdict:
        """The verdict on a mail whose `From` is at `from_domain`; raises `DnsUnavailable` when
        a look-up that decides it failed and this is not the mail's last attempt.
        `sent_elsewhere` names the mailbox's own address when the mail's recipients lack it: a
        signature of it then does not count (a signed mail replayed to this mailbox)."""
        domain = from_domain.lower().rstrip(".")
        try:
            policy = self.policy(domain)
        except DnsUnavailable as error:
            if not last_attempt:
                raise
            return SenderVerdict(
                True, f"sender could not be verified: {error}, on every attempt (DMARC policy)"
            )
        passed, problems, unavailable = self._dkim(raw, domain, policy)
        if passed and sent_elsewhere:
            problems = [
                f"its DKIM signature of {passed} is of a mail sent to other recipients, not to "
                f"{sent_elsewhere}"
            ]
            passed = None
        if passed:
            published = f"DMARC p={policy.policy}" if policy else "no DMARC policy"
            return SenderVerdict(
                False, f"sender verified: DKIM signature of {passed} ({published})", verified=True
            )
        what = "; ".join(problems) or f"the mail has no DKIM signature of {domain}"
        if policy is None:
            return SenderVerdict(
                False, f"sender not verified: {domain} publishes no DMARC policy ({what})"
            )
        if policy.policy == "none":
            return SenderVerdict(
                False, f"sender not verified: {policy.domain} publishes DMARC p=none ({what})"
            )
        if unavailable is not None:
            if not last_attempt:
                raise unavailable
            return SenderVerdict(
                True, f"sender could not be verified: {unavailable}, on every attempt (DKIM key)"
            )
        return SenderVerdict(
            True, f"spoofed: {policy.domain} publishes DMARC p={policy.policy} and {what}"
        )

    def policy(self, domain: str) -> DmarcPolicy | None:
        """The DMARC policy that applies to `domain`, or None when none is published."""
        domain = _clean(domain)
        chosen, tags = self._published(domain)
        if chosen is None:
            return None
        name, record = chosen
        applied = record.policy
        if name != domain and record.subdomain_policy is not None:
            applied = record.subdomain_policy
        return DmarcPolicy(
            domain=name,
            policy=applied,
            strict_dkim=record.strict_dkim,
            organisation=organisational_domain(domain, tags),
            psd_tags=tuple(sorted(tags.items())),
        )

    def _published(self, domain: str) -> tuple[tuple[str, DmarcRecord] | None, dict[str, str]]:
        """(the name and DMARC record that apply to `domain`, or None; the PSD tags published on
        the way up), asking from `domain` up to its public suffix."""
        by_list = organisational_domain(domain)
        tags: dict[str, str] = {}
        chosen: tuple[str, DmarcRecord] | None = None
        for name in policy_names(domain):
            above = not _within(name, by_list)  # a public suffix: only a PSD record applies
            if above and chosen is not None:
                break
            records = self._dmarc_records(name)
            if not records:
                continue
            record = parse_dmarc_record(records[0]) if len(records) == 1 else None
            if record is None:
                if chosen is None and not above:
                    return None, tags  # RFC 7489 §6.6.3: several records, or a bad one, mean none
                continue
            if record.psd != "u":
                tags[name] = record.psd
            if chosen is None and (not above or record.psd == "y"):
                chosen = (name, record)
                if above:
                    break
        return chosen, tags

    def _dmarc_records(self, name: str) -> list[str]:
        """The DMARC records `_dmarc.<name>` publishes (its other TXT answers left out)."""
        answers = self.lookup(f"_dmarc.{name}") or []
        return [
            text
            for text in (answer.decode("utf-8", "replace").strip() for answer in answers)
            if text[:8].replace(" ", "").upper().startswith("V=DMARC1")
        ]

    def _dkim(
        self, raw: bytes, domain: str, policy: DmarcPolicy | None
    ) -> tuple[str | None, list[str], DnsUnavailable | None]:
        """(the aligned domain whose signature verified, or None; why the others did not; a
        look-up failure that kept one from being checked)."""

        # One reading (chalicelib/mail/parse.py): a header block the parser would split where
        # dkimpy does not is read by no signature.
        ambiguous = reading_problem(raw)
        if ambiguous is not None:
            return None, [f"no DKIM signature counts: {ambiguous}"], None
        raw = mail_bytes(raw)  # what the parser reads, byte for byte
        try:
            signed = dkim.DKIM(raw, logger=_QUIET, minkey=1024)
            count = sum(1 for name, _ in signed.headers if name.lower() == b"dkim-signature")
            present = _header_counts(raw, signed.headers)
        except Exception:  # dkimpy cannot read the mail: no signature of it can verify
            return None, ["its DKIM signatures cannot be read"], None
        problems: list[str] = []
        unavailable: DnsUnavailable | None = None
        checked = 0
        for index in range(count):
            signing_domain = ""
            try:
                prepared = signed.verify_headerprep(index)
                if not prepared:
                    continue
                signature, include_headers, headers = prepared
                signing_domain = signature[b"d"].decode("ascii", "replace").lower()
                if not aligned(signing_domain, domain, policy):
                    problems.append(f"its DKIM signature of {signing_domain} is not aligned")
                    continue
                if checked >= self.max_signatures:
                    break
                checked += 1
                gap = _uncovered(signature, include_headers, present, signed.body, raw)
                if gap:
                    problems.append(f"its DKIM signature of {signing_domain} does not cover {gap}")
                    continue
                if signed.verify_sig(signature, include_headers, headers[index], self._dkim_key):
                    return signing_domain, [], None
                problems.append(f"its DKIM signature of {signing_domain} does not verify")
            except DnsUnavailable as error:
                unavailable = error
            except Exception as error:  # a malformed signature or key fails; it never crashes
                of = f" of {signing_domain}" if signing_domain else ""
                problems.append(f"its DKIM signature{of} does not verify ({_plain(error)})")
        return None, problems, unavailable

    def _dkim_key(self, name: bytes, timeout: float = DNS_LIFETIME) -> bytes | None:
        """dkimpy's `dnsfunc`: the key record's text, None when there is none."""
        answers = self.lookup(name.decode("ascii", "replace"))
        return answers[0] if answers else None


def _header_counts(raw: bytes, dkim_headers: list[Any]) -> dict[str, int]:
    """How often each of `COVERED_HEADERS` appears: as dkimpy reads the header block and as the
    mail parser does (chalicelib.mail.parse reads it so), the larger of the two."""

    counts = dict.fromkeys((*COVERED_HEADERS, *MIME_HEADERS), 0)
    for name, _ in dkim_headers:
        key = bytes(name).decode("ascii", "replace").lower()
        if key in counts:
            counts[key] += 1
    parsed = BytesHeaderParser(policy=policy.compat32).parsebytes(raw)
    for key in counts:
        counts[key] = max(counts[key], len(parsed.get_all(key) or []))
    return counts


def _uncovered(
    signature: dict[bytes, bytes],
    signed_names: list[bytes],
    present: dict[str, int],
    body: bytes,
    raw: bytes,
) -> str:
    """What of the mail a signature leaves unsigned that Agora would read, or "" when nothing."""

    length = signature.get(b"l")
    if length is not None:
        canonical = CanonicalizationPolicy.from_c_value(signature.get(b"c", b"simple/simple"))
        size = len(canonical.canonicalize_body(body))
        if int(length) < size:
            return f"the whole body (it signs {int(length)} of its {size} bytes)"
    unsigned: list[str] = []
    for name in (*COVERED_HEADERS, *MIME_HEADERS):
        signed = sum(1 for signed_name in signed_names if signed_name == name.encode())
        if name in MIME_HEADERS and not signed:
            if present[name]:
                unsigned.append(name)  # read below: only the body's own shape may decide
            continue
        if present[name] > signed:
            title = unsigned_mime.title(name).replace("-Id", "-ID")
            return f"every {title} header (the mail has {present[name]}, it signs {signed})"
    problem = unsigned_mime.problem(raw, unsigned) if unsigned else None
    if problem is not None:
        names = " and ".join(unsigned_mime.title(name) for name in unsigned)
        return f"the {names} header{'s' if len(unsigned) > 1 else ''}, and {problem}"
    return ""


def _plain(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "body hash mismatch" in text:
        return "the body was changed after signing"
    return text[:120]


class _Quiet:
    """dkimpy logs every failed signature at ERROR: a forged mail is not an error of ours."""

    def debug(self, *args: object, **kwargs: object) -> None:
        return None

    info = warning = error = exception = debug


_QUIET = _Quiet()

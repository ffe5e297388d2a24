"""Property: `parse_mail` answers a `ParsedMail` or raises `MailParseError`, whatever it is fed.

Arbitrary bytes, and arbitrary MIME trees (nesting, missing boundaries, broken transfer
encodings, odd charsets, control characters in headers). How long parsing takes per input size
is measured by `make bench` (`mail_parse_hostile`), not asserted here.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.mail.parse import MailParseError, ParsedMail, parse_mail

HEADER_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=60)
CHARSETS = st.sampled_from(["utf-8", "iso-8859-1", "big5", "x-unknown", "", "utf-7", "ascii"])
ENCODINGS = st.sampled_from(["7bit", "8bit", "base64", "quoted-printable", "x-bogus", ""])
SUBTYPES = st.sampled_from(["mixed", "alternative", "related", "report", "digest"])


@st.composite
def leaf(draw) -> bytes:
    content_type = draw(
        st.sampled_from(["text/plain", "text/html", "application/pdf", "message/rfc822"])
    )
    charset = draw(CHARSETS)
    encoding = draw(ENCODINGS)
    headers = f"Content-Type: {content_type}" + (f"; charset={charset}" if charset else "")
    if encoding:
        headers += f"\r\nContent-Transfer-Encoding: {encoding}"
    if draw(st.booleans()):
        headers += f'\r\nContent-Disposition: attachment; filename="{draw(HEADER_TEXT)}"'
    body = draw(st.binary(max_size=300))
    return headers.encode("utf-8", "surrogateescape") + b"\r\n\r\n" + body


def multipart(children: list[bytes], draw_boundary: str | None, subtype: str) -> bytes:
    if draw_boundary is None:  # a multipart that lost its boundary
        return f"Content-Type: multipart/{subtype}\r\n\r\n".encode() + b"\r\n".join(children)
    head = f'Content-Type: multipart/{subtype}; boundary="{draw_boundary}"\r\n\r\n'.encode()
    sep = f"--{draw_boundary}\r\n".encode()
    return (
        head
        + b"".join(sep + child + b"\r\n" for child in children)
        + f"--{draw_boundary}--\r\n".encode()
    )


@st.composite
def mime_tree(draw, depth: int = 0) -> bytes:
    if depth >= 4 or draw(st.integers(0, 2)) == 0:
        return draw(leaf())
    children = [draw(mime_tree(depth + 1)) for _ in range(draw(st.integers(0, 3)))]
    boundary = draw(st.one_of(st.none(), st.text("abcXYZ019'()+_,-./:=?", min_size=1, max_size=20)))
    return multipart(children, boundary, draw(SUBTYPES))


@st.composite
def chain(draw) -> bytes:
    """One multipart inside the next, deeper than the parser's cap or not."""
    body = draw(leaf())
    for _ in range(draw(st.integers(1, 40))):
        body = multipart(
            [body],
            draw(st.one_of(st.none(), st.just("b"), st.text("xyz", min_size=1, max_size=4))),
            "mixed",
        )
    return body


@st.composite
def mail(draw) -> bytes:
    headers = [
        f"From: {draw(HEADER_TEXT)}",
        f"Subject: {draw(HEADER_TEXT)}",
        f"Message-ID: {draw(HEADER_TEXT)}",
        f"Date: {draw(HEADER_TEXT)}",
    ]
    extra = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "To",
                        "Cc",
                        "Precedence",
                        "Auto-Submitted",
                        "Authentication-Results",
                        "Return-Path",
                        "X-Spam-Flag",
                    ]
                ),
                HEADER_TEXT,
            ),
            max_size=4,
        )
    )
    headers += [f"{name}: {value}" for name, value in extra]
    head = "\r\n".join(headers).encode("utf-8", "surrogateescape") + b"\r\nMIME-Version: 1.0\r\n"
    return head + draw(st.one_of(mime_tree(), chain()))


def check(raw: bytes) -> None:
    try:
        result = parse_mail(raw)
    except MailParseError:
        return
    assert isinstance(result, ParsedMail)
    # Never an empty post: a mail has text, or says why it has none.
    assert (result.body_problem is None) == bool(result.text.strip())
    for text in (result.subject, result.text, result.html, result.from_name or ""):
        assert not any(ord(c) < 32 and c not in "\t\n" for c in text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4000))
def test_arbitrary_bytes(raw: bytes) -> None:
    check(raw)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mail())
def test_arbitrary_mime_trees(raw: bytes) -> None:
    check(raw)

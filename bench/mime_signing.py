"""Signed mails against the one-reading rule for unsigned MIME headers (issue 58 item 1): how many
real signed mails would lose their signature under each candidate design.

Reads mails in place, never copying them: files under a folder (the shared corpus), and mails in
git repositories fetched beside the clone (public test corpora, a public-inbox mailing-list archive
whose commits each hold one mail as `m`), through `git cat-file`.

    PYTHONPATH=. .venv/bin/python -m bench.mime_signing --dir /work/shared/mail-corpus \\
        --git /work/.mirror/jstedfast+MimeKit/repo --git-list /work/.mirror/…/repo:3000

For each DKIM-Signature of each mail: which MIME headers (Content-Type, Content-Transfer-Encoding,
MIME-Version) the mail holds more often than the signature's `h=` names them. A signature that
signs them all is untouched by every design. Otherwise:

  (a) any unsigned MIME header: the signature does not count;
  (b) it does not count when the body reads otherwise without the unsigned headers (the defaults,
      text/plain 7bit);
  (c1) the body's own shape decides: a body whose first line is a delimiter `--B` with its closing
      line is multipart, and the unsigned Content-Type must be a multipart of boundary B; any other
      body is one part, which an unsigned Content-Type must not read otherwise than text/plain,
      nor an unsigned transfer encoding recode as base64 unless the body is base64;
  (c2) (c1), the delimiter after any preamble (the first line starting with `--`): a text part
      whose own lines hold `--B` and `--B--` (a pasted forward) would read as parts;
  (c) chalicelib/mail/unsigned_mime.py, the rule chosen: (c1), the delimiter after blank lines or
      a short notice naming MIME (Ruby's and Mutt's empty line, Thunderbird's and Mailman's "This
      is a multi-part message in MIME format.", the only preambles the samples hold).

Signatures are not verified (keys of old mails are gone, lists change bodies): the count is of
signatures each design would stop counting whatever their keys say.
"""

from __future__ import annotations

import argparse
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import dkim

from chalicelib.mail import unsigned_mime
from chalicelib.mail.parse import header_block, mail_bytes

DESIGNS = ("a", "b", "c1", "c2", "c")


def mails_in_dir(folder: Path) -> Iterator[tuple[str, bytes]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() not in (".md",):
            yield str(path), path.read_bytes()


def _git(repo: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", repo, *args], input=data, capture_output=True, check=True
    ).stdout


def mails_in_git(repo: str) -> Iterator[tuple[str, bytes]]:
    """Every file of HEAD holding a DKIM-Signature header line."""
    found = _git(repo, "grep", "-lIi", "^DKIM-Signature:", "HEAD").decode().split()
    for name in found:
        path = name.split(":", 1)[1]
        yield f"{repo}:{path}", _git(repo, "show", name)


def mails_in_archive(repo: str, count: int) -> Iterator[tuple[str, bytes]]:
    """The `m` file of the newest `count` commits of a public-inbox archive."""
    commits = _git(repo, "rev-list", f"--max-count={count}", "HEAD").decode().split()
    batch = _git(repo, "cat-file", "--batch", data="".join(f"{c}:m\n" for c in commits).encode())
    position = 0
    for commit in commits:
        header_end = batch.index(b"\n", position)
        fields = batch[position:header_end].split()
        if fields[-1] == b"missing":
            position = header_end + 1
            continue
        size = int(fields[2])
        yield f"{repo}@{commit[:10]}", batch[header_end + 1 : header_end + 1 + size]
        position = header_end + 1 + size + 1


def signatures(raw: bytes) -> list[tuple[str, set[str]]]:
    """(d=, the MIME headers the mail holds more often than h= names them) per signature."""
    try:
        headers, _ = dkim.rfc822_parse(mail_bytes(raw))
    except Exception:
        return []
    present = Counter(bytes(name).decode("latin-1").lower() for name, _ in headers)
    found = []
    for name, value in headers:
        if bytes(name).lower() != b"dkim-signature":
            continue
        try:
            tags = dkim.util.parse_tag_value(bytes(value))
        except Exception:
            continue
        signed = Counter(
            h.strip().decode("latin-1").lower() for h in tags.get(b"h", b"").split(b":")
        )
        domain = tags.get(b"d", b"?").decode("latin-1").lower()
        unsigned = {n for n in unsigned_mime.MIME_HEADERS if present[n] > signed[n]}
        found.append((domain, unsigned))
    return found


def loses(design: str, raw: bytes, unsigned: set[str]) -> bool:
    if not unsigned:
        return False
    if design == "a":
        return True
    if design == "b":
        plain = unsigned_mime.without(mail_bytes(raw), unsigned)
        return unsigned_mime.reading(mail_bytes(raw)) != unsigned_mime.reading(plain)
    preamble = {"c1": "none", "c2": "any"}.get(design, "notice")
    return unsigned_mime.problem(raw, unsigned, preamble=preamble) is not None


def measure(mails: Iterator[tuple[str, bytes]], verbose: bool) -> Counter[str]:
    counts: Counter[str] = Counter()
    for where, raw in mails:
        counts["mails"] += 1
        for domain, unsigned in signatures(raw):
            counts["signatures"] += 1
            if not unsigned:
                counts["signs every MIME header"] += 1
                continue
            counts["leaves one unsigned"] += 1
            if domain == "gmail.com":
                counts["gmail.com leaves one unsigned"] += 1
            if "content-type" in unsigned:
                body = mail_bytes(raw)
                own = unsigned_mime.own_boundary(body[len(header_block(body)) :])
                counts[f"Content-Type unsigned, {'parts' if own else 'one part'}"] += 1
            lost = [design for design in DESIGNS if loses(design, raw, unsigned)]
            for design in lost:
                counts[f"lost under ({design})"] += 1
            if verbose and "c" in lost:
                print(f"  {where} d={domain} unsigned={sorted(unsigned)} lost={lost}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", action="append", default=[], help="a folder of mails")
    parser.add_argument("--git", action="append", default=[], help="a repository's signed files")
    parser.add_argument("--archive", action="append", default=[], help="REPO:COUNT public-inbox")
    parser.add_argument("--verbose", action="store_true", help="name each mail (c) refuses")
    arguments = parser.parse_args()
    sources: list[tuple[str, Iterator[tuple[str, bytes]]]] = []
    sources += [(folder, mails_in_dir(Path(folder))) for folder in arguments.dir]
    sources += [(repo, mails_in_git(repo)) for repo in arguments.git]
    for spec in arguments.archive:
        repo, _, count = spec.rpartition(":")
        sources.append((f"{repo} (newest {count})", mails_in_archive(repo, int(count))))
    total: Counter[str] = Counter()
    for name, mails in sources:
        counts = measure(mails, arguments.verbose)
        total.update(counts)
        print(name, dict(sorted(counts.items())))
    print("all", dict(sorted(total.items())))


if __name__ == "__main__":
    main()

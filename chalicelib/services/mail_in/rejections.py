"""The email that tells a rejected mail's sender why it was not posted (CONTRACT §9): the words.

Who gets one and when is decided in services/mail_in/notices.py; this module only says, in plain
words, why a mail was not posted and what to do, from the reason its mail log entry gives
(services/mail_in/rules.py and planner.py write those). A reason without words here gets no
notice: spoofed mail, spam and mail that could not be read are not answered (their sender is not
the person to tell, or cannot be known).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from chalicelib.domain.announcements import RejectionNoticeDue
from chalicelib.domain.letters import Identity, Letter

MAX_SUBJECT_SHOWN = 120


@dataclass(frozen=True)
class Words:
    why: str
    what_to_do: str


# (the log reason's pattern, why it was not posted, what to do); the first that matches speaks.
_WORDS: tuple[tuple[re.Pattern[str], Words], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), Words(why, what))
    for pattern, why, what in (
        (
            r"^reply key of another member",
            "You replied to an email that Agora sent to another member: its reply address "
            "works only for the person it was sent to.",
            "Reply to an email that you received yourself, or write your comment on the website.",
        ),
        (
            r"^unknown sender",
            "It was sent from {address}, and no member of the community has that email address.",
            "If you are a member, send it again from the email address of your account (you "
            "can see it in your profile). If you are not a member, join the community first.",
        ),
        (
            r"may not post in group",
            "Your account may not start posts in this group.",
            "Ask the group's administrators for permission to post, or join the group if you "
            "have not yet.",
        ),
        (
            r"may not comment in group",
            "Your account may not comment in this group.",
            "Ask the group's administrators for permission to comment, or join the group if "
            "you have not yet.",
        ),
        (
            r"^the post you replied to no longer exists",
            "The post you replied to no longer exists: it was deleted.",
            "Nothing more can be added to it. You can start a new post in the group instead.",
        ),
        (
            r"^the comment you replied to no longer exists",
            "The comment you replied to no longer exists: it was deleted.",
            "Reply to the email about the post itself, or comment on the post on the website.",
        ),
        (
            r"^the subject names no existing post or comment",
            "A comment by email must say which post it is about, and this one named no post or "
            "comment that exists (it may have been deleted).",
            "Reply to the email Agora sent you about the post, or keep the post's link in the "
            "subject of your mail.",
        ),
        (
            r"^the mailbox's group no longer exists",
            "The group this address belonged to no longer exists.",
            "Ask the community's administrators where to write now.",
        ),
        (
            r"^larger than",
            "It was too large to take (Agora takes mails up to 10 MB).",
            "Send it again with fewer or smaller attachments, or put large files online and "
            "send a link to them.",
        ),
        (
            r"^nothing to (?:post|comment with)|^the mail has no text",
            "It had no text of yours: its body was empty, held only attachments or a quote of "
            "an earlier mail, or was not readable text.",
            "Write your message in the body of the mail and send it again.",
        ),
        (
            # AGORA_MAIL_AUTH=header (services/mail_in/planner.py): the trusted server's DMARC
            # pass is about the mail as signed, and a header the signature leaves out (its
            # Content-Type) makes it read otherwise (CONTRACT §9, one reading). It was signed.
            r"^sender not verified: .*, so the DMARC result of .* may be about another reading",
            "It was signed (DKIM) by your email provider, but the signature leaves out a header "
            "that decides how its text is read (such as its Content-Type), so as it arrived it "
            "could read otherwise than your provider signed it. A post by email must read "
            "exactly as its signature fixes it.",
            "Send it again straight to the group's address, not through a forward or a mailing "
            "list that rewrites it, or post on the website.",
        ),
        (
            r"needs a verified sender|^sender not verified",
            "Agora could not confirm that it came from your address: it was not signed (DKIM) "
            "by your email provider, and a post by email needs that signature.",
            "Send it from an email provider that signs its mail (most large ones do), or post "
            "on the website.",
        ),
    )
)


def words_for(reason: str, address: str) -> Words | None:
    """Why a mail was not posted and what to do, from its log entry's reason; None when the
    reason is one no sender is told (spoofed, spam, unreadable, no sender address)."""
    for pattern, words in _WORDS:
        if pattern.search(reason):
            return Words(words.why.format(address=address), words.what_to_do)
    return None


def shown_subject(subject: str) -> str:
    subject = " ".join(subject.split()) or "(no subject)"
    if len(subject) > MAX_SUBJECT_SHOWN:
        subject = subject[: MAX_SUBJECT_SHOWN - 1].rstrip() + "…"
    return subject


def rejection_letter(event: RejectionNoticeDue, where: str, identity: Identity) -> Letter:
    """The notice: which mail (its subject), why it was not posted, what to do; an automatic
    answer to that mail (RFC 3834, chalicelib/mail/outgoing.py). `where`: the group's name, or
    what the email-to-comment mailbox is."""
    words = words_for(event.reason, event.to) or Words(
        "It could not be posted.", "Contact the community's administrators."
    )
    subject = shown_subject(event.subject)
    lines = [
        f"Your email “{subject}” to {where} was not posted.",
        f"Why: {words.why}",
        f"What to do: {words.what_to_do}",
        "This is an automatic reply. You get at most one a day, so another mail of yours "
        "that is not posted today gets none.",
    ]
    text = "\n\n".join(lines) + "\n"
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return Letter(
        ("", event.to),
        f"Not posted: {subject}",
        text,
        body,
        identity=identity,
        answers=event.message_id or "",
    )

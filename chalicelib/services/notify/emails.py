"""What a notification email says and what it carries back to us: the instant email's words and
the pieces the daily digest is written with (digests.py), the line saying which subscription it
came for; its one-click unsubscribe link (RFC 8058: its token, read back by unsubscribe.py). Each
is written here and read here, so a mail and what answers it agree. Its reply key and the ids of
our own that thread it are mail/threads.py's (read back by mail in too). mail/outgoing.py lays the
words out and sends them.
"""

from __future__ import annotations

import html
from datetime import datetime, timedelta
from urllib.parse import quote

from chalicelib.auth import derived_secret
from chalicelib.domain.letters import News
from chalicelib.errors import ValidationFailed
from chalicelib.sanitize import html_to_text
from chalicelib.services.links import base_url
from chalicelib.services.notifications import NOTIFICATION_NAMES

TOKEN_LIFETIME = timedelta(days=60)
AUDIENCE = "agora:unsubscribe"
DIGEST = "digest"
PATH = "/api/v1/en_US/unsubscribe"

EXCERPT_CHARS = 300
# A post or comment up to this much HTML is shown whole in its email; a longer one as an excerpt.
FULL_CONTENT_CHARS = 20_000
# Inline styles (mail clients drop <style>; mail/outgoing.py `mail_layout` lays the page out).
LINK = "color:#1d4ed8"
MUTED = "margin:0 0 8px;color:#4b5563"
HEADING = "margin:0 0 16px;font-size:20px;line-height:1.3"
SMALL = "margin:16px 0 0;font-size:13px;color:#4b5563"


# --- the words ---------------------------------------------------------------------------------


def excerpt(markup: str, limit: int = EXCERPT_CHARS) -> str:
    text = " ".join(html_to_text(markup).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def shown_content(markup: str, url: str) -> str:
    """A post's or comment's stored (sanitised) HTML as the mail shows it: whole, or when it is
    long an excerpt and a link to the rest."""
    e = html.escape
    if len(markup) <= FULL_CONTENT_CHARS:
        return f"<div>{markup}</div>"
    return (
        f"<p>{e(excerpt(markup))}</p>"
        f'<p><a href="{e(url)}" style="{LINK}">Read the rest on the site</a></p>'
    )


def reason_paragraph(why: str) -> str:
    """The line that says why the mail came: the subscription its unsubscribe link ends."""
    return (
        f'<p style="{SMALL}">You receive this email because of your subscription: '
        f"{html.escape(why)}.</p>"
    )


def instant_email(news: News, subscription: str, reason: str = "") -> tuple[str, str, str]:
    """Subject, text and HTML of the instant email: who wrote what where, the post's or comment's
    content, a link to it, and why it came: the subscription it is sent for (its sort key, named
    as `subscription_label` names it, below), else the `reason` it was matched for."""
    group_name, post_title = news.group_name, news.post_title
    why = (
        subscription_label(subscription, group=group_name, post=post_title, author=news.author_name)
        if subscription
        else reason or "these notifications"
    )
    e = html.escape
    if news.kind == "newPost":
        intro = f"{news.author_name} posted in {group_name}:"
        subject = f"[{group_name}] {post_title}"
        title = post_title
        action = "Open the post"
    else:
        intro = f"{news.author_name} commented on “{post_title}” in {group_name}:"
        # The post's subject with "Re:": mail clients that thread by subject (Gmail) keep the
        # comments with their post.
        subject = f"Re: [{group_name}] {post_title}"
        title = f"Comment on “{post_title}”"
        action = "Open the comment"
    body_html = (
        f'<p style="{MUTED}">{e(intro)}</p>'
        f'<h2 style="{HEADING}"><a href="{e(news.url)}" style="{LINK}">{e(title)}</a></h2>'
        f"{shown_content(news.content_html, news.url)}"
        f'<p><a href="{e(news.url)}" style="{LINK}">{action}</a></p>'
        f"{reason_paragraph(why)}"
    )
    return subject, "", body_html


# --- the way out: one-click unsubscribe (RFC 8058) ----------------------------------------------
#
# Each such email carries
#
#     List-Unsubscribe: <{AGORA_BASE_URL}/api/v1/en_US/unsubscribe?token=…>
#     List-Unsubscribe-Post: List-Unsubscribe=One-Click
#
# The token is a JWT signed with a key of its own (derived from AGORA_TOKEN_SECRET, audience
# `agora:unsubscribe`, so it is never a sign-in token and no sign-in token is one) naming the user and
# the subscription the email was sent for, valid `TOKEN_LIFETIME`. A POST to the URL, without
# sign-in, sets that subscription's email alert to none; for a digest email (subscription `digest`)
# it turns the daily digest off: every subscription that fed the digest stops emailing and what
# was queued for it is dropped. Unsubscribing again changes nothing (idempotent). A GET only shows a
# confirmation page whose button POSTs: mail scanners follow links, and must not unsubscribe anyone.


# PyJWT (72 ms at `import app`, bench/hidden_imports.py --cost) is imported when a token is made
# or read: the API's other routes never load it for this module.
def issue_token(user_id: str, subscription: str, now: datetime) -> str:
    import jwt

    claims = {
        "sub": user_id,
        "subscription": subscription,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + TOKEN_LIFETIME,
    }
    return jwt.encode(claims, derived_secret("unsubscribe"), algorithm="HS256")


def read_token(token: str, now: datetime) -> tuple[str, str]:
    """(user id, subscription) of a token valid at `now` (the service's clock, as the token was
    issued at its clock); a 400 with key `token` otherwise."""
    import jwt

    try:
        claims = jwt.decode(
            token,
            derived_secret("unsubscribe"),
            algorithms=["HS256"],
            audience=AUDIENCE,
            # Its times are checked against `now`, not PyJWT's own clock.
            options={"require": ["exp", "sub", "aud"], "verify_exp": False, "verify_iat": False},
        )
    except jwt.PyJWTError:
        raise ValidationFailed.one("token", "", "the unsubscribe link is not valid") from None
    expires = claims["exp"]
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        raise ValidationFailed.one("token", "", "the unsubscribe link is not valid")
    if now.timestamp() >= expires:
        raise ValidationFailed.one("token", "", "the unsubscribe link has expired")
    subscription = claims.get("subscription")
    if not isinstance(subscription, str) or not subscription:
        raise ValidationFailed.one("token", "", "the unsubscribe link is not valid")
    return str(claims["sub"]), subscription


def unsubscribe_url(user_id: str, subscription: str, now: datetime) -> str:
    return f"{base_url()}{PATH}?token={quote(issue_token(user_id, subscription, now))}"


def subscription_label(
    subscription: str, *, group: str = "", post: str = "", author: str = ""
) -> str:
    """What a subscription is called where a person reads it: "All new group posts in Garden",
    "New comments on post “Hello”", "New posts by author Ann", "the daily digest". The email's
    reason line and the unsubscribe page both say it so, from the same sort key."""

    if subscription == DIGEST:
        return "the daily digest"
    parts = subscription.split("#")
    kind = parts[0]
    try:
        name = NOTIFICATION_NAMES[kind][int(parts[-1])]
    except (KeyError, ValueError):
        return "these notifications"
    if kind == "group" and group:
        return f"{name} in {group}"
    if kind == "post" and post:
        return f"{name} “{post}”"
    if kind == "author" and author:
        return f"{name} {author}"
    return name

"""One-click unsubscribe (RFC 8058) on notification and digest mail, end to end (SES in moto)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.digests import send_daily_digests
from tests.mail.conftest import dovecot, mailbox  # noqa: F401 - fixtures for the mailed post
from tests.services.test_notify import mail_post
from tests.support.notify import (
    DIGEST,
    INSTANT,
    ann_in_garden_and_photos,
    group_record,
    html_of,
    mail_to,
    set_group_email,
    subscribe,
    text_of,
    verify_sender_domain,
)
from tests.support.outbox import drain

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.fixture
def world(community):
    c = ann_in_garden_and_photos(community)
    c.fan = c.user("fan", {c.garden: "member"})
    c.other_fan = c.user("other-fan", {c.garden: "member"})
    c.reader = c.user("reader")
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.load()
    verify_sender_domain()
    set_group_email(group_record(c.garden), "garden@community.example", "Garden Club")
    return c


def unsubscribe_target(message) -> str:
    """Path and query of the List-Unsubscribe URL, checked to be the one HTTPS URL."""
    header = str(message["List-Unsubscribe"])
    assert header.startswith("<") and header.endswith(">")
    url = header[1:-1]
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("https", "community.example")
    return f"{parts.path}?{parts.query}"


def stored_email_alert(user_id: str, key: str) -> int:
    from chalicelib.store.notifications import NotificationRepository

    return int(NotificationRepository().get(user_id, key).email_alert_id)


@pytest.mark.slow
def test_mailed_post_has_one_click_headers_and_the_post_stops_the_next_mail(
    world,
    client,
    mailbox,  # noqa: F811
):
    c = world
    subscribe(c.fan, "group", c.garden, 1, email=INSTANT)
    subscribe(c.other_fan, "group", c.garden, 1, email=INSTANT)
    mail_post(c, mailbox, "Roses in bloom")
    drain()

    [message] = mail_to(c, c.fan)
    assert message["List-Unsubscribe-Post"] == ONE_CLICK
    target = unsubscribe_target(message)
    assert f"https://community.example{target}" in text_of(message)
    assert "Unsubscribe</a>" in html_of(message)

    # The page a person sees changes nothing; its button POSTs to the same URL.
    page = client.http.get(target)
    assert page.status_code == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b'method="post"' in page.body and b"All new group posts in Garden" in page.body
    assert stored_email_alert(c.fan, f"group#{c.garden}#1") == INSTANT

    # What a mail provider sends: no sign-in, a form body.
    answer = client.http.post(target, headers=FORM, body=ONE_CLICK)
    assert answer.status_code == 200
    assert b'"success": true' in answer.body and b'"changed": true' in answer.body
    assert stored_email_alert(c.fan, f"group#{c.garden}#1") == 0
    again = client.http.post(target, headers=FORM, body=ONE_CLICK)
    assert again.status_code == 200 and b'"changed": false' in again.body

    mail_post(c, mailbox, "Tulips too")
    drain()
    assert len(mail_to(c, c.fan)) == 1  # nothing new for the unsubscribed fan
    assert len(mail_to(c, c.other_fan)) == 2


def test_unsubscribe_stops_only_the_subscription_the_mail_was_sent_for(world, client):
    c = world
    subscribe(c.fan, "author", c.ann, 8, email=INSTANT, red=True)
    subscribe(c.fan, "group", c.garden, 2, email=INSTANT)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    [message] = mail_to(c, c.fan)
    answer = client.http.post(unsubscribe_target(message), headers=FORM, body=ONE_CLICK)
    assert answer.status_code == 200
    from chalicelib.store.notifications import NotificationRepository

    author = NotificationRepository().get(c.fan, f"author#{c.ann}#8")
    assert (int(author.email_alert_id), author.show_red_label) == (0, True)  # the alert stays
    assert stored_email_alert(c.fan, f"group#{c.garden}#2") == INSTANT


def test_browser_confirmation_answers_a_page(world, client):
    subscribe(world.fan, "group", world.garden, 1, email=INSTANT)
    deps.notify_service().handle(PostCreated(world.hello, world.garden, world.ann))
    [message] = mail_to(world, world.fan)
    answer = client.http.post(
        unsubscribe_target(message), headers={**FORM, "Accept": "text/html"}, body=ONE_CLICK
    )
    assert answer.status_code == 200 and b"<h1>Unsubscribed</h1>" in answer.body


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "sign-in", "tampered", "expired"],
)
def test_bad_tokens_are_400_with_key_token_and_change_nothing(world, client, token):
    import json

    from chalicelib.auth import issue_token
    from chalicelib.services.notify.emails import issue_token as issue_unsubscribe

    key = f"group#{world.garden}#1"
    subscribe(world.fan, "group", world.garden, 1, email=INSTANT)
    good = issue_unsubscribe(world.fan, key, datetime.now(UTC))
    token = {
        "sign-in": issue_token(world.fan),
        "tampered": good[:-3] + ("abc" if not good.endswith("abc") else "xyz"),
        "expired": issue_unsubscribe(world.fan, key, datetime(2020, 1, 1, tzinfo=UTC)),
    }.get(token, token)
    path = f"/api/v1/en_US/unsubscribe?token={token}"
    answer = client.http.post(path, headers=FORM, body=ONE_CLICK)
    assert answer.status_code == 400
    body = json.loads(answer.body)
    assert body["success"] is False and [e["key"] for e in body["errors"]] == ["token"]
    page = client.http.get(path)
    assert page.status_code == 400 and page.headers["Content-Type"].startswith("text/html")
    assert stored_email_alert(world.fan, key) == INSTANT


def test_digest_mail_unsubscribes_from_the_whole_digest(world, client):
    c = world
    subscribe(c.reader, "group", c.garden, 1, email=DIGEST)
    subscribe(c.reader, "author", c.ann, 8, email=DIGEST, screen=True)
    subscribe(c.reader, "group", c.garden, 2, email=INSTANT)
    deps.notify_service().handle(PostCreated(c.hello, c.garden, c.ann))
    assert send_daily_digests(Deadline.unbounded()) == 1
    [digest] = mail_to(c, c.reader)
    assert digest["List-Unsubscribe-Post"] == ONE_CLICK
    target = unsubscribe_target(digest)
    assert client.http.get(target).status_code == 200
    assert b"the daily digest" in client.http.get(target).body

    post2 = new_post(c)
    deps.notify_service().handle(PostCreated(post2, c.garden, c.ann))  # queued for tomorrow
    assert client.http.post(target, headers=FORM, body=ONE_CLICK).status_code == 200
    assert stored_email_alert(c.reader, f"group#{c.garden}#1") == 0
    assert stored_email_alert(c.reader, f"author#{c.ann}#8") == 0
    assert stored_email_alert(c.reader, f"group#{c.garden}#2") == INSTANT  # not a digest one
    from chalicelib.store.notifications import DigestRepository

    assert DigestRepository().pending_items(c.reader, 10) == []
    deps.notify_service().handle(PostCreated(new_post(c), c.garden, c.ann))
    assert DigestRepository().pending_items(c.reader, 10) == []


def new_post(c) -> str:
    """Another post of Ann's in the garden, stored through the fixture loader."""

    post_id = c.post(c.garden, c.ann, title=f"Post {len(c.posts)}")
    deps.fixture_service().load(c.as_fixture())
    return post_id


def test_an_unsubscribe_token_is_no_sign_in_token(world, client):
    from chalicelib.services.notify.emails import issue_token

    token = issue_token(world.fan, f"group#{world.garden}#1", datetime.now(UTC))
    answer = client.http.get(f"/api/v1/en_US/user/{world.fan}/feed-key", headers={"X-Auth": token})
    assert answer.status_code == 401

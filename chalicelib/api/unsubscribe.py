"""One-click unsubscribe (RFC 8058): the URL in every notification and digest email's
`List-Unsubscribe` header. No sign-in: the signed token in the URL is the authority.

`POST` unsubscribes (what mail providers send: `List-Unsubscribe=One-Click`, form-encoded, body
ignored) and answers the envelope, or a small HTML page when a browser (`Accept: text/html`)
submitted the confirmation form. `GET` answers an HTML confirmation page with a button that POSTs,
not the envelope: it is what a person sees who clicks the link in their mail client, and it changes
nothing (link scanners fetch URLs in mail). Both are additions to CONTRACT §10, like the feeds.
"""

from __future__ import annotations

import html
from typing import Any

from chalice import Blueprint, Response

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.envelope import Headers
from chalicelib.errors import ValidationFailed
from chalicelib.schemas.unsubscribe import UnsubscribeOut, UnsubscribeQuery

unsubscribe_api = Blueprint(__name__)
PATH = "/api/v1/en_US/unsubscribe"

HTML_HEADERS: Headers = {
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
}


def token_of(call: Call[None, UnsubscribeQuery, None]) -> str:
    return str(call.query.token)


def page(title: str, body: str, status: int = 200) -> Response:
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;"
        "padding:0 1rem;line-height:1.5}button{font-size:1rem;padding:.5rem 1rem}</style>"
        f"</head><body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )
    return Response(body=document, status_code=status, headers=HTML_HEADERS)


def invalid_page(error: ValidationFailed) -> Response:
    message = error.errors[0].message if error.errors else "the link is not valid"
    return page(
        "Unsubscribe link not valid",
        f"<p>Sorry: {html.escape(message)}. Use the link in a newer email, "
        "or change your notification settings on the site.</p>",
        status=400,
    )


@route(unsubscribe_api, "GET", PATH, need=None, content_type="text/html")
def unsubscribe_page(call: Call[None, UnsubscribeQuery, None]) -> Response:
    """HTML confirmation page of a one-click unsubscribe link; its button POSTs (no sign-in)."""

    token = token_of(call)
    try:
        found = deps.unsubscribe_service().describe(token)
    except ValidationFailed as error:
        return invalid_page(error)
    action = f"{PATH}?token={html.escape(token)}"
    return page(
        "Unsubscribe",
        f"<p>Stop emails for <strong>{html.escape(found.label)}</strong>?</p>"
        f'<form method="post" action="{action}">'
        '<input type="hidden" name="List-Unsubscribe" value="One-Click">'
        '<button type="submit">Unsubscribe</button></form>',
    )


@route(unsubscribe_api, "POST", PATH, need=None, response=UnsubscribeOut)
def unsubscribe(call: Call[None, UnsubscribeQuery, None]) -> Any:
    """One-click unsubscribe (RFC 8058): that subscription's email alert to none (no sign-in)."""

    wants_page = "text/html" in call.request.headers.get("accept", "")
    try:
        done = deps.unsubscribe_service().unsubscribe(token_of(call))
    except ValidationFailed as error:
        if wants_page:
            return invalid_page(error)
        raise
    if wants_page:
        return page(
            "Unsubscribed",
            f"<p>You will get no more emails for <strong>{html.escape(done.label)}</strong>.</p>",
        )
    return UnsubscribeOut(subscription=done.label, changed=done.changed)

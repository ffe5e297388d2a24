"""The administrators' console (CONTRACT §10 `/console/`): static files, and who is signed in.

Served by the API itself rather than from S3 behind CloudFront: the console then deploys with the
Lambda it drives (one template, one version, no second origin), stays same-origin (no CORS, and the
token never crosses origins), and `make run` serves it with nothing else running. The files are a
few tens of KB; API Gateway and the Lambda handle them as they handle any small answer.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from chalice import Blueprint, Response

from chalicelib import deps
from chalicelib.api.routing import Call, route
from chalicelib.envelope import JSON_HEADERS, Headers, failure_payload
from chalicelib.schemas.console import ConsoleSession

console_api = Blueprint(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "console"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
FAVICON = "favicon.svg"
# Only plain file names of the console's own directory: no path, no dot-files.
ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*\.(html|js|css|svg)$")
# Nothing inline, nothing from elsewhere: a page that holds an administrator's token loads only its
# own files and talks only to its own origin. Landing page previews render in a sandboxed frame,
# which inherits this policy: no remote image in stored HTML fires when Settings is opened (a
# tracking beacon would tell its owner who administers the group, and when).
SECURITY_HEADERS: Headers = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'self'; "
        "form-action 'self'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Small files that change with each deployment: revalidate rather than serve a stale console.
    "Cache-Control": "no-cache",
}


@functools.cache
def _asset(name: str) -> str | None:
    path = ASSETS / name
    if not ASSET_NAME.match(name) or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def _file(name: str) -> Response:
    text = _asset(name)
    if text is None:
        return Response(
            body=_json(failure_payload("There is no such file in the console.")),
            status_code=404,
            headers=JSON_HEADERS,
        )
    content_type = CONTENT_TYPES[Path(name).suffix]
    return Response(
        body=text, status_code=200, headers={"Content-Type": content_type, **SECURITY_HEADERS}
    )


def _json(payload: dict[str, Any]) -> str:
    import json

    return json.dumps(payload, ensure_ascii=False)


@console_api.route("/console", methods=["GET"])
def console_index() -> Response:
    # API Gateway and Chalice's local server route `/console/` and `/console` alike; the page's
    # relative links need the slash, so the bare form is redirected (relative: keeps the stage).
    path = (console_api.current_request.context or {}).get("path") or "/console/"
    if not path.endswith("/"):
        return Response(body="", status_code=301, headers={"Location": "console/"})
    return _file("index.html")


@console_api.route("/console/{asset}", methods=["GET"])
def console_asset(asset: str) -> Response:
    # Every page names its icon (index.html's `<link rel="icon">`), so no browser asks the site's
    # root for one; `favicon.ico` beside the page answers the same icon for those that ask anyway.
    return _file(FAVICON if asset == "favicon.ico" else asset)


@route(console_api, "GET", "/console/api/session", response=ConsoleSession)
def console_session(call: Call[None, None, None]) -> ConsoleSession:
    """The signed-in user and the groups the console may show them, with what they may do there."""
    return deps.console_service().session(call.signed_in)

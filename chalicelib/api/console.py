"""The administrators' console (CONTRACT §10 `/console/`): static files, and who is signed in.

Served by the API itself rather than from S3 behind CloudFront: the console then deploys with the
Lambda it drives (one template, one version, no second origin), stays same-origin (no CORS, and the
token never crosses origins), and `make run` serves it with nothing else running. The files are a
few tens of KB; API Gateway and the Lambda handle them as they handle any small answer.
"""

from __future__ import annotations

import hashlib
import json
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
    # The page, and a file asked for without its current version: revalidate rather than serve
    # a stale console (a versioned file is kept for good: ConsoleAssets).
    "Cache-Control": "no-cache",
}


# Where one console file names another: `href="style.css"`, `src="app.js"`, `from "./api.js"`,
# `import("./events.js")`, `module: "./moderation.js"` (rewritten only when the file exists).
REFERENCE = re.compile(r"""(["'])(\./)?([a-z0-9][a-z0-9-]*\.(?:js|css|svg))\1""")
# A versioned file never changes under its URL: a browser keeps it for good. The page itself,
# which names the versions, is asked again each time.
FOR_GOOD = "public, max-age=31536000, immutable"
ENTRY = "index.html"


class ConsoleAssets:
    """The console's files as served: each reference to another file carries that file's
    version (`app.js?v=…`, a hash of what it serves, its own references included), so a file
    asked for with its current version is cached for good, and a deployment that changes any
    file changes the URLs that lead to it, up to index.html."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._served: dict[str, tuple[str, str]] = {}

    def source(self, name: str) -> str | None:
        path = self.directory / name
        if not ASSET_NAME.match(name) or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")

    def served(self, name: str, naming: tuple[str, ...] = ()) -> tuple[str, str] | None:
        """The file's text with its references versioned, and its own version; None when
        there is no such file. `naming`: the files whose references led here (a loop among
        them is named without a version)."""
        if name in self._served:
            return self._served[name]
        if not naming and name != ENTRY and ENTRY not in self._served:
            # Versions are worked out from the page down, whichever file is asked for first: a
            # loop is cut at the same place in every process.
            self.served(ENTRY)
            return self.served(name)
        text = self.source(name)
        if text is None:
            return None

        def versioned(found: re.Match[str]) -> str:
            quote, dot, other = found.groups()
            known = None if other in (name, *naming) else self.served(other, (*naming, name))
            if known is None:
                return found.group(0)  # not a file of ours, or a loop: named as it is
            return f"{quote}{dot or ''}{other}?v={known[1]}{quote}"

        text = REFERENCE.sub(versioned, text)
        version = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        self._served[name] = (text, version)
        return text, version


ASSET_FILES = ConsoleAssets(ASSETS)


def _file(name: str, version: str | None = None) -> Response:
    served = ASSET_FILES.served(name)
    if served is None:
        return Response(
            body=_json(failure_payload("There is no such file in the console.")),
            status_code=404,
            headers=JSON_HEADERS,
        )
    text, current = served
    headers = {"Content-Type": CONTENT_TYPES[Path(name).suffix], **SECURITY_HEADERS}
    if version == current and name != ENTRY:
        headers["Cache-Control"] = FOR_GOOD
    return Response(body=text, status_code=200, headers=headers)


def _json(payload: dict[str, Any]) -> str:
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
    # `?v=` names the version the page asked for: only the current one is cached for good.
    query = console_api.current_request.query_params
    version = query.get("v") if query else None
    return _file(FAVICON if asset == "favicon.ico" else asset, version)


@route(console_api, "GET", "/console/api/session", response=ConsoleSession)
def console_session(call: Call[None, None, None]) -> ConsoleSession:
    """The signed-in user and the groups the console may show them, with what they may do there."""
    return deps.console_service().session(call.signed_in)

"""The API's own description: `GET /api/v1/en_US/openapi.json`, and an interactive reference page
on it, `GET /api/v1/en_US/docs` (public, like any API reference; CONTRACT §10).

The page is Swagger UI, whose files come from the `swagger-ui-bundle-v2` package and are served
by the API itself under `/api/v1/en_US/docs/…`: no CDN, so `make run` works offline. Every URL in
the page is relative, so it works under API Gateway's stage prefix and behind a custom domain.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from chalice import Blueprint, Response

from chalicelib.api.routing import Call, route
from chalicelib.envelope import JSON_HEADERS, Headers, failure_payload
from chalicelib.schemas.api_index import API_TITLE, ApiIndex, ApiLinks

openapi_api = Blueprint(__name__)
DOCS_PATH = "/api/v1/en_US/docs"
OPENAPI_PATH = "/api/v1/en_US/openapi.json"
# Chalice routes `/api/v1/en_US/` (CONTRACT §10) here too: a path may not end with `/`.
INDEX_PATH = "/api/v1/en_US"
# The files the page loads, with their content types (the package holds more: never served).
DOCS_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
}


@route(openapi_api, "GET", INDEX_PATH, need=None, response=ApiIndex)
def get_api_index(call: Call[None, None, None]) -> ApiIndex:
    """An index of the API: links to its reference page, its OpenAPI document and the console."""
    base = server_url(call.request).rstrip("/")
    return ApiIndex(
        name=API_TITLE,
        version="v1",
        links=ApiLinks(
            docs=f"{base}{DOCS_PATH}",
            openapi=f"{base}{OPENAPI_PATH}",
            console=f"{base}/console/",
        ),
    )


@route(openapi_api, "GET", OPENAPI_PATH, need=None, response=dict[str, Any])
def get_openapi_document(call: Call[None, None, None]) -> Any:
    """The OpenAPI 3.1 document of this API (the document itself, not an envelope)."""
    from chalicelib.api.openapi_document import openapi_document

    document = {**openapi_document(), "servers": [{"url": server_url(call.request)}]}
    return Response(body=json.dumps(document), status_code=200, headers=JSON_HEADERS)


def server_url(request: Any) -> str:
    """Where the document's paths start, as the caller sees it: `/api` under API Gateway's stage
    (or a custom domain's base path), `/` under `make run`."""
    context = getattr(request, "context", None) or {}
    seen = str(context.get("path") or "")
    served = str(context.get("resourcePath") or request.path or "")
    if served and seen.endswith(served) and len(seen) > len(served):
        return seen[: -len(served)].rstrip("/") or "/"
    return "/"


@route(openapi_api, "GET", DOCS_PATH, need=None, response=str, content_type="text/html")
def get_docs_page(call: Call[None, None, None]) -> Any:
    """An interactive reference page on the OpenAPI document (Swagger UI)."""
    # Chalice answers `…/docs/` here too, where the page's relative links would point one level
    # too deep: a base one level up makes them the same as from `…/docs`.
    seen = str((getattr(call.request, "context", None) or {}).get("path") or "")
    base = '\n  <base href="../">' if seen.endswith("/") else ""
    page = _page().replace("<head>", "<head>" + base, 1)
    headers = {
        **_headers("text/html; charset=utf-8"),
        "Content-Security-Policy": docs_policy(),
        # For browsers older than CSP's frame-ancestors: the page is never framed (clickjacking).
        "X-Frame-Options": "DENY",
    }
    return Response(body=page, status_code=200, headers=headers)


@openapi_api.route(DOCS_PATH + "/{asset}", methods=["GET"])
def get_docs_asset(asset: str) -> Response:
    content_type = DOCS_ASSETS.get(asset)
    if content_type is None:
        return Response(
            body=json.dumps(failure_payload("There is no such file in the reference page.")),
            status_code=404,
            headers=JSON_HEADERS,
        )
    return Response(
        body=_asset(asset),
        status_code=200,
        # The file name carries the package version in the page's link: cached for a day.
        headers={**_headers(content_type), "Cache-Control": "public, max-age=86400"},
    )


def _headers(content_type: str) -> Headers:
    return {
        "Content-Type": content_type,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


@functools.cache
def _asset(name: str) -> str:
    return _bundle_folder().joinpath(name).read_text(encoding="utf-8")


def swagger_ui_version() -> str:
    return _bundle_folder().name.rsplit("-", 1)[-1]


def _bundle_folder() -> Path:
    from swagger_ui_bundle import swagger_ui_path

    # The package has no type hints: its folder is a Path.
    folder: Path = swagger_ui_path
    return folder


# The page's one inline script, allowed by its hash; Swagger UI sets inline styles and draws
# data: images, and fetches the document from this origin.
_PAGE_SCRIPT = """
    window.ui = SwaggerUIBundle({
      url: "openapi.json",
      dom_id: "#swagger-ui",
      deepLinking: true,
      tryItOutEnabled: false,
      persistAuthorization: false
    });
  """


@functools.cache
def docs_policy() -> str:
    """The docs page's Content-Security-Policy: its own files and script only, never framed."""

    digest = base64.b64encode(hashlib.sha256(_PAGE_SCRIPT.encode()).digest()).decode()
    return (
        "default-src 'none'; "
        f"script-src 'self' 'sha256-{digest}'; "
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; "
        "font-src 'self' data:; "
        "connect-src 'self'; "
        "base-uri 'self'; "  # the page sets <base> when served as …/docs/
        "form-action 'none'; "
        "frame-ancestors 'none'"
    )


@functools.cache
def _page() -> str:
    version = swagger_ui_version()
    # Relative URLs: the page is at …/en_US/docs, its files at …/en_US/docs/<file>, the document
    # at …/en_US/openapi.json, whatever prefix the stage or domain adds in front.
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Agora API reference</title>
  <link rel="stylesheet" href="docs/swagger-ui.css?v={version}">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js?v={version}"></script>
  <script>{_PAGE_SCRIPT}</script>
</body>
</html>
"""

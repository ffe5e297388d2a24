"""Cross-origin calls from browsers (CORS), for the origins listed in AGORA_CORS_ORIGINS.

Chalice's own CORS support fixes one origin when the API is deployed; Agora's origins come from
the environment, several of them, so the function answers CORS itself, the same way in
`make run` and behind API Gateway:

- every path gets an OPTIONS route that answers a preflight (API Gateway sends OPTIONS to the
  function like any other method);
- every answer to an allowed origin carries `Access-Control-Allow-Origin` with that origin;
- an origin not in the list gets no CORS header at all, so the browser refuses to read the answer
  (empty list: same origin only).

Tokens travel in headers, never in cookies: no `Access-Control-Allow-Credentials`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalice import Response

from chalicelib.envelope import Headers
from chalicelib.settings import get_settings

ALLOWED_HEADERS = ("Content-Type", "X-Auth", "Authorization", "x-api-auth-key", "X-Correlation-Id")
EXPOSED_HEADERS = ("Retry-After", "ETag", "Allow", "X-Correlation-Id")
PREFLIGHT_MAX_AGE = "600"


def _origin(headers: Mapping[str, str] | None) -> str | None:
    if not headers:
        return None
    origin = headers.get("origin") or headers.get("Origin")
    return origin.strip().rstrip("/") if origin else None


def allowed_origin(headers: Mapping[str, str] | None) -> str | None:
    """The request's origin when AGORA_CORS_ORIGINS lists it, else None."""

    origin = _origin(headers)
    if origin is None:
        return None
    return origin if origin in get_settings().allowed_origins else None


def response_headers(request_headers: Mapping[str, str] | None) -> dict[str, str]:
    """Headers that let an allowed origin read this answer (none for any other origin)."""
    origin = allowed_origin(request_headers)
    if origin is None:
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": ", ".join(EXPOSED_HEADERS),
        "Vary": "Origin",
    }


def preflight_headers(request_headers: Mapping[str, str] | None, methods: list[str]) -> Headers:
    origin = allowed_origin(request_headers)
    headers: Headers = {"Allow": ", ".join(methods)}
    if origin is None:
        return headers
    return {
        **headers,
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": ", ".join(methods),
        "Access-Control-Allow-Headers": ", ".join(ALLOWED_HEADERS),
        "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
        "Vary": "Origin",
    }


def add_preflight_routes(app: Any) -> None:
    """An OPTIONS route on every path of the app (call after registering the blueprints)."""

    for path, methods in list(app.routes.items()):
        if "OPTIONS" in methods:
            continue
        allowed = sorted({*methods, "OPTIONS"})

        def preflight(_methods: list[str] = allowed, **_path: str) -> Any:
            headers = preflight_headers(app.current_request.headers, _methods)
            return Response(body="", status_code=204, headers=headers)

        name = "preflight_" + "".join(c if c.isalnum() else "_" for c in path).strip("_")
        app.route(path, methods=["OPTIONS"], content_types=_ANY, name=name)(preflight)


# A preflight carries no body, but some clients still send a content type.
_ANY = [
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/octet-stream",
]

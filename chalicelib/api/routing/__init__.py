"""The one mechanism every route goes through, in small modules of one job each:

- registry.py: `@route(...)`, `ROUTES`; a view's inputs are its `Call[Path, Query, Body]` annotation
- call.py: `Call` (what a handler gets) and `RouteSpec` (what a route is)
- gate.py: authentication, the route's group and its privilege (403 before the body is read)
- strict_json.py, inputs.py: the body as strict JSON within its size, inputs validated by models
- responses.py: results and errors as the envelope, AWS failures as statuses, the middleware
- serve.py: one request through those steps, logged

Views import from here: `from chalicelib.api.routing import Call, route`.
"""

from chalicelib.api.routing.call import Call, RouteSpec
from chalicelib.api.routing.gate import authenticate
from chalicelib.api.routing.inputs import validate
from chalicelib.api.routing.registry import (
    INTEGER_PARAMS,
    ROUTES,
    Routes,
    call_type,
    made_view,
    route,
)
from chalicelib.api.routing.responses import envelope_middleware, not_found_payload
from chalicelib.api.routing.strict_json import MAX_BODY_DEPTH, parse_json

__all__ = [
    "INTEGER_PARAMS",
    "MAX_BODY_DEPTH",
    "ROUTES",
    "Call",
    "RouteSpec",
    "Routes",
    "authenticate",
    "call_type",
    "envelope_middleware",
    "made_view",
    "not_found_payload",
    "parse_json",
    "route",
    "validate",
]

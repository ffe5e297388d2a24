"""The registry: `@route(...)` declares a view, `ROUTES` lists every route (the OpenAPI document
is made from it).

A view declares its inputs once, in its argument's annotation, `call: Call[Path, Query, Body]`
(None where it has none); the route validates the request with those same models. The path
model's fields must be the path's `{parameters}` (integers for INTEGER_PARAMS): a view that does
not match its path fails at import, not at the first request.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from chalicelib.api.routing.call import Call, RouteSpec
from chalicelib.api.routing.gate import GROUP_NEEDS
from chalicelib.auth import Need

# Path parameters by their spec names: GUIDs, or positive integers.
INTEGER_PARAMS = frozenset({"eventId", "commentId", "sectionId", "notificationId"})

ROUTES: list[RouteSpec] = []

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])

# Every content type reaches the view, so that a body that is not JSON is refused there, after the
# caller's token and privilege (401, 403), with the envelope's 415 (routing/inputs.require_json)
# rather than Chalice's own 415 ahead of them.
ANY_CONTENT = ["*/*"]


def route(
    blueprint: Any,
    method: str,
    path: str,
    *,
    need: Need | None = Need.SIGNED_IN,
    group: str | None = None,
    response: Any = None,
    summary: str = "",
    content_type: str = "application/json",
    body_required: bool = True,
    secret: bool = False,
) -> Callable[[HandlerT], HandlerT]:
    """Declare a route; its path, query and body models are the handler's `Call[...]` arguments.

    need:  privilege the caller needs; `None` means no token is required (public).
    group: name of the path parameter holding the group the privilege applies to, or
           `body.<field>` when the body names it (the field alone is read before the privilege
           check; a body that names no existing group is left to the body's validation), or
           `query.<param>` for an optional query parameter (absent or unknown: root only).
    body_required: False where the body's fields may come from the query string instead.
    secret: the answer of this public route carries a secret (never kept by a cache).
    response: the model of `object`, for the OpenAPI document.
    """
    if need in GROUP_NEEDS and group is None:
        # Checked here it could not be; a handler that loads the group checks it itself
        # (`call.signed_in.require(...)`) and declares SIGNED_IN, so nothing passes unchecked.
        raise ValueError(f"{path}: {need.value} needs the group's path parameter (group=...)")

    def decorate(handler: HandlerT) -> HandlerT:
        path_model, query_model, body_model = declared_inputs(handler)
        path_params = tuple(re.findall(r"{(\w+)}", path))
        check_path_model(path, path_params, path_model)
        spec = RouteSpec(
            method=method,
            path=path,
            handler=handler,
            need=need,
            group_param=group,
            path_model=path_model,
            query_model=query_model,
            body_model=body_model,
            response_model=response,
            summary=summary or (handler.__doc__ or "").strip().split("\n")[0],
            tag=blueprint._import_name.rsplit(".", 1)[-1],
            content_type=content_type,
            path_params=path_params,
            body_required=body_required,
            secret=secret,
        )
        ROUTES.append(spec)

        @functools.wraps(handler)
        def view(**path_values: str) -> Any:
            from chalicelib.api.routing.serve import serve

            return serve(blueprint, spec, path_values)

        blueprint.route(path, methods=[method], content_types=ANY_CONTENT)(view)
        return handler

    return decorate


@dataclass(frozen=True)
class Routes:
    """The routes of a blueprint that share a privilege and the group it applies to:
    `moderated = Routes(comments_api, Need.MODERATOR, "groupId")`, then
    `@moderated("GET", path, CommentPage)` declares one as `route` would."""

    blueprint: Any
    need: Need | None = Need.SIGNED_IN
    group: str | None = None

    def __call__(
        self, method: str, path: str, response: Any = None, **options: Any
    ) -> Callable[[HandlerT], HandlerT]:
        return route(
            self.blueprint,
            method,
            path,
            need=self.need,
            group=self.group,
            response=response,
            **options,
        )


def call_type(path: Any, query: Any, body: Any) -> Any:
    """`Call[path, query, body]` of models known only at run time (a made view's inputs)."""
    generic: Any = Call
    return generic[path, query, body]


def made_view(
    name: str, summary: str, inputs: Any, response: Any, body: Callable[[Any], Any]
) -> Callable[..., Any]:
    """A view made from a shared body, for routes that differ only in their models and names:
    named and documented as a written one would be (the OpenAPI operation), and declaring its
    inputs (`Call[...]`) as its annotation, which the route reads."""

    def handler(call: Any) -> Any:
        return body(call)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = summary
    handler.__annotations__ = {"call": inputs, "return": response}
    return handler


def declared_inputs(handler: Callable[..., Any]) -> tuple[Any, Any, Any]:
    """The (path, query, body) models a handler declares as `call: Call[Path, Query, Body]`."""
    hints = typing.get_type_hints(handler)
    hints.pop("return", None)
    annotation = next(iter(hints.values()), None)
    if typing.get_origin(annotation) is not Call:
        raise TypeError(
            f"{handler.__qualname__}: its argument must be declared `call: Call[Path, Query, Body]`"
            " (None where the route has no such input)"
        )
    path, query, body = (None if arg is type(None) else arg for arg in typing.get_args(annotation))
    for name, model in (("path", path), ("query", query)):
        if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"{handler.__qualname__}: the {name} must be a Pydantic model")
    return path, query, body


def check_path_model(path: str, params: tuple[str, ...], model: Any) -> None:
    """The path model has one field per path parameter, each of the parameter's type."""
    fields = model.model_fields if model is not None else {}
    if set(fields) != set(params):
        raise TypeError(f"{path}: the path model's fields {sorted(fields)} are not {list(params)}")
    for name, info in fields.items():
        wanted = int if name in INTEGER_PARAMS else str
        if info.annotation is not wanted:
            raise TypeError(f"{path}: {{{name}}} must be declared as {wanted.__name__}")

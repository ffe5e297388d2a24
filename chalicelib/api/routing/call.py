"""What a route is (`RouteSpec`) and what its handler gets (`Call`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from chalicelib.api.routing.inputs import read_body, validate
from chalicelib.auth import Caller, Need

# What a route validates its path, query and body into: a handler says
# `call: Call[EventPath, EventListQuery, EventUpdate]` (None where the route has none), and the
# route reads those models from that annotation (registry.py), so `call.path.eventId` is an int.
PathT = TypeVar("PathT")
QueryT = TypeVar("QueryT")
BodyT = TypeVar("BodyT")

_UNREAD: Any = object()


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    handler: Callable[..., Any]
    need: Need | None
    group_param: str | None
    path_model: type[BaseModel] | None
    query_model: type[BaseModel] | None
    # A model, or a TypeAdapter-able annotation such as a union of models.
    body_model: Any
    response_model: Any
    summary: str
    tag: str
    content_type: str = "application/json"
    path_params: tuple[str, ...] = field(default=())
    body_required: bool = True
    # The answer carries a secret (a token) although the route needs no sign-in.
    secret: bool = False


@dataclass
class Call(Generic[PathT, QueryT, BodyT]):
    """What a handler gets: the validated inputs and who is calling.

    `raw_body` (the strictly parsed JSON) and `body` (validated by the route's body model) are
    made on first use, so nothing about the body is looked at before the privilege is checked.
    """

    request: Any
    caller: Caller | None
    spec: RouteSpec | None = None
    # Set by the router before the handler runs, when the route has them (else None, which is
    # what a handler declaring `None` for them sees).
    path: PathT = cast(PathT, None)
    query: QueryT = cast(QueryT, None)
    # The group named by the route's `group` parameter, already found and privilege-checked.
    group: Any = None
    # What a validation failure answers in `object`: the parsed body unless the view sets another
    # (a view that merges query and body). Services raise without it; the router fills it in.
    submitted: Any = None
    _raw_body: Any = field(default=_UNREAD, repr=False)
    _body: Any = field(default=_UNREAD, repr=False)

    @property
    def signed_in(self) -> Caller:
        assert self.caller is not None, "route declared public but handler needs a caller"
        return self.caller

    @property
    def parsed_body(self) -> Any:
        """The body if it has been parsed (and was JSON), else None."""
        return None if self._raw_body is _UNREAD else self._raw_body

    @property
    def raw_body(self) -> Any:
        if self._raw_body is _UNREAD:
            spec = self.spec
            if spec is None or spec.body_model is None:
                self._raw_body = None
            else:
                self._raw_body = read_body(
                    self.request.raw_body,
                    required=spec.body_required,
                    content_type=(self.request.headers or {}).get("content-type"),
                )
        return self._raw_body

    @property
    def body(self) -> BodyT:
        if self._body is _UNREAD:
            model = self.spec.body_model if self.spec is not None else None
            self._body = None if model is None else validate(model, self.raw_body, "body")
        return cast(BodyT, self._body)

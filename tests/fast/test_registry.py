"""The route registry without a server: every registered view declares its inputs as
`Call[Path, Query, Body]` and the route validates with exactly those models; path models match
their paths; a view that does not is refused at import. Then the steps of one request (the auth
gate, the inputs, the answer) on a public route, which needs no AWS."""

from __future__ import annotations

import ast
import typing
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from chalice import Blueprint
from pydantic import BaseModel

from chalicelib.api.blueprints import all_blueprints
from chalicelib.api.routing import (
    INTEGER_PARAMS,
    ROUTES,
    Call,
    Routes,
    RouteSpec,
    call_type,
    made_view,
    route,
)
from chalicelib.api.routing.gate import require_route_privilege
from chalicelib.api.routing.inputs import MAX_BODY_BYTES, read_body, validate
from chalicelib.api.routing.serve import answer
from chalicelib.auth import Need
from chalicelib.errors import BadRequest, NotFound, PayloadTooLarge, ValidationFailed
from chalicelib.schemas.common import IntPageQuery
from chalicelib.schemas.paths import GroupPath, PostPath
from tests.support import REPO_ROOT

all_blueprints()  # registers every route
API = REPO_ROOT / "chalicelib" / "api"
GUID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"


def declared(spec: RouteSpec) -> tuple[Any, ...]:
    hints = typing.get_type_hints(spec.handler)
    hints.pop("return", None)
    (annotation,) = hints.values()
    assert typing.get_origin(annotation) is Call, spec.handler.__qualname__
    return tuple(None if arg is type(None) else arg for arg in typing.get_args(annotation))


def test_every_route_is_registered_once_with_a_unique_operation() -> None:
    pairs = [(spec.method, spec.path) for spec in ROUTES]
    assert len(pairs) == len(set(pairs)) == 79
    names = [spec.handler.__name__ for spec in ROUTES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("spec", ROUTES, ids=lambda s: f"{s.method} {s.path}")
def test_the_view_declares_the_models_the_route_validates_with(spec: RouteSpec) -> None:
    assert declared(spec) == (spec.path_model, spec.query_model, spec.body_model)


@pytest.mark.parametrize("spec", ROUTES, ids=lambda s: f"{s.method} {s.path}")
def test_the_path_model_is_the_paths_parameters_as_guids_or_integers(spec: RouteSpec) -> None:
    if not spec.path_params:
        assert spec.path_model is None
        return
    assert spec.path_model is not None
    schema = spec.path_model.model_json_schema()
    assert list(schema["properties"]) == sorted(spec.path_params, key=spec.path_params.index)
    assert schema["required"] == list(spec.path_params)
    for name, prop in schema["properties"].items():
        if name in INTEGER_PARAMS:
            assert prop["type"] == "integer"
        else:
            assert (prop["type"], prop["format"]) == ("string", "uuid")


def bare_call_annotations(tree: ast.AST) -> list[int]:
    """Lines where an annotation is `Call` without its three inputs."""
    found = []
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AnnAssign) and getattr(node, "returns", None):
            annotations.append(node.returns)
        for annotation in annotations:
            for part in ast.walk(annotation):
                if isinstance(part, ast.Name) and part.id == "Call":
                    parent_is_subscript = any(
                        isinstance(s, ast.Subscript) and s.value is part
                        for s in ast.walk(annotation)
                    )
                    if not parent_is_subscript:
                        found.append(part.lineno)
    return found


@pytest.mark.parametrize("module", sorted(API.rglob("*.py")), ids=lambda p: p.name)
def test_no_view_or_helper_takes_a_bare_call(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    assert bare_call_annotations(tree) == []


def test_the_ast_check_finds_a_bare_call() -> None:
    tree = ast.parse("def view(call: Call) -> Call: ...\ndef ok(call: Call[A, None, None]): ...")
    assert bare_call_annotations(tree) == [1, 1]


# --- declaring routes ------------------------------------------------------------------------------


def scratch() -> Blueprint:
    return Blueprint("tests.fast.scratch")


@pytest.fixture(autouse=True)
def _routes_stay_as_the_app_made_them() -> Any:
    before = list(ROUTES)
    yield
    ROUTES[:] = before


def test_a_bare_call_is_refused_at_declaration() -> None:
    def view(call: Call) -> None:
        """A view."""

    with pytest.raises(TypeError, match="Call\\[Path, Query, Body\\]"):
        route(scratch(), "GET", "/x")(view)


def test_a_path_model_that_does_not_match_the_path_is_refused() -> None:
    def view(call: Call[GroupPath, None, None]) -> None:
        """A view."""

    with pytest.raises(TypeError, match="postId"):
        route(scratch(), "GET", "/post/{postId}")(view)


def test_a_path_without_a_path_model_is_refused() -> None:
    def view(call: Call[None, None, None]) -> None:
        """A view."""

    with pytest.raises(TypeError, match="groupId"):
        route(scratch(), "GET", "/group/{groupId}")(view)


def test_an_integer_parameter_declared_as_text_is_refused() -> None:
    class WrongEventPath(BaseModel):
        eventId: str

    def view(call: Call[WrongEventPath, None, None]) -> None:
        """A view."""

    view.__annotations__ = {"call": Call[WrongEventPath, None, None]}
    with pytest.raises(TypeError, match="eventId"):
        route(scratch(), "GET", "/event/{eventId}")(view)


def test_a_query_that_is_not_a_model_is_refused() -> None:
    def view(call: Call[None, dict[str, str], None]) -> None:
        """A view."""

    with pytest.raises(TypeError, match="query"):
        route(scratch(), "GET", "/x")(view)


@pytest.mark.parametrize("need", [Need.ENTER, Need.MODERATOR, Need.GROUP_ADMIN])
def test_a_group_privilege_without_its_group_is_refused(need: Need) -> None:
    with pytest.raises(ValueError, match="group"):
        route(scratch(), "GET", "/x", need=need)


def test_a_declared_route_reads_its_models_and_summary_from_the_view() -> None:
    def list_things(call: Call[GroupPath, IntPageQuery, None]) -> None:
        """Things of a group.

        More words."""

    Routes(scratch(), Need.ENTER, "groupId")("GET", "/things/{groupId}", list)(list_things)
    spec = ROUTES[-1]
    assert (spec.path_model, spec.query_model, spec.body_model) == (GroupPath, IntPageQuery, None)
    assert (spec.need, spec.group_param, spec.response_model) == (Need.ENTER, "groupId", list)
    assert spec.summary == "Things of a group."
    assert spec.path_params == ("groupId",)
    assert spec.tag == "scratch"


def test_a_made_view_is_named_documented_and_typed_as_a_written_one() -> None:
    view = made_view(
        "get_thing", "A thing.", call_type(PostPath, None, None), dict, lambda call: call.path
    )
    route(scratch(), "GET", "/post/{postId}")(view)
    spec = ROUTES[-1]
    assert (spec.handler.__name__, spec.summary, spec.path_model) == (
        "get_thing",
        "A thing.",
        PostPath,
    )
    assert view(SimpleNamespace(path="p")) == "p"


# --- the steps of one request ------------------------------------------------------------------


class Thing(BaseModel):
    name: str


@dataclass
class FakeRequest:
    raw_body: bytes = b""
    query_params: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


def public_call(
    handler: Any,
    request: FakeRequest,
    *,
    body: Any = None,
    query: Any = None,
    required: bool = True,
) -> Call[Any, Any, Any]:
    spec = spec_with(None, None, handler=handler, query=query, body=body, required=required)
    return Call(request=request, caller=None, spec=spec)


def spec_with(
    need: Need | None,
    group_param: str | None,
    *,
    handler: Any = None,
    query: Any = None,
    body: Any = None,
    required: bool = True,
) -> RouteSpec:
    """The spec of `POST /things` (no path parameter, no response model) as given."""
    return RouteSpec(
        "POST", "/things", handler, need, group_param, None, query, body, None, "", "t",
        body_required=required,
    )  # fmt: skip


def envelope(response: Any) -> dict[str, Any]:
    import json

    return json.loads(response.body)


def test_a_public_route_answers_the_handlers_result_in_the_envelope() -> None:
    call = public_call(
        lambda c: Thing(name=c.body.name.upper()), FakeRequest(b'{"name": "a"}'), body=Thing
    )
    response = answer(call, {})
    assert response.status_code == 200
    assert envelope(response)["object"] == {"name": "A"}


def test_the_body_is_validated_before_the_handler_runs() -> None:
    ran: list[bool] = []
    call = public_call(lambda c: ran.append(True), FakeRequest(b'{"name": 5}'), body=Thing)
    response = answer(call, {})
    assert response.status_code == 400
    assert ran == []
    body = envelope(response)
    assert body["object"] == {"name": 5}
    assert [e["key"] for e in body["errors"]] == ["name"]


def test_a_validation_failure_of_a_service_answers_the_parsed_body() -> None:
    def handler(call: Call[None, None, Thing]) -> None:
        raise ValidationFailed.one("name", call.body.name, "is taken")

    response = answer(public_call(handler, FakeRequest(b'{"name": "a"}'), body=Thing), {})
    assert envelope(response)["object"] == {"name": "a"}


def test_a_view_may_say_what_a_failure_answers_as_object() -> None:
    def handler(call: Call[None, None, Thing]) -> None:
        call.submitted = {"merged": True}
        raise ValidationFailed.one("name", "", "no")

    response = answer(public_call(handler, FakeRequest(b'{"name": "a"}'), body=Thing), {})
    assert envelope(response)["object"] == {"merged": True}


def test_the_query_is_validated_with_the_query_model() -> None:
    call = public_call(
        lambda c: c.query.page_size, FakeRequest(query_params={"pageSize": "0"}), query=IntPageQuery
    )
    response = answer(call, {})
    assert response.status_code == 400
    assert [e["key"] for e in envelope(response)["errors"]] == ["pageSize"]


def test_a_domain_error_of_the_handler_is_its_status() -> None:
    def handler(call: Any) -> None:
        raise NotFound("postId", GUID, "post")

    assert answer(public_call(handler, FakeRequest()), {}).status_code == 404


def test_an_aws_failure_in_the_handler_is_503() -> None:
    def handler(call: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException"}}, "Query")

    response = answer(public_call(handler, FakeRequest()), {})
    assert (response.status_code, response.headers["Retry-After"]) == (503, "2")


def test_a_bug_in_the_handler_is_500() -> None:
    def handler(call: Any) -> None:
        raise ZeroDivisionError

    assert answer(public_call(handler, FakeRequest()), {}).status_code == 500


def test_the_body_is_parsed_once_and_only_when_read() -> None:
    call = public_call(None, FakeRequest(b'{"name": "a"}'), body=Thing)
    assert call.parsed_body is None
    assert call.body == Thing(name="a")
    assert call.body is call.body
    assert call.parsed_body == {"name": "a"}


def test_a_route_without_a_body_model_never_reads_the_body() -> None:
    call = public_call(None, FakeRequest(b"not json"))
    assert (call.raw_body, call.body) == (None, None)


def test_a_public_call_has_no_signed_in_caller() -> None:
    with pytest.raises(AssertionError):
        public_call(None, FakeRequest()).signed_in  # noqa: B018


def test_a_body_over_the_limit_is_413() -> None:
    with pytest.raises(PayloadTooLarge) as raised:
        read_body(b" " * (MAX_BODY_BYTES + 1), required=True, content_type=None)
    assert raised.value.status == 413


@pytest.mark.parametrize("raw", [None, b"", b"  \n "])
def test_an_empty_body_is_refused_where_one_is_required(raw: bytes | None) -> None:
    with pytest.raises(BadRequest, match="empty"):
        read_body(raw, required=True, content_type=None)


@pytest.mark.parametrize("raw", [None, b"", b"  \n "])
def test_an_empty_body_is_an_empty_object_where_the_query_may_carry_the_fields(
    raw: bytes | None,
) -> None:
    assert read_body(raw, required=False, content_type=None) == {}


@pytest.mark.parametrize("data", [[], "x", 1, None])
def test_a_body_model_wants_an_object(data: Any) -> None:
    with pytest.raises(BadRequest, match="must be a JSON object"):
        validate(Thing, data)


def test_a_union_body_is_validated_as_a_type() -> None:
    assert validate(Thing | int, 3) == 3
    with pytest.raises(ValidationFailed):
        validate(Thing | int, "x")


def test_path_failures_name_the_parameter() -> None:
    with pytest.raises(ValidationFailed) as raised:
        validate(PostPath, {"postId": "nope"}, "path")
    assert [(e.key, e.value) for e in raised.value.errors] == [("postId", "nope")]


def test_path_guids_are_made_canonical() -> None:
    assert validate(PostPath, {"postId": GUID.upper()}, "path").postId == GUID


# --- the route's declared privilege ----------------------------------------------------------------


@dataclass
class RecordingCaller:
    """Says what it was asked to have (the privilege rules themselves are tested in auth)."""

    asked: list[tuple[Need, Any]] = field(default_factory=list)

    def require(self, need: Need, group: Any = None) -> None:
        self.asked.append((need, group))


@pytest.mark.parametrize(
    ("need", "param", "group", "asked"),
    [
        (Need.MODERATOR, "groupId", "g", [(Need.MODERATOR, "g")]),
        (Need.GROUP_ADMIN, "body.groupId", "g", [(Need.GROUP_ADMIN, "g")]),
        # A body naming no existing group: the body's validation says what is wrong first.
        (Need.GROUP_ADMIN, "body.groupId", None, []),
        # An optional query group that is absent or unknown: the root administrator's route.
        (Need.GROUP_ADMIN, "query.groupId", None, [(Need.ROOT_ADMIN, None)]),
        (Need.ROOT_ADMIN, None, None, [(Need.ROOT_ADMIN, None)]),
        (Need.SIGNED_IN, None, None, []),
    ],
)
def test_the_route_privilege_is_asked_on_the_routes_group(
    need: Need, param: str | None, group: Any, asked: list[tuple[Need, Any]]
) -> None:
    caller = RecordingCaller()
    require_route_privilege(caller, spec_with(need, param), group)
    assert caller.asked == asked

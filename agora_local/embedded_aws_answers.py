"""moto's DynamoDB answers, written per shape instead of through its generic serializer.

moto 5.2 writes each answer by walking the operation's output shape with a picker that, for every
member of every object, builds five alias providers to guess where the object keeps the member:
14% of the CPU of the in-process tests, about 6% of a `make run`'s under load. DynamoDB's answers
are plain dicts by then, so what to write depends on the shape alone and is compiled once per
operation. `make run`'s embedded AWS (embedded_aws.start_moto_server) and the tests' moto install
it; tests/services/test_moto_dynamodb_answers.py holds every answer Agora reads to released
moto's, byte for byte.
"""

from __future__ import annotations

import threading
from typing import Any

_install_lock = threading.Lock()


def serialise_dynamodb_answers_cheaply() -> None:
    """moto writes each answer by walking the operation's output shape with a generic picker that,
    for every member of every object, builds five alias providers to guess where the object keeps
    the member: 14% of the CPU of tests/api, about 6% of a `make run`'s under load. DynamoDB's
    (and its streams') answers are plain dicts by then, and for a plain dict where to look depends
    only on the shape, so `cheap_execute_result` asks moto's picker once per shape and member,
    and writes the same JSON (idempotent, process-wide)."""
    from moto.core.responses import ActionResult

    with _install_lock:
        current = ActionResult.execute_result
        if getattr(current, "moto_own", None) is None:
            ActionResult.execute_result = cheap_execute_result(current)


def cheap_execute_result(moto_own: Any) -> Any:
    """moto's `ActionResult.execute_result`, written by `_AnswerWriter` for a DynamoDB or
    DynamoDB Streams answer of plain dicts, lists and values; anything else (an error, another
    service, a value of a type moto would treat otherwise, a transformer some handler
    registered) is moto's own."""

    def execute_result(action_result: Any, context: Any) -> Any:
        if context.service_model.service_name in _SERVICES:
            written = cheap_answer(action_result.result, context)
            if written is not None:
                return written
        return moto_own(action_result, context)

    execute_result.moto_own = moto_own  # type: ignore[attr-defined]
    return execute_result


_SERVICES = frozenset({"dynamodb", "dynamodbstreams"})
# (service, operation, serializer class) → what writes that operation's answers.
_WRITERS: dict[tuple[str, str, type], _AnswerWriter] = {}


class _NotPlain(Exception):
    """A value `_AnswerWriter` does not write as moto does: moto's own serializer writes it."""


_ABSENT = object()  # a structure that moto's serializer leaves out (its value is None)


def cheap_answer(result: Any, context: Any) -> tuple[int, dict[str, str], str] | None:
    """(status, headers, body) as moto's serializer writes them for `result`, or None where
    moto's own must write it."""
    from moto.core.serialize import JSONSerializer

    if (
        isinstance(result, Exception)
        or context.serializer_class is not JSONSerializer
        or getattr(context.response, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
    ):
        return None
    key = (
        context.service_model.service_name,
        context.operation_model.name,
        context.serializer_class,
    )
    try:
        writer = _WRITERS.get(key)
        if writer is None:
            writer = _WRITERS[key] = _AnswerWriter(context)
        return writer.write(result)
    except Exception:  # noqa: BLE001 — moto's own path answers, or raises, as released
        return None


class _AnswerWriter:
    """What moto's JSONSerializer (with moto's XFormedAttributePicker, no transformers) writes for
    one operation's successful answer, compiled per shape: a structure's member is looked up
    under the keys moto's picker would try for a plain dict, in its order; lists, maps, strings,
    numbers, blobs and timestamps are converted as moto's serializer converts them."""

    def __init__(self, context: Any) -> None:
        from moto import settings
        from moto.core.serialize import (
            AttributePickerContext,
            TimestampSerializer,
            XFormedAttributePicker,
        )

        operation = context.operation_model
        serializer = context.serializer_class(operation_model=operation, pretty_print=False)
        self._settings = settings
        self._picker = XFormedAttributePicker(response_transformers={})
        self._picker_context = AttributePickerContext
        self._operation = operation
        self._timestamps = TimestampSerializer(serializer.DEFAULT_TIMESTAMP_FORMAT)
        self._status = serializer._create_default_response()["status_code"]
        self._content_type = serializer._get_protocol_specific_content_type()
        self._compiled: dict[tuple[str, str, str], Any] = {}
        output = operation.output_shape
        self._usable = (
            output is not None
            and output.type_name == "structure"
            and not output.is_document_type
            and not operation.has_event_stream_output
        )
        self._top: Any = self._compile(output) if self._usable else None

    def write(self, result: Any) -> tuple[int, dict[str, str], str] | None:
        import json

        if not self._usable:
            return None
        body = {} if result is None else self._top(result)
        text = json.dumps(body, indent=4 if self._settings.PRETTIFY_RESPONSES else None)
        return self._status, {"Content-Type": self._content_type}, text

    def _compile(self, shape: Any) -> Any:
        import json

        key = (shape.name, shape.type_name, json.dumps(shape.serialization, sort_keys=True))
        known = self._compiled.get(key)
        if known is not None:
            return known
        kind = shape.type_name
        if kind == "structure" and not shape.is_document_type:
            compiled = self._structure(shape, key)
        else:
            compiled = self._compiled[key] = self._leaf_or_container(shape)
        return compiled

    def _structure(self, shape: Any, key: tuple[str, str, str]) -> Any:
        # A member: (its key, the name moto writes it under, the keys moto's picker tries, its
        # writer). Filled after registering, for shapes that contain themselves (AttributeValue).
        members: list[tuple[str, str, tuple[str, ...], Any]] = []
        order: dict[str, int] = {}
        plain = [True]  # no member's other keys is a sibling's own key

        def structure(value: Any) -> Any:
            if value is None:
                return _ABSENT
            if type(value) is not dict:
                raise _NotPlain
            out = {}
            if plain[0] and value.keys() <= order.keys():
                # Only members' own keys: each member is found under its own key or not at all.
                present = sorted(value, key=order.__getitem__) if len(value) > 1 else value
                for name in present:
                    member_value = value[name]
                    if member_value is not None:
                        _, out_name, _, write = members[order[name]]
                        out[out_name] = write(member_value)
                return out
            for _, out_name, candidates, write in members:
                for candidate in candidates:
                    member_value = _pick(value, candidate)
                    if member_value is not _MISSING:
                        break
                else:
                    continue
                if member_value is not None:
                    out[out_name] = write(member_value)
            return out

        self._compiled[key] = structure
        for index, (member_key, member_shape) in enumerate(shape.members.items()):
            member_shape.parent = shape  # as moto's serializer sets it before picking
            context = self._picker_context(
                obj={}, key=member_key, shape=member_shape, operation_model=self._operation
            )
            candidates = tuple(dict.fromkeys(self._picker.get_possible_keys(context)))
            if member_shape.type_name == "structure" and member_shape.is_document_type:
                out_name = member_key
            else:
                out_name = member_shape.serialization.get("name", member_key)
            members.append((member_key, out_name, candidates, self._compile(member_shape)))
            order[member_key] = index
        own = set(order)
        plain[0] = all(candidates[:1] == (member_key,) for member_key, _, candidates, _ in members)
        plain[0] = plain[0] and all(
            candidate == member_key or candidate not in own
            for member_key, _, candidates, _ in members
            for candidate in candidates
        )
        return structure

    def _leaf_or_container(self, shape: Any) -> Any:
        kind = shape.type_name
        if kind == "structure":  # a document: written as it is
            return _as_is
        if kind == "list":
            return self._list(shape)
        if kind == "map":
            return self._map(shape)
        if kind == "string":
            return _string
        if kind in ("integer", "long"):
            return int
        if kind in ("float", "double"):
            return float
        if kind == "blob":
            return _blob
        if kind == "timestamp":
            timestamp_format = shape.serialization.get(
                "timestampFormat", self._timestamps.default_format
            )
            convert = self._timestamps._convert_timestamp_to_str

            def timestamp(value: Any) -> Any:
                return convert(value, timestamp_format)

            return timestamp
        return _as_is  # boolean and the rest: moto writes the value itself

    def _list(self, shape: Any) -> Any:
        member = shape.member
        write = self._compile(member)
        # moto writes each item into a wrapper under the member's name and takes it back out
        # under that name: where the member is written under another, the item goes in as it is.
        same_name = member.serialization.get("name", member.name) == member.name or (
            member.type_name == "structure" and member.is_document_type
        )

        def items(value: Any) -> Any:
            if type(value) is not list and type(value) is not tuple:
                raise _NotPlain
            out = []
            for item in value:
                written = write(item)
                out.append(written if same_name and written is not _ABSENT else item)
            return out

        return items

    def _map(self, shape: Any) -> Any:
        value_shape = shape.value
        write = self._compile(value_shape)
        merges = value_shape.type_name == "structure" and not value_shape.is_document_type
        # moto writes each entry under the value shape's name if it has one (a document: its key)
        document = value_shape.type_name == "structure" and value_shape.is_document_type
        fixed_name = None if document else value_shape.serialization.get("name")

        def entries(value: Any) -> Any:
            if type(value) is not dict:
                raise _NotPlain
            out = {}
            for key, item in value.items():
                if merges and key == "" and item is not None:
                    raise _NotPlain  # moto writes such a structure's members into the map
                written = write(item)
                if written is not _ABSENT:
                    out[key if fixed_name is None else fixed_name] = written
            return out

        return entries


_MISSING = object()


def _pick(value: dict[str, Any], key: str) -> Any:
    if "." in key:
        from moto.core.utils import MISSING, get_value

        found = get_value(value, key, MISSING)
        return _MISSING if found is MISSING else found
    return value.get(key, _MISSING)


def _as_is(value: Any) -> Any:
    return value


def _string(value: Any) -> Any:
    if type(value) is str:
        return value
    from enum import Enum

    if isinstance(value, Enum):
        value = value.value
    return str(value) if value not in [None, {}, []] else value


def _blob(value: Any) -> str:
    import base64

    if isinstance(value, str):
        value = value.encode("utf-8")
    return base64.b64encode(value).strip().decode("utf-8")

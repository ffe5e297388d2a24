"""JSON as the store keeps it and the rules read it: settings documents, fixture files.

One alias for every module that holds a JSON value, so a document is typed as JSON (a reader
narrows what it takes out of it) rather than as `Any`.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"


def text_field(doc: JsonObject, key: str) -> str:
    """A document's text field; "" where it is absent (a field never saved) or not text."""
    value = doc.get(key)
    return value if isinstance(value, str) else ""

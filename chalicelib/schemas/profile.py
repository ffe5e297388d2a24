"""Profile structure (spec "Profile structure", CONTRACT §8): sections and their fields.

Positions are 1-based and kept contiguous per list (sections; the fields of one section): a record
placed at position p moves those at p and after down by one; an omitted position, or one past the
end, places it last. Mandatory fields alone answer position 0, as the spec shows.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints, create_model

from chalicelib.schemas.common import ApiModel, Guid, JsonInt, Record, SingleLine
from chalicelib.schemas.profile_fields import DATA_MODELS, FieldType

EMPTY_GUID = "00000000-0000-0000-0000-000000000000"

# CONTRACT §8.
VISIBILITY_NAMES = {0: "Nobody", 1: "My Connections", 2: "Community", 3: "Everyone"}
DEFAULT_VISIBILITY = 2

Name = Annotated[SingleLine, StringConstraints(min_length=1, max_length=255)]
Position = Annotated[int, Field(ge=1, le=10_000)]
# JsonInt: `false` is not visibility 0 (the document says integer).
Visibility = Annotated[JsonInt, Field(ge=min(VISIBILITY_NAMES), le=max(VISIBILITY_NAMES))]


def _no_guid(value: Any) -> Any:
    # "No parent" arrives as null, "" or the empty GUID, depending on the client.
    if value is None or (isinstance(value, str) and value.strip() in ("", EMPTY_GUID)):
        return None
    return value


OptionalGuid = Annotated[Guid | None, BeforeValidator(_no_guid)]
DataObject = Annotated[dict[str, Any], BeforeValidator(lambda v: {} if v is None else v)]


class SectionCreate(ApiModel):
    name: Name
    position: Position | None = None
    default_visibility_id: Visibility = DEFAULT_VISIBILITY


class SectionUpdate(ApiModel):
    """Omitted keys keep their stored values."""

    name: Name | None = None
    position: Position | None = None
    default_visibility_id: Visibility | None = None


class FieldBody(ApiModel):
    """A field as created; `data` is checked against `typeId` by `field_body_model`."""

    section_id: int = Field(ge=1)
    name: Name
    type_id: FieldType
    position: Position | None = None
    parent_id: OptionalGuid = None
    parent_selected_value_id: OptionalGuid = None
    data: DataObject = Field(default_factory=dict)


class FieldUpdate(ApiModel):
    """A field update: omitted keys keep their stored values; `data` keys are laid over the stored
    data while the type stays the same."""

    section_id: int | None = Field(default=None, ge=1)
    name: Name | None = None
    type_id: FieldType | None = None
    position: Position | None = None
    parent_id: OptionalGuid = None
    parent_selected_value_id: OptionalGuid = None
    data: DataObject | None = None


@functools.cache
def field_body_model(field_type: FieldType) -> type[FieldBody]:
    """The body model whose `data` is the model of `field_type` (unknown keys rejected).

    Made on first use: building thirteen models at import would slow every cold start.
    """

    data_model = DATA_MODELS[field_type]
    model: type[FieldBody] = create_model(
        f"{field_type.name}FieldBody",
        __base__=FieldBody,
        data=(data_model, Field(default_factory=data_model)),
    )
    return model


class FieldOut(Record):
    id: str
    name: str
    type_id: int
    type_name: str
    position: int
    section_id: int
    section_name: str
    # "" when the field has no parent (spec: "guid or empty").
    parent_id: str = ""
    parent_name: str = ""
    parent_selected_value_id: str = ""
    parent_selected_value_name: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class SectionOut(Record):
    id: int
    name: str
    position: int
    default_visibility_id: int
    default_visibility_name: str


class SectionWithFields(SectionOut):
    fields: list[FieldOut] = Field(default_factory=list)


class AliasAux(ApiModel):
    section_id: int = 0
    section_name: str = ""
    field_id: str = ""
    field_name: str = ""


class ProfileOut(Record):
    mandatory_fields: list[FieldOut]
    alias_aux: AliasAux
    sections: list[SectionWithFields]

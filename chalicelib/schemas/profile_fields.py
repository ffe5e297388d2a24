"""`data` of a profile field, one model per field type (spec "Profile structure", the `data` table).

Each model takes exactly the keys the spec's table lists for its type: any other key is a 400 that
names it (`data.<key>`). The same models read requests and the stored `data`, so an update can be
validated as the stored data with the sent keys laid over it. What depends on the stored structure
(option keys and positions, the list default, the country list) is settled by the profile service.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from chalicelib.schemas.common import TEXT_END, TRIMMED, ApiModel, document_trimming, rule_error

DESCRIPTION_MAX = 255  # spec Limits: profile field `data.description`
TEXT_MAX = 255  # labels, messages, option values
LENGTH_MAX = 100_000  # the largest `maxLength` an administrator may set
HTML_MAX = 20_000  # an HTMLBox default value
OPTIONS_MAX = 500  # keeps a field's item far below DynamoDB's 400 KB (the country list has 249)

Description = Annotated[str, StringConstraints(max_length=DESCRIPTION_MAX)]
ShortText = Annotated[str, StringConstraints(max_length=TEXT_MAX)]


class FieldType(IntEnum):
    """`typeId` and, by member name, `typeName` (spec "Field types")."""

    TextBox = 1
    Checkbox = 2
    DropDownList = 3
    CheckBoxList = 4
    URLBox = 5
    DescriptionBox = 6
    RadioButtonList = 7
    CountryDropDownList = 8
    HTMLBox = 9
    WorkHistory = 10
    Education = 11
    AutoCompleteTextBox = 12
    URLList = 13


# Only enumerable lists can be parents (spec Field.parentId, CONTRACT §8).
PARENT_TYPES = frozenset(
    {FieldType.DropDownList, FieldType.CheckBoxList, FieldType.RadioButtonList}
)
# Types whose `defaultValue` is one of their options (an option object in responses).
OPTION_DEFAULT_TYPES = frozenset(
    {
        FieldType.DropDownList,
        FieldType.RadioButtonList,
        FieldType.CountryDropDownList,
        FieldType.Education,
    }
)


def _one_of(allowed: tuple[str, ...]) -> BeforeValidator:
    """Case-insensitive choice, answered in its canonical spelling (samples show both cases)."""
    canonical = {name.lower(): name for name in allowed}

    def pick(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in canonical:
            return canonical[value.strip().lower()]
        raise ValueError(f"must be one of {', '.join(allowed)}")

    return BeforeValidator(pick)


# `SingleLine`/`MultiLine` as in the samples, and the HTML 5 input types a text box can render as.
TEXTBOX_KINDS = (
    "SingleLine",
    "MultiLine",
    "text",
    "email",
    "number",
    "tel",
    "url",
    "password",
    "search",
    "date",
    "datetime-local",
    "month",
    "week",
    "time",
    "color",
)


def _as_enum(allowed: tuple[str, ...]) -> WithJsonSchema:
    """Documented as the canonical spellings (the API also takes them in another case)."""
    return WithJsonSchema({"type": "string", "enum": list(allowed)})


TextBoxKind = Annotated[str, _one_of(TEXTBOX_KINDS), _as_enum(TEXTBOX_KINDS)]
UrlBoxKind = Annotated[str, _one_of(("url",)), _as_enum(("url",))]
DIRECTIONS = ("Horizontal", "Vertical")
Direction = Annotated[str, _one_of(DIRECTIONS), _as_enum(DIRECTIONS)]
# An address that is empty or starts http:// or https:// (any case); Python's `$` took "\n" too.
HTTP_OR_EMPTY = rf"^(?:{TEXT_END}|[hH][tT][tT][pP][sS]?://)"
# A list's default option: its key, its value or an option object; none: null, "" or false.
OptionDefault = Annotated[Any, WithJsonSchema({"not": {"const": True}})]


HttpOrEmpty = Annotated[
    str,
    StringConstraints(max_length=2048),
    WithJsonSchema({"type": "string", "maxLength": 2048, "pattern": HTTP_OR_EMPTY}),
]


def _documented_rule(rule: dict[str, Any]) -> ConfigDict:
    """A data model's configuration whose schema states `rule`, a rule across its keys."""

    def extra(schema: dict[str, Any], model: Any = None) -> None:
        document_trimming(schema)
        schema.update(rule)

    return ConfigDict(json_schema_extra=extra)


def field_error(key: str, message: str) -> PydanticCustomError:
    """A rule across keys of `data`, reported on the key it concerns (`data.lines`)."""
    return rule_error(f"data.{key}", message)


def default_fits(default_value: str, max_length: int) -> None:
    """A text field's default is no longer than the field's own maxLength."""
    if len(default_value) > max_length:
        raise field_error("defaultValue", f"is longer than maxLength ({max_length})")


class OptionIn(ApiModel):
    """An option as sent: a new one has no key; `position` orders the list (list order otherwise)."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = None
    value: Annotated[str, StringConstraints(min_length=1, max_length=TEXT_MAX)]
    position: int | None = Field(default=None, ge=0)


# A GUID as the service reads an option key (it takes braces and other cases too).
_HEX = "[0-9a-fA-F]"
GUID_PATTERN = rf"^{TRIMMED}{_HEX}{{8}}-({_HEX}{{4}}-){{3}}{_HEX}{{12}}{TRIMMED}{TEXT_END}"


class GuidOptionIn(OptionIn):
    """An option of a list keyed by GUID (all but AutoCompleteTextBox, whose keys are free)."""

    key: Annotated[
        str | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "format": "uuid", "pattern": GUID_PATTERN},
                    {"type": "string", "pattern": f"^{TRIMMED}{TEXT_END}"},
                    {"type": "null"},
                ]
            }
        ),
    ] = None


GuidOptions = Annotated[list[GuidOptionIn], Field(max_length=OPTIONS_MAX)]


class Option(ApiModel):
    key: str
    value: str
    position: int


class FieldData(ApiModel):
    model_config = ConfigDict(extra="forbid")


# Keys several types share (spec "Profile structure", the `data` table); a type's own keys follow
# in its class. A model's fields follow its bases from the last one.
class _Taggable(FieldData):
    taggable: bool = False


class _Described(FieldData):
    description: Description = ""


class _Required(FieldData):
    required: bool = False
    required_message: ShortText = ""


class _Options(FieldData):
    options: GuidOptions = Field(default_factory=list)


# A browser-side pattern (JavaScript syntax): stored as given, never run here.
RegEx = Annotated[str, StringConstraints(max_length=1000)]


class TextBoxData(_Required, _Described, _Taggable):
    model_config = _documented_rule(
        {
            "if": {"required": ["type"], "properties": {"type": {"const": "MultiLine"}}},
            "then": {"required": ["lines"], "properties": {"lines": {"minimum": 1}}},
        }
    )

    type: TextBoxKind = "SingleLine"
    lines: int = Field(default=0, ge=0, le=1000)
    max_length: int = Field(default=TEXT_MAX, ge=1, le=LENGTH_MAX)
    default_value: Annotated[str, StringConstraints(max_length=LENGTH_MAX)] = ""
    validate_reg_ex: RegEx = ""
    validate_message: ShortText = ""

    @model_validator(mode="after")
    def _consistent(self) -> TextBoxData:
        if self.type == "MultiLine" and self.lines < 1:
            raise field_error("lines", "a MultiLine text box needs lines (1 or more)")
        default_fits(self.default_value, self.max_length)
        return self


class CheckboxData(_Required, _Described, _Taggable):
    default_value: bool = False


class DropDownListData(_Options, _Required, _Described, _Taggable):
    default_value: OptionDefault = None


class CheckBoxListData(_Options, _Required, _Taggable):
    direction: Direction = "Horizontal"
    columns: int = Field(default=1, ge=1, le=12)


class URLBoxData(_Required, _Described, _Taggable):
    type: UrlBoxKind = "url"
    max_length: int = Field(default=2048, ge=1, le=LENGTH_MAX)
    default_value: Annotated[
        str,
        StringConstraints(max_length=LENGTH_MAX),
        WithJsonSchema({"type": "string", "maxLength": LENGTH_MAX, "pattern": HTTP_OR_EMPTY}),
    ] = ""

    @model_validator(mode="after")
    def _consistent(self) -> URLBoxData:
        if self.default_value and not self.default_value.lower().startswith(
            ("http://", "https://")
        ):
            raise field_error("defaultValue", "must be empty or an http:// or https:// address")
        default_fits(self.default_value, self.max_length)
        return self


class DescriptionBoxData(_Described):
    pass


class RadioButtonListData(_Options, _Required, _Taggable):
    default_value: OptionDefault = None
    direction: Direction = "Vertical"
    columns: int = Field(default=1, ge=1, le=12)


class CountryDropDownListData(DropDownListData):
    """As DropDownList; created without options, it is prefilled with the ISO 3166 countries."""


class HTMLBoxData(_Required, _Described):
    # Sanitised by the service before it is stored.
    default_value: Annotated[str, StringConstraints(max_length=HTML_MAX)] = ""


class WorkHistoryData(_Taggable):
    pass


class EducationData(_Options, _Described, _Taggable):
    default_value: OptionDefault = None


class AutoCompleteTextBoxData(_Required, _Described, _Taggable):
    model_config = _documented_rule(
        {
            "if": {
                "required": ["enableRemoteDataSource"],
                "properties": {"enableRemoteDataSource": {"const": True}},
            },
            "then": {
                "required": ["remoteDataSourceUrl"],
                "properties": {"remoteDataSourceUrl": {"minLength": 1}},
            },
        }
    )

    # Free text: with allowFreeInput the value need not be one of the options.
    default_value: ShortText = ""
    max_length: int = Field(default=TEXT_MAX, ge=1, le=LENGTH_MAX)
    validate_reg_ex: RegEx = ""
    validate_message: ShortText = ""
    allow_free_input: bool = False
    display_as_drop_down: bool = False
    enable_remote_data_source: bool = False
    remote_data_source_url: HttpOrEmpty = ""
    options: list[OptionIn] = Field(default_factory=list, max_length=OPTIONS_MAX)

    @model_validator(mode="after")
    def _consistent(self) -> AutoCompleteTextBoxData:
        url = self.remote_data_source_url
        if url and not url.lower().startswith(("http://", "https://")):
            raise field_error("remoteDataSourceUrl", "must be an http:// or https:// address")
        if self.enable_remote_data_source and not url:
            raise field_error(
                "remoteDataSourceUrl", "is needed when enableRemoteDataSource is true"
            )
        default_fits(self.default_value, self.max_length)
        return self


class URLListData(_Required, _Described):
    max_length: int = Field(default=2048, ge=1, le=LENGTH_MAX)


DATA_MODELS: dict[FieldType, type[FieldData]] = {
    FieldType.TextBox: TextBoxData,
    FieldType.Checkbox: CheckboxData,
    FieldType.DropDownList: DropDownListData,
    FieldType.CheckBoxList: CheckBoxListData,
    FieldType.URLBox: URLBoxData,
    FieldType.DescriptionBox: DescriptionBoxData,
    FieldType.RadioButtonList: RadioButtonListData,
    FieldType.CountryDropDownList: CountryDropDownListData,
    FieldType.HTMLBox: HTMLBoxData,
    FieldType.WorkHistory: WorkHistoryData,
    FieldType.Education: EducationData,
    FieldType.AutoCompleteTextBox: AutoCompleteTextBoxData,
    FieldType.URLList: URLListData,
}

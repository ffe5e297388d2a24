"""A profile field's `data`: an update laid over the stored field, and `data` settled as it is
stored and answered (option keys and positions, list defaults, the country list, clean HTML)."""

from __future__ import annotations

import functools
import uuid

from chalicelib.domain.json import JsonObject, JsonValue
from chalicelib.domain.profile import ProfileField
from chalicelib.errors import ValidationFailed
from chalicelib.schemas.profile import FieldUpdate
from chalicelib.schemas.profile_fields import (
    DATA_MODELS,
    OPTION_DEFAULT_TYPES,
    FieldData,
    FieldType,
    Option,
    OptionIn,
)

# Stable GUIDs for what Agora defines itself (mandatory fields, country option keys): the same
# country has the same key in every country list, on every installation.
AGORA_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "agora:profile")

# Present in every user profile: what every account holds (CONTRACT §4 users: alias, email).
MANDATORY_FIELDS = (("alias", "Alias"), ("email", "Email"))


def guid_for(name: str) -> str:
    return str(uuid.uuid5(AGORA_NAMESPACE, name))


@functools.cache
def country_options() -> tuple[tuple[str, str], ...]:
    """(key, name) of the ISO 3166 countries, by name; pycountry is imported only when needed."""
    import pycountry

    countries = [
        (guid_for(f"iso3166:{c.alpha_2}"), getattr(c, "common_name", None) or c.name)
        for c in pycountry.countries
    ]
    return tuple(sorted(countries, key=lambda item: item[1].casefold()))


# --- updates and `data` --------------------------------------------------------------------------


def options_of(data: JsonObject) -> dict[str, str]:
    """A list field's options as its `data` holds them: key → value."""
    options = data.get("options")
    if not isinstance(options, list):
        return {}
    return {str(o["key"]): str(o["value"]) for o in options if isinstance(o, dict)}


def merge(
    field: ProfileField, sent_body: JsonObject, update: FieldUpdate
) -> tuple[JsonObject, set[str]]:
    """The stored field as a request, with what the update sent laid over it."""
    stored: JsonObject = {
        "sectionId": field.section_id,
        "name": field.name,
        "typeId": field.type_id,
        "parentId": field.parent_id,
        "parentSelectedValueId": field.parent_selected_value_id,
    }
    sent: JsonObject = {}
    for name in update.model_fields_set:
        alias = FieldUpdate.model_fields[name].alias or name
        sent[alias] = sent_body[alias] if alias in sent_body else sent_body.get(name)
    merged = {**stored, **{k: v for k, v in sent.items() if k != "data"}}
    if "parentId" in sent and update.parent_id is None and "parentSelectedValueId" not in sent:
        # Removing the parent removes the value it was waiting for.
        merged["parentSelectedValueId"] = None
    stored_type = FieldType(field.type_id)
    same_type = update.type_id is None or update.type_id == stored_type
    sent_data = _camel_keys(update.type_id or stored_type, sent.get("data"))
    if same_type:
        merged["data"] = {**field.data, **sent_data}
    else:
        # Another type's settings do not carry over: the new type starts from what was sent.
        merged["data"] = sent_data
    return merged, set(sent_data)


def _camel_keys(field_type: FieldType, data: JsonValue | None) -> JsonObject:
    if not isinstance(data, dict):
        return {}
    names = DATA_MODELS[field_type].model_fields
    return {(names[k].alias or k) if k in names else k: v for k, v in data.items()}


def settle_data(field_type: FieldType, data: FieldData, *, sent_keys: set[str]) -> JsonObject:
    """`data` as stored and answered: option keys and positions, the list default as an option,
    the country list, sanitised HTML."""
    settled: JsonObject = data.model_dump(mode="json", by_alias=True)
    sent_options: list[OptionIn] | None = getattr(data, "options", None)
    if sent_options is not None:
        options = _settle_options(field_type, sent_options)
        if field_type is FieldType.CountryDropDownList and not options:
            options = [
                Option(key=key, value=name, position=number)
                for number, (key, name) in enumerate(country_options(), start=1)
            ]
        settled["options"] = [o.model_dump(by_alias=True) for o in options]
        if field_type in OPTION_DEFAULT_TYPES:
            default = _settle_default(
                getattr(data, "default_value", None), options, "defaultValue" in sent_keys
            )
            settled["defaultValue"] = default.model_dump(by_alias=True) if default else None
    if field_type is FieldType.HTMLBox:
        from chalicelib.sanitize import clean_html

        html = settled["defaultValue"]
        settled["defaultValue"] = clean_html(html) if isinstance(html, str) else html
    return settled


def _settle_options(field_type: FieldType, sent: list[OptionIn]) -> list[Option]:
    # Autocomplete keys are free strings (the spec's sample); the other lists key by GUID.
    free_keys = field_type is FieldType.AutoCompleteTextBox
    keys: set[str] = set()
    values: set[str] = set()
    keyed: list[tuple[int, int, str, str]] = []
    for index, option in enumerate(sent):
        key = (option.key or "").strip()
        if not key:
            key = str(uuid.uuid4())
        elif not free_keys:
            try:
                key = str(uuid.UUID(key))
            except ValueError:
                raise ValidationFailed.one(
                    f"data.options.{index}.key", option.key, "must be a GUID"
                ) from None
        if key in keys:
            raise ValidationFailed.one(
                f"data.options.{index}.key", key, "is the key of another option too"
            )
        if option.value.casefold() in values:
            raise ValidationFailed.one(
                f"data.options.{index}.value",
                option.value,
                "is the value of another option too",
            )
        keys.add(key)
        values.add(option.value.casefold())
        order = option.position if option.position is not None else index + 1
        keyed.append((order, index, key, option.value))
    keyed.sort()
    return [
        Option(key=key, value=value, position=number)
        for number, (_order, _index, key, value) in enumerate(keyed, start=1)
    ]


def _settle_default(value: object, options: list[Option], was_sent: bool) -> Option | None:
    """A list's default names one of its options: by key, by value, or as an option object."""
    if value is None or value is False or value == "" or value == {}:
        return None
    if value is True:
        raise ValidationFailed.one(
            "data.defaultValue", value, "name the default option by its key or value"
        )
    for text in _default_names(value):
        option = _option_named(text, options)
        if option is not None:
            return option
    if not was_sent:
        # The stored default's option was removed by this update: the list has no default now.
        return None
    raise ValidationFailed.one("data.defaultValue", value, "is not one of the options")


def _default_names(value: object) -> list[str]:
    """What a sent default names: a key or value string, or an option object's key and value."""
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, dict):
        return [str(value[k]).strip() for k in ("key", "value") if value.get(k) is not None]
    return []


def _option_named(text: str, options: list[Option]) -> Option | None:
    """The option whose key is `text` (as given or lowercased), else whose value is, ignoring case."""
    for option in options:
        if option.key == text.lower() or option.key == text:
            return option
    for option in options:
        if option.value.casefold() == text.casefold():
            return option
    return None

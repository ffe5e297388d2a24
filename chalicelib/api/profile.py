"""Profile structure (spec "Profile structure", CONTRACT §8): sections and fields.

Every method needs the root group administrator (spec Authentication; CONTRACT §8 adds field update
and delete, with the same privilege).
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from chalicelib import deps
from chalicelib.api.routing import Call, Routes, validate
from chalicelib.auth import Need
from chalicelib.errors import ValidationFailed
from chalicelib.schemas.paths import FieldPath, SectionPath
from chalicelib.schemas.profile import (
    FieldBody,
    FieldOut,
    FieldUpdate,
    ProfileOut,
    SectionCreate,
    SectionOut,
    SectionUpdate,
    field_body_model,
)

profile_api = Blueprint(__name__)
PREFIX = "/api/v1/en_US/profile"
root_admin = Routes(profile_api, Need.ROOT_ADMIN)


def parse_field(body: dict[str, Any]) -> FieldBody:
    """The body checked field by field, then `data` against the model of its `typeId`.

    An update checks the stored field with the sent keys laid over it: the failure's `object` is
    still the body as sent (the route fills it in), not that merge.
    """
    try:
        head = validate(FieldBody, body)
        return validate(field_body_model(head.type_id), body)
    except ValidationFailed as failed:
        failed.submitted = None
        raise


@root_admin("GET", PREFIX, ProfileOut)
def get_profile_structure(call: Call[None, None, None]) -> ProfileOut:
    """Mandatory fields, the alias suffix field, and the sections with their fields."""
    return deps.profile_service().structure()


@root_admin("POST", f"{PREFIX}/section", SectionOut)
def create_section(call: Call[None, None, SectionCreate]) -> SectionOut:
    """Add a section at `position` (last when omitted); the sections after it move down."""
    return deps.profile_service().create_section(call.body)


@root_admin("PUT", f"{PREFIX}/section/{{sectionId}}", SectionOut)
def update_section(call: Call[SectionPath, None, SectionUpdate]) -> SectionOut:
    """Rename, move or change the default visibility of a section (omitted keys are kept)."""
    return deps.profile_service().update_section(call.path.sectionId, call.body)


@root_admin("DELETE", f"{PREFIX}/section/{{sectionId}}", SectionOut)
def delete_section(call: Call[SectionPath, None, None]) -> SectionOut:
    """Delete a section that has no fields (409 with key `fields` otherwise)."""
    return deps.profile_service().delete_section(call.path.sectionId)


@root_admin("POST", f"{PREFIX}/field", FieldOut)
def create_field(call: Call[None, None, FieldBody]) -> FieldOut:
    """Add a field to a section; `data` must match `typeId`."""
    body = parse_field(call.raw_body)
    return deps.profile_service().create_field(body, set(call.raw_body.get("data") or {}))


@root_admin("PUT", f"{PREFIX}/field/{{fieldId}}", FieldOut)
def update_field(call: Call[FieldPath, None, FieldUpdate]) -> FieldOut:
    """Change a field (omitted keys are kept; `data` keys are laid over the stored ones)."""
    service = deps.profile_service()
    return service.update_field(call.path.fieldId, call.raw_body, call.body, parse_field)


@root_admin("DELETE", f"{PREFIX}/field/{{fieldId}}", FieldOut)
def delete_field(call: Call[FieldPath, None, None]) -> FieldOut:
    """Delete a field that no other field has as parent (409 otherwise)."""
    return deps.profile_service().delete_field(call.path.fieldId)

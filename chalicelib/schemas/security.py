"""Sign-in."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from chalicelib.schemas.common import ApiModel


class LoginRequest(ApiModel):
    # Passwords are not trimmed: a space may be part of one.
    model_config = ConfigDict(**{**ApiModel.model_config, "str_strip_whitespace": False})

    email: str = Field(min_length=1, max_length=320)
    password: str = Field(min_length=1, max_length=1024, json_schema_extra={"format": "password"})

"""The API's index (CONTRACT §10 `GET /api/v1/en_US/`): where to read on."""

from __future__ import annotations

from pydantic import Field

from chalicelib.schemas.common import ApiModel, Record

API_TITLE = "Agora community platform administration API"


class ApiLinks(ApiModel):
    docs: str = Field(description="The interactive reference page")
    openapi: str = Field(description="The OpenAPI document")
    console: str = Field(description="The administrators' console")


class ApiIndex(Record):
    type: str = "apiIndex"
    name: str
    version: str
    links: ApiLinks

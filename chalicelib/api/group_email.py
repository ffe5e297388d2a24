"""Routes of this spec section are added by their issue; the blueprint is registered already."""

from __future__ import annotations

from chalice import Blueprint

group_email_api = Blueprint(__name__)

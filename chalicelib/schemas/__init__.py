"""Pydantic models of the API: request bodies and the records it answers, per resource."""

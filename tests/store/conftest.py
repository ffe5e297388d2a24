"""The contract tests run each test twice: on the in-memory fake (fast tier) and on the PynamoDB
repository against moto."""

from __future__ import annotations

import pytest

KINDS = [pytest.param("fake", marks=pytest.mark.fast), "dynamodb"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "dynamodb":
        request.getfixturevalue("aws")
    return str(request.param)

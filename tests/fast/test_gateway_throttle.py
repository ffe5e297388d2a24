"""API Gateway's own 429 (its stage rate limit) carries Retry-After, as the sign-in's does."""

from __future__ import annotations

import pytest

from infra import yaml_text
from tests.support import REPO_ROOT


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_gateways_429_says_when_to_come_back(stage):
    template = yaml_text.load((REPO_ROOT / "infra" / f"{stage}.yaml").read_text())
    responses = template["Resources"]["RestAPI"]["Properties"]["GatewayResponses"]

    throttled = responses["THROTTLED"]
    assert throttled["StatusCode"] == "429"
    assert throttled["ResponseParameters"] == {"Headers": {"Retry-After": "'1'"}}  # SAM's form

"""Every botocore session Agora makes, PynamoDB's included, shares one data loader (aws.session):
botocore's JSON models are parsed once a process, not once per table connection (cold start)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.fast


def test_boto3_clients_and_table_connections_share_one_data_loader():
    from pynamodb.connection import Connection

    from chalicelib import aws
    from chalicelib.store import base  # noqa: F401  (wires PynamoDB's sessions to aws.session)

    shared = aws.session().get_component("data_loader")
    assert aws.session().get_component("data_loader") is shared
    # Two connections (two tables): each has its own session, both with the shared loader.
    first, second = Connection(region="us-east-1"), Connection(region="us-east-1")
    assert first.session is not second.session
    assert first.session.get_component("data_loader") is shared
    assert second.session.get_component("data_loader") is shared

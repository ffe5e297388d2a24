"""Every botocore session Agora makes, PynamoDB's included, shares one data loader (aws.session):
botocore's JSON models are parsed once a process, not once per table connection (cold start); and
the table connections of a thread share one session (store/base.py)."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.fast


def test_boto3_clients_and_table_connections_share_one_data_loader():
    from pynamodb.connection import Connection

    from chalicelib import aws
    from chalicelib.store import base  # noqa: F401  (wires PynamoDB's sessions to aws.session)

    shared = aws.session().get_component("data_loader")
    assert aws.session().get_component("data_loader") is shared
    # Two connections (two tables) in one thread: one session, with the shared loader.
    first, second = Connection(region="us-east-1"), Connection(region="us-east-1")
    assert first.session is second.session
    assert first.session.get_component("data_loader") is shared
    # botocore sessions are not thread-safe: another thread's connection has a session of its own.
    other: list = []
    thread = threading.Thread(target=lambda: other.append(Connection(region="us-east-1").session))
    thread.start()
    thread.join()
    assert other[0] is not first.session
    assert other[0].get_component("data_loader") is shared
    # aws.reset() (the endpoint moved) forgets the sessions with the connections.
    aws.reset()
    assert Connection(region="us-east-1").session is not first.session

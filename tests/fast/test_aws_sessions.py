"""Every botocore session Agora makes, PynamoDB's included, shares one data loader (aws.session):
botocore's JSON models are parsed once a process, not once per table connection (cold start); and
the table connections of a thread share one session, and every table's connection one client
(store/base.py)."""

from __future__ import annotations

import threading


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


def test_every_tables_connection_shares_one_client_until_the_endpoint_moves(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # no call is made
    from chalicelib import aws
    from chalicelib.store.tables import all_models

    aws.reset()
    connections = [model._get_connection().connection for model in all_models()]
    assert len(connections) >= 20
    # Made on another thread, the client serves them all (botocore clients are thread-safe).
    made: list = []
    thread = threading.Thread(target=lambda: made.append(connections[0].client))
    thread.start()
    thread.join()
    clients = {id(connection.client) for connection in connections}
    assert clients == {id(made[0])}
    assert made[0].meta.endpoint_url == "http://127.0.0.1:1"
    assert made[0].meta.config.max_pool_connections == 50
    assert made[0].meta.config.connect_timeout == 2 and made[0].meta.config.read_timeout == 5

    # A shared client whose credentials came back empty is made again, as PynamoDB does, for the
    # connections that ask next.
    made[0]._request_signer._credentials = None
    for model in all_models():
        model._connection = None  # connections that have not asked for a client yet
    later = [model._get_connection().connection for model in all_models()]
    again = later[0].client
    assert again is not made[0] and again._request_signer._credentials is not None
    assert {id(connection.client) for connection in later} == {id(again)}

    # aws.reset() (the endpoint moved) forgets the client with the connections.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    aws.reset()
    moved = {model._get_connection().connection.client for model in all_models()}
    assert len(moved) == 1 and moved.pop().meta.endpoint_url == "http://127.0.0.1:2"
    aws.reset()


def test_a_connection_with_extra_headers_keeps_a_client_of_its_own(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    from pynamodb.connection import Connection

    from chalicelib import aws
    from chalicelib.store import base  # noqa: F401  (wires PynamoDB's clients)

    aws.reset()
    plain, other = Connection(region="us-east-1"), Connection(region="us-east-1")
    headed = Connection(region="us-east-1", extra_headers={"X-Trace": "1"})
    assert plain.client is other.client
    assert headed.client is not plain.client
    aws.reset()

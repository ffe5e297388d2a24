"""The embedded AWS remembers which of moto's backends serves each host (agora_local/embedded_aws.py
`remember_each_hosts_backend`): the same backend as released moto finds, found once."""

from __future__ import annotations

import os

import pytest

HOSTS = [
    None,
    "moto_api",
    "dynamodb",
    "dynamodbstreams",
    "kms.us-east-1.amazonaws.com",
    "sqs.us-east-1.amazonaws.com",
    "email.us-east-1.amazonaws.com",
    "sesv2",
    "s3.amazonaws.com",
    "cloudformation.us-east-1.amazonaws.com",
    "events.us-east-1.amazonaws.com",
    "monitoring.us-east-1.amazonaws.com",
    "nothing.example.org",
]


def test_each_host_gets_released_motos_backend_and_the_listing_is_read_once(monkeypatch):
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from agora_local.embedded_aws import remember_each_hosts_backend

    released = DomainDispatcherApplication(create_backend_app)
    remember_each_hosts_backend()
    patched = DomainDispatcherApplication.get_backend_for_host
    remember_each_hosts_backend()  # idempotent: still one layer
    assert DomainDispatcherApplication.get_backend_for_host is patched
    find = patched.__closure__[0].cell_contents  # released moto's method
    expected = {host: find(released, host) for host in HOSTS}
    assert expected["dynamodb"] == "dynamodb" and expected["kms.us-east-1.amazonaws.com"] == "kms"

    dispatcher = DomainDispatcherApplication(create_backend_app)
    assert {host: dispatcher.get_backend_for_host(host) for host in HOSTS} == expected

    # Asked again, a known host is answered without reading moto's folder.
    def no_listing(path):
        raise AssertionError(f"moto's folder listed again: {path}")

    monkeypatch.setattr(os, "listdir", no_listing)
    known = [host for host, backend in expected.items() if backend]
    assert {host: dispatcher.get_backend_for_host(host) for host in known} == {
        host: expected[host] for host in known
    }
    # A host no backend serves is looked for again (and still found by none).
    with pytest.raises(AssertionError, match="listed again"):
        dispatcher.get_backend_for_host("nothing.example.org")

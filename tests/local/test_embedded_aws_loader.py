"""The embedded AWS's own botocore session reads botocore's JSON through the data loader Agora's
sessions share (agora_local/embedded_aws.py): the endpoints file is parsed once a process."""

from __future__ import annotations


def test_the_embedded_aws_shares_agoras_data_loader():
    from moto.core.base_backend import AccountSpecificBackend

    from agora_local.embedded_aws import start_moto_server, stop_moto_server
    from chalicelib import aws
    from tests.support import suite_key_pair

    server = start_moto_server(suite_key_pair())
    try:
        moto_session = AccountSpecificBackend.get_session()._session
        shared = aws.session().get_component("data_loader")
        assert moto_session.get_component("data_loader") is shared
        # moto still finds each service's regions through it.
        assert "us-east-1" in AccountSpecificBackend.get_session().get_available_regions("kms")
    finally:
        stop_moto_server(server)

"""Mail in by push, its settings (CONTRACT §13): each group's `inboundAddress`, and a connector
enabled with no POP3 server, which receives by push and is never polled."""

from __future__ import annotations

import pytest

from chalicelib import deps
from chalicelib.domain.mailboxes import SYSTEM_SCOPE
from tests.fixtures import with_two_groups

POST_SETTINGS = "/api/v1/en_US/connector/email-to-post/{}"
COMMENT_SETTINGS = "/api/v1/en_US/connector/email-to-comment"


@pytest.fixture
def inbound(monkeypatch):
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_MAIL_INBOUND_DOMAIN", "In.Example.ORG")
    reload_settings()
    yield "in.example.org"
    monkeypatch.delenv("AGORA_MAIL_INBOUND_DOMAIN")
    reload_settings()


@pytest.fixture
def people(community, kms_key):
    return with_two_groups(community)


def test_inbound_address_is_the_group_slug_at_the_inbound_domain(api, people, inbound):
    answer = api.get_object(POST_SETTINGS.format(people.garden), people.garden_admin)
    assert answer["inboundAddress"] == "garden@in.example.org"


def test_inbound_address_is_null_without_an_inbound_domain(api, people):
    answer = api.get_object(POST_SETTINGS.format(people.garden), people.garden_admin)
    assert answer["inboundAddress"] is None


def test_inbound_address_is_read_only(api, people, inbound):
    body = {"isEnabled": True, "inboundAddress": "elsewhere@in.example.org"}
    status, answer = api.put(POST_SETTINGS.format(people.garden), people.garden_admin, body)
    assert status == 200
    assert answer["object"]["inboundAddress"] == "garden@in.example.org"


def test_enabled_with_no_server_is_push_only_and_never_polled(api, people, inbound):
    path = POST_SETTINGS.format(people.garden)
    status, answer = api.put(path, people.garden_admin, {"isEnabled": True})
    assert status == 200, answer
    saved = answer["object"]
    assert saved["isEnabled"] is True and saved["serverName"] == ""
    assert saved["nextPollOn"] is None
    assert saved["inboundAddress"] == "garden@in.example.org"
    directory = deps.mailbox_directory()
    # Enabled (its pushed mail is taken), yet no schedule nor `poll-mail` polls it.
    assert deps.mailboxes().get(people.garden).is_enabled is True
    assert list(directory.enabled_mailbox_keys()) == []
    assert list(directory.due_mailbox_keys(_far())) == []


def _far():
    from datetime import UTC, datetime

    return datetime(2999, 1, 1, tzinfo=UTC)


def test_poll_now_of_a_push_only_connector_is_409(api, people, inbound):
    path = POST_SETTINGS.format(people.garden)
    assert api.put(path, people.garden_admin, {"isEnabled": True})[0] == 200
    status, answer = api.post(path + "/poll", people.garden_admin, None)
    assert status == 409 and answer["errors"][0]["key"] == "serverName"
    assert list(deps.mailbox_directory().due_mailbox_keys(_far())) == []


def test_push_only_needs_an_inbound_domain(api, people):
    path = POST_SETTINGS.format(people.garden)
    status, answer = api.put(path, people.garden_admin, {"isEnabled": True})
    assert status == 400 and [e["key"] for e in answer["errors"]] == ["serverName"]
    assert deps.mailboxes().get(people.garden) is None


def test_a_server_account_without_its_server_is_still_400(api, people, inbound):
    path = POST_SETTINGS.format(people.garden)
    body = {"isEnabled": True, "serverUsername": "inbox", "serverPassword": "pw"}
    status, answer = api.put(path, people.garden_admin, body)
    # Not push only: a POP3 connector, and each field it lacks is named.
    assert status == 400 and "serverName" in [e["key"] for e in answer["errors"]]
    assert deps.mailboxes().get(people.garden) is None


def test_push_only_comments_need_an_address_on_the_inbound_domain(api, people, inbound):
    status, answer = api.put(COMMENT_SETTINGS, people.root_admin, {"isEnabled": True})
    assert status == 400 and [e["key"] for e in answer["errors"]] == ["emailAddress"]
    body = {"isEnabled": True, "emailAddress": "replies@in.example.org"}
    status, answer = api.put(COMMENT_SETTINGS, people.root_admin, body)
    assert status == 200 and answer["object"]["emailAddress"] == "replies@in.example.org"
    assert deps.mailboxes().get(SYSTEM_SCOPE).is_enabled is True
    assert list(deps.mailbox_directory().enabled_mailbox_keys()) == []


def test_a_push_only_comments_update_keeping_its_address_reads_the_connector_once(
    api, people, inbound, dynamo_counter
):
    """The address it keeps (none given) is checked against the inbound domain on the read that
    the save needs anyway: such an update costs what one that gives the address again does."""
    body = {"isEnabled": True, "emailAddress": "replies@in.example.org"}
    assert api.put(COMMENT_SETTINGS, people.root_admin, body)[0] == 200
    dynamo_counter.reset()
    assert api.put(COMMENT_SETTINGS, people.root_admin, body)[0] == 200
    giving_the_address = dict(dynamo_counter.requests)
    dynamo_counter.reset()
    status, answer = api.put(COMMENT_SETTINGS, people.root_admin, {"isEnabled": True})
    assert status == 200 and answer["object"]["emailAddress"] == "replies@in.example.org"
    assert dynamo_counter.requests == giving_the_address, dynamo_counter.requests

"""Which POP3 hosts a mailbox may name (CONTRACT §8), with a test resolver: no real DNS."""

from __future__ import annotations

import pytest

from chalicelib.mail.hosts import HostPolicy, HostRefused, refusal

NEVER = [
    "169.254.169.254",  # AWS, GCP and Azure instance metadata
    "fe80::1",
    "fe80::1%eth0",
    "fd00:ec2::254",  # AWS's IPv6 metadata address
    "::ffff:169.254.169.254",  # the same, IPv4-mapped
    "100.100.100.200",  # Alibaba Cloud's
    "0.0.0.0",
    "::",
    # IPv6 forms that carry 169.254.169.254 (or another metadata address) to an IPv4 host:
    "64:ff9b::a9fe:a9fe",  # NAT64
    "64:ff9b::169.254.169.254",
    "2002:a9fe:a9fe::1",  # 6to4
    "::a9fe:a9fe",  # IPv4-compatible
    "::169.254.169.254",
    "64:ff9b::6464:64c8",  # 100.100.100.200 through NAT64
]
PRIVATE = [
    "127.0.0.1",
    "::1",
    "10.1.2.3",
    "172.16.0.9",
    "192.168.1.1",
    "fd12:3456::1",
    "64:ff9b::7f00:1",  # 127.0.0.1 through NAT64
    "2002:a01:203::1",  # 10.1.2.3 through 6to4
    "::10.1.2.3",
    "::ffff:192.168.1.1",
]
PUBLIC = [
    "93.184.215.14",
    "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    "64:ff9b::5db8:d70e",  # 93.184.215.14 through NAT64
    "2002:5db8:d70e::1",
]


@pytest.mark.parametrize("address", NEVER)
@pytest.mark.parametrize("allow_private", [False, True])
def test_link_local_and_metadata_addresses_are_never_allowed(address, allow_private):
    assert refusal(address, allow_private) is not None


@pytest.mark.parametrize("address", PRIVATE)
def test_loopback_and_private_networks_only_when_the_setting_allows(address):
    assert "AGORA_MAIL_ALLOW_PRIVATE_HOSTS" in (refusal(address, False) or "")
    assert refusal(address, True) is None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address):
    assert refusal(address, False) is None


def resolver(table: dict[str, list[str]]):
    return lambda host, port: table.get(host, [])


def test_a_name_is_judged_by_every_address_it_resolves_to():
    policy = HostPolicy(False, resolver({"pop.example.org": ["93.184.215.14", "10.0.0.5"]}))
    with pytest.raises(HostRefused, match="pop.example.org resolves to 10.0.0.5"):
        policy.check_name("pop.example.org", 995)
    with pytest.raises(HostRefused):
        policy.connectable("pop.example.org", 995)


def test_a_name_that_does_not_resolve_is_saved_but_not_connected_to():
    policy = HostPolicy(False, resolver({}))
    policy.check_name("pop.nowhere.example", 995)
    with pytest.raises(HostRefused, match="does not resolve"):
        policy.connectable("pop.nowhere.example", 995)


def test_connecting_goes_to_the_checked_address():
    policy = HostPolicy(False, resolver({"pop.example.org": ["93.184.215.14"]}))
    assert policy.connectable("pop.example.org", 995) == "93.184.215.14"
    assert policy.connectable("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]", 995) == (
        "2606:2800:21f:cb07:6820:80da:af6b:8b2c"
    )


def test_an_embedded_ipv4_address_is_named_in_the_refusal():
    reason = refusal("2002:a9fe:a9fe::1", True) or ""

    assert reason.startswith("2002:a9fe:a9fe::1 (which carries 169.254.169.254) is a link-local")


@pytest.mark.parametrize("address", ["64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::a9fe:a9fe"])
def test_a_name_resolving_to_an_embedded_metadata_address_is_refused_on_save_and_connect(address):
    policy = HostPolicy(True, resolver({"pop.example.org": [address]}))

    with pytest.raises(HostRefused, match="which carries 169.254.169.254"):
        policy.check_name("pop.example.org", 995)
    with pytest.raises(HostRefused, match="which carries 169.254.169.254"):
        policy.connectable("pop.example.org", 995)
    with pytest.raises(HostRefused):
        policy.check_name(f"[{address}]", 995)


def test_a_host_that_does_not_resolve_is_a_dns_failure_in_plain_words():
    from chalicelib.mail.pop3 import MailboxError, Pop3Mailbox
    from chalicelib.services.mailboxes import poll_failure

    policy = HostPolicy(False, resolver({}))
    with pytest.raises(MailboxError) as raised:
        Pop3Mailbox("pop.nowhere.example", 995, "u", "secret", is_ssl=True, hosts=policy)

    reason, message = poll_failure(raised.value, None)
    assert (raised.value.reason, reason) == ("dns", "dns")
    assert message.startswith("The mail server's name could not be found: check the server name.")
    assert "pop.nowhere.example does not resolve to any address" in message
    assert "private" not in message and "refused" not in message


# Every IPv6 embedding CONTRACT §8 names, each carrying a link-local (metadata) and a private
# IPv4 address: (link-local form, private form).
EMBEDDINGS = {
    "IPv4-mapped ::ffff:0:0/96": ("::ffff:a9fe:a9fe", "::ffff:a01:203"),
    "SIIT ::ffff:0:0:0/96": ("::ffff:0:a9fe:a9fe", "::ffff:0:a01:203"),
    "IPv4-compatible ::/96": ("::a9fe:a9fe", "::a01:203"),
    "NAT64 64:ff9b::/96": ("64:ff9b::a9fe:a9fe", "64:ff9b::a01:203"),
    "local-use NAT64 64:ff9b:1::/48, at /96": ("64:ff9b:1::a9fe:a9fe", "64:ff9b:1::a01:203"),
    # RFC 6052 §2.2: after a /64, /56 or /48 prefix the IPv4 address skips bits 64-71.
    "local-use NAT64, at /64": ("64:ff9b:1:0:a9:fea9:fe00:0", "64:ff9b:1:0:a:102:300:0"),
    "local-use NAT64, at /56": ("64:ff9b:1:a9:fe:a9fe::", "64:ff9b:1:a:1:203::"),
    "local-use NAT64, at /48": ("64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1:a01:2:300::"),
    "6to4 2002::/16": ("2002:a9fe:a9fe::1", "2002:a01:203::1"),
    # Teredo: server 93.184.215.14, client XOR 0xffffffff (RFC 4380 §4).
    "Teredo 2001::/32": ("2001:0:5db8:d70e::5601:5601", "2001:0:5db8:d70e::f5fe:fdfc"),
}


@pytest.mark.parametrize("address", [link for link, _ in EMBEDDINGS.values()], ids=EMBEDDINGS)
@pytest.mark.parametrize("allow_private", [False, True])
def test_every_embedding_of_a_link_local_address_is_never_allowed(address, allow_private):
    reason = refusal(address, allow_private) or ""

    assert reason == (
        f"{address} (which carries 169.254.169.254) is a link-local or cloud metadata address, "
        "never a mail server"
    )


@pytest.mark.parametrize("address", [private for _, private in EMBEDDINGS.values()], ids=EMBEDDINGS)
def test_every_embedding_of_a_private_address_is_private(address):
    reason = refusal(address, False) or ""

    if address.startswith("64:ff9b:1:"):  # read at every prefix length: named by its prefix
        assert reason.startswith(f"{address} is a local-use NAT64 address (64:ff9b:1::/48)")
    else:
        assert reason.startswith(f"{address} (which carries 10.1.2.3) is a loopback or private")
    assert "AGORA_MAIL_ALLOW_PRIVATE_HOSTS" in reason
    assert refusal(address, True) is None


def test_a_local_use_nat64_address_is_never_public():
    """RFC 8215: 64:ff9b:1::/48 is a network's own, whatever public address it carries."""
    assert "AGORA_MAIL_ALLOW_PRIVATE_HOSTS" in (refusal("64:ff9b:1::5db8:d70e", False) or "")
    assert refusal("64:ff9b:1::5db8:d70e", True) is None


def test_a_teredo_address_of_public_ends_is_still_not_global():
    assert "AGORA_MAIL_ALLOW_PRIVATE_HOSTS" in (refusal("2001:0:5db8:d70e::a247:28f1", False) or "")
    assert refusal("2001:0:5db8:d70e::a247:28f1", True) is None

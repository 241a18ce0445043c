"""The outbound-address guard itself: which addresses a user-supplied URL may reach, judged
after resolution, in every form an address can take."""

from __future__ import annotations

import ipaddress

import pytest

from core.outbound import OutboundRefused, check, networks, post, resolve

pytestmark = pytest.mark.security


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.5", "a private, reserved or unspecified address"),
        ("172.16.3.4", "a private, reserved or unspecified address"),
        ("192.168.1.1", "a private, reserved or unspecified address"),
        ("fd12:3456::1", "a private, reserved or unspecified address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("224.0.0.251", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "a private, reserved or unspecified address"),  # noqa: S104 - data
        ("::", "a private, reserved or unspecified address"),
        ("240.0.0.1", "a private, reserved or unspecified address"),
        ("192.0.2.10", "a private, reserved or unspecified address"),
        # IPv6 forms carrying an IPv4 address are judged by it.
        ("::ffff:127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "a cloud metadata address"),
        ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),
        ("2002:7f00:1::1", "a loopback address"),
        ("::7f00:1", "a loopback address"),
    ],
)
def test_it_refuses_addresses_that_are_not_public(address: str, reason: str) -> None:
    with pytest.raises(OutboundRefused) as refused:
        check(ipaddress.ip_address(address))
    assert str(refused.value).endswith(f"is {reason}")


@pytest.mark.parametrize("address", ["8.8.8.8", "142.250.74.42", "2001:4860:4860::8888"])
def test_it_lets_public_addresses_through(address: str) -> None:
    check(ipaddress.ip_address(address))


def test_an_operator_can_open_a_named_network() -> None:
    check(ipaddress.ip_address("10.1.2.3"), networks(["10.1.0.0/16"]))
    with pytest.raises(OutboundRefused):
        check(ipaddress.ip_address("10.2.0.1"), networks(["10.1.0.0/16"]))


def test_a_name_is_judged_by_what_it_resolves_to() -> None:
    with pytest.raises(OutboundRefused, match="is a loopback address"):
        resolve("localhost", 443)


def test_a_post_to_a_refused_address_sends_nothing() -> None:
    with pytest.raises(OutboundRefused):
        post("http://127.0.0.1:9/token", b"x", {}, timeout=1, max_bytes=10)
    with pytest.raises(OutboundRefused, match="only http"):
        post("file:///etc/passwd", b"x", {}, timeout=1, max_bytes=10)

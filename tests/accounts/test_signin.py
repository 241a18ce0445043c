"""The sign-in throttle's address: one subscriber's IPv6 network is one address, and an
IPv4-mapped IPv6 address is its IPv4 address."""

from __future__ import annotations

import pytest

from accounts.signin import address_key


@pytest.mark.parametrize(
    ("seen", "counted"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("unix-socket", "unix-socket"),
    ],
)
def test_an_address_is_counted_by_its_network(seen: str, counted: str) -> None:
    assert address_key(seen) == counted


def test_two_networks_are_two_addresses() -> None:
    assert address_key("2001:db8:1:2::1") != address_key("2001:db8:1:3::1")

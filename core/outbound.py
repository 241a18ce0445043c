"""The outbound-address guard: every request Momor makes to an address a user supplied goes
through here (the token endpoint of a saved Vertex service account, the organizations' webhook
endpoints).

An address is refused unless it is a public unicast address: loopback, private, link-local,
carrier-grade NAT, multicast, reserved, unspecified and documentation ranges are refused, cloud
metadata addresses by name, and IPv6 forms that carry an IPv4 address (mapped, compatible,
6to4, NAT64) are judged by the IPv4 address they carry. A host name is resolved once and every
address it resolves to is checked; the connection is then made to a checked address (the name
still used for TLS and Host), so a name that resolves differently a moment later (DNS
rebinding) cannot send the request elsewhere. Redirects are never followed. `allowed` lets an
operator open named networks (`MOMOR_OUTBOUND_ALLOW`), such as an egress proxy's.

This module holds no Django: its callers pass the operator's settings in."""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class OutboundRefused(Exception):
    """The address may not be called; the message says why, never what it answered."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def refusal(address: Address) -> str | None:
    """Why this address may not be called, or None when it is a public unicast address."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return refusal(embedded)
    if address in METADATA:
        return "a cloud metadata address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address in CGNAT:
        return "a carrier-grade NAT address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if not address.is_global:
        return "a private, reserved or unspecified address"
    return None


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address) or address.is_loopback:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in (*NAT64, IPV4_COMPATIBLE)) and int(address) > 0xFFFF:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def check(address: Address, allowed: Iterable[Network] = ()) -> None:
    """Raise OutboundRefused unless the address may be called."""
    if any(address in network for network in allowed):
        return
    reason = refusal(address)
    if reason is not None:
        raise OutboundRefused(f"{address} is {reason}")


def resolve(host: str, port: int, allowed: Iterable[Network] = ()) -> list[Address]:
    """Every address `host` resolves to, each checked; refused if any one is refused."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundRefused(f"{host} does not resolve") from exc
    addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0])) for info in found))
    allowed = tuple(allowed)
    for address in addresses:
        check(address, allowed)
    return addresses


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    max_bytes: int,
    allowed: Iterable[Network] = (),
) -> Reply:
    """POST to `url` through the guard: no redirect followed, at most `max_bytes` of answer
    read. Raises OutboundRefused, or OSError / http.client.HTTPException when the exchange
    fails."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise OutboundRefused("only http(s) URLs with a host may be called")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = resolve(parts.hostname, port, allowed)[0]
    connection = _connection(parts.scheme, parts.hostname, port, timeout)
    # The connection goes to the address checked above, whatever the name resolves to now.
    connection._create_connection = lambda _, timeout, source: socket.create_connection(  # type: ignore[attr-defined]  # http.client's private hook, not in typeshed
        (str(address), port), timeout, source
    )
    try:
        path = parts.path or "/"
        connection.request("POST", f"{path}?{parts.query}" if parts.query else path, body, headers)
        response = connection.getresponse()
        return Reply(response.status, dict(response.getheaders()), response.read(max_bytes))
    finally:
        connection.close()


def _connection(scheme: str, host: str, port: int, timeout: float) -> http.client.HTTPConnection:
    if scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The operator's allowed networks (CIDR notation); raises ValueError on a bad one."""
    return tuple(ipaddress.ip_network(value.strip(), strict=False) for value in values)

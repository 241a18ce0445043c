"""A domain's own verification: its TXT records, read from the system's resolvers, or from
MOMOR_DNS_NAMESERVERS (`host` or `host:port`, comma-separated) when set. A name that does not
exist, has no TXT record or does not answer in time has none."""

from __future__ import annotations

import dns.exception
import dns.resolver
from django.conf import settings

TIMEOUT_SECONDS = 5.0


def txt_records(name: str) -> list[str]:
    try:
        answer = _resolver().resolve(name, "TXT", lifetime=TIMEOUT_SECONDS)
    except dns.exception.DNSException:
        return []
    return [b"".join(record.strings).decode(errors="replace") for record in answer]


def _resolver() -> dns.resolver.Resolver:
    servers: list[str] = settings.MOMOR_DNS_NAMESERVERS
    if not servers:
        return dns.resolver.Resolver()
    resolver = dns.resolver.Resolver(configure=False)
    places = [_address_and_port(server) for server in servers]
    resolver.nameservers = [address for address, _ in places]
    resolver.nameserver_ports = dict(places)
    return resolver


def _address_and_port(server: str) -> tuple[str, int]:
    """`192.0.2.1`, `192.0.2.1:5353`, `[2001:db8::1]:5353` or `2001:db8::1`."""
    if server.startswith("["):
        address, _, port = server[1:].partition("]:")
        return address.rstrip("]"), int(port or 53)
    if server.count(":") == 1:
        address, port = server.split(":")
        return address, int(port)
    return server, 53

"""A DNS server on loopback (UDP) that answers TXT questions from the records a test gives it
and NXDOMAIN for every other name: the resolver Momor asks when MOMOR_DNS_NAMESERVERS names it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


@dataclass
class DnsServer:
    address: str
    records: dict[str, list[str]] = field(default_factory=dict)
    """TXT values by name (lowercase, without the trailing dot)."""
    asked: list[str] = field(default_factory=list)

    def answer(self, wire: bytes) -> bytes:
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().rstrip(".").lower()
        self.asked.append(name)
        values = self.records.get(name)
        if question.rdtype == dns.rdatatype.TXT and values:
            quoted = [f'"{value}"' for value in values]
            response.answer.append(
                dns.rrset.from_text_list(question.name, 60, dns.rdataclass.IN, "TXT", quoted)
            )
        elif name not in self.records:
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()


@contextmanager
def dns_server() -> Iterator[DnsServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    server = DnsServer(f"127.0.0.1:{sock.getsockname()[1]}")
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                wire, peer = sock.recvfrom(4096)
            except TimeoutError:
                continue
            sock.sendto(server.answer(wire), peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(2)
        sock.close()

"""Momor's HTTP/1.1 client for providers, against real servers on loopback that answer with
exactly the bytes each test writes: what it sends, the answers it reads (sized, chunked,
delimited by the close, compressed), the connections it keeps, and every way a provider can
break an exchange."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gateway.upstream.http1_client import HIGH_WATER, Http1Client
from gateway.upstream.interface import UpstreamError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"


@dataclass
class Provider:
    """A loopback server: each connection is handed to `answer`; what was asked is kept."""

    answer: Handler
    url: str = ""
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


async def read_request(reader: asyncio.StreamReader, provider: Provider) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    request = head + await reader.readexactly(length)
    provider.requests.append(request)
    return request


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Provider]]]:
    servers: list[asyncio.Server] = []

    async def start(answer: Handler) -> Provider:
        provider = Provider(answer)

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            provider.connections += 1
            try:
                await answer(reader, writer)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        servers.append(server)
        provider.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        return provider

    yield start
    for server in servers:
        server.close()


@pytest.fixture
async def client() -> AsyncIterator[Http1Client]:
    made = Http1Client(connect_timeout=2.0)
    yield made
    await made.close()


def sized(body: bytes, *extra: bytes) -> bytes:
    return OK + b"".join(extra) + b"content-length: %d\r\n\r\n" % len(body) + body


async def start_keeping(serve: Callable[[Handler], Awaitable[Provider]], answer: bytes) -> Provider:
    """A provider that answers every request of a connection with `answer`."""

    async def each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader, provider)
            writer.write(answer)
            await writer.drain()

    provider = await serve(each)
    return provider


async def test_it_writes_one_post_with_the_callers_headers_and_body(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    provider = await start_keeping(serve, sized(b"{}"))
    port = provider.url.split(":")[2].split("/")[0]
    response = await client.send(
        f"{provider.url}/chat/completions?api-version=1",
        {"authorization": "Bearer sk-test", "content-type": "application/json"},
        b'{"model":"m"}',
        5.0,
    )
    assert (response.status_code, await response.read(5.0)) == (200, b"{}")
    await response.close()
    assert provider.requests == [
        b"POST /v1/chat/completions?api-version=1 HTTP/1.1\r\n"
        b"host: 127.0.0.1:" + port.encode() + b"\r\n"
        b"authorization: Bearer sk-test\r\ncontent-type: application/json\r\n"
        b'user-agent: Momor\r\ncontent-length: 13\r\n\r\n{"model":"m"}'
    ]


async def test_calls_one_after_another_share_one_kept_alive_connection(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    provider = await start_keeping(serve, sized(b'{"n":1}'))
    for _ in range(5):
        response = await client.send(provider.url, {}, b"{}", 5.0)
        assert await response.read(5.0) == b'{"n":1}'
        await response.close()
    assert (provider.connections, len(provider.requests)) == (1, 5)


async def test_calls_at_once_each_get_a_connection_and_their_own_answer(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader, provider)
            writer.write(sized(request.rsplit(b"\r\n\r\n", 1)[1]))
            await writer.drain()

    provider = await serve(echo)

    async def one(n: int) -> bytes:
        response = await client.send(provider.url, {}, b'{"n":%d}' % n, 5.0)
        try:
            return await response.read(5.0)
        finally:
            await response.close()

    assert await asyncio.gather(*(one(n) for n in range(20))) == [
        b'{"n":%d}' % n for n in range(20)
    ]


async def test_a_chunked_stream_arrives_as_it_is_written(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    gate = asyncio.Event()

    async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(OK + b"transfer-encoding: chunked\r\n\r\n5\r\ndata:\r\n")
        await writer.drain()
        await gate.wait()
        writer.write(b"3\r\n 1\n\r\n0\r\n\r\n")
        await writer.drain()

    provider = await serve(stream)
    response = await client.send(provider.url, {}, b"{}", 5.0)
    pieces = response.chunks(5.0)
    assert await anext(pieces) == b"data:"
    gate.set()
    assert [piece async for piece in pieces] == [b" 1\n"]


async def test_an_answer_without_a_length_ends_with_the_connection(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(OK + b"connection: close\r\n\r\n" + b'{"whole":true}')
        await writer.drain()

    provider = await serve(until_close)
    response = await client.send(provider.url, {}, b"{}", 5.0)
    assert await response.read(5.0) == b'{"whole":true}'
    await response.close()
    again = await client.send(provider.url, {}, b"{}", 5.0)
    assert await again.read(5.0) == b'{"whole":true}'
    assert provider.connections == 2


async def test_a_compressed_answer_is_read_as_the_provider_meant_it(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    provider = await start_keeping(
        serve, sized(gzip.compress(b'{"z":1}'), b"content-encoding: gzip\r\n")
    )
    response = await client.send(provider.url, {}, b"{}", 5.0)
    assert await response.read(5.0) == b'{"z":1}'


async def test_a_large_answer_read_slowly_arrives_whole(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    big = bytes(range(256)) * (HIGH_WATER // 32)  # eight times the high-water mark
    provider = await start_keeping(serve, sized(big))
    response = await client.send(provider.url, {}, b"{}", 5.0)
    got = bytearray()
    async for piece in response.chunks(5.0):
        got += piece
        await asyncio.sleep(0.001)
    assert bytes(got) == big
    await response.close()
    follow = await client.send(provider.url, {}, b"{}", 5.0)
    assert len(await follow.read(5.0)) == len(big)
    assert provider.connections == 1


async def test_a_provider_that_closes_mid_answer_breaks_the_exchange(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def half(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(OK + b"content-length: 100\r\n\r\n" + b'{"cut":')
        await writer.drain()

    provider = await serve(half)
    response = await client.send(provider.url, {}, b"{}", 5.0)
    with pytest.raises(UpstreamError) as raised:
        await response.read(5.0)
    assert not raised.value.connect


async def test_a_provider_that_closes_before_answering_fails_and_is_not_asked_again(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)

    provider = await serve(silent)
    with pytest.raises(UpstreamError):
        await client.send(provider.url, {}, b"{}", 5.0)
    assert len(provider.requests) == 1


async def test_malformed_bytes_break_the_exchange(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(b"\x00\xffNOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    provider = await serve(garbage)
    with pytest.raises(UpstreamError):
        await client.send(provider.url, {}, b"{}", 5.0)


async def test_a_provider_that_cannot_be_reached_fails_as_a_connect_failure(
    client: Http1Client,
) -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(UpstreamError) as raised:
        await client.send(f"http://127.0.0.1:{port}/v1", {}, b"{}", 5.0)
    assert raised.value.connect


@pytest.mark.parametrize("header", [("x-key", "a\r\nx-injected: 1"), ("bad\nname", "v")])
async def test_a_header_that_would_split_the_request_is_never_sent(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client, header: tuple[str, str]
) -> None:
    provider = await start_keeping(serve, sized(b"{}"))
    with pytest.raises(UpstreamError) as raised:
        await client.send(provider.url, dict([header]), b"{}", 5.0)
    assert raised.value.connect
    assert provider.requests == []


async def test_an_answer_closed_before_its_end_does_not_go_back_to_the_pool(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(OK + b"content-length: 10\r\n\r\nhalf")
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"-rest!")
        await writer.drain()
        await read_request(reader, provider)  # a request on this connection would land here
        writer.write(sized(b"wrong"))

    provider = await serve(slow)
    response = await client.send(provider.url, {}, b"{}", 5.0)
    await response.close()
    follow = await client.send(provider.url, {}, b"{}", 5.0)
    assert await follow.read(5.0) == b"half-rest!"
    assert provider.connections == 2


def certificate(directory: str) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1: its PEM file and its key's."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "provider.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = f"{directory}/cert.pem", f"{directory}/key.pem"
    with open(cert_file, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_file, "wb") as out:
        out.write(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ))  # fmt: skip
    return cert_file, key_file


async def test_an_https_provider_is_called_over_verified_tls(tmp_path: object) -> None:
    cert_file, key_file = certificate(str(tmp_path))
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert_file, key_file)
    provider = Provider(lambda r, w: asyncio.sleep(0))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader, provider)
        writer.write(sized(b'{"tls":true}'))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=served)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    trusting = Http1Client(2.0, tls=ssl.create_default_context(cafile=cert_file))
    default = Http1Client(2.0)
    try:
        response = await trusting.send(url, {}, b"{}", 5.0)
        assert await response.read(5.0) == b'{"tls":true}'
        with pytest.raises(UpstreamError) as refused:  # not signed by a CA the system trusts
            await default.send(url, {}, b"{}", 5.0)
        assert refused.value.connect
        assert len(provider.requests) == 1
    finally:
        await trusting.close()
        await default.close()
        server.close()


async def test_a_provider_silent_past_the_time_limit_fails_and_its_connection_is_dropped(
    serve: Callable[[Handler], Awaitable[Provider]], client: Http1Client
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader, provider)
            if len(provider.requests) == 2:
                writer.write(OK + b"content-length: 4\r\n\r\nhal")
                await writer.drain()
            await asyncio.sleep(3)

    provider = await serve(slow)
    with pytest.raises(TimeoutError):
        await client.send(provider.url, {}, b"{}", 0.2)
    response = await client.send(provider.url, {}, b"{}", 5.0)
    with pytest.raises(TimeoutError):
        await response.read(0.2)
    assert provider.connections == 2

"""The aiohttp client for providers (`MOMOR_UPSTREAM_TRANSPORT=aiohttp`), against a loopback
server that writes exactly the bytes the test gives: an answer whose connection breaks
mid-body still yields every byte received before the break."""

from __future__ import annotations

import asyncio

import pytest

from gateway.upstream.aiohttp_client import AiohttpClient, AiohttpResponse
from gateway.upstream.interface import UpstreamError

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENTS = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n']


async def broken_after_two_events(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(HEAD + b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in EVENTS))
    await writer.drain()
    writer.close()  # no last chunk: the body is cut short


async def test_the_bytes_before_a_broken_body_are_read_even_when_read_after_the_break() -> None:
    server = await asyncio.start_server(broken_after_two_events, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = AiohttpClient()
    try:
        response = await client.send(f"http://127.0.0.1:{port}/v1/chat/completions", {}, b"{}", 5)
        assert isinstance(response, AiohttpResponse)
        async with asyncio.timeout(5):
            while response.raw.content.exception() is None:  # the break is known before a read
                await asyncio.sleep(0.01)
        received = b""
        with pytest.raises(UpstreamError):
            async for data in response.chunks(5):
                received += data
        assert received == b"".join(EVENTS)
    finally:
        await client.close()
        server.close()
        await server.wait_closed()

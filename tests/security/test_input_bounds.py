"""Unbounded input, over real HTTP to Momor run as the README says (uvicorn) and under Daphne
(DESIGN.md's reference server), byte by byte on a bare socket: a declared length past a route's
limit is refused before the body is read (an `Expect: 100-continue` gets the 413, never a 100),
a body growing past it is cut off while it arrives, a body that never ends gets 408 within the
time allowed; websocket messages are bounded too."""

from __future__ import annotations

import itertools
from decimal import Decimal

import httpx
import pytest
from django.conf import settings
from django.test import Client
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.conftest import make_key, make_org, make_user
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import build_catalog
from tests.real_server import RealServer, chunk, exchange
from tests.security.conftest import TIMEOUT

pytestmark = pytest.mark.security

MIB, KIB = 2**20, 2**10
ROUTES = [
    ("/v1/chat/completions", 30 * MIB, "application/json"),
    ("/accounts/login/", 16 * KIB, "application/x-www-form-urlencoded"),
    ("/admin/login/", 16 * KIB, "application/x-www-form-urlencoded"),
    ("/api/manage/keys/", 64 * KIB, "application/json"),
    ("/provider-keys/", 64 * KIB, "application/x-www-form-urlencoded"),
    ("/admin/gateway/provider/add/", MIB, "application/x-www-form-urlencoded"),
]


def head(path: str, content_type: str, framing: bytes) -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s\r\n" % (
        path.encode(),
        content_type.encode(),
        framing,
    )


def body_of(answer: bytes) -> bytes:
    return answer.partition(b"\r\n\r\n")[2]


@pytest.fixture(params=["uvicorn", "daphne"])
def server(request: pytest.FixtureRequest) -> RealServer:
    """Each server docs/operations.md names, started once per module."""
    found: RealServer = request.getfixturevalue(request.param)
    return found


@pytest.mark.parametrize(("path", "limit", "content_type"), ROUTES)
def test_a_declared_length_past_the_limit_gets_413_instead_of_100_continue(
    server: RealServer, path: str, limit: int, content_type: str
) -> None:
    framing = b"Content-Length: %d\r\nExpect: 100-continue\r\n" % (limit + 1)
    seen = exchange(server, head(path, content_type, framing))
    assert seen.status == 413, seen.answer[:300]
    assert b"100 Continue" not in seen.answer
    assert b'"code":"request_too_large"' in body_of(seen.answer)


@pytest.mark.parametrize(("path", "limit", "content_type"), ROUTES)
def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(
    server: RealServer, path: str, limit: int, content_type: str
) -> None:
    """The client offers 64 times the limit; it gets the 413 long before it has sent it all
    (what it sent past the limit went into the loopback's socket buffers and the server's last
    reads before it answered)."""
    piece = b"x" * (limit // 16)
    parts = itertools.repeat(chunk(piece), 16 * 64)
    seen = exchange(server, head(path, content_type, b"Transfer-Encoding: chunked\r\n"), parts)
    assert seen.status == 413, seen.answer[:300]
    assert limit < seen.sent <= 2 * limit + 16 * MIB
    assert b'"code":"request_too_large"' in body_of(seen.answer)


@pytest.mark.parametrize(("path", "limit", "content_type"), ROUTES[:2])
def test_a_chunked_body_that_never_ends_gets_408(
    server: RealServer, path: str, limit: int, content_type: str
) -> None:
    trickle = itertools.repeat(chunk(b"x"), 100)
    framing = b"Transfer-Encoding: chunked\r\n"
    seen = exchange(server, head(path, content_type, framing), trickle, pause=0.1)
    assert seen.status == 408, seen.answer[:300]
    assert b'"code":"request_timeout"' in body_of(seen.answer)
    assert TIMEOUT <= seen.seconds < TIMEOUT + 8


def test_a_declared_body_that_never_arrives_gets_408(server: RealServer) -> None:
    framing = b"Content-Length: 100\r\n"
    seen = exchange(server, head("/accounts/login/", "text/plain", framing), [b"{"])
    assert seen.status == 408, seen.answer[:300]
    assert seen.seconds < TIMEOUT + 8


def test_a_body_within_the_limit_goes_through(server: RealServer) -> None:
    response = httpx.post(
        f"{server.url}/v1/chat/completions", json={"model": "openai/gpt-5", "pad": "x" * MIB}
    )
    assert response.status_code == 401, response.text  # read whole, then the missing key


@pytest.fixture
def member_feed(uvicorn: RealServer, transactional_db: None, fake: FakeUpstream) -> tuple[str, str]:
    """acme with a catalog on the fake upstream, a key, and alice's session cookie."""
    build_catalog(fake.url)
    org = make_org("acme", credits=Decimal(10))
    key, _ = make_key(org, name="feed")
    client = Client()
    client.force_login(make_user("alice", org, "owner"))
    return key, str(client.cookies[settings.SESSION_COOKIE_NAME].value)


def feed(server: RealServer, session: str) -> ClientConnection:
    return connect(
        f"ws://127.0.0.1:{server.port}/ws/generations/",
        additional_headers={
            "Cookie": f"{settings.SESSION_COOKIE_NAME}={session}",
            "Origin": server.url,
        },
        open_timeout=10,
    )


def test_uvicorn_serves_the_live_feed(uvicorn: RealServer, member_feed: tuple[str, str]) -> None:
    key, session = member_feed
    with feed(uvicorn, session) as live:
        answer = httpx.post(
            f"{uvicorn.url}/v1/chat/completions",
            json={"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        message = live.recv(timeout=10)
    assert answer.headers["x-momor-request-id"] in message


def test_a_websocket_message_past_the_limit_closes_the_socket(
    uvicorn: RealServer, member_feed: tuple[str, str]
) -> None:
    _, session = member_feed
    with feed(uvicorn, session) as live:
        live.send("x" * 5000)
        with pytest.raises(ConnectionClosed) as closed:
            live.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_daphne_closes_a_websocket_whose_message_is_past_the_limit(
    daphne: RealServer, member_feed: tuple[str, str]
) -> None:
    """Daphne reads messages up to 1 MiB; Momor closes the socket on one past 4 KiB."""
    _, session = member_feed
    with feed(daphne, session) as live:
        live.send("x" * 5000)
        with pytest.raises(ConnectionClosed) as closed:
            live.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4413

"""A request's URL and headers, over real HTTP to Momor run as the README says (uvicorn) and
under Daphne: a URL past 16 KiB is refused with 414, headers past 16 KiB or past 100 with 431,
before routing or Django, and the server's log never holds the whole value."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.real_server import RealServer, exchange

pytestmark = pytest.mark.security

KIB = 2**10
# uvicorn's default log shows each request's path and query; a run this long is no excerpt.
LONG_RUN = "a" * 9000


def get(server: RealServer, target: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(f"{server.url}{target}", headers=headers, timeout=30)


def assert_refused(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text[:300]
    assert answer.json()["error"]["code"] == code
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert len(answer.headers["x-momor-request-id"]) == 32
    assert len(answer.content) < 1000  # the value is not echoed


@pytest.mark.parametrize(
    "path",
    ["/healthz", "/v1/models", "/v1/generation", "/v1/chat/completions", "/accounts/login/"],
)
def test_uvicorn_refuses_a_url_past_16_kib_with_414(uvicorn: RealServer, path: str) -> None:
    started = time.monotonic()
    answer = get(uvicorn, f"{path}?id={'a' * 40_000}")
    assert_refused(answer, 414, "uri_too_long")
    assert time.monotonic() - started < 2
    assert LONG_RUN not in uvicorn.output()


def test_a_completions_call_past_the_url_bound_gets_the_error_object(uvicorn: RealServer) -> None:
    answer = httpx.post(
        f"{uvicorn.url}/v1/chat/completions?{'a' * 20_000}",
        json={"model": "openai/gpt-5"},
        headers={"authorization": "Bearer sk-momor-nothing"},
        timeout=30,
    )
    assert_refused(answer, 414, "uri_too_long")


def test_uvicorn_answers_a_url_within_the_bound(uvicorn: RealServer) -> None:
    assert get(uvicorn, f"/healthz?{'a' * 15_000}").status_code == 200


@pytest.mark.parametrize("header", ["authorization", "x-title", "cookie"])
def test_uvicorn_refuses_a_1_mib_header_with_431(uvicorn: RealServer, header: str) -> None:
    value = "Bearer " + "a" * 2**20 if header == "authorization" else "a" * 2**20
    started = time.monotonic()
    answer = httpx.post(
        f"{uvicorn.url}/v1/chat/completions",
        json={"model": "openai/gpt-5"},
        headers={header: value},
        timeout=30,
    )
    assert_refused(answer, 431, "request_header_fields_too_large")
    assert time.monotonic() - started < 5
    assert LONG_RUN not in uvicorn.output()


def test_uvicorn_refuses_more_than_100_headers_with_431(uvicorn: RealServer) -> None:
    headers = {f"x-pad-{n}": "x" for n in range(150)}
    assert_refused(get(uvicorn, "/v1/models", headers), 431, "request_header_fields_too_large")


def test_uvicorn_closes_a_websocket_handshake_past_the_bound(uvicorn: RealServer) -> None:
    """uvicorn's websocket parser takes up to 128 headers; Momor closes past 100."""
    pads = "".join(f"X-Pad-{n}: x\r\n" for n in range(110))
    head = (
        "GET /ws/generations/ HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{pads}\r\n"
    )
    assert exchange(uvicorn, head.encode()).status == 403


def test_daphne_refuses_a_url_past_16_kib_before_momor(daphne: RealServer) -> None:
    """Twisted's own answer: a bare 400 and the connection closed, which the client may see
    as a reset once it has sent more than Twisted read (docs/security.md, "Input bounds")."""
    seen = exchange(daphne, b"GET /healthz?%s HTTP/1.1\r\nHost: x\r\n\r\n" % (b"a" * 40_000))
    assert seen.status in (0, 400)
    assert get(daphne, "/healthz").status_code == 200
    assert LONG_RUN not in daphne.output()


def test_daphne_refuses_a_1_mib_header_before_momor(daphne: RealServer) -> None:
    head = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
    assert exchange(daphne, head % (b"a" * 2**20)).status in (0, 400)
    assert get(daphne, "/healthz").status_code == 200


def test_daphne_refuses_more_than_100_headers_with_431(daphne: RealServer) -> None:
    headers = {f"x-pad-{n}": "x" for n in range(150)}
    assert_refused(get(daphne, "/v1/models", headers), 431, "request_header_fields_too_large")

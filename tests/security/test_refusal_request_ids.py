"""Every answer of the completions route carries `X-Momor-Request-Id`, as Momor's reference
says: the refusals the body bounds give while the body is read (413 declared or grown, 408)
included, under uvicorn and under Daphne, whose request class answers them itself."""

from __future__ import annotations

import itertools
import re

import pytest

from tests.real_server import RealServer, chunk, exchange
from tests.security.conftest import TIMEOUT

pytestmark = pytest.mark.security

LIMIT = 30 * 2**20
REQUEST_ID = re.compile(rb"\r\nx-momor-request-id: ([0-9a-f]{32})\r\n", re.IGNORECASE)


@pytest.fixture(params=["uvicorn", "daphne"])
def server(request: pytest.FixtureRequest) -> RealServer:
    found: RealServer = request.getfixturevalue(request.param)
    return found


def head(framing: bytes) -> bytes:
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n%s\r\n" % framing
    )


def request_id(answer: bytes) -> bytes | None:
    found = REQUEST_ID.search(answer.partition(b"\r\n\r\n")[0] + b"\r\n")
    return found.group(1) if found else None


def test_a_declared_length_past_the_limit_gets_its_413_with_a_request_id(
    server: RealServer,
) -> None:
    seen = exchange(server, head(b"Content-Length: %d\r\n" % (LIMIT + 1)))
    assert seen.status == 413, seen.answer[:300]
    assert request_id(seen.answer) is not None, seen.answer[:300]


def test_a_chunked_body_past_the_limit_gets_its_413_with_a_request_id(
    server: RealServer,
) -> None:
    parts = itertools.repeat(chunk(b"x" * (LIMIT // 16)), 16 * 4)
    seen = exchange(server, head(b"Transfer-Encoding: chunked\r\n"), parts)
    assert seen.status == 413, seen.answer[:300]
    assert request_id(seen.answer) is not None, seen.answer[:300]


def test_a_body_that_never_ends_gets_its_408_with_a_request_id(server: RealServer) -> None:
    trickle = itertools.repeat(chunk(b"x"), 100)
    seen = exchange(server, head(b"Transfer-Encoding: chunked\r\n"), trickle, pause=0.1)
    assert seen.status == 408, seen.answer[:300]
    assert seen.seconds < TIMEOUT + 8
    assert request_id(seen.answer) is not None, seen.answer[:300]

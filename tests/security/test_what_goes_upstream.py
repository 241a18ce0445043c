"""What a provider receives: the headers Momor writes for it and nothing of the client's. A
client's Momor key, session cookie, forwarding headers or a key of its own in a provider's
header name never reach the provider; nor does a key-looking field of the body change which
key Momor sends."""

from __future__ import annotations

import httpx
import pytest
from django.conf import settings

from tests.conftest import make_user
from tests.gateway.calls import ask, sent, settle
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World
from tests.gateway.edge.test_session_calls import CSRF, session_cookie

pytestmark = pytest.mark.security

CLIENT_HEADERS = {
    "x-api-key": "sk-ant-client-smuggled-0123456789",
    "api-key": "azure-client-smuggled-0123456789",
    "x-goog-api-key": "AIzaClientSmuggled0123456789",
    "x-forwarded-for": "10.0.0.1",
    "x-internal-token": "internal-0123456789",
    "openai-organization": "org-client",
}
EXPECTED = {"host", "authorization", "content-type", "content-length", "accept",
            "accept-encoding", "user-agent"}  # fmt: skip


def assert_momors_headers_only(world: World, upstream_id: str) -> None:
    headers = sent(world.fake, upstream_id)["headers"]
    assert set(headers) <= EXPECTED, set(headers) - EXPECTED
    assert headers["authorization"] == f"Bearer {MOMOR_UPSTREAM_KEY}"
    for value in CLIENT_HEADERS.values():
        assert value not in str(headers)


def test_a_key_call_sends_none_of_the_clients_headers(world: World) -> None:
    response = world.post(
        ask("openai/gpt-5", api_key="sk-body-smuggled-0123456789"),
        headers={**CLIENT_HEADERS, "cookie": "sessionid=client-session-0123456789"},
    )
    assert response.status_code == 200, response.text
    assert_momors_headers_only(world, "gpt-5")
    assert world.key not in str(sent(world.fake, "gpt-5")["headers"])


def test_a_session_call_sends_neither_cookie_nor_csrf_token(world: World) -> None:
    session = session_cookie(make_user("alice", world.org))
    settle()
    response = httpx.post(
        f"{world.url}/v1/chat/completions",
        json=ask("openai/gpt-5"),
        headers={**CLIENT_HEADERS, "x-csrftoken": CSRF},
        cookies={settings.SESSION_COOKIE_NAME: session, settings.CSRF_COOKIE_NAME: CSRF},
    )
    assert response.status_code == 200, response.text
    assert_momors_headers_only(world, "gpt-5")
    headers = str(sent(world.fake, "gpt-5")["headers"])
    assert session not in headers and CSRF not in headers

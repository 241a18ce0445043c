"""The checks before a call is routed, in the spec's order and words: 415, 413, 400 for a body
that is not a JSON object, 401 for the key, 400 for routing fields; every answer carries
X-Momor-Request-Id."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.utils import timezone

from tests.conftest import make_key
from tests.gateway.calls import (
    HI,
    REQUEST_ID,
    ask,
    error_of,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World

LIMIT = 30 * 1024 * 1024


def raw_post(url: str, headers: dict[str, str], body: bytes = b"") -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", content=body, headers=headers, timeout=30)


def raw_exchange(base_url: str, head: bytes, body_chunks: int = 0) -> bytes:
    """Send a request head (and up to `body_chunks` MiB of chunked body) on a bare socket and
    read whatever the server answers."""
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head)
        try:
            piece = b" " * (1024 * 1024)
            for _ in range(body_chunks):
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        except OSError:
            pass  # the server refused and closed: what it answered is still to read
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
        return answer


# 415


def test_it_refuses_a_body_that_is_not_json_with_415(world: World) -> None:
    response = raw_post(
        world.url, {"authorization": f"Bearer {world.key}", "content-type": "text/plain"}, b"hi"
    )
    error = error_of(response, 415, "unsupported_media_type")
    assert error["type"] == "invalid_request_error"
    assert error["param"] is None


def test_it_refuses_a_missing_content_type_with_415(world: World) -> None:
    response = httpx.post(
        world.url + "/v1/chat/completions",
        content=b'{"model": "openai/gpt-5"}',
        headers={"authorization": f"Bearer {world.key}"},
    )
    error_of(response, 415, "unsupported_media_type")


def test_it_checks_the_content_type_before_the_key(world: World) -> None:
    response = raw_post(world.url, {"content-type": "application/x-www-form-urlencoded"}, b"a=1")
    error_of(response, 415, "unsupported_media_type")


def test_it_takes_json_with_a_charset(world: World) -> None:
    response = raw_post(
        world.url,
        {
            "authorization": f"Bearer {world.key}",
            "content-type": "application/json; charset=utf-8",
        },
        b'{"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]}',
    )
    assert response.status_code == 200, response.text


# 413


def test_it_refuses_a_declared_length_over_30_mib_without_reading_the_body(world: World) -> None:
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (LIMIT + 1)
    )
    answer = raw_exchange(world.url, head)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b'"code":"request_too_large"' in body
    request_ids = [
        line.split(b":", 1)[1].strip().decode()
        for line in headers.split(b"\r\n")
        if line.lower().startswith(b"x-momor-request-id:")
    ]
    assert len(request_ids) == 1 and REQUEST_ID.match(request_ids[0])


def test_it_refuses_a_chunked_body_once_it_passes_30_mib(world: World) -> None:
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    answer = raw_exchange(world.url, head, body_chunks=40)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b'"code":"request_too_large"' in answer


def test_it_answers_413_through_the_sdk_shape(world: World) -> None:
    body = b'{"model":"openai/gpt-5","pad":"' + b"x" * (LIMIT + 10) + b'"}'
    try:
        response = raw_post(
            world.url,
            {"authorization": f"Bearer {world.key}", "content-type": "application/json"},
            body,
        )
    except httpx.HTTPError:
        pytest.skip("the server closed before the client finished sending (allowed)")
    error = error_of(response, 413, "request_too_large")
    assert error["message"] == "The body is larger than 30 MiB."


def test_it_checks_the_content_type_before_the_size(world: World) -> None:
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % (LIMIT + 1)
    )
    answer = raw_exchange(world.url, head)
    assert answer.startswith(b"HTTP/1.1 415 "), answer[:200]
    assert b'"code":"unsupported_media_type"' in answer


# 400: the body


@pytest.mark.parametrize("body", [b"not json", b'{"model": ', b""])
def test_it_refuses_a_body_that_does_not_parse(world: World, body: bytes) -> None:
    response = raw_post(
        world.url,
        {"authorization": f"Bearer {world.key}", "content-type": "application/json"},
        body,
    )
    error = error_of(response, 400, "invalid_value")
    assert error["param"] is None


@pytest.mark.parametrize("body", [b"[1, 2]", b'"a string"', b"42", b"null", b"true"])
def test_it_refuses_a_body_that_is_not_an_object(world: World, body: bytes) -> None:
    response = raw_post(
        world.url,
        {"authorization": f"Bearer {world.key}", "content-type": "application/json"},
        body,
    )
    error_of(response, 400, "invalid_value")


def test_it_checks_the_body_before_the_key(world: World) -> None:
    response = raw_post(world.url, {"content-type": "application/json"}, b"[1]")
    error_of(response, 400, "invalid_value")


# 401


def test_it_refuses_a_missing_key(world: World) -> None:
    response = httpx.post(world.url + "/v1/chat/completions", json=ask())
    error = error_of(response, 401, "invalid_api_key")
    assert error["type"] == "authentication_error"
    assert error["param"] is None


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer not-a-momor-key",
        "Basic dXNlcjpwYXNz",
        "Token {key}",
        "{key}",
    ],
)
def test_it_refuses_a_malformed_authorization(world: World, header: str) -> None:
    response = httpx.post(
        world.url + "/v1/chat/completions",
        json=ask(),
        headers={"authorization": header.format(key=world.key)},
    )
    error = error_of(response, 401, "invalid_api_key")
    assert error["type"] == "authentication_error"


def test_it_refuses_an_unknown_key(world: World) -> None:
    unknown = world.key[:-6] + ("aaaaaa" if not world.key.endswith("aaaaaa") else "bbbbbb")
    error_of(world.post(ask(), key=unknown), 401, "invalid_api_key")


def test_it_refuses_a_revoked_key(world: World) -> None:
    key, row = make_key(world.org, name="revoked")
    row.revoke()
    error_of(world.post(ask(), key=key), 401, "invalid_api_key")


def test_it_refuses_an_expired_key(world: World) -> None:
    key, _ = make_key(world.org, name="old", expires_at=timezone.now() - timedelta(seconds=1))
    error_of(world.post(ask(), key=key), 401, "invalid_api_key")


def test_it_serves_a_key_that_has_not_expired_yet(world: World) -> None:
    key, _ = make_key(world.org, name="fresh", expires_at=timezone.now() + timedelta(days=1))
    assert world.post(ask(), key=key).status_code == 200


def test_it_checks_the_key_before_the_routing_fields(world: World) -> None:
    response = httpx.post(
        world.url + "/v1/chat/completions",
        json=ask(provider={"zdr": "yes"}),
        headers={"authorization": "Bearer nope"},
    )
    error_of(response, 401, "invalid_api_key")


# 400: the routing fields


@pytest.mark.parametrize("zdr", ["yes", "true", 1, 0, None, [], {}])
def test_it_refuses_a_non_boolean_zdr(world: World, zdr: Any) -> None:
    error = error_of(world.post(ask(provider={"zdr": zdr})), 400, "invalid_value")
    assert error["message"] == "'provider.zdr' must be a boolean"
    assert error["type"] == "invalid_request_error"
    assert error["param"] is None


@pytest.mark.parametrize("stream", ["true", 1, None, "false"])
def test_it_refuses_a_non_boolean_stream(world: World, stream: Any) -> None:
    error = error_of(world.post(ask(stream=stream)), 400, "invalid_value")
    assert error["message"] == "'stream' must be a boolean"


@pytest.mark.parametrize("field", ["order", "ignore"])
def test_it_refuses_a_provider_this_deployment_does_not_serve(world: World, field: str) -> None:
    error = error_of(world.post(ask(provider={field: ["openai", "nowhere"]})), 400, "invalid_value")
    assert "nowhere" in error["message"]


@pytest.mark.parametrize("field", ["order", "ignore"])
def test_it_refuses_a_region_this_deployment_does_not_serve(world: World, field: str) -> None:
    error = error_of(world.post(ask(provider={field: ["azure@mars"]})), 400, "invalid_value")
    assert "azure@mars" in error["message"]


@pytest.mark.parametrize("value", ["openai", [1], [None], {"openai": 1}])
@pytest.mark.parametrize("field", ["order", "ignore"])
def test_it_refuses_an_unreadable_provider_list(world: World, field: str, value: Any) -> None:
    error_of(world.post(ask(provider={field: value})), 400, "invalid_value")


@pytest.mark.parametrize("age", ["P999999999Y", "PT99999999999999H", "P" + "9" * 400 + "D"])
def test_it_refuses_a_max_age_past_any_date(world: World, age: str) -> None:
    error = error_of(world.post(ask(provider={"maxAge": age})), 400, "invalid_value")
    assert error["message"].startswith("'provider.maxAge' must be an ISO 8601 duration")


@pytest.mark.parametrize("sort", ["fastest", "PRICE", "", 1])
def test_it_refuses_a_sort_it_does_not_offer(world: World, sort: Any) -> None:
    error_of(world.post(ask(provider={"sort": sort})), 400, "invalid_value")


@pytest.mark.parametrize("sort", ["price", "throughput", "latency", "quality"])
def test_it_takes_each_sort_it_offers(world: World, sort: str) -> None:
    assert world.post(ask(provider={"sort": sort})).status_code == 200


@pytest.mark.parametrize("max_age", ["six months", "P", "180", 180, "P6X", [], "1Y"])
def test_it_refuses_an_unreadable_max_age(world: World, max_age: Any) -> None:
    error_of(world.post(ask(provider={"maxAge": max_age})), 400, "invalid_value")


@pytest.mark.parametrize("deprecated", ["yes", 1])
def test_it_refuses_a_non_boolean_deprecated(world: World, deprecated: Any) -> None:
    error_of(world.post(ask(provider={"deprecated": deprecated})), 400, "invalid_value")


@pytest.mark.parametrize("provider", ["openai", ["openai"], 1, True])
def test_it_refuses_a_provider_field_that_is_not_an_object(world: World, provider: Any) -> None:
    error_of(world.post(ask(provider=provider)), 400, "invalid_value")


def test_it_ignores_provider_options_it_does_not_know(world: World) -> None:
    body = ask(provider={"experimental": 1, "enforce_distillable_text": "maybe", "preferred": []})
    assert world.post(body).status_code == 200


@pytest.mark.parametrize("value", [5, [1], ["openai/gpt-5", 2], {"id": "openai/gpt-5"}, True])
@pytest.mark.parametrize("field", ["model", "models"])
def test_it_refuses_a_model_field_that_is_not_selectors(
    world: World, field: str, value: Any
) -> None:
    body = {"messages": HI, field: value}
    if field == "models":
        body["model"] = "openai/gpt-5"
    error_of(world.post(body), 400, "invalid_value")


@pytest.mark.parametrize("body", [{"messages": HI}, {"model": [], "messages": HI}])
def test_it_refuses_a_call_that_names_no_model(world: World, body: dict[str, Any]) -> None:
    error_of(world.post(body), 400, "invalid_value")


def test_it_routes_on_models_alone(world: World) -> None:
    response = world.post({"models": ["openai/gpt-5-mini"], "messages": HI})
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "openai/gpt-5-mini"


# 404


def test_it_answers_404_with_the_spec_message_for_an_unknown_model(world: World) -> None:
    error = error_of(world.post(ask("claud-sonnet-5")), 404, "model_not_found")
    assert error == {
        "message": "No configured model answers to claud-sonnet-5.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }


def test_it_names_every_selector_when_none_answers(world: World) -> None:
    body = ask(["nobody/here", "tier/nothing"], models="auto-ish")
    error = error_of(world.post(body), 404, "model_not_found")
    assert error["message"] == "No configured model answers to nobody/here, tier/nothing, auto-ish."


# Request ids and aliases


def test_it_gives_every_answer_its_own_request_id(world: World) -> None:
    answers = [
        world.post(ask()),
        world.post(ask("nobody/here")),
        world.post(ask(), key="nope"),
        world.post([1]),
        raw_post(world.url, {"content-type": "text/plain"}, b"x"),
    ]
    ids = [a.headers["x-momor-request-id"] for a in answers]
    assert all(REQUEST_ID.match(i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_it_answers_with_the_request_id_as_the_body_id(world: World) -> None:
    response = world.post(ask())
    assert response.status_code == 200
    assert response.json()["id"] == response.headers["x-momor-request-id"]


@pytest.mark.parametrize("path", ["/models/completions", "/api/v1/chat/completions"])
def test_it_answers_at_its_aliases(world: World, path: str) -> None:
    response = world.post(ask(), path=path)
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "openai/gpt-5"
    error_of(world.post(ask(), path=path, key="nope"), 401, "invalid_api_key")


def test_it_refuses_get(world: World) -> None:
    response = httpx.get(
        world.url + "/v1/chat/completions", headers={"authorization": f"Bearer {world.key}"}
    )
    assert response.status_code == 405
    assert REQUEST_ID.match(response.headers["x-momor-request-id"])

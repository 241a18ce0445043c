"""Fields Momor reads, over real HTTP to Momor run as the README says (uvicorn): the selectors
(`model` and `models`, 64 together, 256 characters each), the provider lists and their names,
maxAge, a generation's id, and JSON nested too deep, on the completions route and the
management API. Each is refused with 400 before any work on it, and no error or record quotes
more than an excerpt of what the client sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest

from accounts.models import KeyKind
from billing.models import Generation
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import build_catalog
from tests.real_server import RealServer

pytestmark = pytest.mark.security

MESSAGES = [{"role": "user", "content": "hi"}]
SMALL = 1000  # an error that quotes no more than an excerpt


# The answers of the calls a test made: the database is emptied after each test only once the
# server has stored the records of those it recorded (a write under the emptying deadlocks).
ANSWERED: list[httpx.Response] = []


@pytest.fixture
def key(uvicorn: RealServer, transactional_db: None, fake: FakeUpstream) -> Iterator[str]:
    """acme with a catalog on the fake upstream and an inference key the server knows."""
    build_catalog(fake.url)
    plain, _ = make_key(make_org("acme", credits=Decimal(10)), name="bounds")
    deadline = time.monotonic() + 10
    while call(uvicorn, plain, {"model": "openai/gpt-5"}).status_code != 200:
        assert time.monotonic() < deadline, "the server never learned the key and catalog"
        time.sleep(0.1)
    yield plain
    for answer in ANSWERED:
        if "x-ratelimit-limit" in answer.headers:  # the caller was known: it is recorded
            stored(answer.headers["x-momor-request-id"])
    ANSWERED.clear()


def stored(request_id: str) -> None:
    deadline = time.monotonic() + 10
    while not Generation.objects.filter(request_id=request_id).exists():
        assert time.monotonic() < deadline, f"call {request_id} was never recorded"
        time.sleep(0.05)


def call(server: RealServer, key: str, fields: dict[str, Any]) -> httpx.Response:
    answer = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=orjson.dumps({"messages": MESSAGES, **fields}),
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
        timeout=60,
    )
    ANSWERED.append(answer)
    return answer


def assert_invalid(answer: httpx.Response, *words: str) -> None:
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == "invalid_value"
    assert error["type"] == "invalid_request_error"
    assert error["param"] is None
    assert len(answer.content) < SMALL
    for word in words:
        assert word in error["message"]


def test_100_000_selectors_are_refused_at_once(uvicorn: RealServer, key: str) -> None:
    started = time.monotonic()
    answer = call(uvicorn, key, {"model": "openai/gpt-5", "models": ["*"] * 100_000})
    assert_invalid(answer, "'models'", "at most 64")
    assert time.monotonic() - started < 3


def test_model_and_models_count_together(uvicorn: RealServer, key: str) -> None:
    answer = call(uvicorn, key, {"model": ["*"] * 40, "models": ["auto"] * 25})
    assert_invalid(answer, "'model' and 'models'", "at most 64", "65")


def test_64_selectors_are_served(uvicorn: RealServer, key: str) -> None:
    answer = call(uvicorn, key, {"model": ["openai/gpt-5"] * 32, "models": ["*"] * 32})
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.parametrize("field", ["model", "models"])
def test_a_selector_past_256_characters_is_refused(
    uvicorn: RealServer, key: str, field: str
) -> None:
    answer = call(uvicorn, key, {"model": "openai/gpt-5", field: ["x" * 257]})
    assert_invalid(answer, f"'{field}'", "256 characters")


def test_a_1_mb_model_name_is_neither_echoed_nor_recorded(uvicorn: RealServer, key: str) -> None:
    answer = call(uvicorn, key, {"model": "m" * 2**20})
    assert_invalid(answer, "'model'")
    record = recorded(uvicorn, key, answer.headers["x-momor-request-id"])
    assert record["status"] == "refused"
    assert len(orjson.dumps(record)) < 4 * SMALL


def test_an_unknown_selector_of_256_characters_is_quoted_in_part(
    uvicorn: RealServer, key: str
) -> None:
    answer = call(uvicorn, key, {"model": ["y" * 256] * 64})
    assert answer.status_code == 404, answer.text[:300]
    assert answer.json()["error"]["code"] == "model_not_found"
    assert "and 56 more" in answer.json()["error"]["message"]
    assert len(answer.content) < 2 * SMALL


@pytest.mark.parametrize("name", ["order", "ignore", "only"])
def test_a_provider_list_past_100_names_is_refused(
    uvicorn: RealServer, key: str, name: str
) -> None:
    answer = call(uvicorn, key, {"model": "openai/gpt-5", "provider": {name: ["openai"] * 101}})
    assert_invalid(answer, f"'provider.{name}'", "at most 100")


@pytest.mark.parametrize("name", ["order", "ignore", "only"])
def test_a_provider_name_of_1_mb_is_not_echoed(uvicorn: RealServer, key: str, name: str) -> None:
    answer = call(uvicorn, key, {"model": "openai/gpt-5", "provider": {name: ["p" * 2**20]}})
    assert_invalid(answer, f"'provider.{name}'", "256 characters")


def test_an_unserved_provider_name_is_quoted_in_part(uvicorn: RealServer, key: str) -> None:
    answer = call(uvicorn, key, {"model": "openai/gpt-5", "provider": {"order": ["q" * 256]}})
    assert_invalid(answer, "'provider.order'", "does not serve", "characters more")


def test_a_max_age_of_1_mb_is_refused(uvicorn: RealServer, key: str) -> None:
    answer = call(uvicorn, key, {"model": "auto", "provider": {"maxAge": "P" + "1" * 2**20}})
    assert_invalid(answer, "'provider.maxAge'")


def test_a_completions_body_nested_60_000_deep_is_a_400(uvicorn: RealServer, key: str) -> None:
    body = b'{"model":"openai/gpt-5","messages":' + b"[" * 60_000 + b"]" * 60_000 + b"}"
    answer = httpx.post(
        f"{uvicorn.url}/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
        timeout=60,
    )
    assert_invalid(answer)


def test_a_generation_id_past_64_characters_is_refused(uvicorn: RealServer, key: str) -> None:
    answer = httpx.get(
        f"{uvicorn.url}/v1/generation",
        params={"id": "g" * 10_000},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert_invalid(answer, "'id'")


@pytest.mark.parametrize("depth", [60_000, 2_000])
def test_the_management_api_answers_json_nested_too_deep_with_400(
    uvicorn: RealServer, transactional_db: None, depth: int
) -> None:
    org = make_org("acme")
    plain, _ = make_key(org, name="admin", kind=KeyKind.MANAGEMENT)
    answer = httpx.post(
        f"{uvicorn.url}/api/manage/keys/",
        content=b"[" * depth + b"]" * min(depth, 2_000),  # within the route's 64 KiB
        headers={"authorization": f"Bearer {plain}", "content-type": "application/json"},
        timeout=30,
    )
    assert answer.status_code == 400, answer.text[:300]
    assert "JSON parse error" in answer.text
    assert "Traceback" not in uvicorn.output()


def recorded(server: RealServer, key: str, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        found = httpx.get(
            f"{server.url}/v1/generation",
            params={"id": request_id},
            headers={"authorization": f"Bearer {key}"},
            timeout=10,
        )
        if found.status_code == 200:
            data: dict[str, Any] = found.json()["data"]
            return data
        assert time.monotonic() < deadline, found.text[:300]
        time.sleep(0.1)

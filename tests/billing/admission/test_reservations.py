"""Reservations that bound the spend: a call reserves the ceiling each candidate's adapter
actually sends (Anthropic's thinking budget included), the model's maximum output where no
ceiling is sent, image and file parts at their API's documented cost per part, at the dearest
candidate; a live stream keeps its reservation; and across two gateway processes on one Redis,
calls that spend their whole ceiling never take the organization below zero."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest

from billing.admission import store
from billing.calls.cost import call_cost, to_units
from billing.calls.records import TokenCounts
from billing.ledger.posting import ledger_sum
from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.models import Model
from tests.billing.conftest import HI, Cluster, World, catalog_current
from tests.conftest import make_key, make_org
from tests.gateway.conftest import model, offer, provider

SONNET = "claude-sonnet-4-5-20250929"
SENT_THINKING = 4096 + 16384  # Anthropic's ceiling with no client ceiling, high effort
IMAGE_URL = "https://example.com/cat.png"
IMAGE_DATA = "data:image/png;base64," + "A" * 4000
PDF_DATA = "data:application/pdf;base64,JVBERi0="
URL_IMAGE = {"type": "image_url", "image_url": {"url": IMAGE_URL}}
DATA_IMAGE = {"type": "image_url", "image_url": {"url": IMAGE_DATA}}
PDF = {"type": "file", "file": {"file_data": PDF_DATA, "filename": "a"}}


def add_claude(world: World) -> None:
    """Claude Sonnet 4.5 on the fake's Anthropic API, thinking by budget."""
    claude = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    sonnet = model("anthropic/claude-sonnet-4-5", released=date(2025, 9, 29))
    offer(sonnet, claude, SONNET, "3", "15", reasoning_efforts=["low", "medium", "high"])


def set_max_output(model_id: str, tokens: int | None) -> None:
    row = Model.objects.get(id=model_id)
    row.max_output_tokens = tokens
    row.save()  # through save, so the gateway's catalog fingerprint moves


def units(prompt: int, completion: int, prompt_price: str, completion_price: str) -> int:
    tokens = TokenCounts(prompt=prompt, completion=completion)
    prices = {"prompt": prompt_price, "completion": completion_price}
    return to_units(call_cost(tokens, prices, "momor"))


def reserved_while_in_flight(world: World, body: dict[str, Any]) -> tuple[int, bytes]:
    """The reservation a call holds while its provider is slow to answer, and its raw body."""
    raw = orjson.dumps(body)
    thread = threading.Thread(target=_post, args=(world, raw))
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not (held := store().open_reservations(world.org.pk, int(time.time() * 1000))):
            assert time.monotonic() < deadline, "the call never held a reservation"
            time.sleep(0.01)
    finally:
        thread.join()
    assert len(held) == 1
    return next(iter(held.values())), raw


def _post(world: World, raw: bytes) -> None:
    headers = {"authorization": f"Bearer {world.key}", "content-type": "application/json"}
    response = httpx.post(world.url + "/v1/chat/completions", content=raw, headers=headers)
    assert response.status_code == 200, response.text


def slow(world: World, upstream_id: str) -> None:
    world.fake.script(upstream_id, delay_first_byte=0.8)


@pytest.fixture
def claude(world: World) -> World:
    add_claude(world)
    catalog_current()
    return world


def test_anthropic_calls_reserve_the_thinking_budget_they_are_sent(claude: World) -> None:
    slow(claude, SONNET)
    body = {"model": "anthropic/claude-sonnet-4-5", "messages": HI, "reasoning_effort": "high"}
    held, raw = reserved_while_in_flight(claude, body)
    assert claude.fake.requests(SONNET)[0]["body"]["max_tokens"] == SENT_THINKING
    assert held == units(len(raw) // 2 + 1, SENT_THINKING, "3", "15")


@pytest.mark.parametrize(
    ("ceiling", "reserved"),
    [({}, 128_000), ({"max_tokens": 500}, 500), ({"max_completion_tokens": 10**6}, 128_000)],
    ids=["no-ceiling", "ceiling-below-the-maximum", "ceiling-above-the-maximum"],
)
def test_openai_calls_reserve_the_ceiling_sent_within_the_models_maximum(
    world: World, ceiling: dict[str, int], reserved: int
) -> None:
    set_max_output("openai/gpt-5-mini", 128_000)
    catalog_current()
    slow(world, "gpt-5-mini")
    held, raw = reserved_while_in_flight(world, {"model": "openai/gpt-5-mini", "messages": HI,
                                                 **ceiling})  # fmt: skip
    assert held == units(len(raw) // 2 + 1, reserved, "0.25", "2")


def test_a_model_without_a_maximum_reserves_the_deployments_default(
    world: World, settings: Any
) -> None:
    settings.MOMOR_RESERVE_COMPLETION_TOKENS = 1234
    slow(world, "mistral-small-latest")
    held, raw = reserved_while_in_flight(world, {"model": "mistral/mistral-small", "messages": HI})
    assert held == units(len(raw) // 2 + 1, 1234, "0.10", "0.30")


def test_image_and_file_parts_reserve_their_documented_cost_per_part(world: World) -> None:
    slow(world, "gpt-5")
    parts = [{"type": "text", "text": "Compare them."}, URL_IMAGE, URL_IMAGE, DATA_IMAGE, PDF]
    body = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": parts}],
            "max_tokens": 10}  # fmt: skip
    held, raw = reserved_while_in_flight(world, body)
    part_bytes = 2 * len(IMAGE_URL) + len(IMAGE_DATA) + len(PDF_DATA)
    # OpenAI: 3,779 tokens an image at most; a PDF up to 100 pages of text and page image.
    prompt = (len(raw) - part_bytes) // 2 + 1 + 3 * 3_779 + 100 * (3_000 + 3_779)
    assert held == units(prompt, 10, "1.25", "10")


def test_the_prompt_never_reserves_more_than_the_context_window(world: World) -> None:
    row = Model.objects.get(id="openai/gpt-5")
    row.context_length = 50_000
    row.save()
    catalog_current()
    slow(world, "gpt-5")
    body = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": [PDF]}],
            "max_tokens": 10}  # fmt: skip
    held, _ = reserved_while_in_flight(world, body)
    assert held == units(50_000, 10, "1.25", "10")


def test_the_reservation_of_a_live_stream_is_renewed_while_it_runs(
    world: World, settings: Any
) -> None:
    settings.MOMOR_RESERVATION_TTL_SECONDS = 3
    world.fake.script("gpt-5-mini", text="one two three four five six seven eight",
                      chunk_delay=0.9)  # fmt: skip
    body = {"model": "openai/gpt-5-mini", "messages": HI, "stream": True, "max_tokens": 50}
    headers = {"authorization": f"Bearer {world.key}"}
    started = time.monotonic()
    with httpx.stream("POST", world.url + "/v1/chat/completions", json=body, headers=headers,
                      timeout=30) as response:  # fmt: skip
        request_id = response.headers["x-momor-request-id"]
        held_at: list[float] = []
        for _ in response.iter_lines():
            if request_id in store().open_reservations(world.org.pk, int(time.time() * 1000)):
                held_at.append(time.monotonic() - started)
    assert max(held_at) > 3 * 2  # twice its time to live, and still held
    assert drain()
    assert store().open_reservations(world.org.pk, int(time.time() * 1000)) == {}


# Across processes


@pytest.fixture
def claude_cluster(world: World, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    add_claude(world)
    catalog_current()
    yield request.getfixturevalue("cluster")


@pytest.mark.celery
@pytest.mark.timeout(300)  # two gateways and a worker start first: 15-60 s each when busy
def test_calls_spending_their_whole_ceiling_never_overspend_across_processes(
    claude_cluster: Cluster,
) -> None:
    """Every call spends all Anthropic is sent (the thinking budget included): reservations
    of that size keep the organization's spend within its credit."""
    initial = Decimal("2.000000000")
    org = make_org("thinkers", credits=initial)
    key, _ = make_key(org, name="deep")
    claude_cluster.world.fake.script(
        SONNET, text="Done.", usage={"input_tokens": 10, "output_tokens": SENT_THINKING},
        delay_first_byte=0.3,
    )  # fmt: skip
    body = {"model": "anthropic/claude-sonnet-4-5", "messages": HI, "reasoning_effort": "high"}
    with ThreadPoolExecutor(max_workers=16) as pool:
        responses = list(pool.map(lambda i: claude_cluster.post(i, body, key=key), range(16)))

    served = [r for r in responses if r.status_code == 200]
    assert {r.status_code for r in responses} == {200, 402}
    each = Decimal(str(served[0].json()["usage"]["cost"]))
    assert each == Decimal(10 * 3 + SENT_THINKING * 15) / 1_000_000
    assert len(served) <= initial // each
    deadline = time.monotonic() + 30
    while Generation.objects.filter(organization=org).count() < len(responses):
        assert time.monotonic() < deadline, "the calls were never all recorded"
        time.sleep(0.1)
    org.refresh_from_db()
    assert org.balance == ledger_sum(org.pk) == initial - each * len(served)
    assert org.balance >= 0
    assert store().open_reservations(org.pk, int(time.time() * 1000)) == {}

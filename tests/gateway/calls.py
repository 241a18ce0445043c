"""Small helpers for the completions endpoint's tests: call bodies, error and stream reading,
and the candidate order of a call as the fake upstream saw it."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import orjson
import pytest

from accounts.models import Organization, SavedKey
from gateway.catalog.snapshot import catalog_fingerprint
from gateway.catalog.state import STATE
from gateway.models import Offering
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import World

HI: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")

# Every upstream id of the `world` catalog, cheapest offering of a model first.
UPSTREAM_IDS = (
    "gpt-5",
    "gpt-5-azure-eu",
    "gpt-5-azure",
    "gpt-5-mini",
    "mistral-small-latest",
    "deepseek-ai/DeepSeek-R1",
    "legacy-1",
)


def settle() -> None:
    """Bring the gateway's in-memory catalog and identities up to the database now.

    The gateway refreshes them every 0.2 s in the tests (MOMOR_REFRESH_SECONDS), so a call made
    right after the catalog changes may still see the old one; and the refresher may have built
    a snapshot while the `world` fixture was half-way through writing its catalog. A refresh
    that was already reading when this one ran lands a moment later; the second look catches it.
    """
    for _ in range(3):
        STATE.refresh_now()
        time.sleep(0.03)
        catalog = STATE.catalog
        if catalog is not None and catalog.fingerprint == catalog_fingerprint():
            return


@pytest.fixture(autouse=True)
def settled_world(world: World) -> None:
    """Every test of a module importing this starts on a gateway that sees the whole world."""
    settle()


def wait_recorded(request_id: str, seconds: float = 5.0) -> None:
    """Wait until a call's record is written. A client that left mid-stream is recorded once the
    gateway notices, which can be after the test's own end: the database must not be emptied
    under that write."""
    from billing.models import Generation
    from billing.recording.hand_off import drain

    deadline = time.monotonic() + seconds
    while not Generation.objects.filter(request_id=request_id).exists():
        assert time.monotonic() < deadline, f"call {request_id} was never recorded"
        drain()
        time.sleep(0.05)


def ask(model: Any = "openai/gpt-5", **fields: Any) -> dict[str, Any]:
    """A call body: `model` and a one-line conversation, with any other fields."""
    return {"model": model, "messages": HI, **fields}


def error_of(response: httpx.Response, status: int, code: str | None) -> dict[str, Any]:
    """The error object of a refusal, after checking its status, code, shape and request id."""
    assert response.status_code == status, response.text
    assert REQUEST_ID.match(response.headers["x-momor-request-id"])
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code
    return error


def events(text: str) -> list[Any]:
    """The data of each server-sent event: chunks as objects, `[DONE]` as the string."""
    found: list[Any] = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            data = block.removeprefix("data: ")
            found.append(data if data == "[DONE]" else orjson.loads(data))
        else:
            assert block == "", f"unexpected SSE block {block!r}"
    return found


def streamed_text(chunks: list[Any], field: str = "content") -> str:
    return "".join(
        choice["delta"].get(field) or ""
        for chunk in chunks
        if isinstance(chunk, dict)
        for choice in chunk.get("choices") or ()
    )


def fail_everywhere(fake: FakeUpstream, status: int = 503) -> None:
    """Every offering of the catalog answers `status`."""
    for upstream_id in {*UPSTREAM_IDS, *Offering.objects.values_list("upstream_id", flat=True)}:
        fake.script(upstream_id, fail={"status": status})


def tried(fake: FakeUpstream) -> list[str]:
    """The upstream ids called so far, in order."""
    return [str(r["model"]) for r in fake.requests()]


def order_of(world: World, body: dict[str, Any], *, key: str | None = None) -> list[str]:
    """The candidate order of a call: every offering fails, so each is tried once in turn."""
    settle()
    fail_everywhere(world.fake)
    response = world.post(body, key=key)
    assert response.status_code == 503, response.text
    return tried(world.fake)


def sent(fake: FakeUpstream, upstream_id: str) -> dict[str, Any]:
    """The one request an upstream id received."""
    calls = fake.requests(upstream_id)
    assert len(calls) == 1, calls
    return calls[0]


def save_key(org: Organization, place: str, secret: str, *, zdr: bool = False) -> SavedKey:
    row = SavedKey(organization=org, provider=place, zdr=zdr)
    row.set_secret(secret)
    row.save()
    return row

"""A finished call's record as the gateway hands it to billing, for tests that hand records off
(or write them to a journal) themselves."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from billing.calls.records import AttemptRecord, CallRecord, TokenCounts

PRICES = {"prompt": "1.25", "completion": "10", "cache_read": "0", "cache_write": "0"}


def a_record(org_id: int, *, attempt_error: str = "", **fields: Any) -> CallRecord:
    """A served call on openai/gpt-5: 1,000 prompt and 100 completion tokens ($0.00225)."""
    tokens = TokenCounts(prompt=1000, completion=100)
    attempt = AttemptRecord(
        position=0, model="openai/gpt-5", provider="openai", region="", upstream_id="gpt-5",
        key_source="momor", prices=PRICES, http_status=200, tokens=tokens, error=attempt_error,
    )  # fmt: skip
    values: dict[str, Any] = {
        "request_id": uuid.uuid4().hex, "organization_id": org_id, "api_key_id": None,
        "user_id": None, "selectors": ["openai/gpt-5"], "streamed": False,
        "created_at": datetime.now(tz=UTC), "status": "success", "model": "openai/gpt-5",
        "provider": "openai", "finish_reason": "stop", "tokens": tokens, "attempts": [attempt],
    }  # fmt: skip
    return CallRecord(**{**values, **fields})


def an_embeddings_record(org_id: int, **fields: Any) -> CallRecord:
    """A served embeddings call on openai/text-embedding-3-small, as the embeddings route
    hands it off: 1,000 prompt tokens ($0.00125), 40 ms upstream, 45 ms in all."""
    tokens = TokenCounts(prompt=1000)
    attempt = AttemptRecord(
        position=0, model="openai/text-embedding-3-small", provider="openai", region="",
        upstream_id="text-embedding-3-small", key_source="momor", prices=PRICES,
        http_status=200, tokens=tokens, latency_ms=40,
    )  # fmt: skip
    values: dict[str, Any] = {
        "api": "embeddings", "model": "openai/text-embedding-3-small",
        "selectors": ["openai/text-embedding-3-small"], "tokens": tokens,
        "attempts": [attempt], "latency_ms": 45, "finish_reason": "",
    }  # fmt: skip
    return a_record(org_id, **{**values, **fields})

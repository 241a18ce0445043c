"""A generation as its owner reads it: who served it, every attempt and what each cost."""

from __future__ import annotations

from typing import Any

from accounts.field_bounds import has_nul
from billing.models import Attempt, Generation
from core.formatting import money


def generation_detail(request_id: str, organization_id: int) -> dict[str, Any] | None:
    """The record of one call of this organization, or None (absent, or someone else's)."""
    if has_nul(request_id):
        return None  # no id holds one, and PostgreSQL compares no text with one
    generation = Generation.objects.filter(
        request_id=request_id, organization_id=organization_id
    ).first()
    if generation is None:
        return None
    return generation_data(generation, list(Attempt.objects.of(generation)))


def generation_data(generation: Generation, attempts: list[Attempt]) -> dict[str, Any]:
    return {
        "id": generation.request_id,
        "created_at": generation.created_at.isoformat(),
        "api": generation.api,
        "model": generation.model or None,
        "provider": generation.provider or None,
        "selectors": generation.selectors,
        "streamed": generation.streamed,
        "status": generation.status,
        "http_status": generation.http_status,
        "error": generation.error or None,
        "finish_reason": generation.finish_reason or None,
        "native_finish_reason": generation.native_finish_reason or None,
        "usage": {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "total_tokens": generation.prompt_tokens + generation.completion_tokens,
            "prompt_tokens_details": {
                "cached_tokens": generation.cached_tokens,
                "cache_write_tokens": generation.cache_write_tokens,
            },
            "completion_tokens_details": {"reasoning_tokens": generation.reasoning_tokens},
            "estimated": generation.usage_estimated,
        },
        "cost": money(generation.cost),
        "charge_capped": generation.charge_capped,
        "prices": generation.prices,
        "latency_ms": generation.latency_ms,
        "first_token_ms": generation.first_token_ms,
        "request_id": generation.client_request_id or None,
        "session_id": generation.session_id or None,
        "app": generation.app or None,
        "referer": generation.referer or None,
        "routing": generation.routing,
        "attempts": [attempt_data(a) for a in attempts],
    }


def attempt_data(attempt: Attempt) -> dict[str, Any]:
    return {
        "position": attempt.position,
        "model": attempt.model,
        "provider": attempt.provider,
        "region": attempt.region or None,
        "upstream_id": attempt.upstream_id,
        "key": attempt.key_source,
        "http_status": attempt.http_status,
        "error": attempt.error or None,
        "latency_ms": attempt.latency_ms,
        "first_token_ms": attempt.first_token_ms,
        "prompt_tokens": attempt.prompt_tokens,
        "completion_tokens": attempt.completion_tokens,
        "cost": money(attempt.cost),
        "prices": attempt.prices,
    }

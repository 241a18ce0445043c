"""Shared pieces of the UI tests: a signed-in test client, and generations recorded straight
into the database."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from accounts.models import ApiKey, Organization
from billing.models import Attempt, Generation
from billing.usage.rollups import rollup_add


def streamed(response: Any) -> str:
    """The whole body of a streamed response (its content is an async iterator, as served
    under ASGI)."""

    async def read() -> bytes:
        return b"".join([part async for part in response.streaming_content])

    return async_to_sync(read)().decode()


def signed_in(user: User, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def make_generation(
    org: Organization,
    *,
    model: str = "openai/gpt-5",
    provider: str = "openai",
    cost: str = "0.001",
    status: str = "success",
    key: ApiKey | None = None,
    created_at: datetime | None = None,
    tokens: tuple[int, int] = (10, 20),
    **fields: Any,
) -> Generation:
    """A stored generation with one attempt, counted in its day's usage; `fields` sets any
    other field of the generation (app, selectors, session_id...)."""
    generation = Generation.objects.create(
        request_id=uuid.uuid4().hex,
        organization=org,
        api_key=key,
        model=model,
        provider=provider,
        status=status,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        cost=Decimal(cost),
        latency_ms=120,
        created_at=created_at or timezone.now(),
        **fields,
    )
    Attempt.objects.create(
        generation=generation,
        position=1,
        model=model,
        provider=provider,
        region="eu",
        upstream_id="gpt-5",
        key_source="momor",
        http_status=200,
        latency_ms=110,
        cost=Decimal(cost),
    )
    rollup_add(generation)
    return generation

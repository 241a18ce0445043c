"""Realistic call records made fast, for benchmarks and demonstrations: generations (and one
attempt each) spread evenly over the past days, oldest first, then rolled up into the daily
usage. PostgreSQL writes them itself from generate_series in batches (no row passes through
Python); SQLite (embedded mode) is given them in bulk inserts of a batch each."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from billing.models import Attempt, Generation
from billing.retention.partitions import partitions_ensure
from billing.usage.rollups import rollups_rebuild

BATCH = 250_000
SQLITE_BATCH = 5_000

# model, provider, USD per million prompt tokens, per million completion tokens
OFFERINGS = (
    ("openai/gpt-5", "openai", 1.25, 10.0),
    ("openai/gpt-5-mini", "openai", 0.25, 2.0),
    ("anthropic/claude-sonnet-4.5", "anthropic", 3.0, 15.0),
    ("anthropic/claude-haiku-4.5", "anthropic", 1.0, 5.0),
    ("google/gemini-2.5-flash", "gemini", 0.3, 2.5),
    ("mistral/mistral-large", "mistral", 2.0, 6.0),
)

_SEED = """
WITH offerings (n, model, provider, prompt_price, completion_price) AS (
    SELECT * FROM unnest(%(n)s::int[], %(models)s::text[], %(providers)s::text[],
                         %(prompt)s::numeric[], %(completion)s::numeric[])
), drawn AS (
    SELECT g,
           %(start)s::timestamptz + (g - 1 + random()) / %(count)s * %(span)s::interval
               AS created_at,
           1 + floor(random() * %(offerings)s)::int AS n,
           (%(keys)s::bigint[])[1 + floor(random() * %(key_count)s)::int] AS api_key_id,
           random() AS fate,
           (50 + random() * 4000)::int AS prompt_tokens,
           (10 + random() * 1000)::int AS completion_tokens,
           (200 + random() * 4000)::int AS latency_ms
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g
), made AS (
    INSERT INTO billing_generation (
        request_id, organization_id, api_key_id, user_id, selectors, model, provider, streamed,
        status, http_status, error, finish_reason, native_finish_reason, prompt_tokens,
        completion_tokens, cached_tokens, cache_write_tokens, reasoning_tokens, usage_estimated,
        cost, prices, latency_ms, first_token_ms, created_at, recorded_at,
        client_request_id, session_id, app, referer, routing, trace_id)
    SELECT %(prefix)s || d.g, %(org)s, d.api_key_id, NULL, jsonb_build_array(o.model),
           o.model, o.provider, d.fate < 0.6,
           CASE WHEN d.fate < 0.97 THEN 'success' ELSE 'failed' END,
           CASE WHEN d.fate < 0.97 THEN 200 ELSE 502 END,
           CASE WHEN d.fate < 0.97 THEN '' ELSE 'upstream answered 502' END,
           CASE WHEN d.fate < 0.97 THEN 'stop' ELSE '' END,
           CASE WHEN d.fate < 0.97 THEN 'stop' ELSE '' END,
           CASE WHEN d.fate < 0.97 THEN d.prompt_tokens ELSE 0 END,
           CASE WHEN d.fate < 0.97 THEN d.completion_tokens ELSE 0 END,
           0, 0, 0, false,
           CASE WHEN d.fate < 0.97 THEN round((d.prompt_tokens * o.prompt_price
               + d.completion_tokens * o.completion_price) / 1000000, 9) ELSE 0 END,
           jsonb_build_object('prompt', o.prompt_price::text,
                              'completion', o.completion_price::text),
           d.latency_ms, d.latency_ms / 4, d.created_at, d.created_at,
           '', '', '', '', '{}'::jsonb, ''
    FROM drawn d JOIN offerings o USING (n)
    RETURNING id, created_at, model, provider, http_status, error, latency_ms, first_token_ms,
              prompt_tokens, completion_tokens, cost, prices
)
INSERT INTO billing_attempt (
    generation_id, created_at, position, model, provider, region, upstream_id, key_source,
    http_status, error, latency_ms, first_token_ms, prompt_tokens, completion_tokens, cost, prices)
SELECT id, created_at, 0, model, provider, '', split_part(model, '/', 2), 'momor', http_status,
       error, latency_ms, first_token_ms, prompt_tokens, completion_tokens, cost, prices
FROM made
"""


def generations_seed(organization_id: int, count: int, days: int, key_ids: list[int]) -> int:
    """Store `count` generations of the organization, made over the last `days` days by its
    keys (`key_ids`; none: calls without a key), and their daily usage; returns the count."""
    end = timezone.now()
    start = end - timedelta(days=days)
    params = _parameters(organization_id, start, days, key_ids)
    if connection.vendor == "postgresql":
        _seed_in_postgresql(params, count, start, end)
    else:
        _seed_in_batches(params, count)
    rollups_rebuild(timezone.localtime(start).date(), timezone.localdate(), organization_id)
    with connection.cursor() as cursor:  # plans for the new rows without waiting on autovacuum
        for table in ("billing_generation", "billing_attempt", "billing_dailyrollup"):
            cursor.execute(f"ANALYZE {table}")
    return count


def _seed_in_postgresql(params: dict[str, Any], count: int, start: datetime, end: datetime) -> None:
    partitions_ensure(start.date(), end.date())
    for first in range(1, count + 1, BATCH):
        last = min(first + BATCH - 1, count)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO off")  # a seed can be run again
            cursor.execute(_SEED, {**params, "first": first, "last": last, "count": count})


def _seed_in_batches(params: dict[str, Any], count: int) -> None:
    """The same draws as `_SEED`, made here and stored a batch per bulk insert."""
    for first in range(1, count + 1, SQLITE_BATCH):
        made = [
            _drawn(params, g, count) for g in range(first, min(first + SQLITE_BATCH, count + 1))
        ]
        with transaction.atomic():
            Generation.objects.bulk_create(made)
            Attempt.objects.bulk_create(_attempt_of(g) for g in made)


def _drawn(params: dict[str, Any], g: int, count: int) -> Generation:
    model, provider, prompt_price, completion_price = random.choice(OFFERINGS)
    served = random.random() < 0.97
    prompt = random.randint(50, 4050) if served else 0
    completion = random.randint(10, 1010) if served else 0
    latency = random.randint(200, 4200)
    cost = Decimal(str(prompt_price)) * prompt + Decimal(str(completion_price)) * completion
    moment = params["start"] + params["span"] * ((g - 1 + random.random()) / count)
    return Generation(
        request_id=f"{params['prefix']}{g}", organization_id=params["org"],
        api_key_id=random.choice(params["keys"]), selectors=[model], model=model,
        provider=provider, streamed=random.random() < 0.6,
        status="success" if served else "failed", http_status=200 if served else 502,
        error="" if served else "upstream answered 502", finish_reason="stop" if served else "",
        native_finish_reason="stop" if served else "", prompt_tokens=prompt,
        completion_tokens=completion, cost=(cost / 1_000_000).quantize(Decimal("1e-9")),
        prices={"prompt": str(prompt_price), "completion": str(completion_price)},
        latency_ms=latency, first_token_ms=latency // 4, created_at=moment,
    )  # fmt: skip


def _attempt_of(generation: Generation) -> Attempt:
    return Attempt(
        generation=generation, created_at=generation.created_at, position=0,
        model=generation.model, provider=generation.provider,
        upstream_id=generation.model.split("/", 1)[1], key_source="momor",
        http_status=generation.http_status, error=generation.error,
        latency_ms=generation.latency_ms, first_token_ms=generation.first_token_ms,
        prompt_tokens=generation.prompt_tokens, completion_tokens=generation.completion_tokens,
        cost=generation.cost, prices=generation.prices,
    )  # fmt: skip


def _parameters(org: int, start: datetime, days: int, key_ids: list[int]) -> dict[str, Any]:
    keys: list[int | None] = list(key_ids) or [None]
    return {
        "n": list(range(1, len(OFFERINGS) + 1)),
        "models": [o[0] for o in OFFERINGS],
        "providers": [o[1] for o in OFFERINGS],
        "prompt": [o[2] for o in OFFERINGS],
        "completion": [o[3] for o in OFFERINGS],
        "offerings": len(OFFERINGS),
        "start": start,
        "span": timedelta(days=days),
        "keys": keys,
        "key_count": len(keys),
        "org": org,
        "prefix": f"seed-{org}-{int(timezone.now().timestamp())}-",
    }

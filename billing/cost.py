"""What a call costs: its provider's token counts at the offering's prices, in Decimal."""

from __future__ import annotations

from decimal import Decimal

from billing.records import TokenCounts

MILLION = Decimal(1_000_000)


def tokens_cost(tokens: TokenCounts, prices: dict[str, str]) -> Decimal:
    """Prompt tokens not read from or written to the cache at the prompt price, cache reads and
    writes at theirs, completion (reasoning included) at the completion price."""
    fresh = max(tokens.prompt - tokens.cached - tokens.cache_write, 0)
    total = (
        fresh * _price(prices, "prompt")
        + tokens.cached * _price(prices, "cache_read", fallback="prompt")
        + tokens.cache_write * _price(prices, "cache_write", fallback="prompt")
        + tokens.completion * _price(prices, "completion")
    )
    return total / MILLION


def _price(prices: dict[str, str], name: str, fallback: str | None = None) -> Decimal:
    value = Decimal(prices.get(name) or 0)
    if value == 0 and fallback is not None:
        return Decimal(prices.get(fallback) or 0)
    return value

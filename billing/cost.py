"""What a call costs: its provider's token counts at the offering's prices, in Decimal; on the
organization's own saved key, the operator's BYOK fee of that (nothing by default)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from django.conf import settings

from billing.records import TokenCounts

MILLION = Decimal(1_000_000)
NANO = Decimal("0.000000001")


def tokens_cost(tokens: TokenCounts, prices: dict[str, str]) -> Decimal:
    """Prompt tokens not read from or written to the cache at the prompt price, cache reads and
    writes at theirs, completion (reasoning included) at the completion price."""
    prompt, completion = _parts(tokens, prices)
    return _usd(prompt + completion)


def tokens_cost_parts(
    tokens: TokenCounts, prices: dict[str, str]
) -> tuple[Decimal, Decimal, Decimal]:
    """`tokens_cost`, then its prompt part (cache reads and writes included) and its completion
    part, each rounded on its own."""
    prompt, completion = _parts(tokens, prices)
    return _usd(prompt + completion), _usd(prompt), _usd(completion)


def _parts(tokens: TokenCounts, prices: dict[str, str]) -> tuple[Decimal, Decimal]:
    """The prompt and completion parts, in USD times a million tokens."""
    fresh = max(tokens.prompt - tokens.cached - tokens.cache_write, 0)
    prompt = (
        fresh * _price(prices, "prompt")
        + tokens.cached * _price(prices, "cache_read", fallback="prompt")
        + tokens.cache_write * _price(prices, "cache_write", fallback="prompt")
    )
    return prompt, tokens.completion * _price(prices, "completion")


def _usd(per_million: Decimal) -> Decimal:
    return (per_million / MILLION).quantize(NANO, rounding=ROUND_HALF_UP)


def call_cost(tokens: TokenCounts, prices: dict[str, str], key_source: str) -> Decimal:
    """What the organization is charged for a call served on this key."""
    return charged(tokens_cost(tokens, prices), key_source)


def charged(cost: Decimal, key_source: str) -> Decimal:
    """What the organization is charged for tokens costing `cost` on this key."""
    if key_source == "own":
        return (cost * byok_fee()).quantize(NANO, rounding=ROUND_HALF_UP)
    return cost


def byok_fee() -> Decimal:
    return Decimal(settings.MOMOR_BYOK_FEE or "0")


def _price(prices: dict[str, str], name: str, fallback: str | None = None) -> Decimal:
    value = _decimal(prices.get(name) or 0)
    if value == 0 and fallback is not None:
        return _decimal(prices.get(fallback) or 0)
    return value


@lru_cache(maxsize=4096)
def _decimal(price: str | int | float) -> Decimal:
    """A price as records write it (a string), parsed once."""
    return Decimal(price)


def to_units(amount: Decimal) -> int:
    """USD as whole nano-dollars, the unit of the admission counters."""
    return int((amount / NANO).to_integral_value(rounding=ROUND_HALF_UP))


def from_units(units: int) -> Decimal:
    return (Decimal(units) * NANO).quantize(NANO)


def money(amount: Decimal) -> str:
    """USD as shown in JSON: fixed-point, never exponent notation (`str` of a zero with nine
    places is "0E-9")."""
    return format(amount, "f")

"""What a call costs: its provider's token counts at the offering's prices, in Decimal; on the
organization's own saved key, the operator's BYOK fee of that (nothing by default).

No price, fee or cost is ever below zero here: a price below zero (a row written before the
catalog's rules, or behind the admin's back) counts as zero, so that no call is credited and
no reservation below zero reaches admission, whose counters cannot read one."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from django.conf import settings

from billing.calls.records import TokenCounts

MILLION = Decimal(1_000_000)
NANO = Decimal("0.000000001")
ZERO = Decimal(0)


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
    prompt, completion, cache_read, cache_write = _prices(
        prices.get("prompt"), prices.get("completion"),
        prices.get("cache_read"), prices.get("cache_write"),
    )  # fmt: skip
    fresh = max(tokens.prompt - tokens.cached - tokens.cache_write, 0)
    spent = fresh * prompt + tokens.cached * cache_read + tokens.cache_write * cache_write
    return spent, tokens.completion * completion


def _usd(per_million: Decimal) -> Decimal:
    return (per_million / MILLION).quantize(NANO, rounding=ROUND_HALF_UP)


def call_cost(
    tokens: TokenCounts, prices: dict[str, str], key_source: str, fee: str = ""
) -> Decimal:
    """What the organization is charged for a call served on this key; `fee`: the BYOK fee
    the call was made under (empty: the one in force)."""
    return charged(tokens_cost(tokens, prices), key_source, fee)


def charged(cost: Decimal, key_source: str, fee: str = "") -> Decimal:
    """What the organization is charged for tokens costing `cost` on this key."""
    if key_source == "own":
        rate = floor(Decimal(fee)) if fee else byok_fee()
        return (cost * rate).quantize(NANO, rounding=ROUND_HALF_UP)
    return cost


def byok_fee() -> Decimal:
    """The BYOK fee in force."""
    return floor(Decimal(settings.MOMOR_BYOK_FEE or "0"))


def floor(amount: Decimal) -> Decimal:
    """The amount, or zero where it is below zero."""
    return amount if amount >= 0 else ZERO


@lru_cache(maxsize=4096)
def _prices(*prices: str | int | float | None) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    """A record's prices (strings) as Decimals, parsed once: prompt, completion, and the cache
    read and write prices, which are the prompt's where the catalog gives none (or 0)."""
    prompt, completion, cache_read, cache_write = (floor(Decimal(p or 0)) for p in prices)
    return prompt, completion, cache_read or prompt, cache_write or prompt


def to_units(amount: Decimal) -> int:
    """USD as whole nano-dollars, the unit of the admission counters."""
    return int((amount / NANO).to_integral_value(rounding=ROUND_HALF_UP))


def from_units(units: int) -> Decimal:
    return (Decimal(units) * NANO).quantize(NANO)

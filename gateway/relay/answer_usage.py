"""The `usage` object of an answer as Momor sends it: the provider's counts (or Momor's estimate
where it sent none) with what the call costs the organization (`cost`), what the provider
charges for it at its list price (`cost_details`), where the counts come from
(`token_count_basis`) and the provider's own counts (`native_tokens`)."""

from __future__ import annotations

from typing import Any, cast

from billing.calls.building import estimated_tokens
from billing.calls.cost import charged, tokens_cost_parts
from billing.calls.records import TokenCounts
from gateway.providers.contract import TOKEN_CEILING, CompletionUsage, Usage

PROVIDER_NATIVE = "provider_native"
GATEWAY_ESTIMATE = "gateway_estimate"


def priced(
    usage: CompletionUsage,
    prices: dict[str, str],
    key_source: str,
    *,
    estimated: bool = False,
    parsed: Usage | None = None,
) -> None:
    """Write Momor's fields into a usage object the provider sent (or Momor made); `parsed`:
    its counts, where they were read already."""
    parsed = parsed or Usage.from_openai(usage) or Usage()
    _as_billed(usage, parsed)
    tokens = token_counts(parsed)
    upstream, prompt, completion = tokens_cost_parts(tokens, prices)
    usage["cost"] = float(charged(upstream, key_source))
    usage["cost_details"] = {
        "upstream_inference_cost": float(upstream),
        "upstream_inference_prompt_cost": float(prompt),
        "upstream_inference_completions_cost": float(completion),
    }
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict):
        details = usage["prompt_tokens_details"] = {"cached_tokens": parsed.cached_tokens}
    details.setdefault("cache_write_tokens", parsed.cache_write_tokens)
    usage["token_count_basis"] = GATEWAY_ESTIMATE if estimated else PROVIDER_NATIVE
    if not estimated:
        usage["native_tokens"] = native_tokens(parsed)


def _as_billed(usage: CompletionUsage, parsed: Usage) -> None:
    """A count the provider wrote that Momor cannot bill as written (negative, past the
    ceiling, not a whole number) is written as Momor bills it, so the answer shows what was
    charged and can be encoded; every valid count stays as the provider wrote it."""
    raw: dict[str, Any] = cast(dict[str, Any], usage)
    total = parsed.prompt_tokens + parsed.completion_tokens
    _mend(
        raw,
        (
            ("prompt_tokens", parsed.prompt_tokens),
            ("completion_tokens", parsed.completion_tokens),
            ("total_tokens", total),
        ),
    )
    for name, counts in (
        ("prompt_tokens_details", (("cached_tokens", parsed.cached_tokens),
                                   ("cache_write_tokens", parsed.cache_write_tokens))),
        ("completion_tokens_details", (("reasoning_tokens", parsed.reasoning_tokens),)),
    ):  # fmt: skip
        details = raw.get(name)
        if details is not None and not isinstance(details, dict):
            del raw[name]
        elif details is not None:
            _mend(details, counts)


def _mend(raw: dict[str, Any], counts: tuple[tuple[str, int], ...]) -> None:
    for name, billed in counts:
        if name in raw and not _valid_count(raw[name]):
            raw[name] = billed


def _valid_count(value: object) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2 * TOKEN_CEILING
    )


def native_tokens(usage: Usage) -> dict[str, int]:
    """The provider's counts: reasoning is part of completion, cache reads and writes part of
    prompt."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cache_read_tokens": usage.cached_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def estimated_usage(body_size: int, answer_chars: int) -> Usage:
    """Momor's estimate for an answer the provider sent no usage with: the same one the call's
    record is billed on."""
    tokens = estimated_tokens(body_size, answer_chars)
    return Usage(prompt_tokens=tokens.prompt, completion_tokens=tokens.completion, estimated=True)


def token_counts(usage: Usage) -> TokenCounts:
    return TokenCounts(
        prompt=usage.prompt_tokens,
        completion=usage.completion_tokens,
        cached=usage.cached_tokens,
        cache_write=usage.cache_write_tokens,
        reasoning=usage.reasoning_tokens,
        estimated=usage.estimated,
    )

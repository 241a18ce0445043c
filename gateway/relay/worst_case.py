"""The most a call can cost, which admission reserves before it is tried: the worst case over
its candidates of what each would be sent and could answer.

- Prompt: two bytes of body per token, except image and file parts, each at the most its
  API documents for one part (`Adapter.part_tokens`); never more than the model's context
  window where the catalog gives it.
- Output: the ceiling the candidate's adapter sends (Anthropic's includes the thinking
  budget), no more than the model's `max_output_tokens`; where no ceiling is sent, the model's
  `max_output_tokens`, else MOMOR_RESERVE_COMPLETION_TOKENS; times the answers asked for (`n`).
- Prices: prompt tokens at the dearest of the prompt, cache-read and cache-write prices; on
  the organization's own key, the BYOK fee of that (as `billing.calls.cost.call_cost` charges)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings

from billing.calls.cost import MILLION, byok_fee, floor
from gateway.catalog.snapshot import OfferingInfo
from gateway.providers import REGISTRY, adapter_for
from gateway.providers.contract import Adapter, ChatRequest, Target
from gateway.request.call import AskedCall, ChatCall, EmbeddingCall
from gateway.routing.candidates import PART_MODALITIES, Candidate, target_of

# Where a part's cost follows its bytes, the string that holds them.
PART_DATA = {"image_url": ("image_url", "url"), "file": ("file", "file_data")}


@dataclass(slots=True)
class MediaParts:
    """The image and file parts of the messages: how many of each kind, and their bytes."""

    counts: Counter[str] = field(default_factory=Counter)
    size: int = 0


def worst_cost(asked: AskedCall, candidates: list[Candidate]) -> Decimal:
    if isinstance(asked, EmbeddingCall):
        return max(_prompt_cost(asked, candidate) for candidate in candidates)
    if not isinstance(asked, ChatCall):
        raise TypeError(f"no worst cost for {asked.api} calls")
    parts = media_parts(asked.request.get("messages"))
    return max(_cost(asked, parts, candidate) for candidate in candidates)


def _prompt_cost(asked: EmbeddingCall, candidate: Candidate) -> Decimal:
    """A call billed by its prompt alone (embeddings): two bytes of body per token, never
    more than the model's context window for each input."""
    offering = candidate.offering
    tokens = asked.size // 2 + 1
    if offering.context_length:
        tokens = min(tokens, offering.context_length * asked.inputs)
    cost = floor(tokens * offering.prices.prompt / MILLION)
    return cost * byok_fee() if candidate.key_source == "own" else cost


def _cost(call: ChatCall, parts: MediaParts, candidate: Candidate) -> Decimal:
    offering = candidate.offering
    # An API with no adapter fails when tried; until then it counts as any compatible server.
    adapter = adapter_for(offering.provider.api) or REGISTRY["openai_compatible"]
    target = target_of(candidate, stream=call.options.stream)
    prompt = _prompt(adapter, target, offering, call.size, parts)
    completion = _output(adapter, target, offering, call.request) * adapter.answers(call.request)
    prices = offering.prices
    dearest = max(prices.prompt, prices.cache_read, prices.cache_write)
    cost = floor((prompt * dearest + completion * prices.completion) / MILLION)
    return cost * byok_fee() if candidate.key_source == "own" else cost


def _prompt(
    adapter: Adapter, target: Target, offering: OfferingInfo, body_size: int, parts: MediaParts
) -> int:
    tokens = (body_size - parts.size) // 2 + 1
    for kind, count in parts.counts.items():
        tokens += count * (adapter.part_tokens(kind, target) or 0)
    return min(tokens, offering.context_length or tokens)


def _output(adapter: Adapter, target: Target, offering: OfferingInfo, request: ChatRequest) -> int:
    sent = adapter.output_ceiling(request, target)
    most = offering.max_output_tokens
    if sent is None:
        return most or settings.MOMOR_RESERVE_COMPLETION_TOKENS
    return min(sent, most or sent)


def media_parts(messages: object) -> MediaParts:
    """The image and file parts of the messages (audio parts stay in the byte count)."""
    found = MediaParts()
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in PART_DATA:
                found.counts[PART_MODALITIES[kind]] += 1
                found.size += _data_size(part, *PART_DATA[kind])
    return found


def _data_size(part: dict[str, Any], holder: str, name: str) -> int:
    inner = part.get(holder)
    data = inner.get(name) if isinstance(inner, dict) else inner
    return len(data) if isinstance(data, str) else 0

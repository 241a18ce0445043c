"""A Messages call's input tokens counted (`POST /v1/messages/count_tokens`) on its candidates
in order: an Anthropic offering is asked Anthropic's count (its count_tokens endpoint, sent the
body as written); the first other offering gets Momor's estimate, `estimated_input_tokens`.
An Anthropic offering that fails (unreachable, a refused key, a rate limit, a 5xx) leaves
the count to the next candidate; one that refuses the body (its own 4xx error about the call)
is the answer. When every candidate is Anthropic's and none answered, the count is Momor's
estimate too. No count is recorded or billed: it generates nothing, and Anthropic charges
none.

The estimate: about four bytes of the translated Chat Completions request's JSON a token
(Momor's estimate wherever a provider counts nothing), with each image and file part at the
most its offering's API documents for one (`Adapter.part_tokens`, as admission reserves),
instead of its bytes."""

from __future__ import annotations

import logging

import orjson
from django.conf import settings

from gateway.providers.anthropic import AnthropicAdapter
from gateway.providers.contract import Adapter, Failure
from gateway.relay.attempts import scrubbed
from gateway.relay.failover import adapter_of, read_all
from gateway.relay.worst_case import media_parts
from gateway.request.errors import GatewayError
from gateway.request.messages.call import MessagesCall
from gateway.routing.candidates import Candidate, target_of
from gateway.upstream.credentials import CredentialsFailed, ready
from gateway.upstream.interface import UpstreamError
from gateway.upstream.pool import send

log = logging.getLogger(__name__)

BYTES_PER_TOKEN = 4


async def input_tokens(asked: MessagesCall, candidates: list[Candidate]) -> int:
    for candidate in candidates:
        adapter = adapter_of(candidate)
        if not isinstance(adapter, AnthropicAdapter):
            return estimated_input_tokens(asked, candidate, adapter)
        counted = await anthropic_count(asked, candidate, adapter)
        if counted is not None:
            return counted
    return estimated_input_tokens(asked, candidates[0], adapter_of(candidates[0]))


def estimated_input_tokens(asked: MessagesCall, candidate: Candidate, adapter: Adapter) -> int:
    request = asked.request
    parts = media_parts(request.get("messages"))
    target = target_of(candidate, stream=False)
    text = max(len(orjson.dumps(request)) - parts.size, 0)
    tokens = (text + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN
    for kind, count in parts.counts.items():
        tokens += count * (adapter.part_tokens(kind, target) or 0)
    return max(tokens, 1)


async def anthropic_count(
    asked: MessagesCall, candidate: Candidate, adapter: AnthropicAdapter
) -> int | None:
    """Anthropic's count, None when this offering could not give it; raises GatewayError for
    Anthropic's refusal of the body."""
    target = target_of(candidate, stream=False)
    secrets: tuple[str, ...] = (candidate.secret,)
    try:
        made = await ready(candidate.offering.provider.api, target)
        secrets += made.secrets
        prepared = adapter.prepare_count(asked.native, asked.forwarded, made.target)
        response = await send(
            prepared.url,
            prepared.headers,
            prepared.body,
            float(settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT),
        )
        try:
            data = await read_all(response)
        finally:
            await response.close()
    except (CredentialsFailed, UpstreamError, TimeoutError):
        return None
    if response.status_code >= 300:
        failure = scrubbed(adapter.failure(response.status_code, data), secrets)
        if failure.moves_on:
            return None
        raise _refusal(failure)
    try:
        return adapter.input_tokens(data)
    except Exception:  # whatever the provider sent, the next candidate counts
        log.warning("a token count of %s could not be read", candidate.offering.place)
        return None


def _refusal(failure: Failure) -> GatewayError:
    """Anthropic's own refusal of the body, as the count's answer."""
    error = failure.error
    return GatewayError(
        failure.status or 400,
        failure.message,
        type=(error["type"] if error else None) or "invalid_request_error",
    )

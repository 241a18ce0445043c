"""An embeddings call's tries: its candidates in order until one answers, as a chat call's
plain tries go (`gateway.relay.failover`), and the vectors relayed in OpenAI's embeddings
shape. Billed on the prompt tokens the provider counts, else on Momor's estimate."""

from __future__ import annotations

import base64
import logging
import struct
from functools import partial

import orjson

from billing.calls.building import call_served
from gateway.providers.contract import CompletionUsage, Embeddings, Failure, Usage
from gateway.relay.answer_usage import estimated_usage
from gateway.relay.attempts import Answer, Attempt, Call, tokens_of
from gateway.relay.failover import (
    adapter_of,
    each_candidate,
    exchange,
    readable,
)
from gateway.relay.metadata import served_metadata
from gateway.request.call import EmbeddingCall
from gateway.routing.candidates import Candidate

log = logging.getLogger(__name__)


class Unfit(Exception):
    """A readable answer that is not the one the call asked for."""


async def embed(call: Call, asked: EmbeddingCall) -> Answer:
    """Try the candidates in order; the first that answers serves the call."""
    return await each_candidate(call, partial(_try, call, asked))


async def _try(call: Call, asked: EmbeddingCall, candidate: Candidate) -> Answer | None:
    adapter, attempt = adapter_of(candidate), Attempt(call, candidate)
    prepare = partial(adapter.prepare_embeddings, asked.request)
    answered = await exchange(call, attempt, adapter, prepare)
    if answered is None:
        return None
    status, data = answered
    try:
        read = _fitting(adapter.embeddings(readable(data)), asked)
    except Unfit as exc:
        attempt.failed(Failure(502, str(exc)), spent=tokens_of(_usage(None, asked)))
        return None
    except Exception:  # whatever the provider sent, it is this try that fails, not the call
        log.warning("an embeddings answer of %s could not be read",
                    candidate.offering.place, exc_info=True)  # fmt: skip
        failure = Failure(502, "The provider's answer could not be read.")
        attempt.failed(failure, spent=tokens_of(_usage(None, asked)))
        return None
    usage = _usage(read.prompt_tokens, asked)
    attempt.served(status, usage)
    call_served(call.record, attempt.outcome(usage, "", ""))
    body = _answer(read, asked, attempt, usage)
    return Answer(200, attempt.served_headers(), body)


def _fitting(read: Embeddings, asked: EmbeddingCall) -> Embeddings:
    if len(read.vectors) != asked.inputs:
        raise Unfit(f"The provider answered {len(read.vectors)} vectors for {asked.inputs} inputs.")
    dimensions = asked.request.get("dimensions")
    if dimensions is not None and any(len(v) != dimensions for v in read.vectors):
        raise Unfit(f"The provider's vectors do not have the {dimensions} dimensions asked.")
    return read


def _usage(prompt_tokens: int | None, asked: EmbeddingCall) -> Usage:
    if prompt_tokens is None:
        return estimated_usage(asked.size, 0)
    return Usage(prompt_tokens=prompt_tokens)


def _answer(read: Embeddings, asked: EmbeddingCall, attempt: Attempt, usage: Usage) -> bytes:
    encode = _base64 if asked.base64 else list
    offering = attempt.candidate.offering
    answer: dict[str, object] = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": encode(vector)}
            for index, vector in enumerate(read.vectors)
        ],
        "model": offering.model_id,
        "provider": offering.provider.label,
        "usage": _priced_usage(attempt, usage),
    }
    metadata = served_metadata(attempt.call)
    if metadata is not None:
        answer["momor_metadata"] = metadata
    return orjson.dumps(answer)


def _priced_usage(attempt: Attempt, usage: Usage) -> CompletionUsage:
    """OpenAI's embeddings usage with the fields Momor adds to every answer's (`cost`...)."""
    priced = CompletionUsage(prompt_tokens=usage.prompt_tokens, total_tokens=usage.prompt_tokens)
    attempt.add_cost(priced, estimated=usage.estimated, parsed=usage)
    return priced


def _base64(vector: list[float]) -> str:
    """As OpenAI writes a vector asked as base64: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()

"""A Messages call spoken natively to Anthropic: the body sent as the client wrote it but for
`model` (the offering's id at Anthropic), with Anthropic's version (the client's, else
`API_VERSION`) and the betas the client asked for (`anthropic-beta`, as sent). Its answer and
events go back as Anthropic wrote them; what Momor reads of them for the record and the bill
is what `response.reply` and `stream.AnthropicStream` read of a translated call's.

`POST /v1/messages/count_tokens` goes the same way; its answer, `{"input_tokens": N}`, is read
by `input_tokens`."""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from gateway.providers.contract import Json, Target, UpstreamRequest, token_count

API_VERSION = "2023-06-01"
MESSAGES_PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"


def native_request(
    body: Json, headers: Mapping[str, str], target: Target, path: str = MESSAGES_PATH
) -> UpstreamRequest:
    """`body` (a Messages body without Momor's fields) to `path` of the target;
    `headers`: the client's `anthropic-version` and `anthropic-beta`, by lowercase name."""
    sent = {
        "x-api-key": target.secret,
        "anthropic-version": headers.get("anthropic-version") or API_VERSION,
        "content-type": "application/json",
    }
    if headers.get("anthropic-beta"):
        sent["anthropic-beta"] = headers["anthropic-beta"]
    out = {**body, "model": target.upstream_id}
    return UpstreamRequest(url=f"{target.base_url}{path}", headers=sent, body=orjson.dumps(out))


def input_tokens(data: bytes) -> int:
    """A 2xx count_tokens answer read; raises ValueError for one that is not a count."""
    answer = orjson.loads(data)
    if not isinstance(answer, dict) or "input_tokens" not in answer:
        raise ValueError("the provider's answer is not a token count")
    return token_count(answer["input_tokens"])

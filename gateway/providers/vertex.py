"""Vertex AI: Gemini's translation on Vertex's URL, authenticated with a service account.

The key (Momor's or a saved one) is the service account JSON; it is exchanged for an access
token (`gateway.providers.google_auth`) sent as a Bearer token. The project is the account's
`project_id`; the location is the offering's region, or `global` for the provider's root.

Reference: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from gateway.options import CallOptions
from gateway.providers.base import Failure, PrepareFailed, UpstreamRequest
from gateway.providers.gemini import GeminiAdapter, method
from gateway.providers.gemini.request import request_body
from gateway.providers.google_auth import CredentialsError, access_token, service_account_info
from gateway.routing import Candidate
from gateway.snapshot import OfferingInfo


class VertexAdapter(GeminiAdapter):
    api: ClassVar[str] = "vertex"

    async def prepare(
        self, body: dict[str, Any], options: CallOptions, candidate: Candidate
    ) -> UpstreamRequest:
        out = request_body(body, candidate.offering)
        try:
            info = service_account_info(candidate.secret)
            token = await access_token(candidate.secret, info)
        except CredentialsError as exc:
            raise PrepareFailed(_credentials_failure(exc)) from exc
        return UpstreamRequest(
            url=model_url(candidate.offering, str(info.get("project_id") or ""))
            + method(options.stream),
            headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
            body=orjson.dumps(out),
            secrets=(token, str(info["private_key"])),
        )


def model_url(offering: OfferingInfo, project: str) -> str:
    location = offering.region or "global"
    return (
        f"{offering.base_url}/projects/{project}/locations/{location}"
        f"/publishers/google/models/{offering.upstream_id}"
    )


def _credentials_failure(exc: CredentialsError) -> Failure:
    """A refused service account fails like a refused key (401); an unreachable token
    endpoint like an unreachable provider."""
    return Failure(401 if exc.refused else None, f"Vertex credentials: {exc}")

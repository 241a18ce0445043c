"""A small catalog served by the fake upstream, and the acme organization with a key for it."""

from __future__ import annotations

import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from accounts.models import Organization
from gateway.catalog.state import STATE
from gateway.models import Model, Offering, Provider, Region
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream

MOMOR_UPSTREAM_KEY = "momor-upstream-secret-0001"


@dataclass
class World:
    url: str
    fake: FakeUpstream
    org: Organization
    key: str

    def post(
        self,
        body: Any,
        *,
        key: str | None = None,
        path: str = "/v1/chat/completions",
        **kwargs: Any,
    ) -> httpx.Response:
        headers = {"authorization": f"Bearer {key or self.key}"}
        headers.update(kwargs.pop("headers", {}))
        return httpx.post(self.url + path, json=body, headers=headers, timeout=30, **kwargs)

    def open_stream(self, body: Any) -> AbstractContextManager[httpx.Response]:
        """A streamed call, read as it arrives: `with world.open_stream(body) as response`."""
        return httpx.stream(
            "POST", self.url + "/v1/chat/completions", json=body,
            headers={"authorization": f"Bearer {self.key}"}, timeout=10,
        )  # fmt: skip

    def stream(self, body: Any, *, key: str | None = None) -> httpx.Response:
        """A streamed call, read whole."""
        return self.post({**body, "stream": True}, key=key)


def provider(
    name: str,
    api: str,
    base_url: str,
    *,
    zdr: bool = False,
    key: str = MOMOR_UPSTREAM_KEY,
    regions: dict[str, str] | None = None,
) -> Provider:
    row = Provider(name=name, api=api, base_url=base_url, zdr=zdr)
    row.set_key(key)
    row.save()
    for region, url in (regions or {}).items():
        Region.objects.create(provider=row, name=region, base_url=url)
    return row


def model(
    id: str,
    *,
    released: date = date(2025, 6, 1),
    tiers: list[str] | None = None,
    auto: bool = False,
    deprecated: bool = False,
) -> Model:
    return Model.objects.create(
        id=id, released=released, tiers=tiers or [], auto=auto, deprecated=deprecated
    )


def offer(
    model_row: Model,
    provider_row: Provider,
    upstream_id: str,
    prompt: str,
    completion: str,
    *,
    region: str | None = None,
    **capabilities: Any,
) -> Offering:
    region_row = provider_row.regions.get(name=region) if region else None
    # Text alone unless a test says otherwise (None: what the provider's API carries).
    capabilities.setdefault("input_modalities", [])
    return Offering.objects.create(
        model=model_row,
        provider=provider_row,
        region=region_row,
        upstream_id=upstream_id,
        prompt_price=Decimal(prompt),
        completion_price=Decimal(completion),
        **capabilities,
    )


def build_catalog(fake_url: str) -> None:
    openai = provider("openai", "openai", f"{fake_url}/v1")
    azure = provider(
        "azure",
        "azure",
        f"{fake_url}/azure/openai/v1",
        zdr=True,
        regions={"eu": f"{fake_url}/azure-eu/openai/v1"},
    )
    mistral = provider("mistral", "mistral", f"{fake_url}/mistral/v1")
    deepinfra = provider("deepinfra", "deepinfra", f"{fake_url}/deepinfra/v1/openai")
    provider("local", "openai_compatible", f"{fake_url}/local/v1", key="")

    gpt5 = model("openai/gpt-5", released=date(2025, 8, 7), tiers=["high"], auto=True)
    offer(
        gpt5,
        openai,
        "gpt-5",
        "1.25",
        "10",
        tools=True,
        json_schema=True,
        reasoning_efforts=["minimal", "low", "medium", "high"],
        input_modalities=["image", "file"],
    )
    offer(
        gpt5,
        azure,
        "gpt-5-azure-eu",
        "1.30",
        "10",
        region="eu",
        tools=True,
        reasoning_efforts=["low", "medium", "high"],
    )
    offer(gpt5, azure, "gpt-5-azure", "1.50", "12", tools=True, json_schema=True)
    mini = model("openai/gpt-5-mini", released=date(2025, 8, 7), tiers=["mid"], auto=True)
    offer(mini, openai, "gpt-5-mini", "0.25", "2", tools=True, json_schema=True)
    small = model("mistral/mistral-small", released=date(2025, 3, 17), tiers=["low"])
    offer(small, mistral, "mistral-small-latest", "0.10", "0.30", tools=True)
    r1 = model("deepseek/deepseek-r1", released=date(2025, 1, 20), tiers=["high", "reasoning"])
    offer(r1, deepinfra, "deepseek-ai/DeepSeek-R1", "0.50", "2.15")
    legacy = model("old/legacy", released=date(2023, 1, 1), tiers=["low"], deprecated=True)
    offer(legacy, openai, "legacy-1", "0.05", "0.05")


@pytest.fixture(params=["http1", "aiohttp", "httpx"])
def upstream_client(request: pytest.FixtureRequest, settings: Any) -> str:
    """Each client Momor can call providers with (`MOMOR_UPSTREAM_TRANSPORT`), in turn."""
    settings.MOMOR_UPSTREAM_TRANSPORT = request.param
    return str(request.param)


@pytest.fixture
def world(gateway: str, fake: FakeUpstream) -> World:
    build_catalog(fake.url)
    STATE.rebuild_catalog()
    org = make_org("acme", credits=Decimal(100))
    key, _ = make_key(org, name="test")
    return World(gateway, fake, org, key)


def service_account(token_uri: str, project: str = "momor-test") -> str:
    """A service account JSON with a fresh RSA key, as Google issues them."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return orjson.dumps(
        {
            "type": "service_account",
            "project_id": project,
            "private_key_id": secrets.token_hex(20),
            "private_key": pem,
            "client_email": f"momor@{project}.iam.gserviceaccount.com",
            "client_id": "1234567890",
            "token_uri": token_uri,
        }
    ).decode()


@pytest.fixture
def fake_token_endpoint(fake: FakeUpstream, settings: Any) -> str:
    """The fake's OAuth token endpoint as the one a Vertex service account may name; it is on
    loopback, which the outbound guard is told to let through."""
    settings.MOMOR_GOOGLE_TOKEN_URL = f"{fake.url}/token"
    settings.MOMOR_OUTBOUND_ALLOW = ["127.0.0.1/32"]
    return str(settings.MOMOR_GOOGLE_TOKEN_URL)

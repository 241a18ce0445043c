"""Adapters by wire protocol: `adapter_for(api)` gives the one that speaks a provider's API."""

from __future__ import annotations

from gateway.providers.anthropic import AnthropicAdapter
from gateway.providers.contract import Adapter
from gateway.providers.gemini import GeminiAdapter
from gateway.providers.openai import (
    AzureAdapter,
    CompatibleAdapter,
    DeepInfraAdapter,
    MistralAdapter,
    OpenAIOnMomorKey,
)
from gateway.providers.vertex import VertexAdapter

REGISTRY: dict[str, Adapter] = {
    "openai": OpenAIOnMomorKey(),
    "azure": AzureAdapter(),
    "mistral": MistralAdapter(),
    "deepinfra": DeepInfraAdapter(),
    "openai_compatible": CompatibleAdapter(),
    "gemini": GeminiAdapter(),
    "vertex": VertexAdapter(),
    "anthropic": AnthropicAdapter(),
}


def adapter_for(api: str) -> Adapter | None:
    return REGISTRY.get(api)


def register(api: str, adapter: Adapter) -> None:
    REGISTRY[api] = adapter

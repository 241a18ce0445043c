"""`GET /v1/models`: the catalog's models in OpenAI's list shape, with their kind, the APIs that
call them, their offerings' prices, capabilities, filter fields and measured figures (`stats`,
for a caller with a key or a session alone: they count every tenant's calls)."""

from __future__ import annotations

import calendar
from typing import Any

import orjson

from gateway.catalog.snapshot import Catalog, ModelInfo, OfferingInfo
from gateway.models import ModelKind
from gateway.routing.performance import Figures, figures_of

# The routes that call a model of each kind, by the name a record keeps.
APIS_OF_KIND: dict[str, list[str]] = {
    ModelKind.CHAT: ["chat", "messages", "responses"],
    ModelKind.EMBEDDING: ["embeddings"],
}


async def models_payload(catalog: Catalog, with_figures: bool = True) -> bytes:
    """The list for this snapshot, with each offering's figures of the last 15 minutes (none
    when `with_figures` is false: `stats` is null)."""
    served = sorted((m for m in catalog.models.values() if m.offerings), key=lambda m: m.id)
    figures = await figures_of(o.id for m in served for o in m.offerings) if with_figures else {}
    return orjson.dumps({"object": "list", "data": [_model(m, figures) for m in served]})


def _model(model: ModelInfo, figures: dict[int, Figures]) -> dict[str, Any]:
    created = calendar.timegm(model.released.timetuple()) if model.released else 0
    return {
        "id": model.id,
        "object": "model",
        "created": created,
        "owned_by": model.id.split("/", 1)[0],
        "kind": model.kind,
        "apis": APIS_OF_KIND[model.kind],
        "deprecated": model.deprecated,
        "tiers": sorted(model.tiers),
        "auto": model.auto,
        "offerings": [_offering(o, figures.get(o.id)) for o in model.offerings],
    }


def _offering(offering: OfferingInfo, figures: Figures | None) -> dict[str, Any]:
    return {
        "provider": offering.place,
        "provider_name": offering.provider.label,
        "pricing": {
            "prompt": str(offering.prices.prompt),
            "completion": str(offering.prices.completion),
            "cache_read": str(offering.prices.cache_read),
            "cache_write": str(offering.prices.cache_write),
            "unit": "USD per million tokens",
        },
        "capabilities": {
            "tools": offering.tools,
            "json_schema": offering.json_schema,
            "reasoning_efforts": list(offering.reasoning_efforts),
            "input_modalities": sorted(offering.input_modalities),
            "parameters": sorted(offering.parameters),
        },
        "quantization": offering.quantization or None,
        "collects_data": offering.collects_data,
        "locations": sorted(offering.locations),
        "stats": figures.as_dict() if figures is not None else None,
    }

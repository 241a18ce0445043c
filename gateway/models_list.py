"""`GET /v1/models`: the catalog's models in OpenAI's list shape, with their offerings' prices
and capabilities."""

from __future__ import annotations

import calendar
from typing import Any

import orjson

from gateway.snapshot import Catalog, ModelInfo, OfferingInfo

_last: list[tuple[Catalog, bytes]] = []


def models_payload(catalog: Catalog) -> bytes:
    """The list for this snapshot, built once per snapshot."""
    if _last and _last[0][0] is catalog:
        return _last[0][1]
    payload = _payload(catalog)
    _last[:] = [(catalog, payload)]
    return payload


def _payload(catalog: Catalog) -> bytes:
    data = [_model(m) for m in sorted(catalog.models.values(), key=lambda m: m.id) if m.offerings]
    return orjson.dumps({"object": "list", "data": data})


def _model(model: ModelInfo) -> dict[str, Any]:
    created = calendar.timegm(model.released.timetuple()) if model.released else 0
    return {
        "id": model.id,
        "object": "model",
        "created": created,
        "owned_by": model.id.split("/", 1)[0],
        "deprecated": model.deprecated,
        "tiers": sorted(model.tiers),
        "auto": model.auto,
        "offerings": [_offering(o) for o in model.offerings],
    }


def _offering(offering: OfferingInfo) -> dict[str, Any]:
    return {
        "provider": offering.place,
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
        },
    }

"""The candidate lists of calls that route alike, kept so that the next such call does not
order the catalog again: one entry per (selectors, provider preferences, age rules, what the
call needs), valid while the catalog snapshot and the organization's state it was made from
are the ones in memory (a refresh replaces them, and the entry is made again).

Only the price order is kept: the measured sorts follow figures that move between calls, and a
call that asked for `momor_metadata` routes in full to explain itself. A refusal is never kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.catalog.snapshot import Catalog
from gateway.request.identity import OrgInfo
from gateway.request.options import NO_PREFS, CallOptions
from gateway.routing.candidates import Candidate, Needs
from gateway.routing.selectors import AgeRules

SIZE = 4096


@dataclass(frozen=True, slots=True)
class Routed:
    catalog: Catalog
    org: OrgInfo
    found: list[Candidate]
    excluded: list[dict[str, str]]
    by_price: bool
    given: dict[str, object]


_routed: dict[tuple[Any, ...], Routed] = {}


def key_of(options: CallOptions, rules: AgeRules, needs: Needs) -> tuple[Any, ...] | None:
    """The entry a call's routing is kept under; None for a call whose routing is not kept."""
    prefs = options.prefs
    if prefs.sort != "price":
        return None
    asked = needs.asked
    return (
        options.selectors,
        None if prefs is NO_PREFS else prefs,
        rules.allow_deprecated, rules.max_age, rules.today,
        needs.kind, needs.tools, needs.json_schema, needs.modalities,
        asked.parameters, asked.tools, asked.json_schema, asked.reasoning,
    )  # fmt: skip


def kept(key: tuple[Any, ...], catalog: Catalog, org: OrgInfo) -> Routed | None:
    found = _routed.get(key)
    if found is None or found.catalog is not catalog or found.org is not org:
        return None
    return found


def keep(key: tuple[Any, ...], routed: Routed) -> None:
    if len(_routed) >= SIZE:
        _routed.clear()
    _routed[key] = routed


def forget() -> None:
    _routed.clear()

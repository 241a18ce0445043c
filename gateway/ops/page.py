"""The admin's operations page (`/admin/operations/`, staff only, read-only): the figures
/metrics exposes, for operators without Prometheus. Counters are this process's since it
started (every process's in multiprocess mode)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.contrib.auth.decorators import user_passes_test
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from gateway.ops.exposition import multiprocess, multiprocess_registry
from gateway.ops.figures import read_figures
from gateway.ops.metrics import PER_CALL


@dataclass(slots=True)
class Row:
    measure: str  # count or sum (a histogram's), total (a counter's), value (a gauge's)
    labels: str
    value: float


@dataclass(slots=True)
class Family:
    name: str
    documentation: str
    rows: list[Row]


def _families() -> list[Family]:
    if multiprocess():
        collected = list(multiprocess_registry().collect())
    else:
        collected = [family for metric in PER_CALL for family in metric.collect()]
    found = []
    for metric in collected:
        rows = [
            Row(_measure(sample.name), _labels(sample.labels), sample.value)
            for sample in metric.samples
            if not sample.name.endswith(("_bucket", "_created"))
        ]
        found.append(Family(metric.name, metric.documentation, rows))
    return found


def _measure(sample_name: str) -> str:
    for suffix in ("count", "sum", "total"):
        if sample_name.endswith(f"_{suffix}"):
            return suffix
    return "value"


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{name}={value or '—'}" for name, value in sorted(labels.items()))


@user_passes_test(lambda user: user.is_active and user.is_staff)
def operations(request: HttpRequest) -> HttpResponse:
    context = {
        **admin.site.each_context(request),
        "title": "Operations",
        "figures": read_figures(),
        "families": _families(),
    }
    return TemplateResponse(request, "gateway/admin/operations.html", context)

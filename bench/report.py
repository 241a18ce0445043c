"""What a run prints and saves: added latency against the direct baseline of the same section,
medians over repeats, the issue's targets with whether each is met, a table for people and
JSON for machines."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

Metrics = dict[str, Any]

LATENCY_LEVELS = ("c1", "c16", "c64")
STREAM_LEVELS = ("c1", "c16")


def machine(servers: list[str]) -> Metrics:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "nproc": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
        "kernel": platform.release(), "servers": servers,
        "loadavg_at_end": loadavg(),
    }  # fmt: skip


def loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 3)


def added(direct: Metrics, target: Metrics) -> Metrics:
    """What the gateway adds to the direct call, phase by phase (ms), and its throughput."""
    out: Metrics = {}
    for level in LATENCY_LEVELS:
        d, t = direct.get(f"latency_{level}", {}), target.get(f"latency_{level}", {})
        for q in ("p50", "p90", "p99"):
            out[f"latency_{level}_{q}"] = _sub(t.get(q), d.get(q))
    for level in STREAM_LEVELS:
        d, t = direct.get(f"stream_{level}", {}), target.get(f"stream_{level}", {})
        for key in ("first_p50", "first_p99", "last_p50", "last_p99"):
            out[f"stream_{level}_{key}"] = _sub(t.get(key), d.get(key))
    d_rps, t_rps = direct["throughput"]["rps"], target["throughput"]["rps"]
    out["throughput_share_of_direct"] = round(t_rps / d_rps, 3) if d_rps else None
    return out


def median_tree(runs: list[Any]) -> Any:
    """The element-wise median of equally shaped results; error counts are summed."""
    first = runs[0]
    if isinstance(first, dict):
        keys = list(dict.fromkeys(k for r in runs if isinstance(r, dict) for k in r))
        return {k: _median_key(k, [r.get(k) for r in runs if isinstance(r, dict)]) for k in keys}
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    numbers = [r for r in runs if isinstance(r, int | float)]
    return round(statistics.median(numbers), 3) if numbers else None


def _median_key(key: str, values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if key in ("errors", "error_samples", "steps", "chunks_seen"):
        return present if len(present) > 1 else present[0]
    return median_tree(present)


# Targets of issue 7 --------------------------------------------------------------------


def targets(sections: list[Metrics]) -> list[Metrics]:
    """Each target of the issue on the first Momor section, with whether it is met."""
    momor = next((s for s in sections if s["gateway"].startswith("momor")), None)
    if momor is None:
        return []
    add, tgt = momor["added"], momor["target"]
    out = [
        _goal("added latency p50 at c1", add["latency_c1_p50"], 1.5, "ms"),
        _goal("added latency p99 at c1", add["latency_c1_p99"], 5.0, "ms"),
        _goal("20-chunk stream at c16: added total (p50)", add["stream_c16_last_p50"], 5.0, "ms"),
        _goal("20-chunk stream at c16: added first chunk (p50)", add["stream_c16_first_p50"], 2.0,
              "ms"),
        _goal("RSS at idle", tgt.get("rss_idle_mib"), 150.0, "MiB"),
        _goal("RSS growth over the soak", tgt.get("soak", {}).get("growth_pct"), 5.0, "%"),
    ]  # fmt: skip
    litellm = next((s for s in sections if s["gateway"] == "litellm"), None)
    if litellm is not None:
        theirs = litellm["target"]["throughput"]
        ratio = _ratio(tgt["throughput"]["rps"], theirs["rps"])
        goal = _goal("throughput vs one LiteLLM worker", ratio, 10.0, "x", at_least=True)
        by_cpu = _ratio(
            tgt["throughput"].get("cpu_bound_rps") or 0, theirs.get("cpu_bound_rps") or 0
        )
        goal["note"] = f"by CPU per call (contention-free estimate): {by_cpu}x"
        out.insert(0, goal)
    soak = tgt.get("soak", {}).get("seconds")
    if soak is not None and soak < 600:
        out[-1]["note"] = f"soak was {soak:.0f} s; the target is over 600 s"
    return out


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def _goal(
    name: str, value: float | None, limit: float, unit: str, at_least: bool = False
) -> Metrics:
    met = None if value is None else (value >= limit if at_least else value <= limit)
    sign = ">=" if at_least else "<="
    return {"target": name, "value": value, "limit": f"{sign} {limit} {unit}", "met": met}


# Output --------------------------------------------------------------------------------


def save(report: Metrics, results: Path) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = results / f"{stamp}.json"
    text = json.dumps(report, indent=2, default=str)
    path.write_text(text)
    (results / "latest.json").write_text(text)
    return path


ROWS: list[tuple[str, str, str]] = [
    *[(f"plain c{c} {q} ms", f"latency_c{c}", q) for c in (1, 16, 64)
      for q in ("p50", "p90", "p99")],
    ("throughput req/s (0 errors)", "throughput", "rps"),
    ("  at concurrency", "throughput", "at_concurrency"),
    ("  gateway CPU ms/call", "throughput", "cpu_ms_per_call"),
    ("  new threads/call", "throughput", "new_threads_per_call"),
    ("  1000 / CPU ms (req/s)", "throughput", "cpu_bound_rps"),
    ("  core busy with others %", "throughput", "core_other_pct"),
    *[(f"stream c{c} first {q} ms", f"stream_c{c}", f"first_{q}") for c in (1, 16)
      for q in ("p50", "p99")],
    *[(f"stream c{c} last {q} ms", f"stream_c{c}", f"last_{q}") for c in (1, 16)
      for q in ("p50", "p99")],
    ("RSS idle MiB", "", "rss_idle_mib"),
    ("RSS under load MiB", "", "rss_load_mib"),
    ("RSS soak start MiB", "soak", "rss_start_mib"),
    ("RSS soak end MiB", "soak", "rss_end_mib"),
    ("RSS soak growth %", "soak", "growth_pct"),
    ("RSS growth MiB/min", "soak", "growth_mib_per_min"),
    ("soak req/s", "soak", "rps"),
]  # fmt: skip


def _cell(metrics: Metrics, group: str, key: str) -> Any:
    value = metrics.get(group, {}) if group else metrics
    return value.get(key) if isinstance(value, dict) else None


def _added_cell(section: Metrics, group: str, key: str) -> Any:
    if group.startswith(("latency_", "stream_")):
        return section["added"].get(f"{group}_{key}")
    if group == "throughput" and key == "rps":
        share = section["added"].get("throughput_share_of_direct")
        return None if share is None else f"{share:.2f}x"
    return None


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def table(report: Metrics) -> str:
    sections = report["sections"]
    head = ["metric"]
    for s in sections:
        head += [f"direct[{s['gateway']}]", s["gateway"], "added"]
    rows = [head]
    for label, group, key in ROWS:
        row = [label]
        for s in sections:
            row += [_fmt(_cell(s["direct"], group, key)), _fmt(_cell(s["target"], group, key))]
            row.append(_fmt(_added_cell(s, group, key)))
        rows.append(row)
    rows.append(["errors (all phases)"] + [c for s in sections for c in _error_cells(s)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in rows]  # fmt: skip
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def scale_table(scale: Metrics) -> str:
    """1 vs 2 processes per server, and the limits held across both."""
    lines = []
    for name, r in scale["servers"].items():
        one, two = r["p1"], r["p2"]
        lines.append(
            f"  {name}: {_fmt(one['rps'])} req/s with 1 process, {_fmt(two['rps'])} with 2 "
            f"({r['ratio']}x); gateway CPU {one['cpu_ms_per_call']} / {two['cpu_ms_per_call']} "
            f"ms/call; errors {one['errors'] or 0} / {two['errors'] or 0}"
        )
        rate, held = r.get("rate_limit"), r.get("reservations")
        if rate:
            mark = "GLOBAL" if rate["global"] else "NOT GLOBAL"
            lines.append(
                f"    rate limit {rate['limit_per_minute']}/min across 2 processes: "
                f"{rate['served']} served, {rate['refused_429']} x 429 of {rate['calls']} "
                f"[{mark}] by process {rate['by_process']}"
            )
        if held:
            mark = "GLOBAL" if held["global"] else "NOT GLOBAL"
            failed = [k for k, ok in held["checks"].items() if not ok]
            lines.append(
                f"    balance {held['balance_usd']} USD across 2 processes: {held['served']} "
                f"served x {held['cost_per_call_usd']} = {held['charged_usd']} USD charged, "
                f"{held['refused_402']} x 402, balance after {held['balance_after_usd']} "
                f"[{mark}]" + (f" failed: {failed}" if failed else "")
            )
    return "\n".join(lines)


def _error_cells(section: Metrics) -> list[str]:
    def count(m: Metrics) -> str:
        errors = m.get("errors", {})
        if isinstance(errors, list):  # summed over repeats
            errors = {k: v for e in errors for k, v in e.items()}
        return str(sum(sum(v.values()) for v in errors.values())) if errors else "0"

    return [count(section["direct"]), count(section["target"]), ""]


def goals_text(goals: list[Metrics]) -> str:
    lines = []
    for g in goals:
        mark = {True: "MET ", False: "MISS", None: "n/a "}[g["met"]]
        note = f"  ({g['note']})" if g.get("note") else ""
        lines.append(f"  [{mark}] {g['target']}: {_fmt(g['value'])} (goal {g['limit']}){note}")
    return "\n".join(lines)

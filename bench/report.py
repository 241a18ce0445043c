"""What a run prints and saves: added latency against the direct baseline of the same section,
medians over repeats, the performance targets with whether each is met (as ratios to the
floor, LiteLLM, Portkey's gateway and the fastest server where they are ratios), a table for
people and JSON for machines."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import versus_chat

Metrics = dict[str, Any]

LATENCY_LEVELS = ("c1", "c16", "c64")
STREAM_LEVELS = ("c1", "c16")
# The other APIs' phases (`bench.measure.Meter.others_latency`, `others_stream`), where measured.
OTHER_PLAIN = ("embeddings_c1", "messages_c1", "responses_c1")
OTHER_STREAMS = ("messages_stream_c1", "responses_stream_c1")


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
    plain = [f"latency_{level}" for level in LATENCY_LEVELS]
    for phase in [*plain, *(p for p in OTHER_PLAIN if p in target)]:
        d, t = direct.get(phase, {}), target.get(phase, {})
        for q in ("p50", "p90", "p99"):
            out[f"{phase}_{q}"] = _sub(t.get(q), d.get(q))
    streams = [f"stream_{level}" for level in STREAM_LEVELS]
    for phase in [*streams, *(p for p in OTHER_STREAMS if p in target)]:
        d, t = direct.get(phase, {}), target.get(phase, {})
        for key in ("first_p50", "first_p99", "last_p50", "last_p99"):
            out[f"{phase}_{key}"] = _sub(t.get(key), d.get(key))
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


# Targets of the performance round 2 ----------------------------------------------------

RSS_IDLE_MIB = 120.0
SOAK_TARGET_SECONDS = 600


def governed_servers(sections: list[Metrics]) -> list[Metrics]:
    """The governed Momor section of each server (not its variants), in the run's order."""
    return [
        s for s in sections
        if s.get("deployment") == "governed" and s["gateway"] == f"momor-{s.get('server')}"
    ]  # fmt: skip


def _named(sections: list[Metrics], name: str) -> Metrics | None:
    return next((s for s in sections if s["gateway"] == name), None)


def targets(sections: list[Metrics]) -> list[Metrics]:
    """Each target on the first governed Momor section (and the plain one for latency), as a
    ratio to its reference section where the target is one; n/a, with the option that
    measures it, when the reference was not measured."""
    servers = governed_servers(sections)
    if not servers:
        return []
    momor, floor = servers[0], _named(sections, "floor")
    plain = next((s for s in sections if s.get("deployment") == "embedded"), None)
    return [
        _versus_peer(momor, _named(sections, "litellm"), LITELLM),
        _versus_peer(momor, _named(sections, "portkey"), PORTKEY),
        *_latency_goals(momor, floor, "governed"),
        *_latency_goals(plain, floor, "plain", "--plain"),
        _embedded_goal(momor, plain),
        *_stream_goals(momor, floor),
        *_rss_goals(momor),
        _daphne_goal(servers),
        *versus_chat_goals(momor),
    ]


def _missing(goal: Metrics, option: str) -> Metrics:
    goal["note"] = f"not measured: {option} measures it"
    return goal


def _daphne_missing(goal: Metrics, measured: bool) -> Metrics:
    if measured:
        goal["note"] = "only Daphne measured: another --server measures it"
        return goal
    return _missing(goal, "--server daphne with another --server")


@dataclass(frozen=True)
class Peer:
    """A peer gateway's throughput target: governed Momor's over the peer's, at least `limit`."""

    target: str
    limit: float
    option: str


LITELLM = Peer("throughput vs one LiteLLM worker (governed)", 30.0, "--litellm")
PORTKEY = Peer(
    "governed Momor carries at least as many calls per core as Portkey's gateway", 1.0, "--portkey"
)


def _versus_peer(momor: Metrics, section: Metrics | None, peer: Peer) -> Metrics:
    """Saturated throughput over the peer's, each on one core; by CPU per call in the note."""
    if section is None:
        return _missing(_goal(peer.target, None, peer.limit, "x", at_least=True), peer.option)
    ours, theirs = momor["target"]["throughput"], section["target"]["throughput"]
    ratio = _ratio(ours["rps"], theirs["rps"])
    goal = _goal(peer.target, ratio, peer.limit, "x", at_least=True)
    goal["note"] = f"{_fmt(ours['rps'])} vs {_fmt(theirs['rps'])} req/s"
    by_cpu = ours.get("cpu_bound_rps"), theirs.get("cpu_bound_rps")
    if all(by_cpu):
        goal["note"] += f"; by CPU per call (contention-free estimate): {_ratio(*by_cpu)}x"
    return goal


EMBEDDED = "plain (embedded) throughput vs governed's"


def _embedded_goal(momor: Metrics, plain: Metrics | None) -> Metrics:
    """The quickstart's mode carries at least 0.9x the governed deployment's calls."""
    if plain is None:
        return _missing(_goal(EMBEDDED, None, 0.9, "x", at_least=True), "--plain")
    ours, governed = plain["target"]["throughput"]["rps"], momor["target"]["throughput"]["rps"]
    goal = _goal(EMBEDDED, _ratio(ours, governed), 0.9, "x", at_least=True)
    goal["note"] = f"{_fmt(ours)} vs {_fmt(governed)} req/s"
    return goal


def _versus_floor(
    name: str, ours: float | None, floor: float | None, limit: float, unit: str = "ms"
) -> Metrics:
    """`ours` / `floor` against `limit` (x), the two values in the note."""
    if ours is None or floor is None or floor <= 0:
        goal = _goal(name, None, limit, "x")
        goal["note"] = f"no ratio: {_fmt(ours)} {unit} vs the floor's {_fmt(floor)} {unit}"
        return goal
    goal = _goal(name, round(ours / floor, 2), limit, "x")
    goal["note"] = f"{_fmt(ours)} {unit} vs the floor's {_fmt(floor)} {unit}"
    return goal


def _latency_goals(
    momor: Metrics | None, floor: Metrics | None, label: str, option: str = ""
) -> list[Metrics]:
    """Added latency at c1, p50 (<= 1.5x) and p99 (<= 2x), against the floor's; `option`
    measures `momor` when it is missing."""
    out = []
    absent = " ".join(o for o, s in (("--floor", floor), (option, momor)) if s is None and o)
    for q, limit in (("p50", 1.5), ("p99", 2.0)):
        name = f"added latency {q} at c1 vs the floor's ({label})"
        if momor is None or floor is None:
            out.append(_missing(_goal(name, None, limit, "x"), absent))
            continue
        key = f"latency_c1_{q}"
        out.append(_versus_floor(name, momor["added"][key], floor["added"][key], limit))
    return out


def _stream_goals(momor: Metrics, floor: Metrics | None) -> list[Metrics]:
    """Streams at c16: the added first chunk (p50) and the gateway's CPU per 20-chunk stream,
    each <= 2x the floor's."""
    first = "20-chunk stream at c16: added first chunk (p50) vs the floor's"
    cpu = "20-chunk stream at c16: gateway CPU per stream vs the floor's"
    if floor is None:
        return [_missing(_goal(n, None, 2.0, "x"), "--floor") for n in (first, cpu)]
    key = "stream_c16_first_p50"
    ours, theirs = momor["target"]["stream_c16"], floor["target"]["stream_c16"]
    return [
        _versus_floor(first, momor["added"][key], floor["added"][key], 2.0),
        _versus_floor(
            cpu, ours.get("cpu_ms_per_stream"), theirs.get("cpu_ms_per_stream"), 2.0, "ms CPU"
        ),
    ]


def versus_chat_goals(momor: Metrics) -> list[Metrics]:
    """An embeddings call's, a Messages call's (to an Anthropic offering) and a Responses
    call's (to an OpenAI offering) added latency, the latter two plain and streamed, against a
    Chat Completions call's, in the same section (each added against its own direct call), p50
    and p99: within 1.2x."""
    out = []
    for row in versus_chat.ratios(momor):
        name = (
            f"{row['api']}: added latency {row['quantile']} {row['call']} "
            "vs Chat Completions' (governed)"
        )
        ours, chat = row["added_ms"], row["chat_added_ms"]
        goal = _goal(name, row["ratio"], versus_chat.LIMIT, "x")
        if ours is None:
            goal["note"] = f"not measured: the deployment serves no {row['api']} call"
        elif row["ratio"] is None:
            goal["note"] = f"no ratio: {_fmt(ours)} ms vs Chat Completions' {_fmt(chat)} ms"
        else:
            goal["note"] = f"{_fmt(ours)} ms vs Chat Completions' {_fmt(chat)} ms"
        out.append(goal)
    return out


def _rss_goals(momor: Metrics) -> list[Metrics]:
    """One gateway process's RSS at idle and its growth over the soak; the Celery worker's
    beside them."""
    tgt = momor["target"]
    idle = _goal("RSS at idle (one gateway process)", tgt.get("rss_idle_mib"), RSS_IDLE_MIB, "MiB")
    soak = tgt.get("soak") or {}
    growth = _goal("RSS growth over the soak", soak.get("growth_pct"), 5.0, "%")
    worker = tgt.get("celery_rss_idle_mib"), tgt.get("celery_rss_end_mib")
    if worker[0] is not None:
        idle["note"] = f"worker: {_fmt(worker[0])} MiB at idle"
        growth["note"] = f"worker: {_fmt(worker[0])} -> {_fmt(worker[1])} MiB"
    seconds = soak.get("seconds")
    if seconds is not None and seconds < SOAK_TARGET_SECONDS:
        short = f"soak was {seconds:.0f} s; the target is over {SOAK_TARGET_SECONDS} s"
        growth["note"] = "; ".join(filter(None, [growth.get("note"), short]))
    elif seconds is None:
        growth["note"] = "no soak: --soak SECONDS measures it"
    return [idle, growth]


def server_ratios(sections: list[Metrics]) -> list[Metrics]:
    """Each Momor server's governed throughput as a share of the fastest server's."""
    servers = governed_servers(sections)
    fastest = max((s["target"]["throughput"]["rps"] for s in servers), default=0.0)
    return [
        {
            "gateway": s["gateway"], "server": s["server"], "rps": s["target"]["throughput"]["rps"],
            "share_of_fastest": _ratio(s["target"]["throughput"]["rps"], fastest),
        }
        for s in servers
    ]  # fmt: skip


def _daphne_goal(servers: list[Metrics]) -> Metrics:
    """The fastest server's throughput over Daphne's (<= 1.3x)."""
    name = "fastest server's throughput vs Daphne's (governed)"
    daphne = next((s for s in servers if s["server"] == "daphne"), None)
    if daphne is None or len(servers) < 2:
        return _daphne_missing(_goal(name, None, 1.3, "x"), daphne is not None)
    fastest = max(servers, key=lambda s: s["target"]["throughput"]["rps"])
    ours = daphne["target"]["throughput"]["rps"]
    goal = _goal(name, _ratio(fastest["target"]["throughput"]["rps"], ours), 1.3, "x")
    goal["note"] = f"fastest: {fastest['server']}"
    return goal


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
    *[(f"{api} c1 {q} ms", f"{api}_c1", q) for api in ("embeddings", "messages", "responses")
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
    *[(f"stream c{c} gateway CPU ms/stream", f"stream_c{c}", "cpu_ms_per_stream")
      for c in (1, 16)],
    *[(f"{api} stream c1 {end} {q} ms", f"{api}_stream_c1", f"{end}_{q}")
      for api in ("messages", "responses") for end in ("first", "last") for q in ("p50", "p99")],
    *[(f"{api} stream c1 gateway CPU ms/stream", f"{api}_stream_c1", "cpu_ms_per_stream")
      for api in ("messages", "responses")],
    ("plain c1 gateway CPU ms/call", "latency_c1", "cpu_ms_per_call"),
    ("embeddings c1 gateway CPU ms/call", "embeddings_c1", "cpu_ms_per_call"),
    ("messages c1 gateway CPU ms/call", "messages_c1", "cpu_ms_per_call"),
    ("responses c1 gateway CPU ms/call", "responses_c1", "cpu_ms_per_call"),
    ("plain c1 gateway wake-ups/call", "latency_c1", "wakeups_per_call"),
    ("plain c1 gateway pre-empted/call", "latency_c1", "preempted_per_call"),
    ("plain c1 worker CPU ms/call", "latency_c1", "worker_cpu_ms_per_call"),
    ("plain c1 PostgreSQL+Redis CPU ms/call", "latency_c1", "services_cpu_ms_per_call"),
    ("stream c16 worker CPU ms/stream", "stream_c16", "worker_cpu_ms_per_call"),
    ("stream c16 PostgreSQL+Redis CPU ms/stream", "stream_c16", "services_cpu_ms_per_call"),
    ("RSS idle MiB", "", "rss_idle_mib"),
    ("RSS under load MiB", "", "rss_load_mib"),
    ("RSS soak start MiB", "soak", "rss_start_mib"),
    ("RSS soak end MiB", "soak", "rss_end_mib"),
    ("RSS soak growth %", "soak", "growth_pct"),
    ("RSS growth MiB/min", "soak", "growth_mib_per_min"),
    ("soak req/s", "soak", "rps"),
    ("worker RSS idle MiB", "", "celery_rss_idle_mib"),
    ("worker RSS end MiB", "", "celery_rss_end_mib"),
]  # fmt: skip


def _cell(metrics: Metrics, group: str, key: str) -> Any:
    value = metrics.get(group, {}) if group else metrics
    return value.get(key) if isinstance(value, dict) else None


def _added_cell(section: Metrics, group: str, key: str) -> Any:
    if group.startswith(("latency_", "stream_", "embeddings_", "messages_", "responses_")):
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
            f"({r['ratio']}x, goal >= 1.8x; {r.get('cpu_bound_ratio')}x by CPU per call, a "
            f"core each); gateway CPU {one['cpu_ms_per_call']} / "
            f"{two['cpu_ms_per_call']} ms/call; errors {one['errors'] or 0} / {two['errors'] or 0}"
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

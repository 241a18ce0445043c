"""`--memory`: where Momor's memory goes over a soak. Momor runs under `bench.traced`
(tracemalloc on) in a section of its own, after the measured ones; a snapshot is taken once the
warm-up has settled the caches and another at the end of a soak at the soak's concurrency. The
report sets the growth Python's allocator can account for (by allocation site, with its
traceback) beside the growth of the resident set: the difference is memory outside Python's
allocator (C libraries, the allocator's own fragmentation)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import deploy
from bench.loadgen import run_phase
from bench.procs import rss_mib

TOP = 12
Metrics = dict[str, Any]


async def trace(bench: Any, gateway: Any, seconds: float) -> Metrics:
    """Momor under the tracer for `seconds` of soak; the growth by allocation site."""
    out = bench.logs / f"tracemalloc-{gateway.name}"
    out.mkdir(parents=True, exist_ok=True)
    env = {**dict(gateway.env), "BENCH_TRACE_DIR": str(out)}
    proc, base = deploy.start_momor(
        bench.procs, bench.deployment_of(gateway), gateway.server, 0, bench.args.access_log,
        name=f"{gateway.name}-traced", env=env, traced=True,
    )  # fmt: skip
    try:
        target = bench.momor_target(gateway, base)
        concurrency = bench.plan.soak_concurrency
        print(f"    memory: {gateway.name} under tracemalloc, {seconds:.0f}s soak", flush=True)
        await run_phase(target, concurrency=concurrency, count=10**9, seconds=10.0)
        first = await _snapshot(proc.pid, out, 1)
        rss_first = rss_mib(proc.pid)
        run = await run_phase(target, concurrency=concurrency, count=10**9, seconds=seconds)
        last = await _snapshot(proc.pid, out, 2)
        rss_last = rss_mib(proc.pid)
        if gateway.embedded:  # its records stored before it stops, as in its section
            await bench.drain_journal()
    finally:
        bench.procs.stop(proc)
    return _growth(first, last, rss_first, rss_last, len(run.ok), run.elapsed)


async def _snapshot(pid: int, out: Path, n: int) -> tracemalloc.Snapshot:
    path = out / f"{pid}-{n}.snap"
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 120
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no tracemalloc snapshot at {path}")
        await asyncio.sleep(0.2)
    return tracemalloc.Snapshot.load(str(path)).filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )


def _growth(
    first: tracemalloc.Snapshot, last: tracemalloc.Snapshot, rss_first: float,
    rss_last: float, calls: int, elapsed: float,
) -> Metrics:  # fmt: skip
    traced_first = sum(stat.size for stat in first.statistics("filename"))
    traced_last = sum(stat.size for stat in last.statistics("filename"))
    per_call = 1 / calls if calls else 0.0
    sites = [
        {
            "kib": round(diff.size_diff / 1024, 1),
            "blocks": diff.count_diff,
            "bytes_per_call": round(diff.size_diff * per_call, 2),
            "traceback": _frames(diff.traceback),
        }
        for diff in last.compare_to(first, "traceback")[:TOP]
        if diff.size_diff > 0
    ]
    return {
        "calls": calls, "seconds": round(elapsed, 1),
        "rss_mib": [round(rss_first, 1), round(rss_last, 1)],
        "rss_growth_bytes_per_call": round((rss_last - rss_first) * 2**20 * per_call, 1),
        "traced_mib": [round(traced_first / 2**20, 1), round(traced_last / 2**20, 1)],
        "traced_growth_bytes_per_call": round((traced_last - traced_first) * per_call, 1),
        "top_growth": sites,
    }  # fmt: skip


def _frames(traceback: tracemalloc.Traceback) -> list[str]:
    """Innermost first, paths from the site-packages or project root on."""
    shown = []
    for frame in traceback:
        name = frame.filename
        for marker in ("site-packages/", "/lib/python3", str(deploy.ROOT) + "/"):
            if marker in name:
                name = name.split(marker, 1)[1]
                break
        shown.append(f"{name}:{frame.lineno}")
    return shown


def text(found: Metrics) -> str:
    lines = [
        f"memory under tracemalloc: {found['calls']} calls in {found['seconds']}s; RSS "
        f"{found['rss_mib'][0]} -> {found['rss_mib'][1]} MiB "
        f"({found['rss_growth_bytes_per_call']} B/call), traced by Python "
        f"{found['traced_mib'][0]} -> {found['traced_mib'][1]} MiB "
        f"({found['traced_growth_bytes_per_call']} B/call); top growth by site:"
    ]
    for site in found["top_growth"]:
        lines.append(f"  {site['kib']:>9} KiB {site['blocks']:>7} blocks "
                     f"{site['bytes_per_call']:>7} B/call  {site['traceback'][0]}")  # fmt: skip
        lines.extend(f"{'':>40}{frame}" for frame in site["traceback"][1:5])
    return "\n".join(lines)

"""The phases measured on one target: plain latency, the other APIs' calls beside it (an
embeddings call, a Messages call and a Responses call plain and streamed, where the target
serves them), saturated throughput, streaming (with the gateway's CPU per stream), memory at
idle, under load and over a soak (and the Celery worker's beside it), and errors by status in
every phase."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.loadgen import PhaseRun, Result, Target, run_phase
from bench.procs import (
    context_switches,
    core_busy_seconds,
    cpu_seconds,
    last_pid,
    rss_mib,
    services_cpu_seconds,
)

Metrics = dict[str, Any]

QUIET_BUSY = 0.10
"""A machine is quiet once no core is busier than this over a `settle` window."""


@dataclass(frozen=True)
class Plan:
    """How much of each phase: counts and seconds bound every phase."""

    latency_concurrency: tuple[int, ...] = (1, 16, 64)
    latency_count: int = 4000
    latency_seconds: float = 5.0
    throughput_concurrency: tuple[int, ...] = (16, 64, 128)
    throughput_seconds: float = 6.0
    stream_concurrency: tuple[int, ...] = (1, 16)
    stream_count: int = 2000
    stream_seconds: float = 5.0
    soak_seconds: float = 60.0
    soak_concurrency: int = 16
    warmup: int = 300
    others_warmup: int = 50


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (nearest rank) of `values`, in milliseconds."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))
    return round(ordered[rank] * 1000, 3)


def _spread(values: list[float], prefix: str = "") -> Metrics:
    return {f"{prefix}p{q}": pct(values, q) for q in (50, 90, 99)}


def _errors(run: PhaseRun) -> dict[str, int]:
    return {str(status): n for status, n in sorted(run.errors.items())}


async def settle(window: float = 0.5, timeout: float = 120.0) -> float:
    """Seconds until every core is quiet (QUIET_BUSY) for one `window`, at most `timeout`."""
    cores = range(os.cpu_count() or 1)
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        before = [core_busy_seconds(core) for core in cores]
        await asyncio.sleep(window)
        busiest = max(core_busy_seconds(core) - b for core, b in zip(cores, before, strict=True))
        if busiest / window < QUIET_BUSY:
            break
    return round(time.perf_counter() - start, 2)


@dataclass
class Meter:
    """Measures one target; `pids` (the gateway's processes, summed) add memory and CPU, else
    skipped; `cores` are the cores they are pinned to; `worker` (the Celery worker of a
    governed deployment, or an embedded gateway's storing process, left out of the gateway's
    own figures) adds its memory at idle and at the end."""

    target: Target
    plan: Plan
    pids: tuple[int, ...] = ()
    cores: tuple[int, ...] = (0,)
    worker: tuple[int, ...] = ()
    others: tuple[Target, ...] = ()  # the same server's other APIs (embeddings, Messages...)
    metrics: Metrics = field(default_factory=dict)
    served: int = 0  # calls answered 200, every phase (each one a record to store)
    samples: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict)

    async def phase(self, name: str, target: Target | None = None, **kwargs: Any) -> PhaseRun:
        run = await run_phase(target or self.target, **kwargs)
        self.served += len(run.ok)
        self.errors[name] = _errors(run)
        if run.samples:
            self.samples[name] = {str(k): v for k, v in run.samples.items()}
        return run

    async def warm(self) -> None:
        await self.phase("warmup", concurrency=8, count=self.plan.warmup, seconds=20)
        await self.phase("warmup_stream", concurrency=4, count=50, seconds=10, stream=True)
        await asyncio.sleep(2.0)
        if self.pids:
            self.metrics["rss_idle_mib"] = round(self.rss(), 1)
        self.worker_rss("celery_rss_idle_mib")

    def worker_rss(self, key: str) -> None:
        if self.worker:
            self.metrics[key] = round(sum(rss_mib(pid) for pid in self.worker), 1)

    async def settle(self, phase: str) -> None:
        """Wait for what the last phase left running (a worker storing its records) to finish,
        so each latency phase measures its own load only; the seconds it took are reported."""
        self.metrics.setdefault("settled_seconds", {})[phase] = await settle()

    async def latency(self) -> None:
        plan = self.plan
        for c in plan.latency_concurrency:
            await self.settle(f"latency_c{c}")
            before, switched = self.spent(), self.switches()
            run = await self.phase(
                f"latency_c{c}", concurrency=c, count=plan.latency_count * max(1, c // 8),
                seconds=plan.latency_seconds,
            )  # fmt: skip
            totals = [r.total for r in run.ok]
            self.metrics[f"latency_c{c}"] = {
                **_spread(totals), "calls": len(run.results), "rps": _rate(run),
                **self.spent_per_call(before, len(run.ok), "cpu_ms_per_call"),
                **self.switches_per_call(switched, len(run.ok)),
            }  # fmt: skip

    async def others_latency(self) -> None:
        """Each other API's plain call at c1 (`<api>_c1`), as many and as long as the chat
        calls' c1 level, after a short warm-up of its own: its latency beside theirs."""
        for other in self.others:
            await self.warm_other(other, stream=False)
            name = f"{other.api}_c1"
            await self.settle(name)
            before = self.spent()
            run = await self.phase(
                name, other, concurrency=1, count=self.plan.latency_count,
                seconds=self.plan.latency_seconds,
            )  # fmt: skip
            self.metrics[name] = {
                **_spread([r.total for r in run.ok]), "calls": len(run.results), "rps": _rate(run),
                **self.spent_per_call(before, len(run.ok), "cpu_ms_per_call"),
            }  # fmt: skip

    async def others_stream(self) -> None:
        """Each other API's streamed call at c1 (`<api>_stream_c1`), as the chat streams' c1
        level, after a short warm-up of its own."""
        for other in (o for o in self.others if o.streams):
            await self.warm_other(other, stream=True)
            name = f"{other.api}_stream_c1"
            await self.settle(name)
            before = self.spent()
            run = await self.phase(
                name, other, concurrency=1, count=self.plan.stream_count,
                seconds=self.plan.stream_seconds, stream=True,
            )  # fmt: skip
            self.metrics[name] = {
                **_stream_metrics(run),
                **self.spent_per_call(before, len(run.ok), "cpu_ms_per_stream"),
            }

    async def warm_other(self, other: Target, *, stream: bool) -> None:
        kind = "stream" if stream else "plain"
        await self.phase(
            f"warmup_{other.api}_{kind}", other, concurrency=1, count=self.plan.others_warmup,
            seconds=10, stream=stream,
        )  # fmt: skip

    async def throughput(self) -> None:
        steps, best = [], None
        for c in self.plan.throughput_concurrency:
            step = await self._step(c, self.plan.throughput_seconds, f"throughput_c{c}")
            steps.append(step)
            if not step["errors"] and (best is None or step["rps"] > best["rps"]):
                best = step
        top = best or max(steps, key=lambda s: s["rps"])
        self.metrics["throughput"] = {
            "rps": top["rps"], "zero_errors": best is not None, "at_concurrency": top["c"],
            "cpu_ms_per_call": top.get("cpu_ms_per_call"),
            "client_cpu_ms_per_call": top.get("client_cpu_ms_per_call"),
            "new_threads_per_call": top.get("new_threads_per_call"),
            "cpu_bound_rps": top.get("cpu_bound_rps"), "core_other_pct": top.get("core_other_pct"),
            "steps": steps,
        }  # fmt: skip
        if self.pids:
            self.metrics["rss_load_mib"] = max(s["rss_max_mib"] for s in steps)

    async def _step(self, c: int, seconds: float, name: str) -> Metrics:
        cpu0 = self.cpu()
        client0, ids0 = time.process_time(), last_pid()
        core0, wall0 = self.cores_busy(), time.perf_counter()
        rss: list[float] = []
        sampler = asyncio.create_task(self._sample_rss(rss))
        run = await self.phase(name, concurrency=c, count=10**9, seconds=seconds)
        sampler.cancel()
        step: Metrics = {"c": c, "rps": _rate(run), "calls": len(run.results)}
        step["errors"] = _errors(run)
        if run.ok:
            client = (time.process_time() - client0) * 1000 / len(run.ok)
            step["client_cpu_ms_per_call"] = round(client, 3)
            # Threads (and processes) started anywhere on the machine, per call: a gateway
            # that starts a thread per request shows it here (other activity adds noise).
            ids = last_pid() - ids0
            step["new_threads_per_call"] = round(ids / len(run.ok), 2) if ids >= 0 else None
        if self.pids and run.ok:
            used = self.cpu() - cpu0
            step["cpu_ms_per_call"] = round(used * 1000 / len(run.ok), 3)
            # 1000 / CPU ms per call: what the gateway would carry with its core to itself.
            step["cpu_bound_rps"] = round(len(run.ok) / used, 1) if used else None
            # The gateway's cores, busy with anything else (other processes on the machine),
            # as a share of one core.
            wall = time.perf_counter() - wall0
            other = self.cores_busy() - core0 - used
            step["core_other_pct"] = round(max(other, 0.0) / wall * 100, 1)
        if self.pids:
            step["rss_max_mib"] = round(max(rss, default=self.rss()), 1)
        return step

    def rss(self) -> float:
        return sum(rss_mib(pid, self.worker) for pid in self.pids)

    def cpu(self) -> float:
        return sum(cpu_seconds(pid, self.worker) for pid in self.pids)

    def spent(self) -> tuple[float, float, float]:
        """CPU seconds so far of the gateway, of the Celery worker and of PostgreSQL and Redis."""
        worker = sum(cpu_seconds(pid) for pid in self.worker)
        return self.cpu(), worker, services_cpu_seconds()

    def spent_per_call(
        self, before: tuple[float, float, float], calls: int, gateway_key: str
    ) -> Metrics:
        """The CPU spent per call since `before`: the gateway's as `gateway_key` (when its
        processes are known) and, for a governed gateway, the worker's and the services' (its
        records are stored meanwhile, on the cores the others run on)."""
        if not calls:
            return {}
        per_call = [round((now - then) * 1000 / calls, 3) for now, then in zip(
            self.spent(), before, strict=True
        )]  # fmt: skip
        found = {gateway_key: per_call[0]} if self.pids else {}
        if self.worker:
            found |= {"worker_cpu_ms_per_call": per_call[1]}
            found |= {"services_cpu_ms_per_call": per_call[2]}
        return found

    def switches(self) -> tuple[int, int]:
        """The gateway's context switches so far: (woken, pre-empted), its processes summed."""
        found = [context_switches(pid, self.worker) for pid in self.pids]
        return sum(w for w, _ in found), sum(p for _, p in found)

    def switches_per_call(self, before: tuple[int, int], calls: int) -> Metrics:
        """How often per call the gateway's threads slept until woken (each a wait for a read:
        the client, Redis, the upstream, the storing process), and were pre-empted by another
        process on their core."""
        if not calls or not self.pids:
            return {}
        woken, preempted = (now - then for now, then in zip(self.switches(), before, strict=True))
        return {"wakeups_per_call": round(woken / calls, 2),
                "preempted_per_call": round(preempted / calls, 2)}  # fmt: skip

    def cores_busy(self) -> float:
        return sum(core_busy_seconds(core) for core in self.cores)

    async def _sample_rss(self, into: list[float], every: float = 0.5) -> None:
        if not self.pids:
            return
        while True:
            into.append(self.rss())
            await asyncio.sleep(every)

    async def stream(self) -> None:
        plan = self.plan
        for c in plan.stream_concurrency:
            await self.settle(f"stream_c{c}")
            before = self.spent()
            run = await self.phase(
                f"stream_c{c}", concurrency=c, count=plan.stream_count,
                seconds=plan.stream_seconds, stream=True,
            )  # fmt: skip
            self.metrics[f"stream_c{c}"] = {
                **_stream_metrics(run),
                **self.spent_per_call(before, len(run.ok), "cpu_ms_per_stream"),
            }

    async def soak(self) -> None:
        if not self.pids or self.plan.soak_seconds <= 0:
            return
        points: list[tuple[float, float]] = []
        start = time.perf_counter()

        async def sample() -> None:
            while True:
                points.append((time.perf_counter() - start, self.rss()))
                await asyncio.sleep(1.0)

        sampler = asyncio.create_task(sample())
        run = await self.phase(
            "soak", concurrency=self.plan.soak_concurrency, count=10**9,
            seconds=self.plan.soak_seconds,
        )  # fmt: skip
        sampler.cancel()
        points.append((time.perf_counter() - start, self.rss()))
        self.metrics["soak"] = _soak_metrics(run, points)


def _rate(run: PhaseRun) -> float:
    return round(len(run.ok) / run.elapsed, 1) if run.elapsed else 0.0


def _stream_metrics(run: PhaseRun) -> Metrics:
    ok: list[Result] = run.ok
    firsts = [r.first for r in ok if r.first is not None]
    chunk_counts = Counter(r.chunks for r in ok)
    return {
        **_spread(firsts, "first_"), **_spread([r.total for r in ok], "last_"),
        "calls": len(run.results), "rps": _rate(run),
        "chunks_seen": {str(k): v for k, v in sorted(chunk_counts.items())},
    }  # fmt: skip


def _soak_metrics(run: PhaseRun, points: list[tuple[float, float]]) -> Metrics:
    # The first seconds of the soak settle the allocator; growth is read from there on.
    settled = [p for p in points if p[0] >= min(5.0, points[-1][0] / 4)] or points
    first, last = settled[0][1], settled[-1][1]
    slope = _slope(settled) * 60 if len(settled) > 2 else 0.0
    return {
        "seconds": round(run.elapsed, 1), "calls": len(run.results), "rps": _rate(run),
        "rss_start_mib": round(first, 1), "rss_end_mib": round(last, 1),
        "rss_max_mib": round(max(p[1] for p in points), 1),
        "growth_pct": round((last - first) / first * 100, 2) if first else None,
        "growth_mib_per_min": round(slope, 3),
    }  # fmt: skip


def _slope(points: list[tuple[float, float]]) -> float:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


async def measure(
    target: Target, plan: Plan, pids: tuple[int, ...] = (), cores: tuple[int, ...] = (0,),
    soak: bool = True, worker: tuple[int, ...] = (), others: tuple[Target, ...] = (),
) -> Metrics:  # fmt: skip
    """Every phase on one target, in order (the `others`, the same server's other APIs, each
    after the chat phases of its kind); the metrics with errors and error bodies (and the RSS
    of the `worker` processes after the warm-up and at the end)."""
    meter = Meter(target, plan, pids, cores, worker, others)
    await meter.warm()
    await meter.latency()
    await meter.others_latency()
    await meter.throughput()
    await meter.stream()
    await meter.others_stream()
    if soak:
        await meter.soak()
    meter.worker_rss("celery_rss_end_mib")
    meter.metrics["calls_served"] = meter.served
    meter.metrics["errors"] = {k: v for k, v in meter.errors.items() if v}
    meter.metrics["error_samples"] = meter.samples
    return meter.metrics

"""`--scale`: Momor's saturated throughput with 1, then 2 processes (one per core) against the
same PostgreSQL, Redis and Celery worker, and the proof that limits and reservations are
global: across both processes, a key with a small rate limit serves exactly its limit, and an
organization with a small balance is never charged past it, with the ledger and Redis agreeing
once the records are drained. The limits are checked first, before any load, so the single
Celery worker has no backlog and the ledger settles within seconds."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import httpx

from bench import deploy
from bench.loadgen import PhaseRun, Target, run_phase
from bench.measure import Meter
from bench.procs import Proc

if TYPE_CHECKING:
    from bench.run import Bench, Gateway

Metrics = dict[str, Any]

PROCESSES = (1, 2)
RATE_LIMIT = 200  # requests per minute of the rate-limited key
SMALL_BALANCE = "0.0001"  # USD: a few hundred calls of the benchmark model
HAMMER_CALLS = 600
HAMMER_CONCURRENCY = 32
SETTLE_SECONDS = 120.0
# Both sections of the scale run nice 5 (the load generator and the fake upstream, which
# share core 1 with the second process, come first: they are not what is measured), and the
# Celery worker is paused while they run (records wait in Redis and are stored afterwards):
# catching up on the backlog of the earlier sections, it would take core 1 from the second.
NICE = 5


def pinning_note(processes: int, scaled: bool = True) -> str:
    """Where the processes ran: `scaled` for the scale steps (nice, the worker paused)."""
    if processes < 2:
        return "1 process on core 0; fake upstream, load generator and Celery on core 1"
    if not scaled:
        return (
            f"{processes} processes, one per core: the one on core 1 shares it with the fake "
            "upstream, the load generator and the Celery worker"
        )
    return (
        f"{processes} processes, one per core (0 and 1), at nice {NICE}: the second shares "
        "core 1 with the fake upstream and the load generator (the Celery worker paused)"
    )


async def measure_limits(bench: Bench, gateways: list[Gateway]) -> dict[str, Metrics]:
    """Per server, 2 processes: the rate-limited key and the small balance hammered across
    both."""
    out = {}
    for gateway in gateways:
        keys = _limit_keys(bench, gateway)
        procs, target = bench.launch(gateway, PROCESSES[-1])
        try:
            print(f"limits across 2 processes: {gateway.name}", flush=True)
            rate = await _rate_limited(replace(target, key=keys["rate"]))
            out[gateway.name] = {
                "rate_limit": rate,
                "reservations": await _reserved(bench, target, keys),
            }
        finally:
            for proc in procs:
                bench.procs.stop(proc)
    return out


async def measure_scale(bench: Bench, gateways: list[Gateway], repeat: int) -> Metrics:
    out: Metrics = {"pinning": {str(n): pinning_note(n) for n in PROCESSES}, "servers": {}}
    for gateway in gateways:
        result: Metrics = {}
        for n in PROCESSES:
            procs, target = bench.launch(gateway, n, nice=NICE)
            try:
                print(f"[{repeat}] scale: {gateway.name}, {n} process(es)", flush=True)
                with _paused(bench.worker):
                    result[f"p{n}"] = await _throughput(bench, target, procs)
            finally:
                for proc in procs:
                    bench.procs.stop(proc)
        last = PROCESSES[-1]
        one, two = result["p1"]["rps"], result[f"p{last}"]["rps"]
        result["ratio"] = round(two / one, 2) if one else None
        result["cpu_bound_ratio"] = _cpu_bound_ratio(result["p1"], result[f"p{last}"], last)
        out["servers"][gateway.name] = result
    return out


def _cpu_bound_ratio(one: Metrics, many: Metrics, processes: int) -> float | None:
    """What `processes` processes would carry over one, each with a core of its own, from
    each step's CPU per call: the cost of a call as processes are added, whatever else shares
    the machine's cores (on two cores, the fake upstream and the load generator do)."""
    alone, beside = one.get("cpu_ms_per_call"), many.get("cpu_ms_per_call")
    if not alone or not beside:
        return None
    return round(processes * alone / beside, 2)


async def _throughput(bench: Bench, target: Target, procs: list[Proc]) -> Metrics:
    from bench.run import gateway_core

    cores = tuple(gateway_core(i) for i in range(len(procs)))
    meter = Meter(target, bench.plan, tuple(p.pid for p in procs), cores)
    await meter.warm()
    await meter.throughput()
    top = meter.metrics["throughput"]
    return {
        "processes": len(procs), "cores": list(cores), "rps": top["rps"],
        "zero_errors": top["zero_errors"], "at_concurrency": top["at_concurrency"],
        "cpu_ms_per_call": top["cpu_ms_per_call"], "cpu_bound_rps": top["cpu_bound_rps"],
        "rss_idle_mib": meter.metrics.get("rss_idle_mib"),
        "steps": [{k: s.get(k) for k in ("c", "rps", "errors", "cpu_ms_per_call")}
                  for s in top["steps"]],
        "errors": {k: v for k, v in meter.errors.items() if v},
    }  # fmt: skip


@contextlib.contextmanager
def _paused(worker: Proc | None) -> Iterator[None]:
    """The Celery worker's process group stopped (SIGSTOP) for the block, then continued."""
    if worker is None:
        yield
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGCONT)


def _limit_keys(bench: Bench, gateway: Gateway) -> dict[str, str]:
    """Two organizations of their own, made before the processes start (so both know them):
    one whose key has a small rate limit, one with a small balance and a management key."""
    if bench.deployment is None:
        raise RuntimeError("Momor's deployment is not set up")
    tag = gateway.server
    rated, funded = f"rate-{tag}", f"credit-{tag}"
    return {
        "rate": bench.deployment.org_with_key(rated, "1000", RATE_LIMIT),
        "credit": bench.deployment.org_with_key(funded, SMALL_BALANCE),
        "manage": bench.deployment.management_key(funded),
        "credit_org": funded,
    }


def _by_process(run: PhaseRun) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[int]] = {}
    for r in run.results:
        counts.setdefault(str(r.where), Counter())[r.status] += 1
    return {where: {str(k): v for k, v in sorted(c.items())} for where, c in counts.items()}


async def _fresh_window() -> None:
    """Rate windows are whole minutes of the clock: start with at least 20 s of one left."""
    left = 60 - time.time() % 60
    if left < 20:
        await asyncio.sleep(left + 0.5)


async def _rate_limited(target: Target) -> Metrics:
    await _fresh_window()
    run = await run_phase(
        target, concurrency=HAMMER_CONCURRENCY, count=HAMMER_CALLS, seconds=30
    )  # fmt: skip
    statuses = Counter(r.status for r in run.results)
    return {
        "limit_per_minute": RATE_LIMIT, "calls": len(run.results), "served": statuses[200],
        "refused_429": statuses[429], "seconds": round(run.elapsed, 2),
        "by_process": _by_process(run),
        "global": statuses[200] == RATE_LIMIT and statuses[429] == len(run.results) - RATE_LIMIT,
    }  # fmt: skip


async def _reserved(bench: Bench, target: Target, keys: dict[str, str]) -> Metrics:
    run = await run_phase(
        replace(target, key=keys["credit"]), concurrency=HAMMER_CONCURRENCY,
        count=HAMMER_CALLS, seconds=60,
    )  # fmt: skip
    statuses = Counter(r.status for r in run.results)
    api, db = await _settled(bench, target, keys, statuses[200])
    initial, served = Decimal(SMALL_BALANCE), statuses[200]
    charged = -db["charges"]
    out: Metrics = {
        "balance_usd": SMALL_BALANCE, "calls": len(run.results), "served": served,
        "refused_402": statuses[402], "by_process": _by_process(run),
        "generations_stored": db["served"], "charged_usd": str(charged),
        "cost_per_call_usd": str(charged / served) if served else None,
        "balance_after_usd": str(db["balance"]), "ledger_sum_usd": str(db["ledger_sum"]),
        "credits_api": api,
    }  # fmt: skip
    out["checks"] = {
        "served x cost <= balance": charged <= initial and db["balance"] >= 0,
        "every call served or refused 402": served + statuses[402] == len(run.results),
        "every served call stored and charged": db["served"] == served == db["charge_rows"],
        "ledger sum = balance": db["ledger_sum"] == db["balance"],
        "Redis: nothing held, available = ledger balance": (
            not api.get("open_reservations")
            and Decimal(api.get("unposted_charges", "1")) == 0
            and Decimal(api.get("available", "-1")) == db["balance"]
            and Decimal(api.get("balance", "-1")) == db["balance"]
        ),
    }
    out["global"] = all(out["checks"].values())
    return out


async def _settled(
    bench: Bench, target: Target, keys: dict[str, str], served: int
) -> tuple[Metrics, dict[str, Decimal]]:
    """The credits API and the ledger once every served call is stored and nothing is held
    (bounded wait); the API's answer gains the seconds waited."""
    host, port = target.host_port
    url = f"http://{host}:{port}/api/manage/credits/"
    start = time.monotonic()
    headers = {"Authorization": f"Bearer {keys['manage']}"}
    async with httpx.AsyncClient(headers=headers) as client:
        while True:
            answer = await client.get(url, timeout=10)
            body = answer.json() if answer.status_code == 200 else {"status": answer.status_code}
            db = _ledger(bench, keys["credit_org"])
            done = answer.status_code == 200 and not body["open_reservations"]
            done = done and Decimal(body["unposted_charges"]) == 0 and db["served"] >= served
            if done or time.monotonic() - start > SETTLE_SECONDS:
                body["waited_s"] = round(time.monotonic() - start, 1)
                return body, db
            await asyncio.sleep(1.0)


def _ledger(bench: Bench, slug: str) -> dict[str, Decimal]:
    if bench.deployment is None:
        raise RuntimeError("Momor's deployment is not set up")
    # The slug is the benchmark's own ([a-z0-9-]), never user input.
    org = f"(SELECT id FROM accounts_organization WHERE slug = '{slug}')"  # noqa: S608 - the benchmark's own slug, never user input
    ledger = f"FROM billing_ledgerentry WHERE organization_id = {org}"
    sql = (
        f"SELECT (SELECT balance FROM accounts_organization WHERE id = {org}), "  # noqa: S608 - the benchmark's own slug, never user input
        f"(SELECT coalesce(sum(amount), 0) {ledger}), "
        f"(SELECT coalesce(sum(amount), 0) {ledger} AND kind = 'charge'), "
        f"(SELECT count(*) {ledger} AND kind = 'charge'), "
        f"(SELECT count(*) FROM billing_generation WHERE organization_id = {org}"
        " AND status = 'success')"
    )
    row = deploy.psql_value(bench.deployment.settings.database, sql).split("|")
    names = ("balance", "ledger_sum", "charges", "charge_rows", "served")
    return {name: Decimal(value) for name, value in zip(names, row, strict=True)}

"""The benchmark's one command: Momor (governed), LiteLLM proxy and any other OpenAI-compatible
gateway, each measured alone on core 0 against the direct baseline measured beside it.

    .venv/bin/python -m bench.run [--server daphne] [--litellm] [--soak 60] [--repeat 1]
                                  [--gateway NAME=BASE_URL,KEY[,MODEL]] [--profile] [--quick]

See bench/README.md for what each number means."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from bench import deploy, litellm, profile
from bench.loadgen import Target, run_phase
from bench.measure import Plan, measure
from bench.procs import Proc, Procs
from bench.report import (
    added,
    goals_text,
    loadavg,
    machine,
    median_tree,
    save,
    table,
    targets,
)

RESULTS = Path(__file__).resolve().parent / "results"
GATEWAY_CORE, LOAD_CORE = 0, 1
Metrics = dict[str, Any]


@dataclass(frozen=True)
class Gateway:
    """One gateway to measure: Momor under a server, LiteLLM, or one already running."""

    name: str
    kind: str  # momor | litellm | external
    server: str = ""
    base_url: str = ""
    key: str = ""
    model: str = deploy.MODEL


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    p.add_argument("--server", action="append", choices=[*deploy.SERVERS, "all"],
                   help="ASGI server(s) for Momor (repeatable; default daphne)")  # fmt: skip
    p.add_argument("--no-momor", action="store_true", help="skip Momor (peers only)")
    p.add_argument("--litellm", action="store_true", help="also measure LiteLLM proxy")
    p.add_argument("--gateway", action="append", default=[], metavar="NAME=BASE_URL,KEY[,MODEL]",
                   help="another OpenAI-compatible gateway running on loopback")  # fmt: skip
    p.add_argument("--soak", type=float, default=60.0, metavar="SECONDS")
    p.add_argument("--repeat", type=int, default=1, metavar="N")
    p.add_argument("--profile", action="store_true", help="py-spy Momor during saturation")
    p.add_argument("--profile-seconds", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="short phases (a smoke run)")
    p.add_argument("--access-log", action="store_true", help="leave Momor's access log on")
    p.add_argument("--fake-port", type=int, default=0, help="port of the fake upstream")
    return p.parse_args(argv)


def gateways(args: argparse.Namespace) -> list[Gateway]:
    found: list[Gateway] = []
    if not args.no_momor:
        servers = args.server or ["daphne"]
        if "all" in servers:
            servers = [s for s in deploy.SERVERS if deploy.server_available(s) is None]
        for server in dict.fromkeys(servers):
            why = deploy.server_available(server)
            if why:
                print(f"skipping Momor on {server}: {why}")
                continue
            found.append(Gateway(f"momor-{server}", "momor", server=server))
    if args.litellm:
        found.append(Gateway("litellm", "litellm"))
    for spec in args.gateway:
        found.append(_external(spec))
    return found


def _external(spec: str) -> Gateway:
    name, _, rest = spec.partition("=")
    parts = rest.split(",")
    if not name or len(parts) < 2:
        raise SystemExit(f"--gateway wants NAME=BASE_URL,KEY[,MODEL], got {spec!r}")
    model = parts[2] if len(parts) > 2 else deploy.MODEL
    return Gateway(name, "external", base_url=parts[0], key=parts[1], model=model)


def plan_of(args: argparse.Namespace) -> Plan:
    plan = Plan(soak_seconds=args.soak)
    if args.quick:
        plan = replace(
            plan, latency_seconds=2.0, throughput_seconds=3.0, stream_seconds=2.0,
            latency_count=1500, stream_count=600, warmup=100,
        )  # fmt: skip
    return plan


class Bench:
    """The run's processes and deployment; `close` stops and drops all of them."""

    def __init__(self, args: argparse.Namespace, stamp: str) -> None:
        self.args, self.stamp = args, stamp
        self.logs = RESULTS / "logs" / stamp
        self.procs = Procs(self.logs)
        self.plan = plan_of(args)
        self.deployment: deploy.Deployment | None = None
        self.fake_url = ""
        self.loadavg_at_start = loadavg()

    def start(self, wanted: list[Gateway]) -> None:
        _, self.fake_url = deploy.start_fake(self.procs, LOAD_CORE, self.args.fake_port)
        print(f"fake upstream: {self.fake_url} (core {LOAD_CORE})", flush=True)
        if any(g.kind == "momor" for g in wanted):
            print("setting up the governed deployment (PostgreSQL, Redis, Celery)", flush=True)
            self.deployment = deploy.Deployment(deploy.Settings(), self.fake_url, self.logs)
            self.deployment.setup()
            self.deployment.start_worker(self.procs, LOAD_CORE)

    def close(self) -> None:
        self.procs.stop_all()
        if self.deployment is not None:
            self.deployment.teardown()

    def direct(self) -> Target:
        return Target("direct", f"{self.fake_url}/v1", "sk-bench-fake", deploy.UPSTREAM_ID)

    def launch(self, gateway: Gateway) -> tuple[Proc | None, Target]:
        if gateway.kind == "momor":
            if self.deployment is None:
                raise RuntimeError("Momor's deployment is not set up")
            proc, base = deploy.start_momor(
                self.procs, self.deployment, gateway.server, GATEWAY_CORE, self.args.access_log
            )
            return proc, Target(gateway.name, base, self.deployment.key, gateway.model)
        if gateway.kind == "litellm":
            proc, base = litellm.start(self.procs, self.fake_url, GATEWAY_CORE, self.logs)
            return proc, Target(gateway.name, base, litellm.MASTER_KEY, gateway.model)
        return None, Target(gateway.name, gateway.base_url, gateway.key, gateway.model)

    async def section(self, gateway: Gateway, repeat: int) -> Metrics:
        proc, target = self.launch(gateway)
        try:
            print(f"[{repeat}] {gateway.name}: direct baseline", flush=True)
            direct = await measure(self.direct(), self.plan, None, soak=False)
            print(f"[{repeat}] {gateway.name}: measuring (pid {proc and proc.pid})", flush=True)
            result = await measure(target, self.plan, proc.pid if proc else None)
            section: Metrics = {"gateway": gateway.name, "direct": direct, "target": result}
            section["added"] = added(direct, result)
            if self.args.profile and proc is not None and repeat == 1:
                section["profile"] = await self.profile(proc, target)
            return section
        finally:
            if proc is not None:
                self.procs.stop(proc)

    async def profile(self, proc: Proc, target: Target) -> Metrics:
        seconds = self.args.profile_seconds
        out = RESULTS / f"{self.stamp}-profile-{target.name}"
        print(f"    profiling {target.name} for {seconds}s under c64 load", flush=True)
        spies = profile.record(proc.pid, seconds, out)
        await asyncio.sleep(1.0)  # py-spy attaches
        run = await run_phase(target, concurrency=64, count=10**9, seconds=seconds + 1)
        for spy in spies:
            spy.wait(60)
        files = profile.outputs(out)
        return {
            "cpu": profile.summarize(files["cpu"]), "wall": profile.summarize(files["wall"]),
            "files": {k: str(v) for k, v in files.items()},
            "rps_while_profiled": round(len(run.ok) / run.elapsed, 1),
        }  # fmt: skip

    def recording(self) -> Metrics:
        """Momor's records after the run: the Celery backlog drained (bounded), rows stored."""
        if self.deployment is None:
            return {}
        db = self.deployment.settings.redis_db
        deadline = time.monotonic() + 180
        backlog = deploy.redis_len(db, "celery")
        while backlog and time.monotonic() < deadline:
            time.sleep(1.0)
            backlog = deploy.redis_len(db, "celery")
        sql = "SELECT status || '=' || count(*) FROM billing_generation GROUP BY status"
        rows = _psql_value(self.deployment.settings.database, sql)
        return {"celery_backlog_left": backlog, "generations_by_status": rows}


def _psql_value(database: str, sql: str) -> str:
    out = subprocess.run(  # noqa: S603
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", database, "-tA", "-c", sql],  # noqa: S607
        capture_output=True, text=True,
    )  # fmt: skip
    return " ".join(out.stdout.split()) or out.stderr.strip()


async def measure_all(bench: Bench, wanted: list[Gateway]) -> list[list[Metrics]]:
    runs = []
    for repeat in range(1, bench.args.repeat + 1):
        runs.append([await bench.section(g, repeat) for g in wanted])
    return runs


def _pin_self() -> None:
    if (os.cpu_count() or 1) < 2:
        print("warning: fewer than 2 cores; nothing is pinned apart")
        return
    os.sched_setaffinity(0, {LOAD_CORE})


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def build_report(bench: Bench, wanted: list[Gateway], runs: list[list[Metrics]]) -> Metrics:
    sections = [median_tree([run[i] for run in runs]) for i in range(len(wanted))]
    for i, section in enumerate(sections):  # the profile of the first repeat, as taken
        if "profile" in runs[0][i]:
            section["profile"] = runs[0][i]["profile"]
    report: Metrics = {
        "machine": machine([g.server for g in wanted if g.server])
        | {"loadavg_at_start": bench.loadavg_at_start},
        "plan": vars(bench.plan), "repeat": bench.args.repeat,
        "pinning": {"gateway": GATEWAY_CORE, "fake_upstream_and_loadgen": LOAD_CORE,
                    "celery_worker": LOAD_CORE},
        "sections": sections, "targets": targets(sections),
        "runs": runs if len(runs) > 1 else None,
    }  # fmt: skip
    if bench.deployment is not None:
        report["momor_recording"] = bench.recording()
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    wanted = gateways(args)
    if not wanted:
        raise SystemExit("nothing to measure")
    _pin_self()
    signal.signal(signal.SIGTERM, _interrupt)
    bench = Bench(args, time.strftime("%Y%m%d-%H%M%S"))
    try:
        bench.start(wanted)
        runs = asyncio.run(measure_all(bench, wanted))
        report = build_report(bench, wanted, runs)
    except KeyboardInterrupt:
        print("interrupted: stopping everything started")
        return 130
    finally:
        bench.close()
    path = save(report, RESULTS)
    print_report(report, path)
    return 0


def print_report(report: Metrics, path: Path) -> None:
    m = report["machine"]
    print(f"\nmachine: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}; "
          f"gateway on core {GATEWAY_CORE}, fake upstream + load generator on core {LOAD_CORE}; "
          f"medians of {report['repeat']} run(s)\n")  # fmt: skip
    print(table(report))
    busy = [s["target"]["throughput"].get("core_other_pct") or 0 for s in report["sections"]]
    if max(busy, default=0) > 10 or float(m["loadavg_at_start"][0]) > 2.5:
        print(
            f"\nWARNING: the machine was busy (load average {' '.join(m['loadavg_at_start'])} "
            f"at start; core {GATEWAY_CORE} busy with other processes up to {max(busy)}% "
            "during saturation): throughput and latency are understated; CPU ms/call holds."
        )
    for section in report["sections"]:
        direct = section["direct"]["throughput"]
        print(
            f"\nload generator ceiling (direct, {section['gateway']} section): "
            f"{direct['rps']:,.0f} req/s, client CPU {direct['client_cpu_ms_per_call']} ms/call"
        )
        _print_errors(section)
        if "profile" in section:
            _print_profile(section["profile"])
    if report.get("momor_recording"):
        print(f"\nMomor recording: {report['momor_recording']}")
    print("\ntargets (issue 7):")
    print(goals_text(report["targets"]))
    print(f"\nJSON: {path}")


def _print_errors(section: Metrics) -> None:
    for side in ("direct", "target"):
        samples = section[side].get("error_samples") or {}
        if isinstance(samples, list):
            samples = samples[0]
        for phase, by_status in samples.items():
            for status, bodies in by_status.items():
                print(f"  {section['gateway']} {side} {phase} status {status}: {bodies[0][:300]}")


def _print_profile(profiled: Metrics) -> None:
    print(f"\nprofile under c64 load ({profiled['rps_while_profiled']} req/s while sampled); "
          f"flamegraph {profiled['files']['flamegraph']}")  # fmt: skip
    for kind, title in (("cpu", "CPU (thread holding the GIL)"), ("wall", "busy threads")):
        summary = profiled[kind]
        print(f"  {title}, {summary['samples']} samples, inclusive share by category:")
        for name, share in summary["categories_pct"].items():
            print(f"    {share:5.1f}%  {name}")
        print("  top self time:")
        for name, share in list(summary["top_self_pct"].items())[:12]:
            print(f"    {share:5.1f}%  {name}")


if __name__ == "__main__":
    raise SystemExit(main())

"""The benchmark's one command: Momor (governed, and plain on its embedded defaults), LiteLLM
proxy, Portkey's gateway and any other OpenAI-compatible gateway, each measured alone on core 0
against the direct baseline measured beside it.

    .venv/bin/python -m bench.run [--server daphne] [--litellm] [--portkey] [--soak 60] [--repeat 1]
                                  [--gateway NAME=BASE_URL,KEY[,MODEL]] [--profile] [--quick]
                                  [--processes N] [--scale] [--momor-env KEY=VALUE]
                                  [--variant LABEL:KEY=VALUE[,KEY=VALUE]] [--memory SECONDS]
                                  [--baseline GIT_REF] [--plain] [--floor]

See bench/README.md for what each number means."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from bench import deploy, litellm, memtrace, portkey, profile, records, scale, versus_chat
from bench.loadgen import Target, run_phase
from bench.measure import Plan, measure
from bench.procs import Proc, Procs, storing_processes
from bench.report import (
    added,
    goals_text,
    loadavg,
    machine,
    median_tree,
    save,
    scale_table,
    server_ratios,
    table,
    targets,
)

RESULTS = Path(__file__).resolve().parent / "results"
GATEWAY_CORE, LOAD_CORE = 0, 1
Metrics = dict[str, Any]


@dataclass(frozen=True)
class Gateway:
    """One gateway to measure: Momor under a server, LiteLLM, Portkey, the floor, or one
    already running."""

    name: str
    kind: str  # momor | litellm | portkey | floor | external
    server: str = ""
    base_url: str = ""
    key: str = ""
    model: str = deploy.MODEL
    env: tuple[tuple[str, str], ...] = ()  # added to Momor's environment
    baseline: str = ""  # Momor as of this git ref, from its own checkout and deployment
    embedded: bool = False  # Momor on the plain (embedded) deployment: SQLite, no Redis

    @property
    def on_python(self) -> bool:
        """Whether py-spy can profile it: every gateway the run starts but Portkey's (Node)."""
        return self.kind != "portkey"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    p.add_argument("--server", action="append", choices=[*deploy.SERVERS, "all"],
                   help="ASGI server(s) for Momor (repeatable; default daphne)")  # fmt: skip
    p.add_argument("--no-momor", action="store_true", help="skip Momor (peers only)")
    p.add_argument("--litellm", action="store_true", help="also measure LiteLLM proxy")
    p.add_argument("--portkey", action="store_true", help="also measure Portkey's gateway")
    p.add_argument("--floor", action="store_true",
                   help="also measure a bare aiohttp pass-through proxy (no soak)")  # fmt: skip
    p.add_argument("--gateway", action="append", default=[], metavar="NAME=BASE_URL,KEY[,MODEL]",
                   help="another OpenAI-compatible gateway running on loopback")  # fmt: skip
    p.add_argument("--soak", type=float, default=60.0, metavar="SECONDS")
    p.add_argument("--repeat", type=int, default=1, metavar="N")
    p.add_argument("--profile", action="store_true", help="py-spy Momor during saturation")
    p.add_argument("--profile-seconds", type=int, default=15)
    p.add_argument("--memory", type=float, default=0.0, metavar="SECONDS",
                   help="also soak Momor this long under tracemalloc: growth by site")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="short phases (a smoke run)")
    p.add_argument("--access-log", action="store_true", help="leave Momor's access log on")
    p.add_argument("--fake-port", type=int, default=0, help="port of the fake upstream")
    p.add_argument("--processes", type=int, default=1, metavar="N",
                   help="Momor processes per section, one per core, round-robin load")  # fmt: skip
    p.add_argument("--scale", action="store_true",
                   help="also 1 then 2 Momor processes: throughput, global limits")  # fmt: skip
    p.add_argument("--momor-env", action="append", default=[], metavar="KEY=VALUE",
                   help="set in every Momor process's environment (repeatable)")  # fmt: skip
    p.add_argument("--variant", action="append", default=[], metavar="LABEL:KEY=VALUE[,...]",
                   help="another Momor section on the first server with this env")  # fmt: skip
    p.add_argument("--baseline", action="append", default=[], metavar="GIT_REF",
                   help="also Momor as of this git ref, on the first server")  # fmt: skip
    p.add_argument("--plain", action="store_true",
                   help="also Momor on embedded defaults (SQLite, no Redis or Celery)")  # fmt: skip
    p.add_argument("--records", action="store_true",
                   help="instead: the records benchmark (reads over many generations)")  # fmt: skip
    p.add_argument("--records-total", type=int, default=10_000_000, metavar="N")
    p.add_argument("--records-org", type=int, default=1_000_000, metavar="N",
                   help="of them, in the measured organization")  # fmt: skip
    p.add_argument("--records-others", type=int, default=9, metavar="N",
                   help="organizations sharing the rest")  # fmt: skip
    p.add_argument("--records-runs", type=int, default=40, metavar="N",
                   help="timed requests per read")  # fmt: skip
    p.add_argument("--records-redis-db", type=int, default=14, metavar="N",
                   help="the Redis DB index the records benchmark uses (and empties)")  # fmt: skip
    p.add_argument("--records-keep", action="store_true",
                   help="keep the records database (momor_bench_records) afterwards")  # fmt: skip
    args = p.parse_args(argv)
    if args.processes < 1:
        p.error("--processes must be at least 1")
    return args


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"expected KEY=VALUE, got {item!r}")
        pairs.append((key, value))
    return tuple(pairs)


def gateways(args: argparse.Namespace) -> list[Gateway]:
    found: list[Gateway] = []
    if not args.no_momor:
        servers = args.server or ["daphne"]
        if "all" in servers:
            servers = [s for s in deploy.SERVERS if deploy.server_available(s) is None]
        env = _pairs(",".join(args.momor_env))
        for server in dict.fromkeys(servers):
            why = deploy.server_available(server)
            if why:
                print(f"skipping Momor on {server}: {why}")
                continue
            found.append(Gateway(f"momor-{server}", "momor", server=server, env=env))
        first = next((g for g in found if g.kind == "momor"), None)
        for spec in args.variant:
            label, _, pairs = spec.partition(":")
            if first is None or not label:
                raise SystemExit(f"--variant wants LABEL:KEY=VALUE and a Momor server: {spec!r}")
            name = f"{first.name}-{label}"
            found.append(replace(first, name=name, env=(*env, *_pairs(pairs))))
        if args.plain:
            if first is None:
                raise SystemExit("--plain needs a Momor server to measure")
            name, plain_env = f"momor-plain-{first.server}", deploy.embedded_extra(env)
            found.append(replace(first, name=name, env=plain_env, embedded=True))
        for ref in args.baseline:
            if first is None:
                raise SystemExit("--baseline needs a Momor server to measure")
            found.append(replace(first, name=f"baseline-{ref}-{first.server}", baseline=ref))
    if args.litellm:
        found.append(Gateway("litellm", "litellm"))
    if args.portkey:
        found.append(Gateway("portkey", "portkey", model=deploy.UPSTREAM_ID))
    if args.floor:
        found.append(Gateway("floor", "floor", model=deploy.UPSTREAM_ID))
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
        self.baselines: dict[str, deploy.Deployment] = {}
        self.embedded: deploy.EmbeddedDeployment | None = None
        self.worker: Proc | None = None
        self.fake_url = ""
        self.loadavg_at_start = loadavg()

    def start(self, wanted: list[Gateway]) -> None:
        _, self.fake_url = deploy.start_fake(self.procs, LOAD_CORE, self.args.fake_port)
        print(f"fake upstream: {self.fake_url} (core {LOAD_CORE})", flush=True)
        if any(g.kind == "momor" for g in wanted):
            print("setting up the governed deployment (PostgreSQL, Redis, Celery)", flush=True)
            self.deployment = deploy.Deployment(deploy.Settings(), self.fake_url, self.logs)
            self.deployment.setup()
            self.worker = self.deployment.start_worker(self.procs, LOAD_CORE)
        if any(g.embedded for g in wanted):
            print("setting up the plain deployment (SQLite, journal, no Redis)", flush=True)
            self.embedded = deploy.EmbeddedDeployment(
                deploy.Settings(), self.fake_url, self.logs / "plain"
            )
            self.embedded.setup()
        for i, gateway in enumerate(g for g in wanted if g.baseline):
            self.baselines[gateway.baseline] = self.baseline_deployment(gateway.baseline, i)

    def baseline_deployment(self, ref: str, index: int) -> deploy.Deployment:
        """Momor as of `ref`: its own checkout, database, Redis DB and Celery worker."""
        commit, root = deploy.baseline_checkout(ref)
        print(f"setting up the baseline deployment of {ref} ({commit})", flush=True)
        settings = deploy.Settings(
            database=f"momor_bench_base{index}", redis_db=13 - index, root=root
        )
        deployment = deploy.Deployment(settings, self.fake_url, self.logs / f"base{index}")
        deployment.log_dir.mkdir(parents=True, exist_ok=True)
        deployment.setup()
        deployment.start_worker(self.procs, LOAD_CORE)
        return deployment

    def deployment_of(self, gateway: Gateway) -> deploy.Deployment:
        found = self.baselines.get(gateway.baseline) if gateway.baseline else self.deployment
        if gateway.embedded:
            found = self.embedded
        if found is None:
            raise RuntimeError("Momor's deployment is not set up")
        return found

    def close(self) -> None:
        self.procs.stop_all()
        for deployment in [self.deployment, self.embedded, *self.baselines.values()]:
            if deployment is not None:
                deployment.teardown()

    def direct(self) -> Target:
        return Target("direct", f"{self.fake_url}/v1", "sk-bench-fake", deploy.UPSTREAM_ID)

    def other_targets(
        self, gateway: Gateway, target: Target
    ) -> tuple[tuple[Target, ...], tuple[Target, ...]]:
        """The other APIs' calls measured beside the chat calls, direct and through the
        gateway, in Momor's sections whose deployment serves them: an embeddings call, a
        Messages call to the model an Anthropic offering serves (direct: the fake's
        Anthropic), and a Responses call to the model an OpenAI offering serves (direct: the
        fake's Responses route)."""
        if gateway.kind != "momor":
            return (), ()
        deployment, direct, through = self.deployment_of(gateway), [], []
        if deployment.embeddings:
            direct.append(replace(self.direct(), model=deploy.EMBED_UPSTREAM_ID, api="embeddings"))
            through.append(replace(target, model=deploy.EMBED_MODEL, api="embeddings"))
        if deployment.messages:
            anthropic = f"{self.fake_url}{deploy.ANTHROPIC_PATH}/v1"
            direct.append(replace(
                self.direct(), base_url=anthropic, model=deploy.MESSAGES_UPSTREAM_ID,
                api="messages",
            ))  # fmt: skip
            through.append(replace(target, model=deploy.MESSAGES_MODEL, api="messages"))
        if deployment.responses:
            direct.append(
                replace(self.direct(), model=deploy.RESPONSES_UPSTREAM_ID, api="responses")
            )
            through.append(replace(target, model=deploy.RESPONSES_MODEL, api="responses"))
        return tuple(direct), tuple(through)

    def launch(
        self, gateway: Gateway, processes: int = 1, nice: int = 0
    ) -> tuple[list[Proc], Target]:
        """The gateway's processes (Momor: `processes` of them, process i on core i modulo the
        cores, at `nice`) and the target that spreads connections over them."""
        if gateway.kind == "momor":
            deployment = self.deployment_of(gateway)
            started = []
            try:
                for i in range(processes):
                    started.append(deploy.start_momor(
                        self.procs, deployment, gateway.server, gateway_core(i),
                        self.args.access_log, name=f"{gateway.name}-{processes}p{i}",
                        env=dict(gateway.env), nice=nice,
                    ))  # fmt: skip
            except Exception:
                for proc, _ in started:
                    self.procs.stop(proc)
                raise
            ports = tuple(int(base.rsplit(":", 1)[1].split("/")[0]) for _, base in started[1:])
            target = self.momor_target(gateway, started[0][1], ports)
            return [proc for proc, _ in started], target
        if gateway.kind == "floor":
            proc, base = deploy.start_floor(self.procs, self.fake_url, GATEWAY_CORE)
            return [proc], Target(gateway.name, base, "sk-bench-fake", gateway.model)
        if gateway.kind == "litellm":
            proc, base = litellm.start(self.procs, self.fake_url, GATEWAY_CORE, self.logs)
            return [proc], Target(gateway.name, base, litellm.MASTER_KEY, gateway.model)
        if gateway.kind == "portkey":
            proc, base = portkey.start(self.procs, GATEWAY_CORE, self.logs)
            routing = portkey.routing(self.fake_url)
            return [proc], Target(gateway.name, base, portkey.KEY, gateway.model, headers=routing)
        return [], Target(gateway.name, gateway.base_url, gateway.key, gateway.model)

    def momor_target(self, gateway: Gateway, base: str, more_ports: tuple[int, ...] = ()) -> Target:
        key = self.deployment_of(gateway).key
        return Target(gateway.name, base, key, gateway.model, more_ports)

    async def section(self, gateway: Gateway, repeat: int) -> Metrics:
        count = self.args.processes if gateway.kind == "momor" else 1
        procs, target = self.launch(gateway, count)
        pids = tuple(p.pid for p in procs)
        cores = tuple(gateway_core(i) for i in range(len(procs))) or (GATEWAY_CORE,)
        kind, worker = self.deployment_kind(gateway, pids)
        direct_others, others = self.other_targets(gateway, target)
        try:
            print(f"[{repeat}] {gateway.name}: direct baseline", flush=True)
            direct = await measure(self.direct(), self.plan, soak=False, others=direct_others)
            print(f"[{repeat}] {gateway.name}: measuring (pids {pids})", flush=True)
            result = await measure(
                target, self.plan, pids, cores, soak=gateway.kind != "floor", worker=worker,
                others=others,
            )  # fmt: skip
            section: Metrics = {"gateway": gateway.name, "direct": direct, "target": result}
            section |= {"deployment": kind, "server": gateway.server, "processes": len(procs)}
            section["env"] = dict(gateway.env)
            section["added"] = added(direct, result)
            if self.args.profile and procs and repeat == 1 and gateway.on_python:
                section["profile"] = await self.profile(procs[0], target)
            if gateway.embedded:
                section["journal_drain"] = await self.drain_journal()
        finally:
            for proc in procs:
                self.procs.stop(proc)
        if self.args.memory and gateway.kind == "momor" and not gateway.baseline and repeat == 1:
            section["memory"] = await memtrace.trace(self, gateway, self.args.memory)
        return section

    def deployment_kind(
        self, gateway: Gateway, pids: tuple[int, ...]
    ) -> tuple[str, tuple[int, ...]]:
        """The section's deployment (governed, embedded, baseline, or the gateway's kind) and
        the pids of what stores its records beside it: the Celery worker, or the embedded
        gateways' storing processes, moved to the worker's core."""
        if gateway.kind != "momor":
            return gateway.kind, ()
        deployment = self.deployment_of(gateway)
        worker = (deployment.worker.pid,) if deployment.worker else ()
        if gateway.embedded:
            worker = tuple(child for pid in pids for child in storing_processes(pid))
            for child in worker:
                os.sched_setaffinity(child, {LOAD_CORE})
        return ("baseline" if gateway.baseline else deployment.kind), worker

    async def drain_journal(self, timeout: float = 180.0) -> Metrics:
        """The plain gateway, still running, left to apply its journal (bounded): what a
        process stopped with records in it leaves on disk for the next one."""
        if self.embedded is None:
            return {}
        start = time.monotonic()
        left = self.embedded.journal_backlog()
        if left:
            print(f"    waiting for the plain gateway to store {left} records", flush=True)
        while left and time.monotonic() - start < timeout:
            await asyncio.sleep(1.0)
            left = self.embedded.journal_backlog()
        return {"seconds": round(time.monotonic() - start, 1), "records_left": left}

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

    def recording(self, deployment: deploy.Deployment) -> Metrics:
        """Momor's records after the run: the records stream drained by the worker (bounded),
        rows stored."""
        db = deployment.settings.redis_db
        deadline = time.monotonic() + 180
        backlog = deploy.records_backlog(db)
        while backlog and time.monotonic() < deadline:
            time.sleep(1.0)
            backlog = deploy.records_backlog(db)
        sql = "SELECT status || '=' || count(*) FROM billing_generation GROUP BY status"
        rows = deploy.psql_value(deployment.settings.database, sql)
        return {"records_backlog_left": backlog, "generations_by_status": rows}

    def plain_recording(self, served: int, drains: list[Metrics]) -> Metrics:
        """The plain deployment's records after the run: the generations in its SQLite file
        and what its journal still holds, against the calls the plain sections served (a
        lower bound: profile and memory passes serve more), and how long each section's
        gateway took to apply its journal before it was stopped."""
        if self.embedded is None:
            return {}
        rows = self.embedded.generations_by_status()
        stored = sum(int(row.rpartition("=")[2]) for row in rows.split())
        left = self.embedded.journal_backlog()
        return {
            "journal_records_left": left, "generations_by_status": rows, "generations": stored,
            "calls_served": served, "all_stored": left == 0 and stored >= served,
            "journal_drains": drains,
        }  # fmt: skip


def gateway_core(i: int) -> int:
    """Momor process i's core: 0 for the first, then one per core."""
    return (GATEWAY_CORE + i) % (os.cpu_count() or 1)


async def measure_all(
    bench: Bench, wanted: list[Gateway]
) -> tuple[list[list[Metrics]], list[Metrics]]:
    runs, scaled = [], []
    momors = [g for g in wanted if g.kind == "momor" and g.name == f"momor-{g.server}"]
    limits = await scale.measure_limits(bench, momors) if bench.args.scale else {}
    for repeat in range(1, bench.args.repeat + 1):
        runs.append([await bench.section(g, repeat) for g in wanted])
        if bench.args.scale and momors:
            scaled.append(await scale.measure_scale(bench, momors, repeat))
    for result in scaled:
        for name, checked in limits.items():
            result["servers"][name].update(checked)
    return runs, scaled


def _pin_self() -> None:
    if (os.cpu_count() or 1) < 2:
        print("warning: fewer than 2 cores; nothing is pinned apart")
        return
    os.sched_setaffinity(0, {LOAD_CORE})


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def build_report(
    bench: Bench, wanted: list[Gateway], runs: list[list[Metrics]], scaled: list[Metrics]
) -> Metrics:
    sections = [median_tree([run[i] for run in runs]) for i in range(len(wanted))]
    for i, section in enumerate(sections):  # the profile of the first repeat, as taken
        for taken in ("profile", "memory"):
            if taken in runs[0][i]:
                section[taken] = runs[0][i][taken]
        if versus_chat.measured(section):
            section["versus_chat"] = versus_chat.ratios(section)
    report: Metrics = {
        "machine": machine([g.server for g in wanted if g.server])
        | {"loadavg_at_start": bench.loadavg_at_start},
        "plan": vars(bench.plan), "repeat": bench.args.repeat,
        "pinning": {"gateway": GATEWAY_CORE, "fake_upstream_and_loadgen": LOAD_CORE,
                    "celery_worker": LOAD_CORE},
        "sections": sections, "targets": targets(sections),
        "runs": runs if len(runs) > 1 else None,
        "processes": bench.args.processes,
        "scale": median_tree(scaled) if scaled else None,
        "scale_runs": scaled if len(scaled) > 1 else None,
    }  # fmt: skip
    if bench.args.processes > 1:
        report["pinning"]["gateway"] = [gateway_core(i) for i in range(bench.args.processes)]
        report["pinning"]["note"] = scale.pinning_note(bench.args.processes, scaled=False)
    report["versus_baseline"] = versus_baseline(sections)
    report["versus_chat_over"] = versus_chat.over(sections)
    report["server_ratios"] = server_ratios(sections)
    return report


def recordings(bench: Bench, wanted: list[Gateway], runs: list[list[Metrics]]) -> Metrics:
    """What each deployment stored of the run's calls, read from its stores once it is done."""
    found: Metrics = {}
    if bench.deployment is not None:
        found["momor_recording"] = bench.recording(bench.deployment)
    if bench.embedded is not None:
        plain = [run[i] for run in runs for i, g in enumerate(wanted) if g.embedded]
        served = sum(s["target"].get("calls_served") or 0 for s in plain)
        drains = [s["journal_drain"] for s in plain if "journal_drain" in s]
        found["plain_recording"] = bench.plain_recording(served, drains)
    for ref, deployment in bench.baselines.items():
        found.setdefault("baseline_recording", {})[ref] = bench.recording(deployment)
    return found


def versus_baseline(sections: list[Metrics]) -> list[Metrics]:
    """Each Momor section beside each baseline section of the same run: throughput and CPU per
    call as ratios (new / baseline)."""
    bases = [s for s in sections if s["gateway"].startswith("baseline-")]
    news = [s for s in sections if s["gateway"].startswith("momor-")]
    rows = []
    for base in bases:
        for new in news:
            ours, theirs = new["target"]["throughput"], base["target"]["throughput"]
            rows.append({
                "gateway": new["gateway"], "baseline": base["gateway"],
                "throughput_ratio": _ratio(ours.get("rps"), theirs.get("rps")),
                "cpu_per_call_ratio": _ratio(
                    ours.get("cpu_ms_per_call"), theirs.get("cpu_ms_per_call")
                ),
            })  # fmt: skip
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.records:
        return main_records(args)
    wanted = gateways(args)
    if not wanted:
        raise SystemExit("nothing to measure")
    _pin_self()
    signal.signal(signal.SIGTERM, _interrupt)
    bench = Bench(args, time.strftime("%Y%m%d-%H%M%S"))
    try:
        bench.start(wanted)
        runs, scaled = asyncio.run(measure_all(bench, wanted))
        report = build_report(bench, wanted, runs, scaled) | recordings(bench, wanted, runs)
    except KeyboardInterrupt:
        print("interrupted: stopping everything started")
        return 130
    finally:
        bench.close()
    path = save(report, RESULTS)
    print_report(report, path)
    return 0


def main_records(args: argparse.Namespace) -> int:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / "logs" / stamp
    logs.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = {"records": records.run(args, logs)}
    except KeyboardInterrupt:
        print("interrupted: stopping everything started")
        return 130
    path = RESULTS / f"{stamp}-records.json"
    path.write_text(json.dumps(report, indent=2))
    print(records.table(report["records"]))
    print(f"JSON: {path}")
    return 0


def print_report(report: Metrics, path: Path) -> None:
    m = report["machine"]
    print(f"\nmachine: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}; "
          f"gateway on core {GATEWAY_CORE}, fake upstream + load generator on core {LOAD_CORE}; "
          f"medians of {report['repeat']} run(s)\n")  # fmt: skip
    if report["processes"] > 1:
        print(f"Momor: {report['pinning']['note']}\n")
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
        if "memory" in section:
            print(memtrace.text(section["memory"]))
    if report.get("scale"):
        print(f"\nscale-out (saturated throughput; {report['scale']['pinning']['2']}):")
        print(scale_table(report["scale"]))
    if report.get("momor_recording"):
        print(f"\nMomor recording: {report['momor_recording']}")
    if report.get("plain_recording"):
        print(f"Momor recording (plain): {report['plain_recording']}")
    if len(report.get("server_ratios") or ()) > 1:
        print("\nMomor servers' throughput (governed), as a share of the fastest:")
        for row in report["server_ratios"]:
            print(f"  {row['server']}: {row['rps']:,.0f} req/s, {row['share_of_fastest']}x")
    if any("versus_chat" in s for s in report["sections"]):
        limit = versus_chat.LIMIT
        print(f"\nadded latency vs Chat Completions' in the same section (limit {limit}x):")
        print(versus_chat.text(report["sections"]))
    for row in report.get("versus_baseline") or ():
        print(
            f"\n{row['gateway']} vs {row['baseline']}: throughput x{row['throughput_ratio']}, "
            f"CPU per call x{row['cpu_per_call_ratio']}"
        )
    print("\ntargets (performance, round 2):")
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

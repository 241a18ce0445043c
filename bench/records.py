"""The records benchmark (`--records`): Momor's pages and management API read against a
database of many generations. It seeds `--records-total` generations over 90 days (a tenth of
them, or `--records-org`, in the measured organization, the rest spread over others), starts
one Momor process on core 0, served as docs/operations.md's production command serves it
(uvicorn, uvloop, httptools), and times each read, one request at a time after a warm-up: the
overview, usage over 90 days, the generations list (first page, and a page deep in the
cursor), one generation's detail and GET /api/manage/generations/, with the server's CPU time
per request.
Then it streams the CSV export of one month and samples the server's resident memory while it
does. The machine's load average is taken before and after the reads: on a shared machine it
says how far the times are the code's own."""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from bench.deploy import Deployment, Settings, psql_value, start_momor
from bench.procs import Procs, cpu_seconds, rss_mib, tree_pids
from bench.report import loadavg

Metrics = dict[str, Any]
DAYS = 90
TARGET_P95_MS = 200.0
SERVER = "uvicorn-uvloop"  # docs/operations.md, "6. The gateway processes": uvicorn, uvloop

_SESSION = """
from django.contrib.auth import get_user_model
from django.test import Client
from accounts.models import Membership, Organization, Role
user = get_user_model().objects.create_user("bench-owner", "owner@bench.example")
Membership.objects.create(user=user, organization=Organization.objects.get(slug="bench"),
                          role=Role.OWNER)
client = Client()
client.force_login(user)
print(client.cookies["sessionid"].value)
"""


def seed(deployment: Deployment, total: int, in_org: int, others: int) -> Metrics:
    """The organizations and their generations; returns how long each seeding took."""
    took: Metrics = {}
    share = (total - in_org) // others
    for n in range(others):
        slug = f"other{n}"
        deployment.org_with_key(slug, "1000")
        took[slug] = _timed(deployment, slug, share)
    took["bench"] = _timed(deployment, "bench", in_org)
    return took


def _timed(deployment: Deployment, slug: str, count: int) -> float:
    began = time.monotonic()
    deployment.python("-m", "bench.seed", "--org", slug, "--count", str(count), "--days", str(DAYS))
    seconds = round(time.monotonic() - began, 1)
    print(f"  seeded {count:,} generations of {slug} in {seconds} s", flush=True)
    return seconds


def timings(get: Any, url: str, runs: int, pid: int, warmup: int = 3) -> Metrics:
    """Each request's time as the client saw it, and the server's (`pid`) CPU time per
    request over the timed ones."""
    for _ in range(warmup):
        _ok(get(url))
    spent = []
    cpu_before = cpu_seconds(pid)
    for _ in range(runs):
        began = time.perf_counter()
        _ok(get(url))
        spent.append((time.perf_counter() - began) * 1000)
    cpu_ms = (cpu_seconds(pid) - cpu_before) * 1000
    spent.sort()
    return {
        "p50_ms": round(statistics.median(spent), 1),
        "p95_ms": round(spent[max(0, int(len(spent) * 0.95) - 1)], 1),
        "max_ms": round(spent[-1], 1),
        "server_cpu_ms_per_request": round(cpu_ms / runs, 1),
        "runs": runs,
    }


def _ok(response: httpx.Response) -> httpx.Response:
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url} answered {response.status_code}")
    return response


def deep_cursor(database: str, depth: int) -> str:
    """The list's cursor `depth` rows into the organization's generations."""
    row = psql_value(
        database,
        "SELECT to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') "  # noqa: S608 - a fixed query and an int
        "|| '+00:00_' || g.id FROM billing_generation g JOIN accounts_organization o "
        "ON o.id = g.organization_id WHERE o.slug = 'bench' "
        f"ORDER BY g.created_at DESC, g.id DESC OFFSET {int(depth)} LIMIT 1",
    )
    return quote(row)


def export_memory(client: httpx.Client, url: str, pid: int) -> Metrics:
    """Stream the export, sampling the server's resident memory every 0.2 s."""
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(sum(rss_mib(p) for p in tree_pids(pid)))
            time.sleep(0.2)

    began = time.monotonic()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    size = lines = 0
    with client.stream("GET", url, timeout=600) as response:
        _ok(response)
        for chunk in response.iter_bytes():
            size += len(chunk)
            lines += chunk.count(b"\n")
    done.set()
    sampler.join()
    quarter = max(1, len(samples) // 4)
    return {
        "rows": lines - 1,
        "mib": round(size / 2**20, 1),
        "seconds": round(time.monotonic() - began, 1),
        "rss_first_quarter_max_mib": round(max(samples[:quarter]), 1),
        "rss_last_quarter_max_mib": round(max(samples[-quarter:]), 1),
        "rss_max_mib": round(max(samples), 1),
    }


def measure(deployment: Deployment, base: str, pid: int, runs: int) -> Metrics:
    cookie = deployment.manage("shell", "-c", _SESSION).strip().splitlines()[-1]
    api_key = deployment.management_key("bench")
    request_id = psql_value(
        deployment.settings.database,
        "SELECT request_id FROM billing_generation WHERE organization_id = "
        "(SELECT id FROM accounts_organization WHERE slug = 'bench') LIMIT 1 OFFSET 1000",
    )
    site = base.removesuffix("/v1")
    ui = httpx.Client(base_url=site, cookies={"sessionid": cookie}, timeout=60)
    api = httpx.Client(base_url=site, headers={"Authorization": f"Bearer {api_key}"}, timeout=60)
    deep = deep_cursor(deployment.settings.database, 500_000)
    month_end = time.strftime("%Y-%m-%d")
    month_start = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86400))
    reads = {
        "overview": (ui, "/"),
        f"usage {DAYS} days": (ui, f"/usage/?days={DAYS}"),
        "generations list, first page": (ui, "/generations/"),
        "generations list, 500,000 rows deep": (ui, f"/generations/?before={deep}"),
        "one generation": (ui, f"/generations/{request_id}/"),
        "GET /api/manage/generations/": (api, "/api/manage/generations/"),
    }
    results: Metrics = {"loadavg_before_reads": loadavg()}
    for name, (client, url) in reads.items():
        results[name] = timings(client.get, url, runs, pid)
        print(f"  {name}: {results[name]}", flush=True)
    results["loadavg_after_reads"] = loadavg()
    export = f"/generations/export.csv?since={month_start}&until={month_end}"
    results["csv export, 30 days"] = export_memory(ui, export, pid)
    print(f"  csv export: {results['csv export, 30 days']}", flush=True)
    return results


def run(args: argparse.Namespace, log_dir: Path) -> Metrics:
    at_start = loadavg()
    procs = Procs(log_dir)
    settings = Settings(database="momor_bench_records", redis_db=args.records_redis_db)
    deployment = Deployment(settings, "http://127.0.0.1:9", log_dir)
    # Seeding ten million rows makes checkpoints that can stall a new connection for seconds.
    deployment.env["MOMOR_DB_TIMEOUT_SECONDS"] = "60"
    try:
        print("records: setting up", flush=True)
        deployment.setup()
        seeded = seed(deployment, args.records_total, args.records_org, args.records_others)
        proc, base = start_momor(procs, deployment, SERVER, core=0, log=False)
        reads = measure(deployment, base, proc.pid, args.records_runs)
        database = psql_value(settings.database, "SELECT pg_size_pretty(pg_database_size("
                              f"'{settings.database}'))")  # fmt: skip
    finally:
        procs.stop_all()
        if not args.records_keep:
            deployment.teardown()
    timed = [v for v in reads.values() if isinstance(v, dict) and "p95_ms" in v]
    return {
        "server": SERVER,
        "machine": {
            "nproc": os.cpu_count(),
            "loadavg_at_start": at_start,
            "loadavg_before_reads": reads.pop("loadavg_before_reads"),
            "loadavg_after_reads": reads.pop("loadavg_after_reads"),
        },
        "total": args.records_total,
        "in_org": args.records_org,
        "days": DAYS,
        "database_size": database,
        "seed_seconds": seeded,
        "reads": reads,
        "all_within_target": all(v["p95_ms"] <= TARGET_P95_MS for v in timed),
        "target_p95_ms": TARGET_P95_MS,
        "seeded_over": str(timedelta(days=DAYS)),
    }


def table(report: Metrics) -> str:
    """The reads as docs/performance.md ("Records at scale") shows them, with the server's CPU
    per request and the load."""
    rows = [f"{'read':<40} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'CPU ms/req':>11}"]
    for name, got in report["reads"].items():
        if "p95_ms" in got:
            rows.append(
                f"{name:<40} {got['p50_ms']:>8} {got['p95_ms']:>8} {got['max_ms']:>8} "
                f"{got['server_cpu_ms_per_request']:>11}"
            )
    m = report["machine"]
    rows.append(
        f"\nserver: {report['server']}, core 0; load average (1, 5, 15 min) on {m['nproc']} "
        f"cores: {' '.join(m['loadavg_before_reads'])} before the reads, "
        f"{' '.join(m['loadavg_after_reads'])} after (at the start: "
        f"{' '.join(m['loadavg_at_start'])})"
    )
    if (
        float(m["loadavg_after_reads"][0]) > m["nproc"]
        or float(m["loadavg_before_reads"][0]) > m["nproc"]
    ):
        rows.append("WARNING: more runnable processes than cores: requests waited for a core; "
                    "the CPU per request holds, the times do not")  # fmt: skip
    export = report["reads"].get("csv export, 30 days")
    if export:
        rows.append(
            f"csv export, 30 days: {export['rows']:,} rows, {export['mib']} MiB in "
            f"{export['seconds']} s; server RSS at most {export['rss_first_quarter_max_mib']} "
            f"MiB in the first quarter, {export['rss_last_quarter_max_mib']} MiB in the last"
        )
    within = "yes" if report["all_within_target"] else "no"
    rows.append(f"every read within {report['target_p95_ms']} ms at p95: {within}")
    return "\n".join(rows)

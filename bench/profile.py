"""`--profile`: py-spy samples the gateway process during an extra saturation pass (so the
measured numbers are not slowed by sampling); the collapsed stacks are summed into the costs
the owners act on (inclusive share of samples per category) and the top leaf functions."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = BENCH / ".venv-tools"

# Inclusive categories: a sample counts in every category one of its frames matches.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "server (daphne/twisted, uvicorn, granian)": ("daphne/", "twisted/", "uvicorn/", "granian"),
    "django request handling (handlers, middleware, urls)": (
        "django/core/handlers/",
        "django/middleware/",
        "django/contrib/",
        "django/urls/",
        "django/http/",
    ),
    "asgiref sync_to_async / thread hops": ("asgiref/sync.py", "concurrent/futures/thread.py"),
    "db queries (django.db, psycopg)": ("django/db/", "psycopg"),
    "upstream call (aiohttp, httpx / httpcore)": ("aiohttp/", "httpx/", "httpcore/"),
    "redis (admission, rate limit)": ("redis/",),
    "celery / kombu (record hand-off)": ("celery/", "kombu/"),
    "json (orjson, json)": ("orjson", "json/", "(dumps)", "(loads)"),
    "momor gateway/": ("gateway/",),
    "momor billing/": ("billing/",),
    "asyncio event loop (uvloop runs in C, so its own time shows in the callers)": (
        "asyncio/",
        "uvloop/",
    ),
}

# Exclusive owners: each sample goes to the owner of its deepest frame that has one (the
# standard library's frames go to their caller: kombu's json encoding to the hand-off); a
# sample no owner's frame is in is the event loop and the interpreter.
OWNERS: dict[str, tuple[str, ...]] = {
    "celery / kombu (record hand-off)": ("celery/", "kombu/"),
    "redis": ("redis/",),
    "upstream call (aiohttp, httpx)": ("aiohttp/", "httpx/", "httpcore/", "httpx_aiohttp/"),
    "server (uvicorn, daphne/twisted, granian)": ("uvicorn/", "daphne/", "twisted/", "granian"),
    "django": ("django/",),
    "asgiref thread hops": ("asgiref/",),
    "db (psycopg)": ("psycopg",),
    "momor billing/": ("billing/",),
    "momor gateway/": ("gateway/",),
}
LOOP = "event loop and interpreter (asyncio, uvloop, threads)"


def ensure_py_spy() -> Path:
    binary = VENV / "bin" / "py-spy"
    if not binary.exists():
        print(f"installing py-spy into {VENV} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)  # noqa: S603 - argv written here, no shell
        pip = [str(VENV / "bin" / "pip"), "install", "-q", "py-spy==0.4.3"]
        subprocess.run(pip, check=True)  # noqa: S603 - argv written here, no shell
    return binary


def outputs(out: Path) -> dict[str, Path]:
    """cpu: stacks of the thread holding the GIL (where CPU goes); wall: every thread that is
    not idle, per thread (where calls wait)."""
    return {
        "flamegraph": out.with_name(out.name + "-cpu.svg"),
        "cpu": out.with_name(out.name + "-cpu.txt"),
        "wall": out.with_name(out.name + "-wall.txt"),
    }


def record(pid: int, seconds: int, out: Path) -> list[subprocess.Popen[bytes]]:
    """Start py-spy three times in the background, one per output of `outputs`."""
    binary, files = str(ensure_py_spy()), outputs(out)
    common = [binary, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "200"]
    common += ["--subprocesses", "--nonblocking"]
    argvs = [
        [*common, "--gil", "--format", "flamegraph", "-o", str(files["flamegraph"])],
        [*common, "--gil", "--format", "raw", "-o", str(files["cpu"])],
        [*common, "--threads", "--format", "raw", "-o", str(files["wall"])],
    ]
    return [
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603 - argv written here, no shell
        for argv in argvs
    ]


def summarize(collapsed: Path, top: int = 25) -> dict[str, Any]:
    """Shares of samples by category (inclusive) and by leaf function (self time)."""
    total, by_cat, leaves, own = 0, Counter[str](), Counter[str](), Counter[str]()
    owners = Counter[str]()
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        for name, needles in CATEGORIES.items():
            if any(n in frame for frame in frames for n in needles):
                by_cat[name] += count
        leaves[_short(frames[-1])] += count
        owners[_owner(frames)] += count
        for frame in set(frames):
            if "/momor/" in frame or "gateway/" in frame or "billing/" in frame:
                own[_short(frame)] += count

    def share(n: int) -> float:
        return round(100 * n / total, 1) if total else 0.0

    return {
        "samples": total,
        "categories_pct": {k: share(v) for k, v in by_cat.most_common()},
        "owners_pct": {k: share(v) for k, v in owners.most_common()},
        "top_self_pct": {k: share(v) for k, v in leaves.most_common(top)},
        "top_momor_inclusive_pct": {k: share(v) for k, v in own.most_common(top)},
    }


def _owner(frames: list[str]) -> str:
    for frame in reversed(frames):
        where = frame.partition(" (")[2]
        for name, needles in OWNERS.items():
            if any(where.startswith(n) or f"/{n}" in where for n in needles):
                return name
    return LOOP


def _short(frame: str) -> str:
    """`func (path/to/site-packages/pkg/mod.py:12)` → `func (pkg/mod.py:12)`."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", f"{ROOT}/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})" if where else name

"""The processes the benchmark starts: each pinned to a core, logging to a file, in its own
process group, and every one of them stopped again when the run ends (even on Ctrl-C)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx


class StartError(RuntimeError):
    """A process did not come up; the message names its log."""


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Procs:
    """Starts processes and stops every one it started, newest first."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: list[Proc] = []

    def start(
        self, name: str, argv: list[str], *, core: int | None, env: dict[str, str], cwd: Path
    ) -> Proc:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        full = ["taskset", "-c", str(core), *argv] if core is not None else argv
        with log.open("wb") as out:
            popen = subprocess.Popen(  # noqa: S603 - our own argv, no shell
                full, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                start_new_session=True,
            )  # fmt: skip
        proc = Proc(name, popen, log)
        self.running.append(proc)
        return proc

    def stop(self, proc: Proc, timeout: float = 10.0) -> None:
        """SIGTERM to the process's group, SIGKILL after `timeout` seconds."""
        if proc in self.running:
            self.running.remove(proc)
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.popen.wait(5)
        _signal_group(proc.pid, signal.SIGKILL)  # stragglers of the group (workers...)

    def stop_all(self) -> None:
        for proc in reversed(list(self.running)):
            with contextlib.suppress(Exception):
                self.stop(proc)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(proc: Proc, url: str, timeout: float, ok: tuple[int, ...] = (200,)) -> None:
    """Poll `url` until it answers with a status in `ok`, the process dies, or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise StartError(f"{proc.name} exited early; log {proc.log}:\n{proc.tail()}")
        try:
            if httpx.get(url, timeout=2.0).status_code in ok:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise StartError(f"{proc.name} did not answer {url} in {timeout}s; log {proc.log}")


def wait_line(proc: Proc, prefix: str, timeout: float) -> str:
    """The first line of the process's log that starts with `prefix`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in proc.tail(200).splitlines():
            if line.startswith(prefix):
                return line
        if not proc.alive():
            raise StartError(f"{proc.name} exited early; log {proc.log}:\n{proc.tail()}")
        time.sleep(0.05)
    raise StartError(f"{proc.name} printed no '{prefix}' in {timeout}s; log {proc.log}")


def tree_pids(pid: int, without: Iterable[int] = ()) -> list[int]:
    """The process and all its descendants, but those of `without` and theirs (a gateway's
    storing process, measured as its worker)."""
    left_out = set(without)
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(entry)
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current in left_out:
            continue
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _ppid(entry: Path) -> int | None:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def context_switches(pid: int, without: Iterable[int] = ()) -> tuple[int, int]:
    """The times the threads of the process and its descendants (`tree_pids`) so far slept until
    woken (voluntary switches: an event loop waiting for its next read) and were pre-empted by
    another process (involuntary)."""
    woken = preempted = 0
    for member in tree_pids(pid, without):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{member}/task").iterdir():
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        woken += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        preempted += int(line.split()[1])
    return woken, preempted


def rss_mib(pid: int, without: Iterable[int] = ()) -> float:
    """Resident memory of the process and its descendants (`tree_pids`), in MiB (VmRSS of
    each)."""
    total_kib = 0
    for member in tree_pids(pid, without):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
    return total_kib / 1024


def cpu_seconds(pid: int, without: Iterable[int] = ()) -> float:
    """User + system CPU time of the process and its descendants (`tree_pids`) so far."""
    return _cpu_seconds(Path(f"/proc/{member}") for member in tree_pids(pid, without))


STORER = b"billing.recording.storer"


def storing_processes(pid: int) -> list[int]:
    """The storing processes of an embedded gateway (its children running
    billing.recording.storer)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _ppid(entry) == pid:
            with contextlib.suppress(OSError):
                if STORER in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _cpu_seconds(processes: Iterable[Path]) -> float:
    """User + system CPU time so far of the processes (their /proc directories) still there."""
    ticks = 0
    for process in processes:
        with contextlib.suppress(OSError):
            fields = (process / "stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def last_pid() -> int:
    """The last process or thread id the kernel handed out (ids are handed out in order)."""
    return int(Path("/proc/sys/kernel/ns_last_pid").read_text())


SERVICES = ("postgres", "redis-server")


def services_cpu_seconds() -> float:
    """User + system CPU time so far of every PostgreSQL and Redis process on the machine."""
    return _cpu_seconds(p for p in Path("/proc").iterdir() if _is_service(p))


def _is_service(process: Path) -> bool:
    try:
        return process.name.isdigit() and (process / "comm").read_text().startswith(SERVICES)
    except OSError:  # gone meanwhile
        return False


def core_busy_seconds(core: int) -> float:
    """Non-idle time of one core since boot (user, nice, system, irq, softirq, steal)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{core} "):
            ticks = [int(x) for x in line.split()[1:]]
            busy = sum(ticks[:3]) + sum(ticks[5:8])
            return busy / os.sysconf("SC_CLK_TCK")
    return 0.0

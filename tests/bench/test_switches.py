"""How often a gateway's threads slept until woken, read from /proc: a process that waits for
a read a given number of times is counted woken at least that often, and a process that does
not wait is not."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.loadgen import Target
from bench.measure import Meter, Plan
from bench.procs import context_switches

READS = 30
# Reads a line from stdin READS times, each written after the last was read: a wait per read.
READER = f"""
import sys
for _ in range({READS}):
    sys.stdin.readline()
    sys.stdout.write("ok\\n"); sys.stdout.flush()
"""


def test_a_process_waiting_for_each_read_is_counted_woken_for_each() -> None:
    child = subprocess.Popen(  # noqa: S603 - argv written here, no shell
        [sys.executable, "-c", READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    time.sleep(0.3)  # started, and waiting for its first line
    before = context_switches(child.pid)
    for _ in range(READS - 1):
        time.sleep(0.002)
        child.stdin.write(b"go\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"ok\n"
    after = context_switches(child.pid)
    child.stdin.write(b"go\n")
    child.stdin.close()
    child.wait(timeout=10)

    assert after[0] - before[0] >= READS - 1


def test_per_call_they_are_the_gateways_since_the_phase_began() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        meter = Meter(Target("x", "http://127.0.0.1:1/v1", "k", "m"), Plan(), pids=(child.pid,))
        time.sleep(0.2)
        before = meter.switches()
        time.sleep(0.3)
        found = meter.switches_per_call(before, calls=10)
    finally:
        child.kill()
        child.wait()

    assert found["wakeups_per_call"] < 1  # it never waits for anything
    assert set(found) == {"wakeups_per_call", "preempted_per_call"}
    assert Meter(meter.target, Plan()).switches_per_call(before, calls=10) == {}

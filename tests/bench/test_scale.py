"""`--scale` in a run's report: 2 processes' throughput over one's against the 1.8x goal, and
beside it what 2 processes would carry with a core each, from the CPU per call of each step."""

from __future__ import annotations

from bench.report import scale_table
from bench.scale import _cpu_bound_ratio


def step(rps: float, cpu_ms: float | None) -> dict[str, object]:
    return {"rps": rps, "cpu_ms_per_call": cpu_ms, "errors": {}}


def test_two_processes_at_the_same_cpu_per_call_would_carry_twice_the_calls() -> None:
    assert _cpu_bound_ratio(step(3500, 0.25), step(4200, 0.25), 2) == 2.0
    assert _cpu_bound_ratio(step(3500, 0.25), step(4200, 0.30), 2) == 1.67
    assert _cpu_bound_ratio(step(3500, None), step(4200, 0.30), 2) is None


def test_the_scale_line_shows_the_goal_and_the_cpu_bound_ratio() -> None:
    scale = {
        "servers": {
            "momor-uvicorn": {
                "p1": step(3510, 0.258), "p2": step(4196, 0.249), "ratio": 1.2,
                "cpu_bound_ratio": 2.07,
            }
        }
    }  # fmt: skip

    [line] = scale_table(scale).splitlines()

    assert "3510 req/s with 1 process, 4196 with 2 (1.2x, goal >= 1.8x; 2.07x by CPU" in line

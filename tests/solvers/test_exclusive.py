"""Exclusive baselines: each task holds its peak demand throughout; the interleaving gain."""

from __future__ import annotations

import pytest

from planner.model import Problem
from planner.solvers import solve
from planner.solvers.exclusive import exclusive_problem, interleaving_gain, job_ranks
from planner.validate import validate


def test_exclusive_problem_holds_the_peak(two_jobs: Problem) -> None:
    assert two_jobs.arrays.n_tasks == 2  # a cached view of the original must not leak into copies
    ex = exclusive_problem(two_jobs)
    seg = ex.task("a").modes[0].segments
    assert [(s.duration, s.demand) for s in seg] == [(6, {"io": 1, "gpu": 1})]
    assert ex.arrays.seg_demand.tolist() == [[1, 1], [1, 1]]
    assert two_jobs.arrays.seg_demand.tolist() == [[1, 0], [0, 1], [0, 1], [1, 0]]
    assert solve(two_jobs, "exclusive-fifo").objective == 12


@pytest.mark.parametrize("policy", ["fifo", "srtf", "srsf"])
def test_exclusive_runs_jobs_one_after_another(two_jobs: Problem, policy: str) -> None:
    result = solve(two_jobs, f"exclusive-{policy}")
    assert result.objective == 12  # each job holds io and gpu for 6 ticks
    assert validate(two_jobs, result.schedule).ok


def test_policies_order_jobs(two_jobs_data: dict) -> None:
    # make B shorter (srtf first) but larger (srsf later) than A
    two_jobs_data["resources"][0]["capacity"] = 4
    b = two_jobs_data["tasks"][1]["modes"][0]["segments"]
    b[0]["duration"], b[1]["demand"] = 3, {"io": 4}  # run 5 < 6, service 5 * 2 > 6 * 1.25
    p = Problem.model_validate(two_jobs_data)
    assert job_ranks(p, "fifo").tolist() == [0, 1]
    assert job_ranks(p, "srtf").tolist() == [1, 0]
    assert job_ranks(p, "srsf").tolist() == [0, 1]


def test_interleaving_gain(two_jobs: Problem) -> None:
    assert interleaving_gain(two_jobs, 8) == ("exclusive-fifo", 1.5)


def test_the_interleaving_gain_is_a_ratio_of_makespans_whatever_the_objective() -> None:
    # issue 44: under objective cost (or energy) the gain was the ratio of the objectives
    from typer.testing import CliRunner

    from planner.app.cli import app
    from planner.io.instance import load_instance
    from planner.solvers import solve
    from tests.conftest import INSTANCES

    path = INSTANCES / "power_limits.yaml"
    problem = load_instance(path)
    assert problem.objective == "energy"
    result = CliRunner().invoke(app, ["solve", str(path), "-s", "sgs"])
    assert result.exit_code == 0, result.output
    rows = dict(
        line.split(None, 1) if not line.startswith("interleaving gain") else
        ("interleaving gain", line.removeprefix("interleaving gain").strip())
        for line in result.stdout.splitlines() if line.strip()
    )  # fmt: skip
    plan = solve(problem, "sgs").schedule
    span = plan.makespan(problem)
    # in seconds, the ticks beside them (5-minute ticks here)
    assert rows["makespan"] == f"{span * 300:,.0f} s ({span} ticks of 5min)"
    spans = {}
    for rule in ("fifo", "srtf", "srsf"):
        baseline = solve(problem, f"exclusive-{rule}").schedule
        spans[f"exclusive-{rule}"] = baseline.makespan(problem)
    best = min(spans, key=lambda k: (spans[k], k))
    assert rows["interleaving gain"] == f"{spans[best] / span:.2f}x over {best}"

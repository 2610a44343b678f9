"""The portfolio: heuristic hints around CP-SAT searches, its stages, Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import planner.solvers.portfolio as portfolio
from planner import Progress, Status, load_instance, load_schedule, validate
from planner.bounds import lower_bound
from planner.result import Result
from planner.solvers import solve

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"


@pytest.mark.parametrize(
    ("path", "optimum", "searches"),
    [("psplib/j301_1.sm", 43, 1), ("mm/j1010_1.mm", 17, 0)],  # j1010_1: the passes meet the bound
)
def test_known_optimum(path: str, optimum: int, searches: int) -> None:
    problem = load_instance(INSTANCES / path)
    result = solve(problem, "portfolio", time_limit=30)
    assert result.valid and result.status is Status.OPTIMAL
    assert result.objective == result.lower_bound == optimum
    assert result.stages == searches and result.solver == "portfolio"


def test_same_seed_same_schedule() -> None:
    # One worker: CP-SAT's single search is deterministic, as are the SGS and GA stages.
    problem = load_instance(INSTANCES / "psplib/j3025_3.sm")
    first, second = (solve(problem, "portfolio", seed=3, workers=1) for _ in range(2))
    assert first.objective == second.objective == 76
    assert first.schedule.starts == second.schedule.starts
    assert first.schedule.modes == second.schedule.modes


def test_a_first_search_without_proof_leads_to_a_ga_stage_and_a_second_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whatever this machine proves in the first search, it is reported as unproven: the
    # GA's schedule then warm-starts a second search that keeps the first one's bound.
    real = portfolio.solve_cpsat
    calls: list[dict[str, Any]] = []

    def first_unproven(problem: Any, **options: Any) -> Result:
        calls.append(options)
        result = real(problem, **options)
        if len(calls) == 1:
            return replace(result, status=Status.FEASIBLE, lower_bound=60.0)
        return result

    monkeypatch.setattr(portfolio, "solve_cpsat", first_unproven)
    problem = load_instance(INSTANCES / "psplib/j3013_5.sm")
    events: list[Progress] = []
    result = solve(problem, "portfolio", time_limit=20, progress=events.append)
    assert len(calls) == 2 and result.stages == 2
    assert calls[1]["lower_bound"] == 60  # the first search's bound, above the core's
    assert calls[1]["initial_solution"] is not None
    assert lower_bound(problem) < 60
    # Progress across the stages: the SGS, CP-SAT and GA schedules, never worse.
    assert events[0].message == "SGS"
    assert [e.objective for e in events] == sorted((e.objective for e in events), reverse=True)
    assert [e.bound for e in events] == sorted(e.bound for e in events)
    # 67 is the optimum; how close the second search gets depends on this machine's speed.
    assert result.valid and result.objective >= 67 and not result.interrupted


def test_split_false_searches_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # as above, the first search is reported unproven; without the split there is no
    # second: one search takes the whole time left
    real = portfolio.solve_cpsat
    calls: list[dict[str, Any]] = []

    def unproven(problem: Any, **options: Any) -> Result:
        calls.append(options)
        return replace(real(problem, **options), status=Status.FEASIBLE)

    monkeypatch.setattr(portfolio, "solve_cpsat", unproven)
    problem = load_instance(INSTANCES / "psplib/j3013_5.sm")
    result = solve(problem, "portfolio", time_limit=8, split=False)
    assert len(calls) == 1 and result.stages == 1
    assert calls[0]["time_limit"] > portfolio.QUICK_SECONDS
    assert result.valid and result.objective >= 67


def test_short_limit_searches_once() -> None:
    problem = load_instance(INSTANCES / "psplib/j3013_5.sm")
    result = solve(problem, "portfolio", time_limit=0.9)
    assert result.stages == 1
    assert result.valid and result.objective >= 67


def test_ctrl_c_keeps_the_best_schedule(tmp_path: Path) -> None:
    out = tmp_path / "schedule.json"
    instance = str(INSTANCES / "psplib/j1201_1.sm")
    cmd = [
        sys.executable,
        "-m",
        "planner",
        "solve",
        instance,
        "--time-limit",
        "120",
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # A progress line with an incumbent says the solve runs; interrupt it then.
    while "incumbent" not in proc.stderr.readline():
        pass
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr  # the plan kept and written, then Ctrl-C's status
    lines = dict(line.split(None, 1) for line in stdout.splitlines() if " " in line)
    assert lines["status"].strip() == "feasible (interrupted)"
    assert lines["validator"].strip() == "valid"
    check = subprocess.run(
        [sys.executable, "-m", "planner", "validate", instance, str(out)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
    assert validate(load_instance(instance), load_schedule(out)).ok


def test_a_heuristic_schedule_at_the_bound_ends_the_solve_without_a_search() -> None:
    # issue 44: Muri's testbed slice on single GPUs: the SGS passes meet the lower bound
    # at once, yet the portfolio searched on to its limit and printed "no CP-SAT solution
    # within the time limit" beside "optimal"
    from planner.dl.workloads import import_muri
    from planner.io.instance import problem_from_data

    problem = problem_from_data(import_muri(INSTANCES / "muri_trace.csv", placement="gpu"))
    result = solve(problem, "portfolio", time_limit=20)
    assert result.status is Status.OPTIMAL and result.objective == lower_bound(problem)
    assert result.stages == 0  # no CP-SAT search ran
    assert result.reason == "a heuristic schedule meets the lower bound: no search can do better"


def test_a_sgs_pass_at_the_bound_is_optimal_and_says_why() -> None:
    # the registry upgrades a schedule that meets the bound, with the reason
    from planner.io.instance import problem_from_data

    problem = problem_from_data(
        {"resources": [{"name": "r", "capacity": 1}],
         "tasks": [{"name": n, "modes": [{"segments": [{"duration": 3, "demand": {"r": 1}}]}]}
                   for n in "ab"]}
    )  # fmt: skip
    result = solve(problem, "sgs")
    assert (result.status, result.objective, result.lower_bound) == (Status.OPTIMAL, 6, 6)
    assert result.reason == "its makespan meets the lower bound 6: proven optimal"

"""The pure CP-SAT model: known optima (with and without an initial solution), every model
feature on a hand-solved case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner import Problem, Progress, Status, load_instance, validate
from planner.models.cpsat import solve_cpsat
from planner.result import Result
from planner.solvers import solve
from planner.solvers.sgs import priorities, serial_sgs

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"


def solved(problem: Problem, **options: Any) -> Result:
    """Solve with ``cpsat`` through the registry and check the schedule independently."""
    options.setdefault("time_limit", 30)
    result = solve(problem, "cpsat", **options)
    if result.schedule is not None:
        assert validate(problem, result.schedule).ok
        assert result.objective == result.schedule.objective(problem)
    return result


def task(name: str, *modes: list[tuple[int, dict[str, int]]], **extra: Any) -> dict[str, Any]:
    """A task whose modes are lists of ``(duration, demand)`` segments."""
    return {
        "name": name,
        "modes": [{"segments": [{"duration": d, "demand": q} for d, q in segs]} for segs in modes],
        **extra,
    }


def problem(tasks: list[dict], resources: list[dict], **extra: Any) -> Problem:
    return Problem.model_validate({"tasks": tasks, "resources": resources, **extra})


# PSPLIB instances with their published optima (j30opt / bks_j10.csv).
KNOWN = [
    ("psplib/j301_1.sm", 43),
    ("psplib/j305_7.sm", 76),
    ("psplib/j3025_3.sm", 76),
    ("psplib/j3041_5.sm", 99),
    ("mm/j1010_1.mm", 17),
    ("mm/j1030_2.mm", 17),
    ("mm/j1060_1.mm", 13),
]


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "initial_solution"])
@pytest.mark.parametrize(("path", "optimum"), KNOWN)
def test_psplib_optimum(path: str, optimum: int, warm: bool) -> None:
    problem = load_instance(INSTANCES / path)
    initial = serial_sgs(problem, priorities(problem, "lft"))[0] if warm else None
    result = solved(problem, initial_solution=initial)
    assert result.status is Status.OPTIMAL
    assert result.objective == optimum
    assert result.solver_bound == optimum
    assert result.stats["hint_makespan"] == (None if initial is None else initial.makespan(problem))


@pytest.mark.parametrize("path", ["mm/j1010_1.mm", "mm/j1060_1.mm"])
def test_shared_encoding_same_optimum(path: str) -> None:
    p = load_instance(INSTANCES / path)
    assert solved(p, encoding="shared").objective == solved(p).objective


def staged(peak: bool) -> Problem:
    """Three jobs of [io 2 ticks, gpu 2 ticks]; ``peak`` holds both for 4 ticks instead."""
    resources = [{"name": "io", "capacity": 1}, {"name": "gpu", "capacity": 1}]
    segs = [(4, {"io": 1, "gpu": 1})] if peak else [(2, {"io": 1}), (2, {"gpu": 1})]
    return problem([task(n, segs) for n in "abc"], resources)


def test_interleaving_reaches_the_optimum() -> None:
    # The gpu can start at 2 at the earliest and then has 6 ticks of work: 8.
    result = solved(staged(peak=False))
    assert result.status is Status.OPTIMAL
    assert result.objective == 8
    starts = sorted(result.schedule.starts.values())
    assert starts == [0, 2, 4]
    # Holding the peak demand for the whole run serialises the jobs: 12.
    assert solved(staged(peak=True)).objective == 12


@pytest.mark.parametrize("encoding", ["shared", "optional"])
def test_modes_with_segments(encoding: str) -> None:
    # Each task may load fast on 2 io units or slowly on 1; gpu work is 3 ticks either way.
    # Fast loads: a [0,1) io=2, gpu [1,4); b loads [1,2), gpu [4,7) -> 7.
    # A slow load of b on one io unit beside a's fast load does not fit (3 > 2 io),
    # and every gpu segment follows a load, so 1 + 3 + 3 = 7 is optimal.
    fast = [(1, {"io": 2}), (3, {"gpu": 1})]
    slow = [(2, {"io": 1}), (3, {"gpu": 1})]
    p = problem(
        [task("a", fast, slow), task("b", fast, slow)],
        [{"name": "io", "capacity": 2}, {"name": "gpu", "capacity": 1}],
    )
    result = solved(p, encoding=encoding)
    assert result.status is Status.OPTIMAL
    assert result.objective == 7


def test_modes_with_different_segment_counts() -> None:
    # Mode "split" has two segments, "whole" one: the optional encoding is used for it.
    # a: whole (4 ticks, r=2) or split (2 ticks r=1, then 1 tick r=2); b: 3 ticks r=1.
    # split a beside b: a [0,2) r=1 with b [0,3) r=1 -> a's second segment at [3,4): 4.
    p = Problem.model_validate(
        {
            "resources": [{"name": "r", "capacity": 2}],
            "tasks": [
                {
                    "name": "a",
                    "modes": [
                        {"name": "whole", "segments": [{"duration": 4, "demand": {"r": 2}}]},
                        {
                            "name": "split",
                            "segments": [
                                {"duration": 2, "demand": {"r": 1}},
                                {"duration": 1, "demand": {"r": 2}},
                            ],
                        },
                    ],
                },
                task("b", [(3, {"r": 1})]),
            ],
        }
    )
    result = solved(p)
    assert result.objective == 4
    assert result.schedule.modes["a"] == "split"


def test_capacity_windows() -> None:
    # Capacity 1 with a window [2, 4) of capacity 0: a (2 ticks) at 0, b (3 ticks) at 4 -> 7.
    down = [{"name": "r", "capacity": 1, "windows": [{"start": 2, "end": 4, "capacity": 0}]}]
    p = problem([task("a", [(2, {"r": 1})]), task("b", [(3, {"r": 1})])], down)
    result = solved(p)
    assert (result.status, result.objective) == (Status.OPTIMAL, 7)
    assert result.schedule.starts["b"] == 4


def test_capacity_window_above_base() -> None:
    # Base capacity 1, capacity 3 in [2, 4): three 2-tick tasks fit by 4 (6 ticks without it).
    up = [{"name": "r", "capacity": 1, "windows": [{"start": 2, "end": 4, "capacity": 3}]}]
    p = problem([task(n, [(2, {"r": 1})]) for n in "abc"], up)
    result = solved(p)
    assert (result.status, result.objective) == (Status.OPTIMAL, 4)


def test_start_to_start_and_finish_to_start_lags() -> None:
    # a and b share a unit resource; b may start 1 after a starts, c 2 after a finishes.
    # a [0,3), b [3,5) (the resource), c [5,7): makespan 7.
    p = problem(
        [task("a", [(3, {"r": 1})]), task("b", [(2, {"r": 1})]), task("c", [(2, {})])],
        [{"name": "r", "capacity": 1}],
        precedences=[
            {"before": "a", "after": "b", "kind": "SS", "lag": 1},
            {"before": "a", "after": "c", "lag": 2},
        ],
    )
    result = solved(p)
    assert (result.status, result.objective) == (Status.OPTIMAL, 7)
    assert result.schedule.starts == {"a": 0, "b": 3, "c": 5}


def test_release_and_deadline() -> None:
    # a is released at 3; b must finish by 5 on the same unit resource: b [0,3), a [3,5).
    p = problem(
        [task("a", [(2, {"r": 1})], release=3), task("b", [(3, {"r": 1})], deadline=5)],
        [{"name": "r", "capacity": 1}],
    )
    result = solved(p)
    assert (result.status, result.objective) == (Status.OPTIMAL, 5)
    assert result.schedule.starts == {"a": 3, "b": 0}


def test_budget() -> None:
    # a -> b, each 5 ticks free or 2 ticks for 3 credits; a budget of 4 pays one fast mode: 7.
    def costly(name: str) -> dict:
        return {
            "name": name,
            "modes": [
                {"name": "slow", "segments": [{"duration": 5}]},
                {"name": "fast", "segments": [{"duration": 2}], "consumes": {"N": 3}},
            ],
        }

    def chain(budget: int) -> Problem:
        return Problem.model_validate(
            {
                "resources": [{"name": "N", "kind": "nonrenewable", "capacity": budget}],
                "tasks": [costly("a"), costly("b")],
                "precedences": [{"before": "a", "after": "b"}],
            }
        )

    assert solved(chain(4)).objective == 7
    assert solved(chain(6)).objective == 4
    assert solved(chain(2)).objective == 10


@pytest.mark.parametrize(("colocate", "optimum"), [(True, 6), (False, 3)])
def test_colocation(colocate: bool, optimum: int) -> None:
    # Two 3-tick tasks of one job, each on node n1 or n2 (one GPU each).
    def placed(name: str) -> dict:
        return {
            "name": name,
            "job": "J",
            "modes": [
                {"name": n, "placement": n, "segments": [{"duration": 3, "demand": {n: 1}}]}
                for n in ("n1", "n2")
            ],
        }

    p = problem(
        [placed("a"), placed("b")],
        [{"name": "n1", "capacity": 1}, {"name": "n2", "capacity": 1}],
        jobs=[{"name": "J", "colocate": colocate}],
    )
    result = solved(p)
    assert (result.status, result.objective) == (Status.OPTIMAL, optimum)


def test_weighted_completion() -> None:
    # One unit resource; weight/duration order J2 (2.5/1), J3 (1/2), J1 (1/3):
    # completions 1, 3, 6 -> 2.5 * 1 + 1 * 3 + 1 * 6 = 11.5.
    p = problem(
        [
            task("t1", [(3, {"r": 1})], job="J1"),
            task("t2", [(1, {"r": 1})], job="J2"),
            task("t3", [(2, {"r": 1})], job="J3"),
        ],
        [{"name": "r", "capacity": 1}],
        jobs=[{"name": "J1"}, {"name": "J2", "weight": 2.5}, {"name": "J3"}],
        objective="weighted_completion",
    )
    result = solved(p)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(11.5)
    assert result.lower_bound == pytest.approx(11.5)
    assert result.schedule.starts == {"t2": 0, "t3": 1, "t1": 3}


def test_infeasible_deadline() -> None:
    # Each task fits alone, but both must finish by 5 on one unit: 6 ticks of work.
    p = problem(
        [task("a", [(3, {"r": 1})], deadline=5), task("b", [(3, {"r": 1})], deadline=5)],
        [{"name": "r", "capacity": 1}],
    )
    result = solved(p)
    assert result.status is Status.INFEASIBLE
    assert result.schedule is None


def test_deterministic_objective() -> None:
    p = load_instance(INSTANCES / "psplib/j3025_3.sm")
    first, second = solved(p, seed=3), solved(p, seed=3)
    assert first.objective == second.objective == 76


def test_progress_reports_improving_solutions() -> None:
    events: list[Progress] = []
    p = load_instance(INSTANCES / "psplib/j3025_3.sm")
    result = solve_cpsat(p, time_limit=30, progress=events.append)
    assert events
    values = [e.objective for e in events]
    assert values == sorted(values, reverse=True)
    assert values[-1] == result.objective == 76
    assert all(e.bound <= e.objective for e in events)


def test_time_limit_keeps_the_initial_solution_or_better() -> None:
    p = load_instance(INSTANCES / "psplib/j1201_1.sm")
    initial = serial_sgs(p, priorities(p, "lft"))[0]
    result = solved(p, time_limit=1, initial_solution=initial)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert 104 <= result.objective <= initial.makespan(p)  # 104: best published lower bound
    assert result.stats["hint_makespan"] == initial.makespan(p)


def test_no_solution_in_time_returns_the_initial_one() -> None:
    # A search stopped before CP-SAT's first solution: the initial solution comes back,
    # and the reason says so.
    p = load_instance(INSTANCES / "psplib/j1201_1.sm")
    initial = serial_sgs(p, priorities(p, "lft"))[0]
    result = solve_cpsat(p, time_limit=0.0, initial_solution=initial)
    assert result.schedule is initial and result.status is Status.FEASIBLE
    assert result.reason == (
        "no CP-SAT solution within the time limit; the initial solution is returned"
    )


def test_log_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    solve_cpsat(load_instance(INSTANCES / "psplib/j301_1.sm"), time_limit=10, log=True)
    captured = capsys.readouterr()
    assert "CpSolverResponse" in captured.err
    assert captured.out == ""

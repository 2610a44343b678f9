"""The time-indexed MILP: known optima with both backends, every model feature, size refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import Problem, Status, load_instance, validate
from planner.app.cli import app
from planner.errors import InputError, PlannerError
from planner.models.milp import solve_milp
from planner.result import Result
from planner.solvers import solve
from planner.solvers.sgs import priorities, serial_sgs
from planner.solvers.warm_milp import solve_warm_milp

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"
BACKENDS = ["cbc", "highs"]


def proven(problem: Problem, optimum: float, **options: Any) -> Result:
    """Solve with the MILP and check that the backend itself proves ``optimum``.

    The registered composition (SGS passes, then the model) is called directly so that
    the bound is the backend's (the registry would raise it to the core lower bound);
    the schedule is checked by the validator.
    """
    result = solve_warm_milp(problem, time_limit=60, workers=1, **options)
    assert result.schedule is not None
    assert validate(problem, result.schedule).ok
    assert result.objective == result.schedule.objective(problem) == optimum
    assert result.lower_bound == optimum
    assert result.status == Status.OPTIMAL
    return result


def seg(duration: int, **demand: int) -> dict[str, Any]:
    return {"duration": duration, "demand": demand}


def one_mode(name: str, *segments: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "modes": [{"segments": list(segments)}], **fields}


# Each optimum below was worked out by hand and confirmed by enumerating every
# start tick (and mode) below a horizon of 11 with the validator.
CASES: dict[str, tuple[dict[str, Any], int]] = {
    # capacity 2 but 1 in [3, 6): C (2 units) runs only outside the window, and A, B
    # (1 unit, 4 ticks each) cannot overlap inside it: A 0-4, B 4-8, C 8-10
    "capacity window": (
        {
            "resources": [
                {"name": "r", "capacity": 2, "windows": [{"start": 3, "end": 6, "capacity": 1}]}
            ],
            "tasks": [
                one_mode("A", seg(4, r=1)),
                one_mode("B", seg(4, r=1)),
                one_mode("C", seg(2, r=2)),
            ],
        },
        10,
    ),
    # B may start 2 ticks after A starts (SS); C, using both units, 1 tick after A
    # ends (FS): A 0-4, B 2-6, C 6-9
    "start-to-start lag": (
        {
            "resources": [{"name": "r", "capacity": 2}],
            "tasks": [
                one_mode("A", seg(4, r=1)),
                one_mode("B", seg(4, r=1)),
                one_mode("C", seg(3, r=2)),
            ],
            "precedences": [
                {"before": "A", "after": "B", "kind": "SS", "lag": 2},
                {"before": "A", "after": "C", "lag": 1},
            ],
        },
        9,
    ),
    # the budget of 4 allows one fast mode (3) and one slow mode (1): fast A 2 + slow B 4
    "budget": (
        {
            "resources": [
                {"name": "money", "capacity": 4, "kind": "nonrenewable"},
                {"name": "r", "capacity": 1},
            ],
            "tasks": [
                {
                    "name": "A",
                    "modes": [
                        {"name": "fast", "segments": [seg(2, r=1)], "consumes": {"money": 3}},
                        {"name": "slow", "segments": [seg(5, r=1)], "consumes": {"money": 1}},
                    ],
                },
                {
                    "name": "B",
                    "modes": [
                        {"name": "fast", "segments": [seg(2, r=1)], "consumes": {"money": 3}},
                        {"name": "slow", "segments": [seg(4, r=1)], "consumes": {"money": 1}},
                    ],
                },
            ],
        },
        6,
    ),
    # apart, A on n1 (3) and B on n2 (2) would run side by side in 3 ticks; colocated
    # they share one node and run one after the other: 3 + 3 or 4 + 2
    "colocation": (
        {
            "resources": [{"name": "g1", "capacity": 1}, {"name": "g2", "capacity": 1}],
            "jobs": [{"name": "J", "colocate": True}],
            "tasks": [
                {
                    "name": name,
                    "job": "J",
                    "modes": [
                        {"name": "n1", "placement": "n1", "segments": [seg(3, g1=1)]},
                        {"name": "n2", "placement": "n2", "segments": [seg(d2, g2=1)]},
                    ],
                }
                for name, d2 in (("A", 4), ("B", 2))
            ],
        },
        6,
    ),
    # io 1 tick, gpu 3 ticks, io 1 tick each; A takes both GPUs, C is released at 1:
    # A io 0, gpu 1-4, io 4; B io 3, gpu 4-7, io 7; C io 5, gpu 6-9, io 9
    "time-varying demands": (
        {
            "resources": [{"name": "io", "capacity": 1}, {"name": "gpu", "capacity": 2}],
            "tasks": [
                one_mode("A", seg(1, io=1), seg(3, gpu=2), seg(1, io=1)),
                one_mode("B", seg(1, io=1), seg(3, gpu=1), seg(1, io=1)),
                one_mode("C", seg(1, io=1), seg(3, gpu=1), seg(1, io=1), release=1),
            ],
        },
        10,
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("path", "optimum"),
    [
        ("psplib/j301_1.sm", 43),
        ("psplib/j301_2.sm", 47),
        ("psplib/j3048_10.sm", 54),
        ("mm/j102_2.mm", 20),
        ("mm/j1010_1.mm", 17),
    ],
)
def test_psplib_optimum(path: str, optimum: int, backend: str) -> None:
    proven(load_instance(INSTANCES / path), optimum, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_hand_solved(case: str, backend: str) -> None:
    data, optimum = CASES[case]
    proven(Problem.model_validate(data), optimum, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interleaved_stages(two_jobs: Problem, backend: str) -> None:
    # b's gpu stage first, then a's io stage beside it: b 0-6, a 2-8
    result = proven(two_jobs, 8, backend=backend)
    assert result.schedule is not None
    assert result.schedule.starts == {"a": 2, "b": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_completion(two_jobs_data: dict[str, Any], backend: str) -> None:
    # B (weight 2) first: B ends at 6, A at 8 (2 * 6 + 8); A first costs 6 + 2 * 12
    two_jobs_data["objective"] = "weighted_completion"
    proven(Problem.model_validate(two_jobs_data), 20, backend=backend)


def test_registry_validates_and_reports() -> None:
    problem = load_instance(INSTANCES / "psplib" / "j301_1.sm")
    result = solve(problem, "milp", backend="highs", time_limit=60, workers=1)
    assert result.valid is True
    assert (result.status, result.objective, result.lower_bound) == (Status.OPTIMAL, 43, 43)
    assert result.stats["variables"] > 0 and result.stats["horizon"] >= 43


def test_time_limit_keeps_a_valid_schedule() -> None:
    # j3025_5 (optimum 72) is not closed in one second: the warm start or better comes back
    problem = load_instance(INSTANCES / "psplib" / "j3025_5.sm")
    result = solve(problem, "milp", time_limit=1, workers=1)
    assert result.schedule is not None and validate(problem, result.schedule).ok
    assert result.status == Status.FEASIBLE
    assert result.lower_bound is not None and result.lower_bound <= 72 < result.objective


def test_refuses_a_model_too_large() -> None:
    # three one-unit tasks of a million ticks on one unit: windows of two million ticks each
    problem = Problem.model_validate(
        {
            "resources": [{"name": "r", "capacity": 1}],
            "tasks": [one_mode(n, seg(1_000_000, r=1)) for n in "ABC"],
        }
    )
    with pytest.raises(PlannerError) as err:
        solve(problem, "milp")
    message = str(err.value)
    assert "\n" not in message
    assert "too large" in message and "--solver cpsat" in message and "--solver ga" in message


@pytest.mark.parametrize("warm", [False, True])
def test_pure_model_with_and_without_initial_solution(warm: bool) -> None:
    # Without an initial solution the horizon is the sum of the durations: a larger model,
    # the same optimum.
    problem = load_instance(INSTANCES / "psplib" / "j301_1.sm")
    initial = serial_sgs(problem, priorities(problem, "lft"))[0] if warm else None
    result = solve_milp(
        problem, time_limit=60, workers=1, backend="highs", initial_solution=initial
    )
    assert (result.status, result.objective, result.lower_bound) == (Status.OPTIMAL, 43, 43)
    assert validate(problem, result.schedule).ok
    horizon = 43 if initial is None else initial.makespan(problem)
    assert (result.stats["horizon"] > horizon) == (not warm)


def test_unknown_backend() -> None:
    problem = load_instance(INSTANCES / "mm" / "j102_2.mm")
    with pytest.raises(InputError, match="unknown MILP backend 'gurobi'"):
        solve_milp(problem, backend="gurobi")
    with pytest.raises(
        InputError, match=r"^option 'backend' of solver 'milp' must be cbc \| highs"
    ):
        solve(problem, "milp", backend="gurobi")


@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.chdir(tmp_path)
    instance = str(INSTANCES / "psplib" / "j301_1.sm")
    args = ["solve", instance, "--solver", "milp", "--backend", backend, "--time-limit", "60"]
    result = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "optimal" in result.output and "43" in result.output
    assert list(tmp_path.iterdir()) == []


def test_tasks_no_two_of_which_fit_together_make_one_clique() -> None:
    from planner.models.milp_model import conflict_cliques

    def task(name: str, q: int) -> dict[str, Any]:
        return {"name": name, "modes": [{"segments": [{"duration": 2, "demand": {"r": q}}]}]}

    # three tasks of 6 on a capacity of 10: no two together; one of 4 fits beside any
    problem = Problem.model_validate(
        {
            "resources": [{"name": "r", "capacity": 10}],
            "tasks": [task("a", 6), task("b", 6), task("c", 6), task("d", 4)],
        }
    )
    assert conflict_cliques(problem) == [[0, 1, 2]]
    for cliques in (True, False):
        result = solve_milp(problem, cliques=cliques)
        assert (result.status, result.objective) == (Status.OPTIMAL, 6)

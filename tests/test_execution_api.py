"""The execution side in Python: the same names, defaults and types as on the command line."""

from __future__ import annotations

import time

import pytest

import planner
from planner.disturbances import MURI_FACTORS, Disturbances, Failure, Slowdown
from planner.errors import InputError
from planner.io.instance import load_instance
from planner.replay.events import parse_event
from planner.replay.replan import replan
from planner.replay.simulate import monte_carlo, rank_by_realized, simulate
from planner.solvers import solve
from planner.study import Study
from planner.validate import validate
from tests.conftest import INSTANCES


@pytest.fixture(scope="module")
def placed() -> tuple[planner.Problem, planner.Schedule]:
    """The shipped Muri trace placed on nodes (problem form), and its sgs plan."""
    from planner.dl.workloads import import_muri
    from planner.io.instance import problem_from_data

    problem = problem_from_data(import_muri(INSTANCES / "muri_trace.csv", placement="node"))
    result = solve(problem, "sgs")
    assert result.schedule is not None
    return problem, result.schedule


def test_node_is_exported() -> None:
    assert "Node" in planner.__all__
    assert planner.Node(name="n1", capacity={"gpu": 8}).capacity == {"gpu": 8}


def test_monte_carlo_takes_runs_and_seed_as_rank_by_realized_does(
    placed: tuple[planner.Problem, planner.Schedule],
) -> None:
    problem, plan = placed
    dist = Disturbances.parse(noise="lognormal:0.1")
    study = monte_carlo(problem, plan, dist, runs=20, seed=5)
    assert isinstance(study, Study) and len(study) == 20 and not study.interrupted
    assert list(study.column("seed")) == list(range(5, 25))
    assert study.column("makespan")[0] == simulate(problem, plan, dist, 5).makespan
    (rank,) = rank_by_realized(problem, {"sgs": plan}, dist, runs=20, seed=5)
    assert rank.makespan == study.figures()["makespan"]
    assert rank.runs == 20


def test_monte_carlo_refuses_counts_past_the_cap(
    placed: tuple[planner.Problem, planner.Schedule],
) -> None:
    problem, plan = placed
    with pytest.raises(InputError, match=r"^runs must be from 1 to 1,000,000, got 1000000000$"):
        monte_carlo(problem, plan, Disturbances(), runs=10**9)


def test_the_first_ctrl_c_keeps_the_runs_done(
    placed: tuple[planner.Problem, planner.Schedule], monkeypatch: pytest.MonkeyPatch
) -> None:
    problem, plan = placed
    done: list[int] = []
    real = time.sleep
    fired: list[int] = []

    def sleep(seconds: float) -> None:  # the waiting main thread: Ctrl-C after 3 runs
        if len(done) >= 3 and not fired:
            fired.append(1)
            raise KeyboardInterrupt
        real(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    study = monte_carlo(problem, plan, Disturbances(), runs=5000, progress=lambda r: done.append(1))
    assert study.interrupted
    assert 3 <= len(study) < 5000
    assert study.figures()["runs"] == len(study)


def test_parse_has_the_command_line_defaults() -> None:
    assert Disturbances.parse().slowdown == Slowdown(MURI_FACTORS)
    assert Disturbances.parse(slowdown="none").slowdown is None
    assert Disturbances().slowdown is None  # the plain dataclass: no disturbance at all
    assert Disturbances.parse(failures=["n1@2h+30min"], time_unit="1min").failures == (
        Failure("n1", 120, 30),
    )


def test_overlapping_failures_of_one_node_are_refused_in_the_library() -> None:
    with pytest.raises(InputError, match=r"^failure n1@5: node 'n1' is already down"):
        Disturbances(failures=(Failure("n1", 3, 4), Failure("n1", 5)))
    assert len(Disturbances(failures=(Failure("n1", 3, 4), Failure("n1", 7))).failures) == 2


def test_replan_returns_the_instance_of_its_schedule(
    placed: tuple[planner.Problem, planner.Schedule],
) -> None:
    problem, plan = placed
    result = replan(problem, plan, 2000, [parse_event("fail:node3+600")], "sgs")
    assert result.instance is not None and result.schedule is not None
    assert "node3#down" in result.instance.task_index
    assert validate(result.instance, result.schedule).ok
    assert result.objective == result.stats["replan"]["makespan"]


@pytest.mark.parametrize("solver", ["sgs", "ga", "pso", "cpsat", "exclusive-srtf"])
def test_every_solver_returns_a_whole_makespan(solver: str) -> None:
    problem = load_instance(INSTANCES / "psplib" / "j301_1.sm")
    options = {"sgs": {}, "exclusive-srtf": {}}.get(solver, {"time_limit": 1.0})
    result = solve(problem, solver, **options)
    assert type(result.objective) is int

"""``initial_solution`` for the heuristics and the portfolio: the warm start is decoded
first (re-planning passes the old plan's order this way), and a warm start the
validator rejects is refused at the door."""

from __future__ import annotations

import pytest

from planner.errors import InputError
from planner.io.instance import load_instance
from planner.schedule import Schedule
from planner.solvers import solve
from tests.conftest import INSTANCES

J120 = INSTANCES / "psplib/j1201_1.sm"


@pytest.fixture(scope="module")
def good() -> Schedule:
    """A schedule of j1201_1 far better than one SGS pass: 2,000 GA schedules."""
    problem = load_instance(J120)
    return solve(problem, "ga", schedules=2000, seed=1).schedule


@pytest.mark.parametrize("solver", ["ga", "pso"])
def test_the_first_schedule_decoded_is_the_warm_start(solver: str, good: Schedule) -> None:
    problem = load_instance(J120)
    target = good.objective(problem)
    cold = solve(problem, solver, schedules=2)
    warm = solve(problem, solver, schedules=2, initial_solution=good)
    # two schedules: one decode and its justification
    assert cold.objective > target >= warm.objective and warm.valid


def test_the_portfolio_starts_from_a_better_warm_start(good: Schedule) -> None:
    problem = load_instance(J120)
    events: list = []
    res = solve(problem, "portfolio", time_limit=3, initial_solution=good, progress=events.append)
    assert res.objective <= good.objective(problem)
    first = next(e for e in events if e.objective is not None and e.message == "SGS")
    assert first.objective >= good.objective(problem)
    assert any(e.objective == good.objective(problem) for e in events)


def test_an_invalid_warm_start_is_refused(good: Schedule) -> None:
    problem = load_instance(J120)
    bad = Schedule(modes=good.modes, starts={**good.starts, "122": 0})
    for solver in ("ga", "cpsat", "portfolio"):
        with pytest.raises(InputError) as err:
            solve(problem, solver, initial_solution=bad)
        assert str(err.value).startswith(
            "initial_solution: not a valid schedule of the problem: precedence:"
        )


def test_cli_initial(tmp_path, good: Schedule) -> None:
    from typer.testing import CliRunner

    from planner.app.cli import app

    problem = load_instance(J120)
    start = tmp_path / "start.json"
    good.save(start, problem)
    runner = CliRunner()
    args = ["solve", str(J120), "--initial", str(start)]
    result = runner.invoke(app, [*args, "--solver", "ga", "--schedules", "2"])
    assert result.exit_code == 0, result.output
    assert f"makespan     {good.makespan(problem)}\n" in result.output
    result = runner.invoke(app, [*args, "--solver", "sgs"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: solver 'sgs' has no option 'initial_solution'")

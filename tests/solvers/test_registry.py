"""The solver contract: declared options checked at the door, feasibility checked once,
a new Result with both bounds, one exit status for one mistake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import InputError, Problem, Status, load_instance
from planner.app.cli import app
from planner.solvers import SOLVERS, solve
from planner.solvers.registry import options_of, solver_function

ROOT = Path(__file__).resolve().parents[2]
J301 = ROOT / "instances" / "psplib" / "j301_1.sm"

BAD_OPTIONS = [
    # a misspelt option is an error, not 5,000 schedules without a word
    ("ga", {"schedulez": 10}, "solver 'ga' has no option 'schedulez'; its options: schedules, "),
    # another solver's option
    ("cpsat", {"rule": "nonsense"}, "solver 'cpsat' has no option 'rule'; its options: "),
    # a time limit for a single pass that has none
    ("sgs", {"time_limit": 5.0}, "solver 'sgs' has no option 'time_limit'; its options: rule, "),
    # a wrong type
    ("ga", {"schedules": "ten"}, "option 'schedules' of solver 'ga' must be int | None, got 'ten'"),
    ("pso", {"particles": 2.5}, "option 'particles' of solver 'pso' must be int, got 2.5"),
    ("portfolio", {"workers": True}, "option 'workers' of solver 'portfolio' must be int | None"),
    # a value outside the declared choices
    ("sgs", {"rule": "bogus"}, "option 'rule' of solver 'sgs' must be lft | lst | mts | spt | "),
    ("sgs", {"scheme": "zigzag"}, "option 'scheme' of solver 'sgs' must be serial | parallel, "),
    ("milp", {"backend": "gurobi"}, "option 'backend' of solver 'milp' must be cbc | highs, "),
    ("cpsat", {"encoding": "dense"}, "option 'encoding' of solver 'cpsat' must be shared | "),
    # a value the solver itself refuses
    ("ga", {"population": 1}, "population must be at least 2, got 1"),
    ("cpsat", {"parameters": {"no_such": 1}}, "CP-SAT parameter 'no_such': "),
    # no such solver
    ("nonexistent", {}, "unknown solver 'nonexistent'; choose one of portfolio, cpsat, milp, "),
]


@pytest.mark.parametrize(("solver", "options", "message"), BAD_OPTIONS)
def test_bad_options_through_solve(solver: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as err:
        solve(load_instance(J301), solver, **options)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


BAD_FLAGS = [
    (["--solver", "nonexistent"], "error: unknown solver 'nonexistent'; choose one of "),
    (["--solver", "ga", "--rule", "lft"], "error: solver 'ga' has no option 'rule'; its options: "),
    (["--solver", "sgs", "--rule", "bogus"], "error: option 'rule' of solver 'sgs' must be lft | "),
    (["--solver", "sgs", "--scheme", "zigzag"], "error: option 'scheme' of solver 'sgs' must be "),
    (["--solver", "milp", "--backend", "gurobi"], "error: option 'backend' of solver 'milp' must "),
    (["--solver", "sgs", "--time-limit", "5"], "error: solver 'sgs' has no option 'time_limit'; "),
    (["--solver", "sgs", "--seed", "3"], "error: solver 'sgs' has no option 'seed'; its options: "),
    (["--solver", "exclusive-fifo", "--log"], "error: solver 'exclusive-fifo' has no option 'log'"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS)
def test_bad_options_through_the_cli(flags: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["solve", str(J301), *flags])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message)


def test_a_cycle_is_refused_at_the_door() -> None:
    problem = Problem.model_validate(
        {
            "resources": [{"name": "r", "capacity": 1}],
            "tasks": [
                {"name": n, "modes": [{"segments": [{"duration": 1, "demand": {"r": 1}}]}]}
                for n in "ab"
            ],
            "precedences": [{"before": "a", "after": "b"}, {"before": "b", "after": "a"}],
        }
    )
    for solver in SOLVERS:
        with pytest.raises(InputError, match="infeasible instance: precedence cycle a -> b -> a"):
            solve(problem, solver)


def test_a_new_result_with_both_bounds() -> None:
    # The solver called directly keeps its own bound; solve() returns a new Result with
    # the solver's bound, the core's bound and the better of the two.
    problem = load_instance(J301)
    direct = solver_function("sgs")(problem)
    through = solve(problem, "sgs")
    assert direct.lower_bound is None and direct.valid is None
    assert through is not direct and through.valid is True
    assert through.solver_bound is None and through.core_bound == through.lower_bound
    assert through.core_bound is not None and through.core_bound <= 43 <= through.objective
    assert through.status is Status.FEASIBLE or through.objective == through.core_bound


def test_every_solver_declares_documented_options() -> None:
    for name in SOLVERS:
        for option in options_of(name).values():
            assert option.help, f"{name}: option {option.name!r} has no help text"


def test_solvers_command_lists_options_and_defaults() -> None:
    result = CliRunner().invoke(app, ["solvers"])
    assert result.exit_code == 0
    assert "portfolio (default): " in result.output
    assert "\n  schedules: int | None  Budget of generated schedules" in result.output
    rules = "lft | lst | mts | spt | lpt | est | grpw | mslk | grw"
    assert f"\n  rule: {rules} = 'lft'  " in result.output

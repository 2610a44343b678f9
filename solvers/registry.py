"""The solver registry and the one ``solve()`` that the library and the CLI share."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from planner.bounds import lower_bound
from planner.errors import PlannerError
from planner.model import Problem
from planner.result import Result, Status
from planner.validate import validate

SOLVERS: dict[str, str] = {
    "sgs": "solvers.sgs:solve_sgs",
    "ga": "solvers.ga:solve_ga",
    "pso": "solvers.pso:solve_pso",
    "exclusive-fifo": "solvers.exclusive:solve_fifo",
    "exclusive-srtf": "solvers.exclusive:solve_srtf",
    "exclusive-srsf": "solvers.exclusive:solve_srsf",
    "cpsat": "models.cpsat:solve_cpsat",
    "milp": "models.milp:solve_milp",
}
"""Solver name -> ``module:function``: a function of a Problem and options returning a Result."""


class SolverError(PlannerError):
    """A solver failed, or returned a schedule the validator rejects (a bug)."""


def solver_function(name: str) -> Callable[..., Result]:
    """The function behind solver ``name``."""
    if name not in SOLVERS:
        raise PlannerError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
    module, func = SOLVERS[name].split(":")
    return getattr(importlib.import_module(module), func)


def solve(problem: Problem, solver: str = "sgs", **options: Any) -> Result:
    """Solve ``problem`` with ``solver`` and return a validated :class:`Result`.

    Options (``time_limit``, ``seed``, ``rule``, ``progress`` ...) go to the
    solver; each ignores those it has no use for. The returned schedule, if any,
    has passed the independent validator; the lower bound is the better of the
    solver's and the core's bounds.

    Raises
    ------
    SolverError
        If the solver returns a schedule the validator rejects.
    """
    func = solver_function(solver)
    t0 = time.perf_counter()
    result = func(problem, **options)
    result.runtime = time.perf_counter() - t0
    if result.schedule is not None:
        report = validate(problem, result.schedule)
        if not report.ok:
            raise SolverError(
                f"solver {solver!r} returned an invalid schedule: {report.violations[0]}"
            )
        result.stats["valid"] = True
        result.schedule.meta.setdefault("solver", solver)
    if problem.objective == "makespan":
        bound = lower_bound(problem)
        result.lower_bound = max(bound, result.lower_bound or 0)
        if result.objective is not None and result.objective <= result.lower_bound:
            result.status = Status.OPTIMAL
    return result

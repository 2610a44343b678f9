"""The solver registry and the one ``solve()`` that the library and the CLI share."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from planner.bounds import lower_bound
from planner.checks import check_feasibility
from planner.errors import InputError, PlannerError
from planner.model import Problem
from planner.result import Result, Status
from planner.solvers.options import Option, check_options, solver_options
from planner.validate import validate

SOLVERS: dict[str, str] = {
    "portfolio": "planner.solvers.portfolio:solve_portfolio",
    "cpsat": "planner.models.cpsat:solve_cpsat",
    "milp": "planner.solvers.warm_milp:solve_warm_milp",
    "ga": "planner.solvers.ga:solve_ga",
    "pso": "planner.solvers.pso:solve_pso",
    "sgs": "planner.solvers.sgs:solve_sgs",
    "exclusive-fifo": "planner.solvers.exclusive:solve_fifo",
    "exclusive-srtf": "planner.solvers.exclusive:solve_srtf",
    "exclusive-srsf": "planner.solvers.exclusive:solve_srsf",
}
"""Solver name -> ``module:function``: a function of a Problem and typed keyword options
returning a Result."""

IN_EXECUTOR: dict[str, str] = {
    "dispatch": "planner.solvers.dispatch_search:search_dispatch",
}
"""Solvers of training jobs: name -> ``module:function`` of a job-level dispatch and its
setting (:class:`~planner.executor.runs.Dispatch`) to a plan the job-level executor runs
(:func:`dispatch_solver`)."""

DEFAULT_SOLVER = "portfolio"
"""The solver of ``planner solve`` when none is named."""

SUMMARIES: dict[str, str] = {
    "portfolio": "heuristics warm-start CP-SAT searches within one time limit; on training "
    "jobs, 'planner solve' searches dispatches in the executor's model instead",
    "cpsat": "the exact CP-SAT model alone (optional initial_solution)",
    "milp": "the time-indexed MILP (PuLP), warm-started by SGS passes",
    "ga": "genetic algorithm: activity list, serial SGS, justification",
    "pso": "particle swarm on random keys, same decoder",
    "sgs": "one schedule generation pass under a priority rule",
    "exclusive-fifo": "baseline without interleaving, jobs by release",
    "exclusive-srtf": "baseline without interleaving, shortest run first",
    "exclusive-srsf": "baseline without interleaving, smallest service first",
    "dispatch": "training jobs' plans: dispatches searched in the job-level executor's model "
    "(policies, grouping programs, column generation, restarts); 'planner solve' runs it on "
    "every instance with training jobs",
}
"""One line per solver, for ``planner solvers``."""


KERNEL_FREE = frozenset({"cpsat"})
"""Solvers that never run the compiled decoders, so need not load them."""


class SolverError(PlannerError):
    """A solver failed, or returned a schedule the validator rejects (a bug)."""


def solver_function(name: str) -> Callable[..., Result]:
    """The function behind solver ``name``.

    Raises
    ------
    InputError
        If no solver has that name.
    """
    if name not in SOLVERS:
        raise InputError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
    return _load(SOLVERS[name])


def dispatch_solver(name: str = "dispatch") -> Callable[..., Any]:
    """The function behind solver ``name`` of :data:`IN_EXECUTOR`, loaded when first asked.

    Raises
    ------
    InputError
        If no such solver has that name.
    """
    if name not in IN_EXECUTOR:
        raise InputError(f"unknown solver of training jobs {name!r}; choose one of "
                         f"{', '.join(IN_EXECUTOR)}")  # fmt: skip
    return _load(IN_EXECUTOR[name])


def _load(where: str) -> Callable[..., Any]:
    """The function ``module:function`` names, its module imported when first asked."""
    module, func = where.split(":")
    return getattr(importlib.import_module(module), func)


def options_of(name: str) -> dict[str, Option]:
    """The options solver ``name`` declares (name -> type, default and help)."""
    return solver_options(solver_function(name))


def applicable(solver: str, options: dict[str, Any]) -> dict[str, Any]:
    """The ``options`` that solver ``solver`` declares (a study's common settings, such as
    ``time_limit`` or ``seed``, apply to the solvers that take them)."""
    declared = options_of(solver)
    return {k: v for k, v in options.items() if k in declared}


def solve(problem: Problem, solver: str = DEFAULT_SOLVER, **options: Any) -> Result:
    """Solve ``problem`` with ``solver`` and return a validated :class:`Result`.

    Before the solver runs, the options are checked against those it declares
    (:func:`options_of`), the problem is checked for provable infeasibility, and the
    compiled kernels are loaded (compiled on a first run), outside the solver's time
    limit. The returned schedule, if any, has passed the independent validator.
    The result is a new one: ``solver_bound`` is the solver's own bound, ``core_bound``
    the core's, ``lower_bound`` the better of the two.

    Raises
    ------
    InputError
        For an unknown solver, an unknown option or a value of the wrong type, an
        ``initial_solution`` the validator rejects, or a provably infeasible problem
        (:class:`~planner.errors.InfeasibleError`).
    SolverError
        If the solver returns a schedule the validator rejects.
    """
    if not isinstance(problem, Problem):
        raise InputError(
            f"solve takes a Problem, not a {type(problem).__name__}: load a file with "
            "planner.load_instance, or build one from instance data with "
            "planner.problem_from_data"
        )
    func = solver_function(solver)
    check_options(solver, func, options)
    check_feasibility(problem)
    start = options.get("initial_solution")
    if start is not None:
        report = validate(problem, start)
        if not report.ok:
            raise InputError(
                f"initial_solution: not a valid schedule of the problem: {report.violations[0]}"
            )
    if solver not in KERNEL_FREE:
        from planner.solvers.kernels import load_kernels

        load_kernels(options.get("progress"))
    t0 = time.perf_counter()
    result = func(problem, **options)
    runtime = time.perf_counter() - t0
    valid = None
    if result.schedule is not None:
        report = validate(problem, result.schedule)
        if not report.ok:
            raise SolverError(
                f"solver {solver!r} returned an invalid schedule: {report.violations[0]}"
            )
        valid = True
        result.schedule.meta.setdefault("solver", solver)
    if problem.objective in ("energy", "cost") and result.schedule is not None:
        # the problem's own figure: solvers compute it in rounded or scaled units
        result = replace(result, objective=result.schedule.objective(problem))
    core = float(lower_bound(problem)) if problem.objective == "makespan" else None
    best = max((b for b in (core, result.lower_bound) if b is not None), default=None)
    status, reason = result.status, result.reason
    if result.objective is not None and best is not None and result.objective <= best:
        if status != Status.OPTIMAL:  # the bound proves what the solver could not
            proof = f"its {problem.objective} meets the lower bound {best:g}: proven optimal"
            reason = f"{reason}; {proof}" if reason else proof
        status = Status.OPTIMAL
    elif status == Status.OPTIMAL and result.objective is not None and best is not None:
        # proven in the solver's rounded units, not for the plan's own figure: the status
        # must not say more than the gap does
        status = Status.FEASIBLE
        reason = (
            f"{solver} proved its optimum in rounded units; the plan's own "
            f"{problem.objective} is above that bound"
        )
    objective = result.objective
    if isinstance(objective, float) and objective.is_integer():
        objective = int(objective)  # one type for every solver: makespans are whole ticks
    return replace(
        result,
        objective=objective,
        status=status,
        reason=reason,
        runtime=runtime,
        lower_bound=best,
        solver_bound=result.lower_bound,
        core_bound=core,
        valid=valid,
    )

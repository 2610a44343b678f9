"""The ``cpsat`` solver: the exact CP-SAT model alone.

It builds the model of :mod:`models.cpsat_model`, hints every variable from an
optional ``initial_solution`` (whose makespan is then the horizon), searches and
returns. Compositions with heuristics live in :mod:`solvers.portfolio`. Ctrl-C stops
the search and keeps the best schedule found so far; so does the time limit.

With ``stability`` and ``reference_starts`` (re-planning, :mod:`planner.replay.replan`) the
search minimises the objective plus ``stability`` times the total shift of the
reference tasks' starts. Its bound then bounds that sum, not the objective, so the
result's bound is the core's; a hint no longer caps the horizon (a longer makespan
may shift less).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from ortools.sat.python import cp_model

from planner.bounds import horizon as trivial_horizon
from planner.bounds import lower_bound as core_bound
from planner.errors import InputError
from planner.interrupt import run_interruptibly
from planner.model import Problem
from planner.models.cpsat_model import CpsatModel, Encoding, build_model, hint, scaled_bound
from planner.result import Progress, Result, Status
from planner.schedule import Schedule

logger = logging.getLogger(__name__)

SMALL = 40
"""Up to this many tasks, the proof of optimality dominates the solve time."""

PROOF_PARAMETERS: dict[str, object] = {
    "num_full_subsolvers": 2,
    "subsolvers": ["default_lp", "objective_lb_search"],
}
"""CP-SAT parameters for problems of at most :data:`SMALL` tasks: two complete searches,
one of them raising the lower bound, instead of one complete search beside
large-neighbourhood search. On hard J30 instances it proves bounds several ticks higher
in the same time (see BENCHMARKS.md)."""

DEFAULT_WORKERS = 2
"""Search workers without a ``workers`` option."""

_STATUS = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
}


class _Progress(cp_model.CpSolverSolutionCallback):
    """Passes every CP-SAT solution on as a :class:`Progress`, timed from ``t0``."""

    def __init__(self, progress: Callable[[Progress], None], built: CpsatModel, t0: float) -> None:
        super().__init__()
        self.progress = progress
        self.built = built
        self.t0 = t0

    def on_solution_callback(self) -> None:
        built = self.built
        # with a stability term, CP-SAT's bound is no bound of the problem's objective
        bound = (
            None
            if built.shift_weight
            else scaled_bound(self.best_objective_bound, built.objective_scale)
            - built.objective_slack
        )
        self.progress(
            Progress(
                elapsed=time.perf_counter() - self.t0,
                objective=built.problem_objective(self.objective_value, self.value),
                bound=bound,
                message="CP-SAT",
            )
        )


def solve_cpsat(
    problem: Problem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    workers: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    log: bool = False,
    encoding: Encoding = "optional",
    makespan_interval: bool = False,
    parameters: dict[str, Any] | None = None,
    initial_solution: Schedule | None = None,
    lower_bound: int | None = None,
    stability: float = 0.0,
    reference_starts: dict[str, int] | None = None,
) -> Result:
    """Solve ``problem`` exactly with CP-SAT.

    Parameters
    ----------
    problem
        The problem (checked: acyclic task graph).
    time_limit
        Seconds for the whole solve, model building included; ``None`` for no limit.
    seed
        CP-SAT's random seed.
    workers
        CP-SAT's search workers; 2 by default (:data:`DEFAULT_WORKERS`).
    progress
        Called with every improving solution.
    log
        Write CP-SAT's search log to stderr.
    encoding
        Mode encoding: ``shared`` or ``optional`` intervals per mode (see
        :mod:`models.cpsat_model`).
    makespan_interval
        Whether every cumulative holds an interval from the makespan to the horizon.
    parameters
        Extra CP-SAT parameters (name -> value), applied over the proof parameters
        (two complete searches) used on problems of at most 40 tasks
        (:data:`PROOF_PARAMETERS`, :data:`SMALL`).
    initial_solution
        A schedule that hints every variable; its makespan is the horizon (makespan
        objective). Returned when the search ends with nothing better.
    lower_bound
        A lower bound on the makespan known from elsewhere; the core's bound by default.
    stability
        Weight (>= 0) of the total start shift of the tasks of ``reference_starts``,
        added to the objective.
    reference_starts
        Per task name, the start to stay near (the old plan's, when re-planning).

    Returns
    -------
    Result
        Status ``optimal``, ``feasible`` (stopped by the time limit or Ctrl-C),
        ``infeasible`` (proven), or ``unknown`` (no schedule and no proof).
    """
    t0 = time.perf_counter()
    if stability < 0:
        raise InputError(f"option 'stability' of solver 'cpsat' must be >= 0, got {stability}")
    makespan = problem.objective == "makespan"
    lower = (core_bound(problem) if lower_bound is None else lower_bound) if makespan else 0
    reference = reference_starts or {}
    stable = stability > 0 and bool(reference)
    warm = initial_solution
    if warm is None:
        horizon = trivial_horizon(problem)
    elif makespan and not stable:
        horizon = warm.makespan(problem)
    else:
        horizon = max(trivial_horizon(problem), warm.makespan(problem))
    built = build_model(
        problem,
        horizon,
        encoding=encoding,
        makespan_interval=makespan_interval,
        lower=lower,
        reference=reference,
        stability=stability if stable else 0.0,
    )
    if warm is not None:
        hint(built, problem, warm)
    setup = time.perf_counter() - t0
    logger.info(
        "cpsat: horizon %d, hint %s, lower bound %d, model built in %.2f s",
        horizon,
        "none" if warm is None else f"{warm.objective(problem):g}",
        lower,
        setup,
    )
    base = PROOF_PARAMETERS if len(problem.tasks) <= SMALL else {}
    solver = _solver(
        None if time_limit is None else time_limit - setup,
        seed,
        workers or DEFAULT_WORKERS,
        log,
        {**base, **(parameters or {})},
    )
    scale = built.objective_scale
    callback = _Progress(progress, built, t0) if progress else None
    code, interrupted = _run(solver, built.model, callback)
    stats: dict[str, object] = {
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "wall_time": solver.wall_time,
        "setup_time": setup,
        "horizon": horizon,
        "hint_makespan": None if warm is None else warm.makespan(problem),
        "encoding": encoding,
    }
    if stable:
        stats["stability"] = stability
    status = _STATUS.get(code, Status.UNKNOWN)
    schedule, bound, reason = None, None, None
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        schedule = built.schedule(problem, solver.value)
        if stable:
            # CP-SAT's bound bounds objective + stability x shift, not the objective
            bound = lower if makespan else None
            stats["shift"] = sum(abs(schedule.starts[t] - s) for t, s in reference.items())
            if status is Status.OPTIMAL:
                reason = f"optimal for the objective plus {stability:g} x the total shift"
        else:
            bound = scaled_bound(solver.best_objective_bound, scale) - built.objective_slack
            if makespan:
                bound = max(bound, lower)
    elif status is Status.UNKNOWN:
        reason = "stopped by Ctrl-C" if interrupted else "no CP-SAT solution within the time limit"
        if warm is not None:
            schedule, status = warm, Status.FEASIBLE
            bound = lower if makespan else None
            reason = f"{reason}; the initial solution is returned"
    elif status is Status.INFEASIBLE:
        reason = "CP-SAT proved that no schedule exists"

    def score(s: Schedule) -> float:
        shift = sum(abs(s.starts[t] - r) for t, r in reference.items()) if stable else 0
        return s.objective(problem) + stability * shift

    if (
        status is Status.FEASIBLE
        and warm is not None
        and schedule is not warm
        and score(warm) < score(schedule)
    ):
        # A hint is a hint: a search stopped early may not have found its way back to it.
        schedule = warm
        reason = "the initial solution beats CP-SAT's best solution; it is returned"
    objective = None if schedule is None else schedule.objective(problem)
    return Result(
        "cpsat",
        status,
        schedule,
        objective,
        bound,
        reason=reason,
        interrupted=interrupted,
        stats=stats,
    )


def _run(
    solver: cp_model.CpSolver, model: cp_model.CpModel, callback: _Progress | None
) -> tuple[int, bool]:
    """Solve on the shared interrupt path (:mod:`planner.interrupt`): Ctrl-C stops the
    search. Returns (status, interrupted).

    CP-SAT's own SIGINT handler would leave SIGINT at its default (ending the process)
    after the search, and could not say whether the search was interrupted.
    """
    return run_interruptibly(lambda: solver.solve(model, callback), solver.stop_search, "cpsat")


def _solver(
    time_limit: float | None, seed: int, workers: int, log: bool, parameters: dict[str, Any]
) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    params = solver.parameters
    for name, value in parameters.items():
        try:
            if isinstance(value, list):
                getattr(params, name).extend(value)
            else:
                setattr(params, name, value)
        except (AttributeError, TypeError, ValueError) as exc:
            raise InputError(f"CP-SAT parameter {name!r}: {exc}") from None
    params.num_workers = workers
    params.random_seed = seed
    params.catch_sigint_signal = False
    if time_limit is not None:
        params.max_time_in_seconds = max(0.01, time_limit)
    if log:
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = _to_stderr
    return solver


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")

"""The ``cpsat`` solver: the exact CP-SAT model, warm-started by a heuristic schedule.

Before the search, a few serial SGS passes give a schedule. Its makespan is
the horizon (for the makespan objective) and the schedule is a complete hint
(every start, mode literal and auxiliary variable). The core lower bound bounds
the makespan from below. Ctrl-C stops the search and keeps the best schedule
found so far; so does the time limit.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

from ortools.sat.python import cp_model

from models.cpsat_model import build_model, hint, scaled_bound
from planner.bounds import horizon as trivial_horizon
from planner.bounds import lower_bound
from planner.model import Problem
from planner.result import Progress, Result, Status
from planner.schedule import Schedule
from solvers.ga import solve_ga
from solvers.sgs import parallel_sgs, priorities, serial_sgs

logger = logging.getLogger(__name__)

HINT_RULES = ("lft", "lst", "mts")
"""Priority rules of the SGS passes whose best schedule is the hint."""

SMALL = 40
"""Up to this many tasks, the proof of optimality dominates the solve time."""

PROOF_PARAMETERS: dict[str, object] = {
    "num_full_subsolvers": 2,
    "subsolvers": ["default_lp", "objective_lb_search"],
}
"""CP-SAT parameters for small problems: two complete searches, one of them raising the
lower bound, instead of one complete search beside large-neighbourhood search. On hard
J30 instances it proves bounds several ticks higher in the same time (see BENCHMARKS.md)."""

GA_HINT_SCHEDULES = 5000
"""Schedule budget of the GA run whose schedule hints problems above :data:`SMALL` tasks."""
GA_HINT_SHARE = 0.1
GA_HINT_SECONDS = 10.0

_STATUS = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
}


def heuristic_schedule(problem: Problem, rules: tuple[str, ...] = HINT_RULES) -> Schedule | None:
    """The best schedule of serial SGS passes under ``rules`` and a parallel pass under ``grw``.

    The parallel ``grw`` pass packs batches of training jobs far better than the serial
    rules. ``None`` if every pass fails.
    """
    best: Schedule | None = None
    passes = [(serial_sgs, rule) for rule in rules] + [(parallel_sgs, "grw")]
    for sgs, rule in passes:
        schedule, _ = sgs(problem, priorities(problem, rule))
        if schedule is not None and (
            best is None or schedule.objective(problem) < best.objective(problem)
        ):
            best = schedule
    return best


def _ga_hint(
    problem: Problem, warm: Schedule | None, time_limit: float | None, seed: int
) -> Schedule | None:
    """The GA's schedule when it beats ``warm``: a short run, a much better hint on large problems.

    It gets :data:`GA_HINT_SCHEDULES` schedules and at most :data:`GA_HINT_SHARE` of the
    time limit (:data:`GA_HINT_SECONDS` without one).
    """
    seconds = GA_HINT_SECONDS if time_limit is None else GA_HINT_SHARE * time_limit
    result = solve_ga(problem, schedules=GA_HINT_SCHEDULES, time_limit=seconds, seed=seed)
    if result.schedule is None:
        return warm
    if warm is None or result.schedule.objective(problem) < warm.objective(problem):
        return result.schedule
    return warm


class _Progress(cp_model.CpSolverSolutionCallback):
    """Reports every improving solution as a :class:`Progress` event."""

    def __init__(self, report: Callable[[Progress], None], scale: int, offset: float) -> None:
        super().__init__()
        self.report = report
        self.scale = scale
        self.offset = offset

    def on_solution_callback(self) -> None:
        self.report(
            Progress(
                elapsed=self.offset + self.wall_time,
                objective=self.objective_value / self.scale,
                bound=scaled_bound(self.best_objective_bound, self.scale),
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
    encoding: str = "optional",
    makespan_interval: bool = False,
    parameters: dict[str, object] | None = None,
    **_: object,
) -> Result:
    """Solve ``problem`` exactly with CP-SAT.

    Parameters
    ----------
    problem
        The problem (checked: acyclic task graph).
    time_limit
        Seconds for the whole solve, heuristic included; ``None`` for no limit.
    seed
        CP-SAT's random seed.
    workers
        Search workers (threads); 2 by default.
    progress
        Called with every improving solution.
    log
        Write CP-SAT's search log to stderr.
    encoding
        Mode encoding, ``"shared"`` or ``"optional"`` (see :mod:`models.cpsat_model`).
    makespan_interval
        Whether every cumulative holds an interval from the makespan to the horizon.
    parameters
        Extra CP-SAT parameters (name -> value), applied over :data:`PROOF_PARAMETERS`
        (used for problems of at most :data:`SMALL` tasks).

    Returns
    -------
    Result
        Status ``optimal``, ``feasible`` (stopped by the time limit or Ctrl-C),
        ``infeasible`` (proven), or ``unknown`` (no schedule and no proof).
    """
    t0 = time.perf_counter()
    warm = heuristic_schedule(problem)
    if len(problem.tasks) > SMALL:
        warm = _ga_hint(problem, warm, time_limit, seed)
    lower = lower_bound(problem) if problem.objective == "makespan" else 0
    if warm is None:
        horizon = trivial_horizon(problem)
    elif problem.objective == "makespan":
        horizon = warm.makespan(problem)
    else:
        horizon = max(trivial_horizon(problem), warm.makespan(problem))
    built = build_model(
        problem, horizon, encoding=encoding, makespan_interval=makespan_interval, lower=lower
    )
    if warm is not None:
        hint(built, problem, warm)
    logger.info(
        "cpsat: horizon %d, hint %s, lower bound %d, model built in %.2f s",
        horizon,
        "none" if warm is None else f"{warm.objective(problem):g}",
        lower,
        time.perf_counter() - t0,
    )
    setup = time.perf_counter() - t0
    limit = None if time_limit is None else time_limit - setup
    base = PROOF_PARAMETERS if len(problem.tasks) <= SMALL else {}
    solver = _solver(limit, seed, workers, log, {**base, **(parameters or {})})
    scale = built.objective_scale
    callback = _Progress(progress, scale, setup) if progress else None
    code = solver.solve(built.model, callback)
    stats = {
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "wall_time": solver.wall_time,
        "setup_time": setup,
        "horizon": horizon,
        "hint_makespan": None if warm is None else warm.makespan(problem),
        "encoding": encoding,
    }
    status = _STATUS.get(code, Status.UNKNOWN)
    schedule, bound = None, None
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        schedule = built.schedule(problem, solver.value)
        bound = scaled_bound(solver.best_objective_bound, scale)
        if problem.objective == "makespan":
            bound = max(bound, lower)
    elif status is Status.UNKNOWN and warm is not None:
        # Stopped before CP-SAT's first solution: the hint is still a valid schedule.
        schedule, status = warm, Status.FEASIBLE
        stats["reason"] = "no CP-SAT solution in time; the heuristic schedule is returned"
    objective = None if schedule is None else schedule.objective(problem)
    return Result("cpsat", status, schedule, objective, bound, stats=stats)


def _solver(
    time_limit: float | None,
    seed: int,
    workers: int | None,
    log: bool,
    parameters: dict[str, object] | None,
) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    params = solver.parameters
    for name, value in (parameters or {}).items():
        if isinstance(value, list):
            getattr(params, name).extend(value)
        else:
            setattr(params, name, value)
    params.num_workers = workers or 2
    params.random_seed = seed
    params.catch_sigint_signal = True
    if time_limit is not None:
        params.max_time_in_seconds = max(0.01, time_limit)
    if log:
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = _to_stderr
    return solver


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")

"""The ``cpsat`` solver: the exact CP-SAT model, warm-started by heuristic schedules.

Before the search, a few SGS passes give a schedule (on problems above
:data:`SMALL` tasks a short GA run improves it). Its makespan is the horizon (for
the makespan objective) and the schedule is a complete hint (every start, mode
literal and auxiliary variable). The core lower bound bounds the makespan from
below. A first search of at most :data:`QUICK_SECONDS` proves most small problems
optimal; when it does not, a GA run improves the incumbent, which hints a second
search that keeps the first one's bound. Every better schedule of every stage is
reported as progress. Ctrl-C stops the solve and keeps the best schedule found so
far; so does the time limit.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

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
"""Schedule budget of the GA run that hints the first search of a problem above
:data:`SMALL` tasks."""
GA_HINT_SHARE = 0.1
"""Share of the time limit that bounds that run and the GA run between the searches of a
small problem."""
GA_HINT_SECONDS = 10.0
"""The bound of every GA run without a time limit."""
QUICK_SECONDS = 5.0
"""The first search (at most half the time left); most small problems end proven optimal."""
MIN_QUICK_SECONDS = 0.5
"""Below this first search, there is one search only."""
SMALL_GA_SCHEDULES = 20_000
"""Schedule budget of the GA run between the two searches of a small problem (J30: 0.1 s)."""
STAGED_TASKS = 500
"""Above this many tasks, one search: on a 2,000-task batch the GA run between two searches
ended no better than the first one, and the second search had half the time."""
GA_STAGE_SHARE = 0.5
"""Share of the time left that the GA run between the two searches of a larger problem gets:
on J120 a GA run of 30 s ends closer to the best known than the search does in 60 s."""

DEFAULT_WORKERS = 2
"""Search workers (and parallel GA runs) without a ``workers`` option."""

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
    problem: Problem,
    warm: Schedule | None,
    schedules: int | None,
    seconds: float,
    seed: int,
    workers: int,
    report: Callable[[Progress], None],
) -> Schedule | None:
    """The GA's schedule when it beats ``warm``, after at most ``schedules`` and ``seconds``.

    The GA makes one run per worker, in parallel threads (see :func:`solve_ga`).
    """

    def tell(event: Progress) -> None:
        report(replace(event, message=f"GA, {event.message}"))

    result = solve_ga(
        problem,
        schedules=schedules,
        time_limit=max(seconds, 0.01),
        seed=seed,
        workers=workers,
        progress=tell,
    )
    if result.schedule is None:
        return warm
    if warm is None or result.schedule.objective(problem) < warm.objective(problem):
        return result.schedule
    return warm


class _Reporter:
    """Passes on every better schedule or bound of the solve's stages, timed from its start."""

    def __init__(self, progress: Callable[[Progress], None] | None, t0: float, lower: int) -> None:
        self.progress = progress
        self.t0 = t0
        self.bound = float(lower) if lower else None
        self.best = math.inf

    def __call__(self, event: Progress) -> None:
        if self.progress is None or event.objective is None:
            return
        bound = max((b for b in (self.bound, event.bound) if b is not None), default=None)
        if event.objective < self.best or bound != self.bound:
            self.best = min(self.best, event.objective)
            self.bound = bound
            self.progress(
                Progress(time.perf_counter() - self.t0, self.best, self.bound, event.message)
            )


class _Progress(cp_model.CpSolverSolutionCallback):
    """Passes every CP-SAT solution on to a :class:`_Reporter`."""

    def __init__(self, report: _Reporter, scale: int) -> None:
        super().__init__()
        self.report = report
        self.scale = scale

    def on_solution_callback(self) -> None:
        self.report(
            Progress(
                elapsed=self.wall_time,
                objective=self.objective_value / self.scale,
                bound=scaled_bound(self.best_objective_bound, self.scale),
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
    encoding: str = "optional",
    makespan_interval: bool = False,
    parameters: dict[str, object] | None = None,
    **_: object,
) -> Result:
    """Solve ``problem`` exactly with CP-SAT.

    A first search of at most :data:`QUICK_SECONDS` (half the time left) ends most
    small problems, proven optimal. Otherwise a GA run improves the hint (up to
    :data:`SMALL` tasks: :data:`SMALL_GA_SCHEDULES` schedules; larger problems:
    :data:`GA_STAGE_SHARE` of the time left) and a second search, which starts from the
    first one's bound, takes the remaining time.

    Parameters
    ----------
    problem
        The problem (checked: acyclic task graph).
    time_limit
        Seconds for the whole solve, heuristics included; ``None`` for no limit.
    seed
        CP-SAT's random seed.
    workers
        Threads: CP-SAT's search workers, and as many parallel GA runs in the GA
        stage between the searches; :data:`DEFAULT_WORKERS` by default.
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
    small = len(problem.tasks) <= SMALL
    base = PROOF_PARAMETERS if small else {}
    options = _Options(
        seed, workers, log, encoding, makespan_interval, {**base, **(parameters or {})}
    )
    lower = lower_bound(problem) if problem.objective == "makespan" else 0
    report = _Reporter(progress, t0, lower)

    def remaining() -> float | None:
        """Seconds left of the time limit; ``None`` without one."""
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    def ga_seconds(share: float, of: float | None) -> float:
        return GA_HINT_SECONDS if of is None else share * of

    warm = heuristic_schedule(problem)
    if warm is not None:
        report(Progress(0.0, warm.objective(problem), message="SGS"))
    try:
        if not small:
            cap = ga_seconds(GA_HINT_SHARE, time_limit)
            # One run: the budget is small, and halved between two runs it gave worse hints
            # (MMLIB50 J5083_1: 50 against a proven 49).
            warm = _ga_hint(problem, warm, GA_HINT_SCHEDULES, cap, seed, 1, report)
    except KeyboardInterrupt:
        return _interrupted(problem, warm, lower, time.perf_counter() - t0)

    left = remaining()
    quick = QUICK_SECONDS if left is None else min(QUICK_SECONDS, left / 2)
    staged = quick >= MIN_QUICK_SECONDS and len(problem.tasks) <= STAGED_TASKS
    limit = quick if staged else left
    first = _search(problem, warm, lower, limit, options, t0, report)
    if not staged or first.final or first.interrupted:
        return first.result(problem)
    if small:
        schedules, cap = SMALL_GA_SCHEDULES, ga_seconds(GA_HINT_SHARE, time_limit)
    else:
        schedules, cap = None, ga_seconds(GA_STAGE_SHARE, remaining())
    try:
        better = _ga_hint(
            problem, first.schedule or warm, schedules, cap, seed, options.threads, report
        )
    except KeyboardInterrupt:
        first.interrupted = True
        return first.result(problem)
    if first.bound is not None and problem.objective == "makespan":
        lower = max(lower, int(first.bound))
    second = _search(problem, better, lower, remaining(), options, t0, report)
    return second.after(first).result(problem)


@dataclass
class _Options:
    """Settings shared by every search of one solve."""

    seed: int
    workers: int | None
    log: bool
    encoding: str
    makespan_interval: bool
    parameters: dict[str, object]

    @property
    def threads(self) -> int:
        """Threads of the searches, and GA runs of the GA stage between them."""
        return self.workers or DEFAULT_WORKERS


@dataclass
class _Search:
    """What one CP-SAT search returned."""

    status: Status
    schedule: Schedule | None
    bound: float | None
    interrupted: bool
    stats: dict[str, object]

    @property
    def final(self) -> bool:
        """Whether the search proved its answer (optimal or infeasible)."""
        return self.status in (Status.OPTIMAL, Status.INFEASIBLE)

    def after(self, earlier: _Search) -> _Search:
        """This search, continuing ``earlier``: effort adds up, the best bound is kept."""
        for key in ("branches", "conflicts", "wall_time"):
            self.stats[key] += earlier.stats[key]
        self.stats["stages"] = 2
        if earlier.bound is not None and (self.bound is None or earlier.bound > self.bound):
            self.bound = earlier.bound
        return self

    def result(self, problem: Problem) -> Result:
        """The search as the solver's :class:`Result`."""
        self.stats["interrupted"] = self.interrupted
        objective = None if self.schedule is None else self.schedule.objective(problem)
        return Result("cpsat", self.status, self.schedule, objective, self.bound, stats=self.stats)


def _search(
    problem: Problem,
    warm: Schedule | None,
    lower: int,
    limit: float | None,
    options: _Options,
    t0: float,
    report: _Reporter,
) -> _Search:
    """Build the model around ``warm`` (horizon and hint) and search for at most ``limit`` s."""
    t1 = time.perf_counter()
    if warm is None:
        horizon = trivial_horizon(problem)
    elif problem.objective == "makespan":
        horizon = warm.makespan(problem)
    else:
        horizon = max(trivial_horizon(problem), warm.makespan(problem))
    built = build_model(
        problem,
        horizon,
        encoding=options.encoding,
        makespan_interval=options.makespan_interval,
        lower=lower,
    )
    if warm is not None:
        hint(built, problem, warm)
    logger.info(
        "cpsat: horizon %d, hint %s, lower bound %d, model built in %.2f s",
        horizon,
        "none" if warm is None else f"{warm.objective(problem):g}",
        lower,
        time.perf_counter() - t1,
    )
    setup = time.perf_counter() - t0
    if limit is not None:
        limit -= time.perf_counter() - t1
    solver = _solver(limit, options)
    scale = built.objective_scale
    callback = _Progress(report, scale) if report.progress else None
    code, interrupted = _run(solver, built.model, callback)
    stats: dict[str, object] = {
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "wall_time": solver.wall_time,
        "setup_time": setup,
        "horizon": horizon,
        "hint_makespan": None if warm is None else warm.makespan(problem),
        "encoding": options.encoding,
        "stages": 1,
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
        bound = lower if problem.objective == "makespan" else None
        stats["reason"] = "no CP-SAT solution in time; the heuristic schedule is returned"
    if (
        status is Status.FEASIBLE
        and warm is not None
        and warm.objective(problem) < schedule.objective(problem)
    ):
        # A hint is a hint: a search stopped early may not have found its way back to it.
        schedule = warm
        stats["reason"] = "the hint beats CP-SAT's best solution; the hint is returned"
    return _Search(status, schedule, bound, interrupted, stats)


def _interrupted(problem: Problem, warm: Schedule | None, lower: int, setup: float) -> Result:
    """The result of a solve stopped by Ctrl-C before its first search."""
    stats: dict[str, object] = {"setup_time": setup, "interrupted": True, "stages": 0}
    if warm is None:
        return Result("cpsat", Status.UNKNOWN, stats=stats)
    bound = lower if problem.objective == "makespan" else None
    return Result("cpsat", Status.FEASIBLE, warm, warm.objective(problem), bound, stats=stats)


def _run(
    solver: cp_model.CpSolver, model: cp_model.CpModel, callback: _Progress | None
) -> tuple[int, bool]:
    """Solve in a helper thread; Ctrl-C here stops the search. Returns (status, interrupted).

    CP-SAT's own SIGINT handler would leave SIGINT at its default (ending the process)
    after the search, and could not say whether the search was interrupted.
    """
    done = threading.Event()
    out: list[int] = []

    def work() -> None:
        try:
            out.append(solver.solve(model, callback))
        finally:
            done.set()

    threading.Thread(target=work, name="cpsat", daemon=True).start()
    interrupted = False
    while True:
        try:
            # Event.wait, not Thread.join: an interrupted join can leave the thread
            # looking finished while it still runs.
            if done.wait(0.1):
                break
        except KeyboardInterrupt:
            interrupted = True
            solver.stop_search()
    return (out[0] if out else cp_model.UNKNOWN), interrupted


def _solver(time_limit: float | None, options: _Options) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    params = solver.parameters
    for name, value in options.parameters.items():
        if isinstance(value, list):
            getattr(params, name).extend(value)
        else:
            setattr(params, name, value)
    params.num_workers = options.threads
    params.random_seed = options.seed
    params.catch_sigint_signal = False
    if time_limit is not None:
        params.max_time_in_seconds = max(0.01, time_limit)
    if options.log:
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = _to_stderr
    return solver


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")

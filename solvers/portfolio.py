"""The ``portfolio`` solver: heuristic schedules warm-start CP-SAT searches in one time limit.

Before the search, a few SGS passes give a schedule (on problems above
:data:`~models.cpsat.SMALL` tasks a short GA run improves it). It is the pure CP-SAT
model's ``initial_solution``: its makespan is the horizon and it hints every
variable. A first search of at most :data:`QUICK_SECONDS` proves most small problems
optimal; when it does not, a GA run improves the incumbent, which warm-starts a second
search that keeps the first one's bound. Every better schedule of every stage is
reported as progress. Ctrl-C stops the solve and keeps the best schedule found so far;
so does the time limit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from planner.bounds import lower_bound
from planner.interrupt import SecondInterrupt
from planner.model import Problem
from planner.models.cpsat import DEFAULT_WORKERS, SMALL, solve_cpsat
from planner.models.cpsat_model import Encoding
from planner.result import Progress, Result, Status
from planner.schedule import Schedule
from planner.solvers.coarse import coarsen, refine
from planner.solvers.ga import solve_ga
from planner.solvers.sgs import parallel_sgs, priorities, serial_sgs

HINT_RULES = ("lft", "lst", "mts")
"""Priority rules of the SGS passes whose best schedule is the first hint."""

SGS_SHARE = 0.1
"""Share of the time limit after which no further SGS pass of the first hint starts (the
first pass always runs)."""
GA_HINT_SCHEDULES = 5000
"""Schedule budget of the GA run that hints the first search of a problem above
:data:`~models.cpsat.SMALL` tasks."""
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
MAX_NODE_CHOICES = 400_000
"""Above this many choices of a node for a mode of a task (the CP-SAT model's node Booleans),
neither the GA nor a search runs, and the SGS passes' schedule is returned: 5,755 jobs on 64
single GPUs ask 1.5 million, and a solve of 60 s took 189 s and 5.7 GB (one pass of theirs
takes 18-25 s)."""
STAGED_TASKS = 500
"""Above this many tasks, one search: on a 2,000-task batch the GA run between two searches
ended no better than the first one, and the second search had half the time."""
GA_STAGE_SHARE = 0.5
"""Share of the time left that the GA run between the two searches of a larger problem gets:
on J120 a GA run of 30 s ends closer to the best known than the search does in 60 s."""


def heuristic_schedule(
    problem: Problem,
    rules: tuple[str, ...] = HINT_RULES,
    deadline: float | None = None,
    keep: Callable[[Schedule], None] | None = None,
    target: float | None = None,
) -> Schedule | None:
    """The best schedule of serial SGS passes under ``rules`` and a parallel pass under ``grw``.

    The parallel ``grw`` pass packs batches of training jobs far better than the serial
    rules; on a placed problem serial ``grw`` and ``lpt`` passes (big jobs, or long blocks,
    booked first, so that gangs find their nodes) are better still (trace3', 4 blocks:
    70,406 and 67,284 against 78,617), and the same two on the problem with its jobs'
    chains of blocks merged (:mod:`solvers.coarse`), which places a job's blocks at once
    (trace3' on single GPUs, 4 blocks: 56,826 against 59,829 ticks); on a placed problem
    they run first. Once
    ``deadline`` (a :func:`time.perf_counter` reading) has passed, no further pass starts,
    whatever is left of the first. ``keep`` is told every better schedule, so that Ctrl-C
    during a later pass loses none. Once a schedule's objective is at most ``target``
    (a proven lower bound), no further pass starts. ``None`` if every pass fails.
    """
    best: Schedule | None = None
    passes = [(serial_sgs, rule, None) for rule in rules] + [(parallel_sgs, "grw", None)]
    if problem.nodes:
        # first: on many nodes a parallel pass is slow (5,755 jobs on single GPUs: 230 s
        # against 18-25 s for a serial one), and it is the serial passes that place best
        coarse = coarsen(problem)
        placed = []
        for on in (coarse, None) if coarse is not None else (None,):
            placed += [(serial_sgs, "lpt", on), (serial_sgs, "grw", on)]
        passes = placed + passes
    for sgs, rule, on in passes:
        if best is not None and deadline is not None and time.perf_counter() > deadline:
            break
        if best is not None and target is not None and best.objective(problem) <= target:
            break
        if on is None:
            schedule, _ = sgs(problem, priorities(problem, rule))
        else:
            schedule, _ = sgs(on.problem, priorities(on.problem, rule))
            schedule = None if schedule is None else refine(on, problem, schedule)
        if schedule is not None and (
            best is None or schedule.objective(problem) < best.objective(problem)
        ):
            best = schedule
            if keep is not None:
                keep(best)
    return best


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

    def tagged(self, tag: str) -> Callable[[Progress], None]:
        """A progress callback whose events carry ``tag`` before their message."""

        def tell(event: Progress) -> None:
            self(replace(event, message=f"{tag}, {event.message}" if event.message else tag))

        return tell


def _ga_hint(
    problem: Problem,
    warm: Schedule | None,
    schedules: int | None,
    seconds: float,
    seed: int,
    workers: int,
    report: _Reporter,
) -> Schedule | None:
    """The GA's schedule when it beats ``warm``, after at most ``schedules`` and ``seconds``.

    The GA makes one run per worker, in parallel threads (see :func:`solve_ga`).
    Ctrl-C during the run is raised again, once the run has stopped.
    """
    result = solve_ga(
        problem,
        schedules=schedules,
        time_limit=max(seconds, 0.01),
        seed=seed,
        workers=workers,
        progress=report.tagged("GA"),
    )
    better = result.schedule
    if better is not None and (warm is None or better.objective(problem) < warm.objective(problem)):
        warm = better
    if result.interrupted:
        raise _Stopped(warm)
    return warm


def node_choices(problem: Problem) -> int:
    """The choices of a node for a mode of a task: per mode on nodes, the nodes that can
    hold it."""
    return sum(len(problem.holding_nodes(m)) for t in problem.tasks for m in t.modes if m.nodes)


class _Stopped(Exception):
    """Ctrl-C during a heuristic stage, with the best schedule so far."""

    def __init__(self, schedule: Schedule | None) -> None:
        self.schedule = schedule


def solve_portfolio(
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
    split: bool = True,
) -> Result:
    """Solve ``problem`` with SGS and GA hints around one or two CP-SAT searches.

    A first search of at most :data:`QUICK_SECONDS` (half the time left) ends most
    small problems, proven optimal. Otherwise a GA run improves the hint (up to
    :data:`~models.cpsat.SMALL` tasks: :data:`SMALL_GA_SCHEDULES` schedules; larger
    problems: :data:`GA_STAGE_SHARE` of the time left) and a second search, which starts
    from the first one's bound, takes the remaining time.

    Parameters
    ----------
    problem
        The problem (checked: acyclic task graph).
    time_limit
        Seconds for the whole solve, heuristics included; ``None`` for no limit.
    seed
        Seed of CP-SAT and of the GA runs.
    workers
        Threads: CP-SAT's search workers, and as many parallel GA runs in the GA stage
        between the searches; 2 by default.
    progress
        Called with every improving solution of every stage.
    log
        Write CP-SAT's search log to stderr.
    encoding
        CP-SAT mode encoding, ``shared`` or ``optional``.
    makespan_interval
        Whether every cumulative holds an interval from the makespan to the horizon.
    parameters
        Extra CP-SAT parameters (name -> value).
    initial_solution
        A warm start (e.g. the old plan when re-planning), valid for ``problem``: it
        replaces the SGS passes' schedule when its objective is lower (ties: kept).
    split
        Split the search in two around a GA run (``False``: one search, as on problems
        above :data:`STAGED_TASKS` tasks).

    Returns
    -------
    Result
        As the pure ``cpsat`` solver's, with ``stages`` (searches run: 0, 1 or 2).
    """
    t0 = time.perf_counter()
    small = len(problem.tasks) <= SMALL
    threads = workers or DEFAULT_WORKERS
    lower = lower_bound(problem) if problem.objective == "makespan" else 0
    report = _Reporter(progress, t0, lower)

    def remaining() -> float | None:
        """Seconds left of the time limit; ``None`` without one."""
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    def ga_seconds(share: float, of: float | None) -> float:
        return GA_HINT_SECONDS if of is None else share * of

    def search(warm: Schedule | None, bound: int, limit: float | None) -> Result:
        """A CP-SAT search from ``warm``; Ctrl-C before its search starts (while its model
        is built) is :class:`_Stopped` with ``warm``."""
        try:
            return solve_cpsat(
                problem,
                time_limit=limit,
                seed=seed,
                workers=workers,
                progress=report if progress else None,
                log=log,
                encoding=encoding,
                makespan_interval=makespan_interval,
                parameters=parameters,
                initial_solution=warm,
                lower_bound=bound,
            )
        except SecondInterrupt:
            raise
        except KeyboardInterrupt:
            raise _Stopped(warm) from None

    found: list[Schedule] = []

    def keep(schedule: Schedule, source: str = "SGS") -> None:
        found.append(schedule)
        report(Progress(0.0, schedule.objective(problem), message=source))

    warm: Schedule | None = None
    try:
        passes = None if time_limit is None else t0 + SGS_SHARE * time_limit
        target = lower if problem.objective == "makespan" else None
        warm = heuristic_schedule(problem, deadline=passes, keep=keep, target=target)
        if initial_solution is not None and (
            warm is None or initial_solution.objective(problem) < warm.objective(problem)
        ):
            warm = initial_solution
            keep(warm, "initial solution")
        if _meets(problem, warm, lower):
            return _at_bound(problem, warm, lower, t0)
        choices = node_choices(problem)
        too_large = choices > MAX_NODE_CHOICES and warm is not None
        if not small and not too_large:
            cap = ga_seconds(GA_HINT_SHARE, time_limit)
            # One run: the budget is small, and halved between two runs it gave worse hints
            # (MMLIB50 J5083_1: 50 against a proven 49).
            warm = _ga_hint(problem, warm, GA_HINT_SCHEDULES, cap, seed, 1, report)
            if _meets(problem, warm, lower):
                return _at_bound(problem, warm, lower, t0)
    except (KeyboardInterrupt, _Stopped) as exc:
        warm = exc.schedule if isinstance(exc, _Stopped) else (found[-1] if found else None)
        return _interrupted(problem, warm, lower)
    if too_large:
        return Result(
            "portfolio",
            Status.FEASIBLE,
            warm,
            warm.objective(problem),
            lower if problem.objective == "makespan" else None,
            runtime=time.perf_counter() - t0,
            reason=f"{choices:,} choices of a node: above {MAX_NODE_CHOICES:,}, no search "
            "runs; the SGS passes' schedule is returned",
            stages=0,
        )

    left = remaining()
    quick = QUICK_SECONDS if left is None else min(QUICK_SECONDS, left / 2)
    staged = split and quick >= MIN_QUICK_SECONDS and len(problem.tasks) <= STAGED_TASKS
    try:
        first = search(warm, lower, quick if staged else left)
    except _Stopped as exc:
        return _interrupted(problem, exc.schedule, lower)
    done = first.status in (Status.OPTIMAL, Status.INFEASIBLE) or first.interrupted
    if not staged or done:
        return replace(first, solver="portfolio", stages=1)
    if small:
        schedules, cap = SMALL_GA_SCHEDULES, ga_seconds(GA_HINT_SHARE, time_limit)
    else:
        schedules, cap = None, ga_seconds(GA_STAGE_SHARE, remaining())
    try:
        better = _ga_hint(problem, first.schedule or warm, schedules, cap, seed, threads, report)
    except (KeyboardInterrupt, _Stopped) as exc:
        schedule = exc.schedule if isinstance(exc, _Stopped) else first.schedule
        return _after_first(problem, first, schedule)
    if first.lower_bound is not None and problem.objective == "makespan":
        lower = max(lower, int(first.lower_bound))
    if _meets(problem, better, lower):
        return replace(_at_bound(problem, better, lower, t0), stages=1, stats=first.stats)
    try:
        second = search(better, lower, remaining())
    except _Stopped as exc:
        return _after_first(problem, first, exc.schedule)
    return _combined(first, second)


def _meets(problem: Problem, schedule: Schedule | None, lower: int) -> bool:
    """Whether ``schedule``'s makespan meets the proven bound ``lower``: no search can do
    better."""
    return (
        problem.objective == "makespan"
        and schedule is not None
        and schedule.objective(problem) <= lower
    )


def _at_bound(problem: Problem, schedule: Schedule, lower: int, t0: float) -> Result:
    """The result of a heuristic stage whose schedule meets the lower bound: optimal,
    no further search."""
    return Result(
        "portfolio",
        Status.OPTIMAL,
        schedule,
        schedule.objective(problem),
        lower,
        runtime=time.perf_counter() - t0,
        reason="a heuristic schedule meets the lower bound: no search can do better",
        stages=0,
    )


def _combined(first: Result, second: Result) -> Result:
    """The second search continuing the first: effort adds up, the best bound is kept."""
    stats = dict(second.stats)
    for key in ("branches", "conflicts", "wall_time"):
        stats[key] += first.stats[key]
    bounds = [b for b in (first.lower_bound, second.lower_bound) if b is not None]
    return replace(
        second,
        solver="portfolio",
        lower_bound=max(bounds) if bounds else None,
        stages=2,
        stats=stats,
    )


def _after_first(problem: Problem, first: Result, schedule: Schedule | None) -> Result:
    """The result of a solve stopped by Ctrl-C after the first search (in the GA stage or
    before the second search starts)."""
    objective = None if schedule is None else schedule.objective(problem)
    if schedule is not None and first.objective is not None and first.objective <= objective:
        schedule, objective = first.schedule, first.objective
    return replace(
        first,
        solver="portfolio",
        status=Status.FEASIBLE if schedule is not None else first.status,
        schedule=schedule,
        objective=objective,
        interrupted=True,
        reason="stopped by Ctrl-C after the first search; the best schedule so far is returned",
        stages=1,
    )


def _interrupted(problem: Problem, warm: Schedule | None, lower: int) -> Result:
    """The result of a solve stopped by Ctrl-C before its first search ran."""
    reason = "stopped by Ctrl-C before the first CP-SAT search"
    if warm is None:
        return Result("portfolio", Status.UNKNOWN, reason=reason, interrupted=True, stages=0)
    bound = lower if problem.objective == "makespan" else None
    return Result(
        "portfolio",
        Status.FEASIBLE,
        warm,
        warm.objective(problem),
        bound,
        reason=f"{reason}; the heuristic schedule is returned",
        interrupted=True,
        stages=0,
    )

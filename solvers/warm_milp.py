"""The ``milp`` solver: SGS passes find a schedule that warm-starts the time-indexed MILP.

One serial SGS pass per priority rule, then passes with randomly perturbed
priorities, give the best schedule they can in at most :data:`HEURISTIC_SHARE` of the
time limit. Its makespan sets the MILP's horizon (:mod:`models.milp`); it is CBC's
MIP start and the fallback when a backend finds nothing better. The model's size is
checked after the first pass, so that an instance too large for a time-indexed model
is refused at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from planner.model import Problem
from planner.models.milp import (
    DEFAULT_BACKEND,
    MAX_MEMORY_GB,
    MAX_VARIABLES,
    Backend,
    check_size,
    interrupted_result,
    milp_windows,
    solve_milp,
)
from planner.result import Progress, Result
from planner.schedule import Schedule
from planner.solvers.sgs import RULES, priorities, serial_sgs

SAMPLES_PER_TASK = 10
MAX_SAMPLES = 300
"""Randomised SGS passes for the horizon: this many per task, at most ``MAX_SAMPLES``."""
HEURISTIC_SHARE = 0.1
"""Share of the time limit the SGS passes may take."""


def best_serial_schedule(
    problem: Problem,
    seed: int,
    seconds: float | None,
    size_check: Callable[[Schedule], None],
    found: list[Schedule],
) -> None:
    """Append to ``found`` each better schedule of serial SGS passes (rules, then perturbed
    rules) within ``seconds``; the last one is the best (and stays there after Ctrl-C).

    ``size_check`` sees the first schedule found, before any further pass runs.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    base = [priorities(problem, rule) for rule in RULES]
    passes = len(base) + min(SAMPLES_PER_TASK * len(problem.tasks), MAX_SAMPLES)
    best: Schedule | None = None
    for k in range(passes):
        if best is not None and seconds is not None and time.perf_counter() - t0 > seconds:
            break
        prio = base[k % len(base)]
        if k >= len(base):
            prio = prio + rng.normal(0.0, 0.3 * (float(np.std(prio)) or 1.0), prio.shape)
        schedule, _ = serial_sgs(problem, prio)
        if schedule is None:
            continue
        if best is None:
            size_check(schedule)
        if best is None or schedule.objective(problem) < best.objective(problem):
            best = schedule
            found.append(schedule)


def solve_warm_milp(
    problem: Problem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    workers: int | None = None,
    backend: Backend = DEFAULT_BACKEND,
    gap: float = 0.0,
    progress: Callable[[Progress], None] | None = None,
    log: bool = False,
    max_variables: int = MAX_VARIABLES,
    max_memory_gb: float = MAX_MEMORY_GB,
    cliques: bool = True,
) -> Result:
    """Solve ``problem`` with the time-indexed MILP, warm-started by SGS passes.

    Parameters
    ----------
    problem
        The instance.
    time_limit
        Seconds for the whole solve (passes and model building included).
    seed
        Seed of the randomised SGS passes.
    workers
        Threads of the backend.
    backend
        ``highs`` (highspy, the default) or ``cbc`` (bundled with PuLP).
    gap
        Relative gap at which the backend may stop; ``0`` proves optimality.
    progress
        Called with the heuristic's objective and with the final objective and bound.
    log
        Show the backend's own log.
    max_variables, max_memory_gb
        Refuse to build a model with more start variables, or a larger estimated memory.
    cliques
        Add the clique cuts of :func:`models.milp.solve_milp`.

    Returns
    -------
    Result
        As :func:`models.milp.solve_milp`.
    """
    t0 = time.perf_counter()

    def size_check(schedule: Schedule) -> None:
        check_size(problem, milp_windows(problem, schedule), max_variables, max_memory_gb)

    seconds = None if time_limit is None else HEURISTIC_SHARE * time_limit
    found: list[Schedule] = []
    try:
        best_serial_schedule(problem, seed, seconds, size_check, found)
    except KeyboardInterrupt:
        best = found[-1] if found else None
        reason = "stopped by Ctrl-C during the SGS passes"
        return interrupted_result(problem, best, reason, "the best schedule so far")
    start = found[-1] if found else None
    left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
    return solve_milp(
        problem,
        time_limit=left,
        workers=workers,
        backend=backend,
        gap=gap,
        progress=progress,
        log=log,
        max_variables=max_variables,
        max_memory_gb=max_memory_gb,
        initial_solution=start,
        cliques=cliques,
    )

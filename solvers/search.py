"""What the population heuristics share: budgets, the incumbent, history and the Result.

A :class:`Search` counts generated schedules (every SGS pass, justification
passes included) against the ``schedules`` budget, watches the time limit,
keeps the best schedule, calls ``progress`` on each improvement and records
one row of statistics per generation in ``Result.history``::

    pandas.DataFrame(result.history).to_csv("history.csv", index=False)

:meth:`Search.run` runs the search loop on the shared interrupt path
(:mod:`planner.interrupt`): Ctrl-C halts the kernels within one schedule (they read
:attr:`Search.halt` between schedules) and the run keeps its incumbent.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from planner.arrays import OK
from planner.bounds import critical_path_bound
from planner.errors import InputError
from planner.interrupt import Halt, run_interruptibly
from planner.model import Problem
from planner.result import Progress, Result, Status
from planner.solvers.encoding import to_schedule
from planner.solvers.sgs import Decoder

log = logging.getLogger(__name__)

DEFAULT_SCHEDULES = 5000
"""Schedule budget when neither ``schedules`` nor ``time_limit`` is given."""


class Search:
    """Budget, incumbent and statistics of one heuristic run.

    Parameters
    ----------
    problem
        The problem.
    solver
        Solver name, for the Result.
    schedules
        Budget of generated schedules, or ``None``.
    time_limit
        Seconds, or ``None``. With neither budget, :data:`DEFAULT_SCHEDULES`.
    progress
        Called with a :class:`Progress` on every improvement.
    stop
        Ends the run once set (the kernels read its flag between schedules). The run sets
        it itself when its incumbent meets the lower bound, so that runs in parallel
        threads sharing it stop together. By default the run's own.
    """

    def __init__(
        self,
        problem: Problem,
        solver: str,
        schedules: int | None,
        time_limit: float | None,
        progress: Callable[[Progress], None] | None,
        stop: Halt | None = None,
    ) -> None:
        self.t0 = time.perf_counter()
        if schedules is not None and int(schedules) < 1:
            raise InputError(f"schedules must be at least 1, got {schedules}")
        if schedules is None and time_limit is None:
            schedules = DEFAULT_SCHEDULES
        self.problem = problem
        self.solver = solver
        self.budget = math.inf if schedules is None else int(schedules)
        self.deadline = math.inf if time_limit is None else self.t0 + float(time_limit)
        self.progress = progress
        self.stop = stop if stop is not None else Halt()
        self.decoder = Decoder(problem)
        n = self.decoder.data.n
        self.used = 0
        self.best = math.inf
        self.best_start = np.zeros(n, dtype=np.int64)
        self.best_mode = np.zeros(n, dtype=np.int64)
        self.best_placed = np.full_like(self.decoder.placed, -1)
        self.bound = critical_path_bound(problem) if problem.objective == "makespan" else -math.inf
        self.history: list[dict[str, Any]] = []
        self.interrupted = False
        self.rate = math.inf
        if self.deadline != math.inf:
            # Under a time limit, time a pass first (both passes count): kernel calls
            # then get what fits in the time left from the start, so the first
            # population is evaluated whole without a large instance overrunning.
            order = self.decoder.order(np.arange(n, dtype=np.float64))
            self.decoder.run(order)  # loads the compiled pass
            t = time.perf_counter()
            status, _ = self.decoder.run(order)
            self.used = 2
            self.calibrated = time.perf_counter()
            self.rate = 1.0 / max(self.calibrated - t, 1e-9)
            if status == OK:
                # The timed pass's schedule is the first incumbent (a large instance has
                # one after two passes).
                dec = self.decoder
                self.offer(dec.objective(), dec.start, dec.mode, dec.placed)

    @property
    def left(self) -> int:
        """Schedules still allowed (a large number without a schedule budget)."""
        if self.budget == math.inf:
            return 1 << 40
        return int(self.budget - self.used)

    def allowance(self) -> int:
        """Schedules the next kernel call may generate.

        Under a time limit, what the rate allows in the time left: the rate of
        the timed first pass until later passes are measured, so that a large
        instance does not overrun the limit by a whole generation.
        """
        if self.deadline == math.inf:
            return self.left
        now = time.perf_counter()
        rate = self.rate
        if self.used > 2 and now > self.calibrated:
            rate = (self.used - 2) / (now - self.calibrated)
        return max(1, min(self.left, int(rate * (self.deadline - now))))

    def done(self) -> bool:
        """Whether the budget or the time is spent, the incumbent meets the bound or the run
        was stopped."""
        return (
            self.left <= 0
            or time.perf_counter() >= self.deadline
            or self.best <= self.bound
            or self.stop.is_set()
        )

    def offer(self, value: float, start: np.ndarray, mode: np.ndarray, placed: np.ndarray) -> None:
        """Keep ``start`` / ``mode`` / ``placed`` if ``value`` improves the incumbent."""
        if value < self.best:
            self.best = float(value)
            if self.best <= self.bound:
                self.stop.set()
            self.best_start[:] = start
            self.best_mode[:] = mode
            self.best_placed[:] = placed
            if self.progress is not None:
                self.progress(
                    Progress(
                        time.perf_counter() - self.t0,
                        objective=self.best,
                        message=f"{self.used} schedules",
                    )
                )

    def run(self, body: Callable[[], None]) -> None:
        """Run the search loop ``body`` on the shared interrupt path: Ctrl-C marks the run
        interrupted and sets ``stop``, which halts the kernels within one schedule and
        ends runs sharing it."""

        def halt() -> None:
            self.interrupted = True
            self.stop.set()

        def guarded() -> None:
            try:
                body()
            except KeyboardInterrupt:  # raised in the loop itself, e.g. by a progress callback
                halt()

        run_interruptibly(guarded, halt, self.solver)

    def record(self, generation: int, values: np.ndarray) -> None:
        """Append one history row for a generation with population ``values``."""
        finite = values[np.isfinite(values)]
        self.history.append(
            {
                "generation": generation,
                "schedules": self.used,
                "elapsed": round(time.perf_counter() - self.t0, 4),
                "best": self.best if math.isfinite(self.best) else None,
                "mean": float(finite.mean()) if finite.size else None,
            }
        )

    def result(self, **stats: Any) -> Result:
        """The Result: the incumbent (if any), or no schedule with a reason."""
        runtime = time.perf_counter() - self.t0
        info = {"schedules": self.used, **stats}
        log.info("%s: %d schedules in %.2f s, best %s", self.solver, self.used, runtime, self.best)
        common = {"runtime": runtime, "interrupted": self.interrupted, "history": self.history}
        if not math.isfinite(self.best):
            reason = (
                f"none of the {self.used} generated schedules met the deadlines, budgets and "
                "placements"
            )
            if self.interrupted:
                reason = f"stopped by Ctrl-C; {reason}"
            return Result(self.solver, Status.UNKNOWN, reason=reason, stats=info, **common)
        return Result(
            self.solver,
            Status.FEASIBLE,
            to_schedule(self.problem, self.best_start, self.best_mode, self.best_placed),
            objective=self.best,
            reason="stopped by Ctrl-C; the best schedule so far is returned"
            if self.interrupted
            else None,
            stats=info,
            **common,
        )


def interruptible(solver: str, work: Callable[[Halt], Result]) -> Result:
    """Run a search's whole body, its set-up passes included, on the shared interrupt
    path: Ctrl-C at any point stops it (``work`` gets the :class:`Halt` its
    :class:`Search` should share) and keeps the incumbent, marked ``interrupted``."""
    halt = Halt()
    result, interrupted = run_interruptibly(lambda: work(halt), halt.set, solver)
    if interrupted and not result.interrupted:
        reason = (
            "stopped by Ctrl-C; the best schedule so far is returned"
            if result.schedule is not None
            else f"stopped by Ctrl-C; {result.reason}"
        )
        result = replace(result, interrupted=True, reason=reason)
    return result

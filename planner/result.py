"""What every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from planner.model import Problem
from planner.schedule import Schedule


class Status(StrEnum):
    """Outcome of a solve."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


@dataclass
class Result:
    """A solver's answer: schedule (if any), objective, bounds, status and what happened.

    A solver fills ``lower_bound`` with its own bound. :func:`solvers.solve` returns a
    copy in which ``solver_bound`` keeps that figure, ``core_bound`` holds the core's
    bound (:func:`planner.bounds.lower_bound`) and ``lower_bound`` the better of the two.
    """

    solver: str
    status: Status
    schedule: Schedule | None = None
    objective: float | None = None
    lower_bound: float | None = None
    runtime: float = 0.0
    reason: str | None = None
    """Why the status is what it is: why there is no schedule, or which schedule of
    several was returned and why. ``None`` when the status says it all."""
    interrupted: bool = False
    """Whether Ctrl-C stopped the solve (the schedule is then the best found so far)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """One row per generation, iteration or stage, for solvers that keep one."""
    stages: int | None = None
    """Searches run, for solvers that compose several (``None`` for a single one)."""
    solver_bound: float | None = None
    """The solver's own lower bound (set by :func:`solvers.solve`)."""
    core_bound: float | None = None
    """The core's lower bound of the problem (set by :func:`solvers.solve`)."""
    valid: bool | None = None
    """The validator's verdict on the schedule (set by :func:`solvers.solve`)."""
    stats: dict[str, Any] = field(default_factory=dict)
    instance: Problem | None = None
    """The instance :attr:`schedule` is of when it is not the problem that was solved: a
    re-plan's instance plus its events (:func:`planner.replay.replan.replan`)."""
    """Solver-specific figures (schedules generated, branches, horizon, ...)."""

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective - bound) / objective``; ``None`` without both."""
        if self.objective is None or self.lower_bound is None:
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.lower_bound) / self.objective)


@dataclass(frozen=True)
class Progress:
    """A progress event a solver sends while it runs (a new incumbent or bound)."""

    elapsed: float
    objective: float | None = None
    bound: float | None = None
    message: str = ""

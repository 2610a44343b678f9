"""What every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from planner.schedule import Schedule


class Status(StrEnum):
    """Outcome of a solve."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


@dataclass
class Result:
    """A solver's answer: schedule (if any), objective, best bound, status, runtime, statistics."""

    solver: str
    status: Status
    schedule: Schedule | None = None
    objective: float | None = None
    lower_bound: float | None = None
    runtime: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

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

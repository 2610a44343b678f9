"""Re-planning's events: a node failure, an overrun, an arrival, a cancellation, and
how a user writes them (:func:`parse_event`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.model import Problem
from planner.times import parse_ticks

if TYPE_CHECKING:
    pass

MAX_OVERRUN = 100.0
"""The largest factor of an ``overrun`` event."""
EVENT_FORMS = "fail:NODE[+DOWN], overrun:TASK:FACTOR, arrive:FILE or cancel:JOB"


# Events.


@dataclass(frozen=True)
class NodeFailure:
    """Node ``node`` fails at ``T``; back after ``down`` ticks, or gone for good (``None``)."""

    node: str
    down: int | None = None

    def __str__(self) -> str:
        return f"fail:{self.node}" + ("" if self.down is None else f"+{self.down}")


@dataclass(frozen=True)
class Overrun:
    """The remaining duration of task ``task`` is ``factor`` times longer."""

    task: str
    factor: float

    def __str__(self) -> str:
        return f"overrun:{self.task}:{self.factor:g}"


@dataclass(frozen=True)
class Arrival:
    """More jobs: the tasks, precedences and jobs of ``jobs``, read from ``source``."""

    jobs: Problem
    source: str

    def __str__(self) -> str:
        return f"arrive:{self.source}"


@dataclass(frozen=True)
class Cancel:
    """Job ``job`` is cancelled: its unfinished tasks are dropped."""

    job: str

    def __str__(self) -> str:
        return f"cancel:{self.job}"


Event = NodeFailure | Overrun | Arrival | Cancel


def parse_event(spec: str, time_unit: str | None = None) -> Event:
    """Read one event: ``fail:NODE[+DOWN]``, ``overrun:TASK:FACTOR``, ``arrive:FILE`` or
    ``cancel:JOB`` (an arrival's file is loaded).

    ``DOWN`` is whole ticks, or a duration with a unit (``+2h``) given the instance's
    ``time_unit``; ``FACTOR`` is a number in ``(0, MAX_OVERRUN]``.

    Raises
    ------
    InputError
        For a malformed spec, in one line that names it.
    """
    kind, sep, rest = spec.strip().partition(":")
    if not sep or not rest or kind not in ("fail", "overrun", "arrive", "cancel"):
        raise InputError(f"event {spec!r}: expected {EVENT_FORMS}")
    if kind == "fail":
        node, plus, down = rest.partition("+")
        if not node:
            raise InputError(f"event {spec!r}: expected fail:NODE[+DOWN]")
        if not plus:
            return NodeFailure(node)
        return NodeFailure(node, parse_ticks(down, time_unit, f"event {spec!r}: DOWN"))
    if kind == "overrun":
        task, colon, factor = rest.rpartition(":")
        if not colon or not task:
            raise InputError(f"event {spec!r}: expected overrun:TASK:FACTOR")
        try:
            value = float(factor)
        except ValueError:
            raise InputError(f"event {spec!r}: FACTOR {factor!r} is not a number") from None
        if not 0 < value <= MAX_OVERRUN:
            raise InputError(f"event {spec!r}: FACTOR must be a number > 0 and <= {MAX_OVERRUN:g}")
        return Overrun(task, value)
    if kind == "arrive":
        from planner.io.instance import load_instance

        return Arrival(load_instance(rest), rest)
    return Cancel(rest)

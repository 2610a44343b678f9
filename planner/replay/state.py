"""The state of a plan at a tick T: which tasks have started and finished, from the
old plan or from a realized run of ``planner run`` (what re-planning freezes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.model import Mode, Problem, Segment
from planner.schedule import Schedule

if TYPE_CHECKING:
    pass


@dataclass
class Started:
    """A task's attempt that started before ``T``: what it did, and what it has left."""

    mode: str
    nodes: tuple[str, ...]
    start: int
    past: list[Segment]
    """Its segments until ``T`` (or its finish), with their demands; waits demand-free."""
    rest: list[Segment] = field(default_factory=list)
    """Its planned segments from ``T`` (empty once finished)."""

    @property
    def finish(self) -> int:
        """Its finish tick: past and rest back to back from the start."""
        return self.start + sum(s.duration for s in self.past) + sum(s.duration for s in self.rest)


@dataclass
class State:
    """What has happened by tick ``at``."""

    at: int
    started: dict[str, Started]
    """The attempt of every task started before ``at`` that was not lost before it."""
    lost: dict[str, list[Started]] = field(default_factory=dict)
    """Per task, its attempts lost before ``at``."""
    outages: dict[str, int] = field(default_factory=dict)
    """Node -> the tick it is back, for every node down at ``at`` (a failure of the run
    still in progress): nothing may start on it before then."""
    left: dict[str, float] = field(default_factory=dict)
    """Task -> the share of its work left, for tasks not running at ``at`` that a run had
    done part of (a job-level run keeps the iterations done): they are planned with that
    share of their durations."""


def _split(segments: Sequence[Segment], start: int, at: int) -> tuple[list[Segment], list[Segment]]:
    """``segments`` run back to back from ``start``, cut at ``at``: before and from it."""
    past: list[Segment] = []
    rest: list[Segment] = []
    t = start
    for seg in segments:
        if t + seg.duration <= at:
            past.append(seg)
        elif t >= at:
            rest.append(seg)
        else:
            past.append(seg.model_copy(update={"duration": at - t}))
            rest.append(seg.model_copy(update={"duration": t + seg.duration - at}))
        t += seg.duration
    return past, rest


def state_from_schedule(problem: Problem, schedule: Schedule, at: int) -> State:
    """The state at ``at`` if ``schedule`` ran as planned."""
    started = {}
    for t in problem.tasks:
        start = schedule.starts[t.name]
        if start < at:
            mode = t.mode(schedule.modes[t.name])
            past, rest = _split(mode.segments, start, at)
            started[t.name] = Started(
                mode.name,  # type: ignore[arg-type]
                tuple(schedule.nodes.get(t.name, ())),
                start,
                past,
                rest,
            )
    return State(at, started)


def state_from_run(
    problem: Problem, run: Mapping[str, Any], at: int, file: str | None = None
) -> State:
    """The state at ``at`` of a realized run (the JSON of ``planner run -o``).

    Segments that ended by ``at`` keep their realized durations. The segment running
    at ``at`` has left what its planned duration has not yet covered (at least 0), and
    the segments after it their planned durations: the future is not known at ``at``.
    The run's node failures still in progress at ``at`` become :attr:`State.outages`.

    Raises
    ------
    InputError
        If the run is not one of this instance (a task missing, another mode).
    """
    rows = run.get("tasks") if isinstance(run, Mapping) else None
    if not isinstance(rows, list):
        raise InputError("expected a run file of planner run (an object with 'tasks')", file)
    by_name = {r.get("task"): r for r in rows if isinstance(r, dict)}
    outages = _outages(problem, run, at, file)
    started: dict[str, Started] = {}
    lost: dict[str, list[Started]] = {}
    for t in problem.tasks:
        row = by_name.get(t.name)
        if row is None:
            raise InputError(f"task {t.name!r} of the instance is not in the run", file)
        try:
            mode = t.mode(str(row["mode"]))
            nodes = tuple(row.get("nodes") or ())
            attempts = [
                (int(a), int(b), segs)
                for (a, b), segs in zip(row["lost"], row["lost_segments"], strict=True)
            ]
            attempts.append((int(row["start"]), int(row["finish"]), row["segments"]))
            parsed = [_attempt(mode, nodes, a, b, segs, at) for a, b, segs in attempts]
        except (KeyError, TypeError, ValueError, IndexError):
            raise InputError(
                f"task {t.name!r}: not a task of a run file of planner run "
                "(mode, nodes, start, lost, segments and lost_segments)",
                file,
            ) from None
        for k, attempt in enumerate(parsed):
            if attempt is None:
                continue
            if k < len(parsed) - 1 and attempts[k][1] <= at:
                lost.setdefault(t.name, []).append(attempt)
            else:
                started[t.name] = attempt
    return State(at, started, lost, outages)


def _outages(problem: Problem, run: Mapping[str, Any], at: int, file: str | None) -> dict[str, int]:
    """Node -> the tick it is back, for the run's failures in progress at ``at``."""
    from planner.disturbances import Failure

    specs = (run.get("disturbances") or {}).get("failures") or []
    if not isinstance(specs, list):
        raise InputError("disturbances.failures: expected a list of NODE@TIME[+DOWN]", file)
    names = {n.name for n in problem.nodes}
    out: dict[str, int] = {}
    for spec in specs:
        f = Failure.parse(str(spec))
        if f.node not in names:
            raise InputError(f"disturbances.failures: no node {f.node!r} in the instance", file)
        if f.time <= at < f.end:
            out[f.node] = max(out.get(f.node, 0), f.end)
    return out


def _attempt(
    mode: Mode, nodes: tuple[str, ...], start: int, end: int, rows: list[dict[str, Any]], at: int
) -> Started | None:
    """One attempt ending at ``end``, from its realized segments; ``None`` if it starts at
    ``at`` or later. An attempt still running at ``at`` gets the rest of its mode."""
    if start >= at:
        return None
    past: list[Segment] = []
    rest: list[Segment] = []
    j = 0
    for row in rows:
        a, b = int(row["start"]), int(row["finish"])
        if a >= at and b > a:
            break
        real = j < len(mode.segments) and not (
            row.get("name") == "wait" and mode.segments[j].name != "wait"
        )
        if not real:
            past.append(Segment(name="wait", duration=min(b, at) - a))
            continue
        seg = mode.segments[j]
        j += 1
        past.append(seg.model_copy(update={"duration": min(b, at) - a}))
        if b > at:
            # running at ``at``: what its planned duration has not covered is left
            rest.append(seg.model_copy(update={"duration": max(0, seg.duration - (at - a))}))
            break
    if end > at:
        rest.extend(mode.segments[j:])
    if not past:
        past.append(Segment(name="wait", duration=min(end, at) - start))
    return Started(mode.name, nodes, start, past, rest)  # type: ignore[arg-type]

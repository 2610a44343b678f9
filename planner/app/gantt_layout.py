"""The layout of a Gantt chart, whatever draws it: its rows (per task, per job, or per
node of a placed plan), its bars (segments, merged where thinner than a pixel, stacked
by their share of a node) and the load of every renewable resource over time.
:mod:`planner.app.gantt` draws it, with matplotlib or plotly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.model import Mode, Node, Problem
    from planner.schedule import Schedule

TASK_ROWS_MAX = 60
"""Instances with at most this many tasks get one row per task; larger ones one row per job."""
VIEWS = ("task", "job", "node")
"""Rows of a chart: one per task, per job, or per node (placed plans only)."""
MIN_SHARE = 0.05
"""Height (share of a node's row) of a task on a node that holds none of the node's resources."""
_Span = tuple[int, int, str, str, str, str, str]
"""A timed segment: start, finish, colour key, task, job, mode and segment name."""


@dataclass(frozen=True)
class Bar:
    """One bar of the chart: a segment, or several thin ones merged."""

    row: int
    start: int
    finish: int
    key: str
    """Colour key: the segment or stage name (the dominant one for a merged bar)."""
    task: str
    job: str
    mode: str
    segment: str
    merged: int = 1
    """Number of segments in the bar."""
    base: float = 0.0
    """Where the bar starts within its row's band, from the top, as a share of the band."""
    height: float = 1.0
    """The bar's share of its row's band (a task's share of a node's GPUs, by node)."""


@dataclass(frozen=True)
class GanttLayout:
    """Rows (top to bottom) and bars of a chart."""

    rows: list[str]
    bars: list[Bar]
    keys: list[str]
    """Colour keys in order of first appearance."""
    by_job: bool
    makespan: int
    by_node: bool = False
    """Rows are nodes (:func:`node_layout`)."""

    @property
    def axis(self) -> str:
        """What a row is: ``node``, ``job`` or ``task``."""
        return "node" if self.by_node else "job" if self.by_job else "task"


def gantt_layout(problem: Problem, schedule: Schedule, by_job: bool | None = None) -> GanttLayout:
    """Rows and bars of the chart of ``schedule``.

    Parameters
    ----------
    problem
        The instance the schedule belongs to.
    schedule
        The schedule; tasks it leaves out are left out of the chart.
    by_job
        One row per job (tasks without a job get their own row) or one per
        task. By default per task up to :data:`TASK_ROWS_MAX` tasks or when no
        task has a job, per job otherwise.

    Raises
    ------
    InputError
        If the schedule names a task or a mode the instance does not have.
    """
    has_jobs = any(t.job for t in problem.tasks)
    if by_job is None:
        by_job = has_jobs and len(problem.tasks) > TASK_ROWS_MAX
    spans: dict[str, list[_Span]] = {}
    for name, start in schedule.starts.items():
        job, mode = _mode_of(problem, schedule, name)
        row = job if by_job and job else name
        spans.setdefault(row, []).extend(_segments(problem, name, job, mode, start))
    spans = {row: spread for row, spread in spans.items() if spread}
    rows = sorted(
        spans, key=lambda r: (min(s[0] for s in spans[r]), max(s[1] for s in spans[r]), r)
    )
    bars: list[Bar] = []
    keys: dict[str, None] = {}
    for i, row in enumerate(rows):
        for start, finish, key, task, job, mode, seg in sorted(spans[row]):
            keys.setdefault(key)
            bars.append(Bar(i, start, finish, key, task, job, mode, seg))
    makespan = max((b.finish for b in bars), default=0)
    return GanttLayout(rows, bars, list(keys), by_job, makespan)


def _mode_of(problem: Problem, schedule: Schedule, name: str) -> tuple[str, Mode]:
    """The job (``""`` if none) and the scheduled mode of task ``name``."""
    if name not in problem.task_index:
        raise InputError(f"task {name!r} of the schedule is not in instance {problem.name!r}")
    task = problem.tasks[problem.task_index[name]]
    try:
        return task.job or "", task.mode(schedule.modes[name])
    except KeyError:
        raise InputError(f"task {name!r} has no mode {schedule.modes[name]!r}") from None


def _segments(problem: Problem, name: str, job: str, mode: Mode, start: int) -> list[_Span]:
    """``(start, finish, colour key, task, job, mode, segment)`` of each timed segment."""
    out = []
    at = start
    for k, seg in enumerate(mode.segments):
        if seg.name:
            key = seg.name
        elif problem.multi_mode:
            key = f"mode {mode.name}"
        else:
            key = "task"
        if seg.duration:
            out.append(
                (at, at + seg.duration, key, name, job, mode.name or "", seg.name or str(k + 1))
            )
        at += seg.duration
    return out


def share_kind(problem: Problem) -> str:
    """The node kind a task's share of a node is measured in: ``gpu``, else the first node kind."""
    kinds = problem.node_kinds
    return "gpu" if "gpu" in kinds or not kinds else kinds[0]


def check_view(by: str, problem: Problem) -> None:
    """Raise :class:`InputError` unless ``by`` is one of :data:`VIEWS` that ``problem`` can show.

    Rows by node need a placed plan: a problem with nodes.
    """
    if by not in VIEWS:
        raise InputError(f"rows by {by!r}: expected one of {', '.join(VIEWS)}")
    if by == "node" and not problem.nodes:
        raise InputError(
            f"rows by node: the plan is pooled (instance {problem.name!r} has no nodes); "
            "only a placed plan (placement: node) has nodes to draw"
        )


def chart_layout(problem: Problem, schedule: Schedule, by: str | None = None) -> GanttLayout:
    """Rows and bars of the chart with rows ``by`` task, job or node (:data:`VIEWS`).

    By default the rows are those of :func:`gantt_layout`.

    Raises
    ------
    InputError
        If ``by`` is no view, or ``node`` for a pooled plan (:func:`check_view`),
        or the schedule does not fit the instance.
    """
    if by is None:
        return gantt_layout(problem, schedule)
    check_view(by, problem)
    if by == "node":
        return node_layout(problem, schedule)
    return gantt_layout(problem, schedule, by_job=by == "job")


def node_layout(problem: Problem, schedule: Schedule) -> GanttLayout:
    """One row per node of a placed plan, its tasks' bars stacked by their share of it.

    A task holding ``g`` of a node's ``G`` GPUs (its largest demand over its
    segments, :func:`share_kind`) gets bars of height ``g / G`` of the node's
    row; a task that holds no GPU gets its largest share of another node kind
    (at least :data:`MIN_SHARE`). Tasks that overlap in time are stacked (first
    fit from the top); where interleaved tasks hold more than the whole node
    together (one loads data while another computes), the row is scaled to fit.
    A gang appears on each of its nodes; tasks on no node are not drawn.

    Raises
    ------
    InputError
        If the schedule names a task, mode or node the instance does not have.
    """
    kind = share_kind(problem)
    nodes = {n.name: n for n in problem.nodes}
    placed: dict[str, list[tuple[int, int, float, list[_Span]]]] = {n: [] for n in nodes}
    index = problem.task_index
    for name in sorted(schedule.starts, key=lambda t: (schedule.starts[t], index.get(t, 0))):
        job, mode = _mode_of(problem, schedule, name)
        segments = _segments(problem, name, job, mode, schedule.starts[name])
        for node in schedule.nodes.get(name, ()):
            if node not in nodes:
                raise InputError(
                    f"task {name!r} runs on node {node!r}, which instance {problem.name!r} "
                    "does not have"
                )
            if segments:
                share = _share(mode, nodes[node], kind)
                placed[node].append((segments[0][0], segments[-1][1], share, segments))
    bars: list[Bar] = []
    keys: dict[str, None] = {}
    for row, node in enumerate(nodes):
        spans = placed[node]
        bases = _stack([(s, f, h) for s, f, h, _ in spans])
        top = (b + h for b, (_, _, h, _) in zip(bases, spans, strict=True))
        scale = 1 / max(1.0, max(top, default=0.0))  # a node without tasks: an empty row
        for base, (_, _, share, segments) in zip(bases, spans, strict=True):
            for start, finish, key, task, job, mode_name, seg in segments:
                keys.setdefault(key)
                bar = Bar(row, start, finish, key, task, job, mode_name, seg)
                bars.append(replace(bar, base=base * scale, height=share * scale))
    makespan = max((b.finish for b in bars), default=0)
    return GanttLayout(list(nodes), bars, list(keys), False, makespan, by_node=True)


def _share(mode: Mode, node: Node, kind: str) -> float:
    """A task's share of ``node``: of its ``kind``, else its largest share of another kind."""

    def of(k: str) -> float:
        capacity = node.capacity.get(k, 0)
        held = max((seg.demand.get(k, 0) for seg in mode.segments), default=0)
        return held / capacity if capacity else 0.0

    share = of(kind) or max((of(k) for k in node.capacity), default=0.0)
    return min(1.0, max(share, MIN_SHARE))


def _stack(spans: list[tuple[int, int, float]]) -> list[float]:
    """First-fit offsets from the top of ``(start, finish, height)`` spans, in the given order.

    Spans that overlap in time get offsets whose ``[offset, offset + height)`` do not overlap.
    """
    done: list[tuple[int, int, float, float]] = []
    out = []
    for start, finish, height in spans:
        busy = sorted((b, b + h) for s, f, b, h in done if s < finish and start < f)
        base = 0.0
        for low, high in busy:
            if base + height <= low + 1e-9:
                break
            base = max(base, high)
        done.append((start, finish, base, height))
        out.append(base)
    return out


def merge_thin(bars: list[Bar], min_width: float) -> list[Bar]:
    """Merge, per row (per lane of a row: bars of the same base and height), touching bars
    narrower than ``min_width`` ticks.

    A run of bars on one lane, each starting within ``min_width`` of the last
    one's end, is merged while the merged bar or the next bar is still narrower
    than ``min_width``; the merged bar takes the colour key that covers most of
    its time. Wide bars are kept as they are.
    """
    if min_width <= 0:
        return list(bars)
    out: list[Bar] = []
    group: list[Bar] = []

    def flush() -> None:
        if len(group) == 1:
            out.append(group[0])
        elif group:
            weight: dict[str, int] = {}
            for b in group:
                weight[b.key] = weight.get(b.key, 0) + b.finish - b.start
            first = group[0]
            out.append(
                replace(
                    first,
                    finish=max(b.finish for b in group),
                    key=max(weight, key=lambda k: weight[k]),
                    task=first.task if len({b.task for b in group}) == 1 else "",
                    segment="",
                    merged=sum(b.merged for b in group),
                )
            )
        group.clear()

    def lane(b: Bar) -> tuple[int, float, float]:
        return b.row, b.base, b.height

    for bar in sorted(bars, key=lambda b: (*lane(b), b.start, b.finish)):
        if group:
            end = max(b.finish for b in group)
            narrow = end - group[0].start < min_width or bar.finish - bar.start < min_width
            if lane(bar) == lane(group[0]) and bar.start - end <= min_width and narrow:
                group.append(bar)
                continue
            flush()
        group.append(bar)
    flush()
    return out


def resource_profiles(
    problem: Problem, schedule: Schedule, until: int | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Demand and capacity of each renewable resource as step functions.

    Returns
    -------
    dict
        Resource name -> ``(edges, demand, capacity)``: on ``[edges[i], edges[i + 1])``
        the schedule demands ``demand[i]`` and the resource offers ``capacity[i]``.
        The edges run from 0 to ``until`` (default: the makespan, at least 1).
    """
    ren = problem.renewables
    r_index = {r.name: k for k, r in enumerate(ren)}
    times: list[int] = []
    deltas: list[list[int]] = []
    for name, start in schedule.starts.items():
        at = start
        for seg in problem.task(name).mode(schedule.modes[name]).segments:
            if seg.duration and seg.demand:
                row = [0] * len(ren)
                for res, q in seg.demand.items():
                    if res in r_index:  # a node kind's demand is on the task's nodes
                        row[r_index[res]] = q
                times += [at, at + seg.duration]
                deltas += [row, [-q for q in row]]
            at += seg.duration
    end = max(until if until is not None else schedule.makespan(problem), 1)
    points = set(times) | {0, end}
    for r in ren:
        for w in r.windows:
            points.update(t for t in (w.start, w.end) if t < end)
    edges = np.array(sorted(t for t in points if t <= end), dtype=np.int64)
    load = np.zeros((len(edges), len(ren)), dtype=np.int64)
    if times:
        np.add.at(load, np.searchsorted(edges, times), np.array(deltas, dtype=np.int64))
    load = np.cumsum(load, axis=0)[:-1]
    out = {}
    for k, r in enumerate(ren):
        cap = np.array([r.capacity_at(int(t)) for t in edges[:-1]], dtype=np.int64)
        out[r.name] = (edges, load[:, k], cap)
    return out

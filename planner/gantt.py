"""Gantt charts of a schedule, with the load on each renewable resource under it.

The chart has one row per job (or one per task on small instances), each bar a
segment coloured by its segment or stage name, and under it one panel per
renewable resource with the demand over time against the capacity (windows
included), so the interleaving and the bottleneck show at a glance.

Two outputs: a static figure drawn with matplotlib on a :class:`Figure` passed
in (saved as PNG, SVG or PDF), and an interactive plotly figure with details on
hover, saved as one self-contained HTML file. :func:`save_gantt` picks by file
suffix. Large schedules stay readable: rows are jobs, row labels are thinned so
they never overlap, and segments thinner than a pixel are merged per row into a
bar coloured by the stage that dominates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from plotly.graph_objects import Figure as PlotlyFigure

    from planner.model import Problem
    from planner.schedule import Schedule

TASK_ROWS_MAX = 60
"""Instances with at most this many tasks get one row per task; larger ones one row per job."""
STATIC_FORMATS = (".png", ".svg", ".pdf")
FORMATS = (*STATIC_FORMATS, ".html")
_DPI = 100
_LABEL_CHARS = 28
_FONT_PT = 8


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


@dataclass(frozen=True)
class GanttLayout:
    """Rows (top to bottom) and bars of a chart."""

    rows: list[str]
    bars: list[Bar]
    keys: list[str]
    """Colour keys in order of first appearance."""
    by_job: bool
    makespan: int


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
    index = problem.task_index
    spans: dict[str, list[tuple[int, int, str, str, str, str]]] = {}
    for name, start in schedule.starts.items():
        if name not in index:
            raise InputError(f"task {name!r} of the schedule is not in instance {problem.name!r}")
        task = problem.tasks[index[name]]
        try:
            mode = task.mode(schedule.modes[name])
        except KeyError:
            raise InputError(f"task {name!r} has no mode {schedule.modes[name]!r}") from None
        row = task.job if by_job and task.job else name
        at = start
        for k, seg in enumerate(mode.segments):
            label = seg.name or str(k + 1)
            if seg.name:
                key = seg.name
            elif problem.multi_mode:
                key = f"mode {mode.name}"
            else:
                key = "task"
            if seg.duration:
                spans.setdefault(row, []).append(
                    (at, at + seg.duration, key, name, task.job or "", mode.name or "", label)
                )
            at += seg.duration
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


def merge_thin(bars: list[Bar], min_width: float) -> list[Bar]:
    """Merge, per row, touching bars narrower than ``min_width`` ticks.

    A run of bars on one row, each starting within ``min_width`` of the last
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

    for bar in sorted(bars, key=lambda b: (b.row, b.start, b.finish)):
        if group:
            end = max(b.finish for b in group)
            narrow = end - group[0].start < min_width or bar.finish - bar.start < min_width
            if bar.row == group[0].row and bar.start - end <= min_width and narrow:
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


def _colours(keys: list[str]) -> dict[str, str]:
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if len(keys) <= 10 else "tab20"]
    return {k: to_hex(cmap(i % cmap.N)) for i, k in enumerate(keys)}


def _short(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"


def _title(problem: Problem, schedule: Schedule) -> str:
    solver = schedule.meta.get("solver")
    parts = [problem.name, f"{problem.objective} {schedule.objective(problem):g}"]
    if solver:
        parts.append(f"solver {solver}")
    parts.append(f"{len(schedule.starts)} tasks")
    return " — ".join(parts)


def _time_label(problem: Problem) -> str:
    unit = problem.time_unit
    return "time (ticks)" if unit == "1" else f"time (ticks of {unit})"


def figure_size(n_rows: int, n_resources: int) -> tuple[float, float, list[float]]:
    """Width, height (inches) and panel height ratios of a static chart."""
    gantt = min(max(0.22 * n_rows + 0.4, 2.0), 11.0)
    panel = 1.1 if n_resources <= 4 else 0.85
    heights = [gantt] + [panel] * n_resources
    return 12.0, sum(heights) + 1.2, heights


def new_figure(problem: Problem, schedule: Schedule) -> Figure:
    """An empty matplotlib figure sized for the chart of ``schedule``."""
    from matplotlib.figure import Figure

    rows = len(gantt_layout(problem, schedule).rows)
    width, height, _ = figure_size(rows, len(problem.renewables))
    return Figure(figsize=(width, height), dpi=_DPI)


def draw_gantt(fig: Figure, problem: Problem, schedule: Schedule) -> Figure:
    """Draw the chart of ``schedule`` on the matplotlib figure ``fig``.

    The figure gets a Gantt panel and one panel per renewable resource, sharing
    the time axis. Bars narrower than a pixel at the figure's size are merged
    per row (:func:`merge_thin`); row labels are thinned so they do not overlap.

    Returns
    -------
    Figure
        ``fig``, for chaining.
    """
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    layout = gantt_layout(problem, schedule)
    ren = problem.renewables
    _, _, heights = figure_size(len(layout.rows), len(ren))
    width_in, height_in = fig.get_size_inches()
    left, right = 0.14, 0.86
    top = 1 - 0.55 / height_in
    bottom = 0.6 / height_in
    grid = fig.add_gridspec(
        len(heights),
        1,
        height_ratios=heights,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        hspace=0.35 / max(np.mean(heights), 0.1),
    )
    ax = fig.add_subplot(grid[0])
    span = max(layout.makespan, 1)
    axes_px = (right - left) * width_in * fig.dpi
    bars = merge_thin(layout.bars, span / axes_px)
    colours = _colours(layout.keys)
    by_key: dict[str, list[list[tuple[float, float]]]] = {}
    for b in bars:
        y0, y1 = b.row - 0.4, b.row + 0.4
        by_key.setdefault(b.key, []).append(
            [(b.start, y0), (b.finish, y0), (b.finish, y1), (b.start, y1)]
        )
    for key, rects in by_key.items():
        ax.add_collection(PolyCollection(rects, facecolors=colours[key], linewidths=0))
    n = len(layout.rows)
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    ax.set_xlim(0, span)
    row_px = ax.get_position().height * height_in * fig.dpi / max(n, 1)
    step = max(1, math.ceil(_FONT_PT / 72 * fig.dpi * 1.15 / row_px))
    ticks = list(range(0, n, step))
    ax.set_yticks(ticks, [_short(layout.rows[i]) for i in ticks], fontsize=_FONT_PT)
    ax.set_ylabel("job" if layout.by_job else "task")
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    ax.set_title(_title(problem, schedule), fontsize=10, loc="left")
    if layout.keys != ["task"]:
        handles = [Patch(facecolor=colours[k], label=_short(k)) for k in layout.keys[:20]]
        by_mode = all(k.startswith("mode ") for k in layout.keys)
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.005, 1),
            fontsize=_FONT_PT,
            title="mode" if by_mode else "segment",
            title_fontsize=_FONT_PT,
            frameon=False,
        )
    profiles = resource_profiles(problem, schedule, until=span)
    for k, res in enumerate(ren):
        rax = fig.add_subplot(grid[k + 1], sharex=ax)
        edges, demand, cap = profiles[res.name]
        rax.stairs(demand, edges, fill=True, color="#4c72b0", alpha=0.55, label="demand")
        rax.stairs(cap, edges, baseline=None, color="#c44e52", linewidth=1.2, label="capacity")
        rax.set_ylim(0, max(int(cap.max(initial=0)), int(demand.max(initial=0)), 1) * 1.12)
        rax.set_ylabel(_short(res.name), fontsize=_FONT_PT, rotation=0, ha="right", va="center")
        rax.yaxis.set_major_locator(MaxNLocator(3, integer=True))
        rax.tick_params(labelsize=_FONT_PT)
        rax.grid(axis="x", linewidth=0.3, alpha=0.5)
        if k == 0:
            rax.legend(
                loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=_FONT_PT, frameon=False
            )
    last = fig.axes[-1]
    for a in fig.axes[:-1]:
        a.tick_params(labelbottom=False)
    last.xaxis.set_major_locator(MaxNLocator(10, integer=True))
    last.set_xlabel(_time_label(problem))
    return fig


def plotly_gantt(problem: Problem, schedule: Schedule) -> PlotlyFigure:
    """An interactive plotly chart of ``schedule``: bars with details on hover, load panels."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    layout = gantt_layout(problem, schedule)
    ren = problem.renewables
    span = max(layout.makespan, 1)
    # A wide screen shows about 4000 pixels: merging below that keeps the file small.
    bars = merge_thin(layout.bars, span / 4000)
    gantt_px = min(max(16 * len(layout.rows) + 80, 300), 1600)
    panel_px = 150
    fig = make_subplots(
        rows=1 + len(ren),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.03,
        row_heights=[gantt_px] + [panel_px] * len(ren),
        subplot_titles=[_title(problem, schedule)] + [r.name for r in ren],
    )
    colours = _colours(layout.keys)
    for key in layout.keys:
        mine = [b for b in bars if b.key == key]
        if not mine:
            continue
        fig.add_trace(
            go.Bar(
                name=key,
                orientation="h",
                legendgroup="segments",
                y=[layout.rows[b.row] for b in mine],
                base=[b.start for b in mine],
                x=[b.finish - b.start for b in mine],
                width=0.8,
                marker_color=colours[key],
                marker_line_width=0,
                customdata=[_hover(b) for b in mine],
                hovertemplate="%{customdata}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    profiles = resource_profiles(problem, schedule, until=span)
    for k, res in enumerate(ren):
        edges, demand, cap = profiles[res.name]
        x = edges.tolist()
        for values, name, style in (
            (demand, "demand", {"fill": "tozeroy", "line": {"color": "#4c72b0", "width": 1}}),
            (cap, "capacity", {"line": {"color": "#c44e52", "width": 1.5, "dash": "dash"}}),
        ):
            y = values.tolist()
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[*y, y[-1]],
                    mode="lines",
                    line_shape="hv",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    hovertemplate=f"{res.name} {name} %{{y}} at %{{x}}<extra></extra>",
                    **style,
                ),
                row=k + 2,
                col=1,
            )
    fig.update_layout(
        barmode="overlay",
        height=gantt_px + panel_px * len(ren) + 120,
        template="plotly_white",
        hovermode="closest",
        margin={"l": 160, "r": 20, "t": 60},
    )
    fig.update_yaxes(
        row=1,
        col=1,
        type="category",
        categoryorder="array",
        categoryarray=layout.rows,
        autorange="reversed",
        title_text="job" if layout.by_job else "task",
    )
    fig.update_xaxes(range=[0, span])
    fig.update_xaxes(title_text=_time_label(problem), row=1 + len(ren), col=1)
    return fig


def _hover(b: Bar) -> str:
    lines = []
    if b.task:
        lines.append(f"task {b.task}")
    if b.job:
        lines.append(f"job {b.job}")
    if b.merged == 1:
        lines.append(f"mode {b.mode}, segment {b.segment}")
    else:
        lines.append(f"{b.merged} segments merged, mostly {b.key}")
    lines.append(f"[{b.start}, {b.finish}), {b.finish - b.start} ticks")
    return "<br>".join(lines)


def save_gantt(problem: Problem, schedule: Schedule, path: str | Path) -> None:
    """Write the chart of ``schedule`` to ``path``: PNG, SVG, PDF or self-contained HTML.

    Raises
    ------
    InputError
        If the suffix is none of ``.png``, ``.svg``, ``.pdf``, ``.html``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            f"unknown chart format {suffix or '(no extension)'!r}; use {', '.join(FORMATS)}",
            str(path),
        )
    if suffix == ".html":
        options: dict[str, Any] = {"include_plotlyjs": True, "full_html": True}
        plotly_gantt(problem, schedule).write_html(str(path), **options)
        return
    fig = draw_gantt(new_figure(problem, schedule), problem, schedule)
    fig.savefig(path, format=suffix[1:], dpi=_DPI)

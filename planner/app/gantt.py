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
bar coloured by the stage that dominates it. The chart of a schedule the
validator rejects says ``INVALID`` in its title.

Placed plans can also be drawn by node (``by="node"``): one row per node, each
task on it a bar whose height is its share of the node's GPUs (``g`` of the
node's ``G`` GPUs: ``g / G`` of the row), stacked where tasks overlap in time.
A gang (a task on several nodes) appears on each of its nodes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.app.figures import save_figure
from planner.app.gantt_layout import (
    Bar,
    GanttLayout,
    chart_layout,
    check_view,
    merge_thin,
    resource_profiles,
)
from planner.errors import InputError
from planner.files import write_file
from planner.validate import validate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from plotly.graph_objects import Figure as PlotlyFigure

    from planner.model import Problem
    from planner.replay.record import Execution
    from planner.schedule import Schedule

STATIC_FORMATS = (".png", ".svg", ".pdf")
FORMATS = (*STATIC_FORMATS, ".html")
_DPI = 100
_LABEL_CHARS = 28
_FONT_PT = 8


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
    if not validate(problem, schedule).ok:
        # A chart of an invalid schedule must never pass for a plan.
        parts.insert(0, "INVALID")
    if solver:
        parts.append(f"solver {solver}")
    parts.append(f"{len(schedule.starts)} tasks")
    return " — ".join(parts)


def _time_label(problem: Problem) -> str:
    unit = problem.time_unit
    return "time (ticks)" if unit == "1" else f"time (ticks of {unit})"


def figure_size(
    n_rows: int, n_resources: int, row_inches: float = 0.22
) -> tuple[float, float, list[float]]:
    """Width, height (inches) and panel height ratios of a static chart (``row_inches`` a row)."""
    gantt = min(max(row_inches * n_rows + 0.4, 2.0), 11.0)
    panel = 1.1 if n_resources <= 4 else 0.85
    heights = [gantt] + [panel] * n_resources
    return 12.0, sum(heights) + 1.2, heights


def _row_inches(layout: GanttLayout) -> float:
    # A node's row holds a stack of bars: it gets the height of a few task rows.
    return 0.6 if layout.by_node else 0.22


def new_figure(problem: Problem, schedule: Schedule, by: str | None = None) -> Figure:
    """An empty matplotlib figure sized for the chart of ``schedule`` (rows ``by``)."""
    from planner.app import figures

    layout = chart_layout(problem, schedule, by)
    panels = len(problem.renewables) + has_power_panel(problem)
    width, height, _ = figure_size(len(layout.rows), panels, _row_inches(layout))
    return figures.new_figure(figsize=(width, height), dpi=_DPI)


def has_power_panel(problem: Problem) -> bool:
    """Whether a chart of ``problem`` gets a power panel: its ticks have a length and a
    resource of it has a power figure (:func:`planner.metrics.power_profile`)."""
    from planner.metrics import power_figure, power_figures

    figures = power_figures(problem)
    names = [r.name for r in problem.renewables] + problem.node_kinds
    return problem.time_unit != "1" and any(power_figure(figures, n) for n in names)


def draw_gantt(fig: Figure, problem: Problem, schedule: Schedule, by: str | None = None) -> Figure:
    """Draw the chart of ``schedule`` on the matplotlib figure ``fig``.

    The figure gets a Gantt panel and one panel per renewable resource, sharing
    the time axis. Bars narrower than a pixel at the figure's size are merged
    per row (:func:`merge_thin`); row labels are thinned so they do not overlap.
    ``by`` chooses the rows (:func:`chart_layout`).

    Returns
    -------
    Figure
        ``fig``, for chaining.
    """
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    layout = chart_layout(problem, schedule, by)
    ren = problem.renewables
    power = has_power_panel(problem)
    _, _, heights = figure_size(len(layout.rows), len(ren) + power, _row_inches(layout))
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
        y0 = b.row - 0.4 + 0.8 * b.base
        y1 = y0 + 0.8 * b.height
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
    ax.set_ylabel(layout.axis)
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
    if power:
        _power_panel(fig.add_subplot(grid[len(ren) + 1], sharex=ax), problem, schedule, span)
    last = fig.axes[-1]
    for a in fig.axes[:-1]:
        a.tick_params(labelbottom=False)
    last.xaxis.set_major_locator(MaxNLocator(10, integer=True))
    last.set_xlabel(_time_label(problem))
    return fig


def _power_panel(ax: Axes, problem: Problem, schedule: Schedule, span: int) -> None:
    """The estimated draw of the plan over time (kW, :func:`planner.metrics.power_profile`)
    and, under a cap (a ``power`` resource of watts above the GPUs' idle draw), the GPUs'
    draw and the cap: the resource's demand and capacity plus the GPUs' idle draw."""
    from matplotlib.ticker import MaxNLocator

    from planner.metrics import power_figures, power_profile

    edges, watts = power_profile(problem, schedule)
    keep = [k for k, e in enumerate(edges) if e < span] or [0]
    x = np.array([*(edges[k] for k in keep), span], dtype=float)
    kw = np.array([watts[k] for k in keep]) / 1000
    ax.stairs(kw, x, fill=True, color="#dd8452", alpha=0.6, label="draw")
    top = float(kw.max(initial=0))
    cap = next((r for r in problem.renewables if r.name == "power"), None)
    if cap is not None:
        idle = power_figures(problem)["gpu"][1]
        gpus = sum(
            r.capacity / problem.unit(r.name)
            for r in problem.renewables
            if r.name.split(".")[0] == "gpu"
        ) + sum(n.capacity.get("gpu", 0) / problem.unit("gpu") for n in problem.nodes)
        at, used, offered = resource_profiles(problem, schedule, until=span)["power"]
        gpu_kw = (used + idle * gpus) / 1000
        cap_kw = (offered + idle * gpus) / 1000
        ax.stairs(gpu_kw, at, baseline=None, color="#55a868", linewidth=1.2, label="GPU draw")
        ax.stairs(cap_kw, at, baseline=None, color="#c44e52", linewidth=1.2, label="GPU cap")
        top = max(top, float(cap_kw.max(initial=0)))
    ax.set_ylim(0, max(top, 0.001) * 1.12)
    ax.set_ylabel("kW", fontsize=_FONT_PT, rotation=0, ha="right", va="center")
    ax.yaxis.set_major_locator(MaxNLocator(3))
    ax.tick_params(labelsize=_FONT_PT)
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=_FONT_PT, frameon=False)


def plotly_gantt(problem: Problem, schedule: Schedule, by: str | None = None) -> PlotlyFigure:
    """An interactive plotly chart of ``schedule``: bars with details on hover, load panels.

    ``by`` chooses the rows (:func:`chart_layout`).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    layout = chart_layout(problem, schedule, by)
    ren = problem.renewables
    span = max(layout.makespan, 1)
    # A wide screen shows about 4000 pixels: merging below that keeps the file small.
    bars = merge_thin(layout.bars, span / 4000)
    row_px = 44 if layout.by_node else 16
    gantt_px = min(max(row_px * len(layout.rows) + 80, 300), 1600)
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
                offset=[0.8 * b.base - 0.4 for b in mine],
                width=[0.8 * b.height for b in mine],
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
        title_text=layout.axis,
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


def save_gantt(
    problem: Problem, schedule: Schedule, path: str | Path, by: str | None = None
) -> None:
    """Write the chart of ``schedule`` to ``path``: PNG, SVG, PDF or self-contained HTML.

    ``by`` chooses the rows: ``task``, ``job`` or ``node`` (:func:`chart_layout`).

    Raises
    ------
    InputError
        If the suffix is none of ``.png``, ``.svg``, ``.pdf``, ``.html``, or
        ``by`` is not a view of the plan (:func:`check_view`).
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
        figure = plotly_gantt(problem, schedule, by)
        write_file(path, lambda p: figure.write_html(str(p), **options))
        return
    fig = draw_gantt(new_figure(problem, schedule, by), problem, schedule, by)
    save_figure(fig, path, dpi=_DPI)


def save_run_gantt(
    execution: Execution, path: str | Path, by: str | None = None, planned: Problem | None = None
) -> None:
    """Gantt chart of the realized run (as :func:`save_gantt`), planned starts marked.

    Rows per task or job (``by``: ``task``, ``job``; the default as for plans): each row
    gets a black tick at the planned start of its first task. ``by="node"`` (with the
    ``planned`` instance, placed): one row per node, its attempts stacked by share
    (:meth:`Execution.node_view`), a tick at the planned start of every task on it.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"the chart file must end in {', '.join(FORMATS)}", str(path))
    problem, schedule = execution.problem, execution.schedule
    if by == "node":
        if planned is None or not planned.nodes:
            raise InputError("--by node draws runs of placed instances (with nodes) only")
        problem, schedule = execution.node_view(planned)
    elif by is not None:
        check_view(by, problem)
    rows, marks = _planned_marks(execution, problem, schedule, by)
    if suffix == ".html":
        import plotly.graph_objects as go

        fig = plotly_gantt(problem, schedule, by=by)
        mark = {"symbol": "line-ns-open", "size": 12, "color": "black", "line": {"width": 2}}
        fig.add_trace(
            go.Scatter(
                x=[m[0] for m in marks],
                y=[rows[m[1]] for m in marks],
                mode="markers",
                marker=mark,
                name="planned start",
                hovertemplate="planned start %{x}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        write_file(path, lambda p: fig.write_html(str(p), include_plotlyjs=True, full_html=True))
        return
    fig = draw_gantt(new_figure(problem, schedule, by=by), problem, schedule, by=by)
    fig.axes[0].scatter(
        [m[0] for m in marks], [m[1] for m in marks], marker="|", color="black", s=40, zorder=3
    )
    save_figure(fig, path)


def _planned_marks(
    execution: Execution, problem: Problem, schedule: Schedule, by: str | None
) -> tuple[list[str], list[tuple[int, int]]]:
    """The chart's rows and a (planned start, row) mark per row, or per task on each node."""
    layout = chart_layout(problem, schedule, by)
    row_of = {row: k for k, row in enumerate(layout.rows)}
    if by == "node":
        marks = [(r.planned_start, row_of[n]) for r in execution.runs for n in r.nodes]
        return layout.rows, marks
    planned: dict[str, int] = {}
    for r in execution.runs:
        row = r.job if layout.by_job and r.job else r.task
        planned[row] = min(planned.get(row, r.planned_start), r.planned_start)
    return layout.rows, [(planned[row], k) for k, row in enumerate(layout.rows) if row in planned]

"""The chart of a job-level run: which job holds which GPU when, and how busy the
cluster's GPUs are.

A run of ``planner policy`` (or of a plan under ``--interleave``) written with ``-o``
holds its co-location table (``residences``: job, GPU set, start, end, partners;
:meth:`planner.executor.loop.ExecutorRun.residences`) and its cluster (node names,
GPUs per node). The chart has one row per physical GPU, grouped by node, idle GPUs
included; a job's stay on a GPU set is a bar on each of its GPUs, and jobs sharing the
GPUs at the same time split the row's height; a node's outage is shaded. One colour per
job (the same job, the same colour, in every chart of a run), a legend where there are
few jobs; a migration (a job resumed on other GPUs) is marked with a triangle where it
resumes. Under it, the
share of the cluster's GPUs held over time and, where the run file has its utilisation
(:mod:`planner.executor.utilisation`), the share of GPU compute, data loading and
network in use: which resource is the bottleneck when; under that, the GPUs' draw
against the power cap. :func:`draw_run` draws on the axes it is given,
:func:`save_colocation_chart` writes a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.app.base import json_object
from planner.app.figures import save_figure
from planner.app.run_rows import job_colours, physical_gpus, run_gpus
from planner.errors import InputError

FORMATS = (".png", ".svg", ".pdf", ".html")
"""The chart formats of a job-level run (``.html``: interactive, :mod:`planner.app.run_svg`)."""

_DPI = 110
_LABELS = 300
"""Bars are labelled with their job when the chart has at most this many."""
_LEGEND = 40
"""A legend is drawn for at most this many jobs."""


@dataclass(frozen=True)
class RunChart:
    """What a run chart drew: its GPU rows (``NODE:i``, in order), its jobs and their
    colours, its bars, its migration markers, the panel's steps of GPUs held (time in
    seconds, share of the GPUs held from then), the outages shaded, the resources in use
    and the power."""

    gpus: tuple[str, ...]
    colours: dict[str, tuple[float, float, float, float]]
    bars: int
    migrations: int
    held: tuple[tuple[float, float], ...]
    outages: int = 0
    """Node outages shaded."""
    resources: tuple[str, ...] = ()
    """The resources whose share in use the panel drew."""
    power: bool = False
    """Whether the GPUs' draw was drawn."""

    def line(self) -> str:
        """``N GPUs, M jobs``, as the commands print it."""
        return f"{len(self.gpus)} GPUs, {len(self.colours)} jobs"


def job_level_run(path: Path) -> dict[str, Any] | None:
    """The data of ``path`` if it is a job-level run file (``planner policy
    ... -o`` or a plan under ``--interleave``), else ``None``."""
    return json_object(path, "residences")


def chart_fields(
    run: Any, names: Sequence[str], policy: str, jobs: Sequence[Any] = (), gpus: int = 0
) -> dict[str, Any]:
    """The fields of a run file that its chart draws, of the executor's ``run`` (a
    :class:`~planner.executor.loop.ExecutorRun`; ``names`` name its nodes, ``policy``
    what made it): with its utilisation where its ``jobs`` and the cluster's ``gpus`` are
    given (:func:`~planner.executor.utilisation.run_utilisation`)."""
    from planner.executor.utilisation import run_utilisation

    out = {"policy": policy, "interleave": run.interleave.kind, "makespan": run.makespan,
           "power_cap": run.power_cap, "residences": run.residences(names),
           "cluster": {"nodes": list(names), "gpus_per_node": run.gpus_per_node},
           "outages": [[names[n], a, b] for n, a, b in run.outages]}  # fmt: skip
    if jobs and gpus:
        out["utilisation"] = run_utilisation(run, jobs, gpus).as_data()
    return out


def save_run_chart(
    run: Any,
    names: Sequence[str],
    policy: str,
    path: str | Path,
    jobs: Sequence[Any] = (),
    gpus: int = 0,
) -> RunChart:
    """Draw the chart of the executor's ``run`` to ``path``: :func:`save_colocation_chart`
    of its :func:`chart_fields`."""
    return save_colocation_chart(chart_fields(run, names, policy, jobs, gpus), path)


def draw_run(run: dict[str, Any], ax: Any, panel: Any = None, power: Any = None) -> RunChart:
    """Draw the job-level ``run`` (its ``residences``, ``policy``, ``interleave``,
    ``makespan`` and, where it has them, its ``cluster`` and ``utilisation``) on the
    matplotlib axes ``ax``; on ``panel`` if given the share of the GPUs held and of each
    resource in use, on ``power`` if given the GPUs' draw against the power cap.

    Raises
    ------
    InputError
        For a run that names no GPU sets (``tiresias`` counts GPUs without placing jobs).
    """
    from matplotlib.collections import PolyCollection

    rows = [r for r in run["residences"] if r["gpus"]]
    if not rows:
        raise InputError("the run names no GPU sets (its policy counts GPUs without placing jobs)")
    order = run_gpus(run)
    index = {g: k for k, g in enumerate(order)}
    colours = job_colours([r["job"] for r in rows])
    end = max(max(r["end"] for r in rows), float(run.get("makespan") or 0.0)) or 1.0
    scale = 3600.0 if end > 7200 else 1.0
    rects, faces, marks = [], [], []
    last: dict[str, str] = {}
    changes: list[tuple[float, str, int]] = []
    for r in sorted(rows, key=lambda r: (r["start"], r["job"])):
        members = sorted([r["job"], *r["partners"]])
        k, slot = len(members), members.index(r["job"])
        x0, x1 = r["start"] / scale, r["end"] / scale
        held = physical_gpus(r["gpus"])
        for g in held:
            y0 = index[g] - 0.4 + 0.8 * slot / k
            rects.append([(x0, y0), (x1, y0), (x1, y0 + 0.8 / k), (x0, y0 + 0.8 / k)])
            faces.append(colours[r["job"]])
            if slot == 0:
                changes += [(r["start"], g, 1), (r["end"], g, -1)]
        if last.get(r["job"], r["gpus"]) != r["gpus"]:
            marks.append((x0, index[held[0]]))
        last[r["job"]] = r["gpus"]
        if len(rows) <= _LABELS and x1 - x0 > end / scale / 40 and k == 1:
            ax.text(x0, index[held[0]], f" {r['job']}", va="center", fontsize=6, clip_on=True)
    ax.add_collection(PolyCollection(rects, facecolors=faces, edgecolors="white", linewidths=0.3))
    if marks:
        ax.scatter(*zip(*marks, strict=True), marker=">", s=18, color="black", zorder=3,
                   label="migration")  # fmt: skip
    nodes = [g.rpartition(":")[0] for g in order]
    shaded = 0
    for node, down, back in run.get("outages") or ():
        rows_of = [k for k, n in enumerate(nodes) if n == node]
        if rows_of:
            shaded += 1
            ax.fill_between([down / scale, min(back, end) / scale], rows_of[0] - 0.5,
                            rows_of[-1] + 0.5, color="grey", alpha=0.3, hatch="//",
                            linewidth=0, label="node down" if shaded == 1 else None)  # fmt: skip
    for k in range(1, len(order)):
        if nodes[k] != nodes[k - 1]:
            ax.axhline(k - 0.5, color="grey", linewidth=0.6)
    ax.set_xlim(0, end / scale)
    ax.set_ylim(len(order) - 0.5, -0.5)
    step = max(1, len(order) // 64)
    ax.set_yticks(range(0, len(order), step), order[::step], fontsize=6)
    ax.set_ylabel("GPU")
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    ax.set_title(
        f"{run['policy']} under {run['interleave']}: makespan {run['makespan']:,.0f} s, "
        f"{len(colours)} jobs on {len(order)} GPUs (bars split a row: jobs sharing a GPU)",
        fontsize=10,
        loc="left",
    )
    if len(colours) <= _LEGEND:
        from matplotlib.patches import Patch

        handles = [Patch(color=c, label=n) for n, c in colours.items()]
        ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  ncols=1 + len(handles) // 25, frameon=False)  # fmt: skip
    held = _held(changes, len(order))
    drawn: tuple[str, ...] = ()
    use = run.get("utilisation")
    if panel is not None:
        xs = [t / scale for t, _ in held] + [end / scale]
        ys = [100 * share for _, share in held] + [100 * held[-1][1] if held else 0.0]
        panel.step(xs, ys, where="post", color="black", linewidth=0.8, label="GPUs held")
        panel.fill_between(xs, ys, step="post", alpha=0.15, color="grey")
        if use:
            drawn = _draw_shares(panel, use, scale, end)
        panel.set_ylim(0, 105)
        panel.set_ylabel("in use (%)", fontsize=7)
        if power is None or not use:
            panel.set_xlabel("hours" if scale > 1 else "seconds")
        panel.grid(axis="both", linewidth=0.3, alpha=0.5)
        panel.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    drew_power = False
    if power is not None and use:
        xs = [t / scale for t in use["times"]] + [end / scale]
        kw = [w / 1000 for w in use["watts"]]
        power.step(xs, [*kw, kw[-1] if kw else 0.0], where="post", color="tab:red",
                   linewidth=0.8, label="GPUs' draw")  # fmt: skip
        cap = run.get("power_cap")
        if cap:
            power.axhline(cap / 1000, color="black", linestyle="--", linewidth=0.8, label="cap")
        power.set_ylim(0, max([*kw, (cap or 0) / 1000, 0.001]) * 1.1)
        power.set_ylabel("kW", fontsize=7)
        power.set_xlabel("hours" if scale > 1 else "seconds")
        power.grid(axis="both", linewidth=0.3, alpha=0.5)
        power.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        drew_power = True
    return RunChart(tuple(order), colours, len(rects), len(marks), tuple(held), shaded, drawn,
                    drew_power)  # fmt: skip


_SHARE_COLOURS = {"GPU compute": "tab:green", "data loading": "tab:orange",
                  "network": "tab:purple"}  # fmt: skip


def _draw_shares(panel: Any, use: dict[str, Any], scale: float, end: float) -> tuple[str, ...]:
    """Each resource's share in use over time (of a run's ``utilisation``) on ``panel``,
    in percent; the resources drawn (those the run's model knows)."""
    from planner.executor.utilisation import RESOURCES

    xs = [t / scale for t in use["times"]] + [end / scale]
    drawn = []
    for name in RESOURCES:
        values = use.get(name) or []
        if not values or any(v is None for v in values):
            continue
        ys = [100 * v for v in values]
        panel.step(xs, [*ys, ys[-1]], where="post", color=_SHARE_COLOURS[name], linewidth=0.9,
                   label=name)  # fmt: skip
        drawn.append(name)
    return tuple(drawn)


def _held(changes: list[tuple[float, str, int]], total: int) -> list[tuple[float, float]]:
    """The share of ``total`` GPUs held from each time on, from (time, GPU, +1 or -1)."""
    count: dict[str, int] = {}
    busy, out = 0, []
    for t, g, delta in sorted(changes, key=lambda c: (c[0], c[2])):
        before = count.get(g, 0)
        count[g] = before + delta
        busy += (count[g] > 0) - (before > 0)
        if out and out[-1][0] == t:
            out[-1] = (t, busy / total)
        else:
            out.append((t, busy / total))
    return out


def save_colocation_chart(run: dict[str, Any], path: str | Path) -> RunChart:
    """Draw the job-level ``run`` (:func:`draw_run`, with its utilisation panel) to
    ``path`` (PNG, SVG or PDF; HTML: the interactive chart of
    :func:`planner.app.run_svg.run_page`); what it drew.

    Raises
    ------
    InputError
        For another format, or a run that names no GPU sets.
    """
    from planner.app.figures import new_figure

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(
            f"a job-level run is drawn as {', '.join(FORMATS)}, not "
            f"{path.suffix.lower() or '(no extension)'!r}",
            str(path),
        )
    if path.suffix.lower() == ".html":
        from planner.app.run_svg import run_page
        from planner.files import write_text

        page, svg = run_page(run)
        write_text(path, page)
        return RunChart(svg.gpus, dict(job_colours(svg.jobs)), svg.bars, 0, ())
    fig = new_figure(dpi=_DPI)
    if run.get("utilisation"):
        ax, panel, power = fig.subplots(3, 1, sharex=True, height_ratios=(5, 1.2, 0.8))
    else:
        (ax, panel), power = fig.subplots(2, 1, sharex=True, height_ratios=(5, 1)), None
    chart = draw_run(run, ax, panel, power)
    fig.set_size_inches(13, min(40.0, 2.5 + 0.2 * max(len(chart.gpus), 8)))
    fig.tight_layout()
    save_figure(fig, path, dpi=_DPI)
    return chart

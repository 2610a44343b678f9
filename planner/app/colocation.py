"""The chart of a job-level run: who shares which GPUs, and when.

A run of ``planner policy`` (or of a plan under ``--interleave``) written
with ``-o`` holds its co-location table (``residences``: job, GPU set, start, end,
partners; :meth:`planner.execution.executor.PeerRun.residences`). The chart has one row per GPU
set (``node3:0-3``) in node and GPU order; a job's stay on a set is a bar, and jobs
sharing the set at the same time split the row's height, so a row of four stacked
bars is a group of four interleaved jobs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.app.base import json_object
from planner.app.figures import save_figure
from planner.errors import InputError

FORMATS = (".png", ".svg", ".pdf")
"""The chart formats of a job-level run."""

_DPI = 110
_LABELS = 300
"""Bars are labelled with their job when the chart has at most this many."""


def job_level_run(path: Path) -> dict[str, Any] | None:
    """The data of ``path`` if it is a job-level run file (``planner policy
    ... -o`` or a plan under ``--interleave``), else ``None``."""
    return json_object(path, "residences")


def _order(label: str) -> tuple[object, ...]:
    """Sort key of a GPU set label: nodes by name with their numbers as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label))


def save_run_chart(run: Any, names: Sequence[str], policy: str, path: str | Path) -> int:
    """Draw the co-location chart of the executor's ``run`` (a
    :class:`~planner.execution.executor.PeerRun`; ``names`` name its nodes, ``policy``
    what made it) to ``path``: :func:`save_colocation_chart` of its run-file fields."""
    chart = {"residences": run.residences(names), "policy": policy,
             "interleave": run.interleave.kind, "makespan": run.makespan}  # fmt: skip
    return save_colocation_chart(chart, path)


def save_colocation_chart(run: dict[str, Any], path: str | Path) -> int:
    """Draw the co-location chart of the job-level ``run`` (its ``residences``, ``policy``,
    ``interleave`` and ``makespan``, as a run file holds them) to ``path`` (PNG, SVG or
    PDF); the number of GPU sets drawn.

    Raises
    ------
    InputError
        For another format, or a run that names no GPU sets (``tiresias`` counts GPUs
        without placing them).
    """
    from matplotlib import colormaps
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(
            f"a job-level run is drawn as {', '.join(FORMATS)}, not "
            f"{path.suffix.lower() or '(no extension)'!r}",
            str(path),
        )
    rows = [r for r in run["residences"] if r["gpus"]]
    if not rows:
        raise InputError("the run names no GPU sets (its policy counts GPUs without placing jobs)")
    sets = sorted({r["gpus"] for r in rows}, key=_order)
    index = {label: k for k, label in enumerate(sets)}
    jobs = sorted({r["job"] for r in rows})
    colour = {job: k % 20 for k, job in enumerate(jobs)}
    end = max(r["end"] for r in rows)
    hours = end > 7200
    scale = 3600.0 if hours else 1.0
    height = min(40.0, 1.5 + 0.22 * len(sets))
    fig = Figure(figsize=(12, height), dpi=_DPI)
    ax = fig.add_subplot()
    palette = [colormaps["tab20"](k) for k in range(20)]
    rects: list[list[tuple[float, float]]] = []
    faces = []
    for r in rows:
        members = sorted([r["job"], *r["partners"]])
        k, slot = len(members), members.index(r["job"])
        y0 = index[r["gpus"]] - 0.4 + 0.8 * slot / k
        y1 = y0 + 0.8 / k
        x0, x1 = r["start"] / scale, r["end"] / scale
        rects.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        faces.append(palette[colour[r["job"]]])
        if len(rows) <= _LABELS and x1 - x0 > end / scale / 40:
            ax.text(x0, (y0 + y1) / 2, f" {r['job']}", va="center", fontsize=6, clip_on=True)
    ax.add_collection(PolyCollection(rects, facecolors=faces, edgecolors="white", linewidths=0.3))
    ax.set_xlim(0, end / scale)
    ax.set_ylim(len(sets) - 0.5, -0.5)
    step = max(1, len(sets) // 60)
    ax.set_yticks(range(0, len(sets), step), sets[::step], fontsize=7)
    ax.set_ylabel("GPU set")
    ax.set_xlabel("hours" if hours else "seconds")
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    ax.set_title(
        f"{run['policy']} under {run['interleave']}: makespan {run['makespan']:,.0f} s, "
        f"{len(jobs)} jobs on {len(sets)} GPU sets (stacked bars share their GPUs)",
        fontsize=10,
        loc="left",
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=_DPI)
    return len(sets)

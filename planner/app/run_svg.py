"""An interactive chart of a job-level run, for a browser and offline: one inline SVG
with one row per physical GPU grouped by node (idle GPUs included), a bar per job stay
on each GPU it holds (jobs sharing a GPU split its row), node outages shaded, and a
legend of the jobs. Hovering a bar names its job, its GPUs, its start and end and its
partners; a click on a job in the legend (or on a bar) highlights that job's bars,
a second click shows all again. Names are drawn by the browser, so any Unicode name
reads as written. The same colours as :func:`planner.app.colocation.draw_run`'s.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from planner.app.run_rows import job_colours, physical_gpus, run_gpus
from planner.errors import InputError

WIDTH = 1100
"""The chart's width (px)."""
ROW = 14
"""A GPU row's height (px)."""
LEFT, TOP = 90, 24
"""The margins of the plot area (px)."""

SCRIPT = """
(() => {
  const svg = document.currentScript.previousElementSibling;
  let shown = null;
  const pick = job => {
    shown = shown === job ? null : job;
    svg.querySelectorAll("[data-job]").forEach(el => {
      el.style.opacity = shown === null || el.dataset.job === shown ? 1 : 0.15;
    });
  };
  svg.querySelectorAll("[data-job]").forEach(el =>
    el.addEventListener("click", () => pick(el.dataset.job)));
})();
"""


@dataclass(frozen=True)
class RunSvg:
    """An interactive run chart: its markup (an ``<svg>`` then its ``<script>``), its GPU
    rows, its bars and its jobs."""

    markup: str
    gpus: tuple[str, ...]
    bars: int
    jobs: tuple[str, ...]


def _colour(rgba: tuple[float, float, float, float]) -> str:
    """A matplotlib colour as ``#rrggbb``."""
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgba[:3])


def run_svg(run: dict[str, Any]) -> RunSvg:
    """The interactive chart of the job-level ``run`` (a run file's data; see the module
    docstring).

    Raises
    ------
    InputError
        For a run that names no GPU sets.
    """
    rows = [r for r in run["residences"] if r["gpus"]]
    if not rows:
        raise InputError("the run names no GPU sets (its policy counts GPUs without placing jobs)")
    order = run_gpus(run)
    index = {g: k for k, g in enumerate(order)}
    colours = {j: _colour(c) for j, c in job_colours([r["job"] for r in rows]).items()}
    end = max(max(r["end"] for r in rows), float(run.get("makespan") or 0.0)) or 1.0
    hours = end > 7200
    span = WIDTH - LEFT - 170
    height = TOP + ROW * len(order) + 30

    def x(t: float) -> float:
        return LEFT + span * t / end

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             'font-family="system-ui, sans-serif" font-size="10" class="run-chart">']  # fmt: skip
    nodes = [g.rpartition(":")[0] for g in order]
    for k, g in enumerate(order):
        y = TOP + k * ROW
        parts.append(f'<text x="{LEFT - 4}" y="{y + ROW - 4}" text-anchor="end">'
                     f"{html.escape(g)}</text>")  # fmt: skip
        if k and nodes[k] != nodes[k - 1]:
            parts.append(f'<line x1="{LEFT}" x2="{LEFT + span}" y1="{y}" y2="{y}" stroke="#999"/>')
    for node, down, back in run.get("outages") or ():
        ks = [k for k, n in enumerate(nodes) if n == node]
        if ks:
            parts.append(f'<rect x="{x(down):.1f}" y="{TOP + ks[0] * ROW}" '
                         f'width="{max(x(min(back, end)) - x(down), 1):.1f}" '
                         f'height="{len(ks) * ROW}" fill="#888" opacity="0.3">'
                         f"<title>{html.escape(node)} down {down:,.0f} - {back:,.0f} s</title>"
                         "</rect>")  # fmt: skip
    bars = 0
    for r in sorted(rows, key=lambda r: (r["start"], r["job"])):
        members = sorted([r["job"], *r["partners"]])
        share, slot = 1 / len(members), members.index(r["job"])
        partners = ", ".join(r["partners"]) or "none"
        tip = html.escape(f"{r['job']} on {r['gpus']}: {r['start']:,.0f} - {r['end']:,.0f} s; "
                          f"sharing with {partners}")  # fmt: skip
        job = html.escape(r["job"], quote=True)
        for g in physical_gpus(r["gpus"]):
            y = TOP + index[g] * ROW + 1 + (ROW - 2) * share * slot
            parts.append(f'<rect data-job="{job}" x="{x(r["start"]):.1f}" y="{y:.1f}" '
                         f'width="{max(x(r["end"]) - x(r["start"]), 0.5):.1f}" '
                         f'height="{(ROW - 2) * share:.1f}" fill="{colours[r["job"]]}">'
                         f"<title>{tip}</title></rect>")  # fmt: skip
            bars += 1
    base = TOP + ROW * len(order)
    for k in range(6):
        t = end * k / 5
        label = f"{t / 3600:,.1f} h" if hours else f"{t:,.0f} s"
        parts.append(f'<text x="{x(t):.1f}" y="{base + 14}" text-anchor="middle">{label}</text>')
    for k, (job, colour) in enumerate(colours.items()):
        y = TOP + k * 13
        if y > height - 10:
            break
        name = html.escape(job, quote=True)
        parts.append(f'<g data-job="{name}" style="cursor:pointer">'
                     f'<rect x="{LEFT + span + 12}" y="{y}" width="10" height="10" '
                     f'fill="{colour}"/><text x="{LEFT + span + 26}" y="{y + 9}">'
                     f"{html.escape(job)}</text></g>")  # fmt: skip
    parts.append("</svg>")
    markup = "".join(parts) + f"<script>{SCRIPT}</script>"
    return RunSvg(markup, tuple(order), bars, tuple(colours))


def run_page(run: dict[str, Any]) -> tuple[str, RunSvg]:
    """A self-contained HTML page of the interactive chart of ``run``, and the chart."""
    chart = run_svg(run)
    title = html.escape(f"{run.get('policy', '')} under {run.get('interleave', '')}: makespan "
                        f"{float(run.get('makespan') or 0):,.0f} s")  # fmt: skip
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
            f'</title></head><body style="font-family: system-ui, sans-serif"><h1>{title}</h1>'
            "<p>Hover a bar for its job; click a job to highlight it.</p>"
            f"{chart.markup}</body></html>\n")  # fmt: skip
    return page, chart

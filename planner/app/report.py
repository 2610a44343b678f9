"""``planner report``: one self-contained HTML page of a job-level run, what a team lead
is sent. Its figures (makespan, mean and p99 JCT, energy, the model), the run's chart
per GPU with the share of the GPUs held and of each resource in use
(:func:`planner.app.colocation.draw_run`), the same as an interactive chart
(:mod:`planner.app.run_svg`: hover a bar, click a job), the JCT distribution, and a
per-job table (release, first start, finish, JCT, wait, GPU-hours, migrations) sorted by
a click on a column. Charts are inline PNG and SVG, the sorting and highlighting a few
lines of inline script: the page needs no network.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from planner.app.colocation import draw_run, physical_gpus
from planner.app.run_svg import run_svg
from planner.errors import InputError
from planner.files import write_text

_SORT = """
document.querySelectorAll("table.jobs th").forEach((th, col) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0];
  const up = th.dataset.up !== "1"; th.dataset.up = up ? "1" : "0";
  const key = tr => { const t = tr.cells[col].dataset.v ?? tr.cells[col].textContent;
                      const n = parseFloat(t); return isNaN(n) ? t : n; };
  [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * (up ? 1 : -1))
    .forEach(tr => body.appendChild(tr));
}));
"""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
td, th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th { cursor: pointer; background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; }
"""


@dataclass(frozen=True)
class Report:
    """What a report holds: its jobs (table rows) and its charts."""

    jobs: int
    charts: tuple[str, ...]


def _png(fig: Any) -> str:
    """``fig`` as an inline PNG ``src``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _job_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Per job: release, first start, finish, JCT, wait, GPU-hours and migrations."""
    stays: dict[str, list[dict[str, Any]]] = {}
    for r in run["residences"]:
        stays.setdefault(r["job"], []).append(r)
    release = run.get("release") or {}
    out = []
    for job, finish in sorted(run.get("finish", {}).items()):
        mine = sorted(stays.get(job, []), key=lambda r: r["start"])
        start = mine[0]["start"] if mine else float("nan")
        arrived = float(release.get(job, 0.0))
        hours = sum((r["end"] - r["start"]) * len(physical_gpus(r["gpus"])) for r in mine
                    if r["gpus"]) / 3600  # fmt: skip
        moves = sum(a["gpus"] != b["gpus"] for a, b in itertools.pairwise(mine))
        out.append({"job": job, "release": arrived, "start": start, "finish": finish,
                    "jct": finish - arrived, "wait": start - arrived, "gpu_hours": hours,
                    "migrations": moves})  # fmt: skip
    return out


def write_report(run: dict[str, Any], path: str | Path) -> Report:
    """Write the report of the job-level ``run`` (a run file's data) to ``path``.

    Raises
    ------
    InputError
        For a run with no finished job.
    """
    from planner.app.figures import new_figure

    rows = _job_rows(run)
    if not rows:
        raise InputError("the run finished no job: nothing to report")
    fig = new_figure(figsize=(13, 8))
    ax, panel, power = fig.subplots(3, 1, sharex=True, height_ratios=(5, 1.2, 0.8))
    draw_run(run, ax, panel, power)
    fig.tight_layout()
    chart = _png(fig)
    jct = np.array([r["jct"] for r in rows])
    fig = new_figure(figsize=(7, 3))
    hist = fig.add_subplot()
    hist.hist(jct / 3600, bins=min(40, max(5, len(jct) // 2)), color="tab:blue")
    hist.set_xlabel("JCT (hours)")
    hist.set_ylabel("jobs")
    fig.tight_layout()
    spread = _png(fig)
    figures = [
        ("policy or plan", run.get("policy", "")),
        ("model", run.get("executor", run.get("interleave", ""))),
        ("jobs", f"{len(rows)}"),
        ("makespan", f"{run['makespan']:,.0f} s"),
        ("mean JCT", f"{jct.mean():,.0f} s"),
        ("p99 JCT", f"{np.percentile(jct, 99):,.0f} s"),
        ("longest wait", f"{max(r['wait'] for r in rows):,.0f} s"),
        ("GPU-hours", f"{sum(r['gpu_hours'] for r in rows):,.1f}"),
        ("migrations", f"{sum(r['migrations'] for r in rows)}"),
    ]
    if run.get("energy_kwh") is not None:
        figures.append(("energy", f"{run['energy_kwh']:,.1f} kWh"))
    if run.get("failures"):
        figures.append(("failures", ", ".join(run["failures"])))
    head = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in figures)  # fmt: skip
    columns = ("job", "release", "start", "finish", "jct", "wait", "gpu_hours", "migrations")
    body = []
    for r in rows:
        cells = [f"<td>{html.escape(r['job'])}</td>"]
        for c in columns[1:]:
            value = r[c]
            text = f"{value:,.2f}" if c == "gpu_hours" else f"{value:,.0f}"
            cells.append(f'<td data-v="{value:.6g}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    titles = ("job", "release (s)", "first start (s)", "finish (s)", "JCT (s)", "wait (s)",
              "GPU-hours", "migrations")  # fmt: skip
    name = html.escape(str(run.get("instance", "")))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>planner report: {name}</title>
<style>{_STYLE}</style></head><body>
<h1>Run of {name}</h1>
<table class="figures">{head}</table>
<h2>Every GPU over time</h2>
<img id="run-chart" alt="the run per GPU" src="{chart}">
<h2>Every GPU over time, interactive (hover a bar; click a job to highlight it)</h2>
<div id="run-svg">{run_svg(run).markup}</div>
<h2>Job completion times</h2>
<img id="jct-chart" alt="the JCT distribution" src="{spread}">
<h2>Jobs (click a column to sort)</h2>
<table class="jobs"><thead><tr>{"".join(f"<th>{t}</th>" for t in titles)}</tr></thead>
<tbody>{"".join(body)}</tbody></table>
<script>{_SORT}</script>
</body></html>
"""
    write_text(path, page)
    return Report(len(rows), ("run-chart", "run-svg", "jct-chart"))

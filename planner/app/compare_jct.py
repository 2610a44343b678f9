"""What a comparison shows of job-level runs: completion times and fairness.

A simulated study (:mod:`planner.app.compare`) of an instance with training jobs runs
every plan, policy and online planner in the job-level executor. Beside the results
table it keeps a side table, ``OUTPUT_jobs.csv``: every job's JCT (in seconds: the
executor counts them) and finish-time fairness in the run of the first seed. From both:

- :func:`summarize_jct`: one row per solver or policy, ranked by mean JCT, with its
  rank on the p99 JCT, the worst finish-time fairness and the makespan;
- :func:`save_jct_cdf`: the JCT's distribution per solver in the first seed's run, its
  legend the means over every run (``OUTPUT_jct.png``);
- :func:`save_fairness`: the worst finish-time fairness against the mean JCT, means
  over every run (``OUTPUT_fairness.png``).

Every chart of a study gives each solver or policy one colour.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.app.figures import save_figure, solver_colours

JOB_COLUMNS = ["instance", "solver", "seed", "job", "jct", "ftf"]
"""Columns of the side table."""

FIGURES = {
    "realized_jct_mean": "mean_jct",
    "realized_jct_p99": "p99_jct",
    "realized_ftf_max": "worst_ftf",
    "realized_jain": "jain",
    "realized_wait_max": "longest_wait",
    "realized_makespan_mean": "makespan",
}
"""The realized columns :func:`summarize_jct` averages, and its names for them."""

RANKED = ("mean_jct", "p99_jct", "worst_ftf", "makespan")
"""The figures :func:`summarize_jct` ranks on (smallest first)."""


def jobs_path(output: Path) -> Path:
    """The side table of the results table ``output``."""
    return output.with_name(f"{output.stem}_jobs.csv")


def append_jobs(
    path: Path, row: Mapping[str, Any], jobs: Mapping[str, tuple[float, float]]
) -> None:
    """Append the jobs of ``row``'s run (job -> (JCT in seconds, finish-time fairness)) to
    the side table ``path``, with a header if it is new."""
    new = not path.is_file() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(JOB_COLUMNS)
        for job, (jct, ftf) in jobs.items():
            writer.writerow([row["instance"], row["solver"], row["seed"], job, jct, ftf])


def read_jobs(path: Path) -> pd.DataFrame:
    """The side table (empty if there is none)."""
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame(columns=JOB_COLUMNS)
    return pd.read_csv(path)


def summarize_jct(table: pd.DataFrame) -> pd.DataFrame:
    """One row per solver or policy with job-level figures: the means over its runs of
    the realized figures (:data:`FIGURES`), ranked by mean JCT (then name), and its rank
    on each of :data:`RANKED` (1: the best)."""
    if "realized_ftf_max" not in table:
        return pd.DataFrame()
    done = table[table["realized_ftf_max"].notna()]
    rows = []
    for solver, group in done.groupby("solver", sort=False):
        rows.append(
            {"solver": solver, "runs": len(group)}
            | {name: float(group[c].mean()) for c, name in FIGURES.items()}
        )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    for name in RANKED:
        out[f"rank_{name}"] = out[name].rank(method="min").astype(int)
    return out.sort_values(["mean_jct", "solver"]).reset_index(drop=True)


def save_jct_cdf(jobs: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Draw the JCT's distribution of every solver's jobs (all instances of the side
    table ``jobs``: the first seed's run), in seconds on a log axis. Each
    solver in its colour (:func:`~planner.app.figures.solver_colours`); its legend gives
    the mean over every seed's run where the ``summary`` (:func:`summarize_jct`) has it, as
    the table does."""
    from planner.app.figures import new_figure

    fig = new_figure(figsize=(7, 4.5), dpi=100)
    ax = fig.add_subplot()
    colours = solver_colours(list(jobs["solver"]))
    means = (
        {}
        if summary is None or summary.empty
        else dict(zip(summary["solver"], summary["mean_jct"], strict=True))
    )
    seed = int(jobs["seed"].min()) if len(jobs) else 0
    for solver, group in jobs.groupby("solver", sort=False):
        xs = np.sort(group["jct"].to_numpy(dtype=float))
        ys = np.arange(1, len(xs) + 1) / len(xs)
        mean = means.get(solver)
        said = f"mean {mean:,.0f} over its runs" if mean is not None else f"mean {xs.mean():,.0f}"
        ax.step(xs, ys, where="post", label=f"{solver} ({said})", color=colours[str(solver)])
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("job completion time (s; log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT distribution per policy (the run of seed {seed})")
    ax.grid(which="both", linewidth=0.3, alpha=0.6)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def save_fairness(summary: pd.DataFrame, path: str | Path) -> None:
    """Draw every solver's worst finish-time fairness against its mean JCT in seconds
    (means over its runs: :func:`summarize_jct`), each solver a point in its colour, named
    in the legend."""
    from planner.app.figures import new_figure

    fig = new_figure(figsize=(8, 4.5), dpi=100)
    ax = fig.add_subplot()
    colours = solver_colours(list(summary["solver"]))
    for row in summary.itertuples(index=False):
        ax.scatter([row.mean_jct], [row.worst_ftf], s=30, color=colours[str(row.solver)],
                   label=f"{row.solver} ({row.mean_jct:,.0f}, {row.worst_ftf:.2f})")  # fmt: skip
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, max([*summary["worst_ftf"], 1.0]) * 1.1)
    ax.set_xlabel("mean JCT (s)")
    ax.set_ylabel("worst finish-time fairness (1: as on a fair share)")
    ax.set_title("fairness against JCT (lower left is better)")
    ax.grid(linewidth=0.3, alpha=0.6)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    save_figure(fig, path)

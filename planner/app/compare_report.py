"""The report of a study of ``planner compare``: its summary tables (per solver, by
realized makespan), their Markdown, the performance profile and the makespan-energy
front, from the results table (:func:`planner.app.compare.load_table`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from planner.app.compare_run import FAILED, REALIZED
from planner.app.figures import save_figure, solver_colours

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def best_objectives(table: pd.DataFrame) -> pd.Series:
    """The best (smallest) objective per instance over every valid run of the table."""
    ok = table[table["objective"].notna() & ~table["status"].isin(FAILED)]
    return ok.groupby("instance")["objective"].min()


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """One row per solver: runs, solved, optimal, best, invalid, errors, mean gaps, mean runtime,
    and where some plan has an energy figure, the mean energy.

    ``best`` counts runs that reach the best objective any run of the table
    found on their instance; ``optimal`` counts runs whose status is optimal;
    gaps and the energy are means over the runs that have them.
    """
    best = best_objectives(table)
    out = []
    table = table[table["status"] != "policy"]
    for solver, group in table.groupby("solver", sort=False):
        ok = group[~group["status"].isin(FAILED)]
        solved = ok["objective"].notna()
        at_best = ok["objective"] == ok["instance"].map(best)
        out.append(
            {
                "solver": solver,
                "runs": len(group),
                "solved": int(solved.sum()),
                "optimal": int((ok["status"] == "optimal").sum()),
                "best": int(at_best.sum()),
                "invalid": int((group["status"] == "invalid").sum()),
                "errors": int((group["status"] == "error").sum()),
                "mean_gap_bound_%": _mean_percent(ok["gap_bound"]),
                "mean_gap_reference_%": _mean_percent(ok["gap_reference"]),
                "mean_runtime_s": float(group["runtime"].mean(skipna=True)),
            }
        )
        if "energy_kwh" in table and table["energy_kwh"].notna().any():
            out[-1]["mean_energy_kwh"] = float(ok["energy_kwh"].mean(skipna=True))
    return pd.DataFrame(out)


def summarize_realized(table: pd.DataFrame) -> pd.DataFrame:
    """One row per solver of a simulated study, best first: means of the :data:`REALIZED` figures.

    ``plans`` counts the runs whose schedule was replayed, ``replays`` the replays of
    them (plans times the spec's ``runs``); the means are over the plans (a solver
    without one gets NaN and comes last). Solvers are ordered by
    mean realized makespan, then its 95th percentile, then name, as
    :func:`planner.replay.simulate.rank_by_realized` ranks plans.
    """
    out = []
    for solver, group in table.groupby("solver", sort=False):
        done = group[group["realized_makespan_mean"].notna()]
        out.append(
            {
                "solver": solver,
                "plans": len(done),
                "replays": sum(_replays(spec) for spec in done["simulation"]),
            }
            | {c: float(done[c].mean()) if c in done else math.nan for c in REALIZED[1:]}
        )
    ranked = pd.DataFrame(out, columns=["solver", "plans", "replays", *REALIZED[1:]])
    keys = ["realized_makespan_mean", "realized_makespan_p95", "solver"]
    return ranked.sort_values(keys, na_position="last").reset_index(drop=True)


_RUNS = re.compile(r"(?:^|,)\s*runs\s*=\s*(\d+)")


def unit_words(table: pd.DataFrame) -> str:
    """The unit of the times of the table's rows, in words: ``seconds``, ``ticks``, or
    both where its instances differ (the ``unit`` column says which, row by row)."""
    units = set(table["unit"].dropna()) - {""} if "unit" in table else set()
    if units == {"ticks"}:
        return "ticks"
    return (
        "seconds"
        if units <= {"s"}
        else "seconds where the instance's ticks have a length, else ticks"
    )


def _replays(spec: str) -> int:
    """The replays per plan of a simulation spec (its ``runs``, 1 by default)."""
    found = _RUNS.search(spec)
    return int(found[1]) if found else 1


def _mean_percent(values: pd.Series) -> float:
    values = values.dropna()
    return float(100 * values.mean()) if len(values) else math.nan


def markdown(table: pd.DataFrame) -> str:
    """A pipe table in Markdown; floats with 2 decimals (3 for runtimes), NaN as ``-``."""

    def cell(column: str, value: Any) -> str:
        if isinstance(value, float):
            if math.isnan(value):
                return "-"
            return f"{value:.3f}" if "runtime" in column else f"{value:.2f}"
        return str(value)

    columns = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in table.itertuples(index=False):
        lines.append(
            "| " + " | ".join(cell(c, v) for c, v in zip(columns, row, strict=True)) + " |"
        )
    return "\n".join(lines) + "\n"


def profile_column(table: pd.DataFrame) -> str:
    """The figure a study's performance profile compares: the realized makespan where the
    study ran its plans (the mean over its runs), else the planned objective."""
    realized = "realized_makespan_mean"
    if realized in table and table[realized].notna().any():
        return realized
    return "objective"


def profile_ratios(table: pd.DataFrame) -> dict[str, list[float]]:
    """Per solver, the ratio of each run's figure (:func:`profile_column`) to the best on
    its instance (inf if failed)."""
    column = profile_column(table)
    ok = table[~table["status"].isin(FAILED) & table[column].notna()]
    best = ok.groupby("instance")[column].min()
    out: dict[str, list[float]] = {}
    for row, obj in zip(table.itertuples(index=False), table[column], strict=True):
        b = best.get(row.instance)
        if row.status in FAILED or b is None or pd.isna(obj):
            ratio = math.inf
        elif b > 0:
            ratio = float(obj) / float(b)
        else:
            ratio = 1.0 if obj == b else math.inf
        out.setdefault(row.solver, []).append(ratio)
    return out


def plot_profile(table: pd.DataFrame, ax: Axes) -> Axes:
    """Draw the performance profile of the study on ``ax``.

    For each solver, the fraction of its runs whose figure (the realized makespan where
    the study ran its plans: :func:`profile_column`) is within a factor tau of the best on
    the instance, as tau grows; each solver in its colour (:func:`solver_colours`).
    """
    ratios = profile_ratios(table)
    colours = solver_colours(list(ratios))
    finite = [r for rs in ratios.values() for r in rs if math.isfinite(r)]
    top = max([*finite, 1.0]) * 1.02 + 0.01
    for solver, rs in ratios.items():
        xs = sorted(r for r in rs if math.isfinite(r))
        steps = [1.0, *xs, top]
        fractions = [0.0] + [(i + 1) / len(rs) for i in range(len(xs))] + [len(xs) / len(rs)]
        ax.step(steps, fractions, where="post", label=f"{solver} ({len(rs)} runs)",
                color=colours[solver])  # fmt: skip
    ax.set_xlim(1.0, top)
    ax.set_ylim(0, 1.02)
    what = ("realized makespan" if profile_column(table) != "objective"
            else "objective")  # fmt: skip
    ax.set_xlabel(f"tau: {what} / the best {what} on the instance")
    ax.set_ylabel("fraction of runs within tau")
    ax.set_title("performance profile")
    ax.grid(linewidth=0.3, alpha=0.6)
    ax.legend(loc="lower right", fontsize=8)
    return ax


def save_profile(table: pd.DataFrame, path: str | Path) -> None:
    """Write the performance profile of the study as an image (format from the suffix)."""
    from planner.app.figures import new_figure

    fig = new_figure(figsize=(7, 4.5), dpi=100)
    plot_profile(table, fig.add_subplot())
    fig.tight_layout()
    save_figure(fig, path)


ENERGY_DECIMALS = 2
"""The decimals a study prints energy with (:func:`markdown`), and decides ties on a
makespan-energy front by."""


def pareto_front(table: pd.DataFrame) -> pd.DataFrame:
    """The runs of a ``--pareto`` study as a front: per instance file (the stem before
    ``@``) and solver, its valid runs by makespan, with ``on_front`` where no other run of
    the instance file is as short and uses less energy, or is shorter and uses no more."""
    ok = table[table["makespan"].notna() & table["energy_kwh"].notna()]
    ok = ok[~ok["status"].isin(FAILED)].copy()
    ok["file"] = ok["instance"].str.rsplit("@", n=1).str[0]
    ok["makespan_watts"] = ok["instance"].str.rsplit("@", n=1).str[1].str.rstrip("W")
    # dominance on the figures as printed (energy to 2 decimals): points that print the
    # same are on the front together or off it together
    kwh = ok["energy_kwh"].round(ENERGY_DECIMALS)
    front = []
    for row, energy in zip(ok.itertuples(index=False), kwh, strict=True):
        same = ok["file"] == row.file
        rivals, rival_kwh = ok[same], kwh[same]
        dominated = ((rivals["makespan"] <= row.makespan) & (rival_kwh < energy)) | (
            (rivals["makespan"] < row.makespan) & (rival_kwh <= energy)
        )
        front.append(not dominated.any())
    ok["on_front"] = front
    columns = ["file", "solver", "seed", "makespan_watts", "makespan", "unit", "energy_kwh",
               "on_front"]  # fmt: skip
    return ok[columns].sort_values(["file", "solver", "makespan"]).reset_index(drop=True)


def save_pareto(front: pd.DataFrame, path: str | Path) -> None:
    """Draw the makespan-energy front of a ``--pareto`` study (:func:`pareto_front`), one
    panel per instance file: every solver's runs, and the front as a step line."""
    from planner.app.figures import new_figure

    files = list(dict.fromkeys(front["file"]))
    fig = new_figure(figsize=(7, 4.5 * max(1, len(files))), dpi=100)
    for k, name in enumerate(files):
        ax = fig.add_subplot(len(files), 1, k + 1)
        rows = front[front["file"] == name]
        colours = solver_colours(list(front["solver"]))
        for solver, runs in rows.groupby("solver", sort=False):
            ax.scatter(runs["makespan"], runs["energy_kwh"], label=str(solver), s=18,
                       color=colours[str(solver)])  # fmt: skip
        best = rows[rows["on_front"]].sort_values("makespan")
        ax.step(best["makespan"], best["energy_kwh"], where="post", color="black", lw=0.8)
        ax.set_xlabel(f"makespan ({unit_words(rows)})")
        ax.set_ylabel("energy (kWh)")
        ax.set_title(f"{name}: makespan against energy")
        ax.grid(linewidth=0.3, alpha=0.6)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)

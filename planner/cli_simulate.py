"""``planner simulate``: replay a plan under disturbances, once or as a Monte Carlo study.

The command is registered on :data:`planner.cli.app` when this module is
imported, which the last line of :mod:`planner.cli` does.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from planner.cli import app, guard, show
from planner.disturbances import Disturbances
from planner.errors import InputError
from planner.instance import load_instance
from planner.model import Problem
from planner.paths import check_output
from planner.schedule import Schedule, load_schedule
from planner.simulate import (
    Execution,
    RunSummary,
    distribution,
    draw_makespans,
    monte_carlo,
    save_run_gantt,
    simulate,
    summarize,
)

HISTOGRAM_FORMATS = (".png", ".svg", ".pdf")
"""Suffixes of the histogram ``--histogram`` writes."""


@app.command("simulate")
def simulate_cmd(
    instance: Annotated[Path, typer.Argument(help="Instance file of the plan.")],
    schedule: Annotated[Path, typer.Argument(help="The plan: a schedule file (.json or .csv).")],
    noise: Annotated[
        str | None,
        typer.Option(help="Noise on every segment's duration: lognormal:SIGMA or uniform:A."),
    ] = None,
    slowdown: Annotated[
        str,
        typer.Option(help="Interference slowdown: muri (Muri's factors), none, or a k,factor CSV."),
    ] = "muri",
    fail: Annotated[
        list[str] | None,
        typer.Option("--fail", help="A node failure NODE@TIME[+DOWN] in ticks (repeat for more)."),
    ] = None,
    work_conserving: Annotated[
        bool,
        typer.Option(
            "--work-conserving", help="Start tasks as soon as resources allow, not at plan time."
        ),
    ] = False,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the noise (first run).")] = 0,
    runs: Annotated[
        int, typer.Option(min=1, help="Monte Carlo runs, seeds SEED .. SEED + RUNS - 1.")
    ] = 1,
    jobs: Annotated[int, typer.Option(min=1, help="Worker processes of the runs.")] = 1,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the realized run of SEED (.json)."),
    ] = None,
    gantt: Annotated[
        Path | None,
        typer.Option(help="Gantt chart of the realized run (.png, .svg, .pdf or .html)."),
    ] = None,
    histogram: Annotated[
        Path | None,
        typer.Option(help="Histogram of the realized makespans (.png, .svg or .pdf; --runs >= 2)."),
    ] = None,
) -> None:
    """Replay a plan under noise, interference and node failures; report what it delivers.

    Prints the realized makespan, the mean and p99 JCT, the plan's optimism
    (realized / planned makespan), utilisation, lost work and the validator's
    verdict on the realized schedule; with --runs N the distribution of the
    realized makespan and mean JCT over N seeded runs.
    """
    from planner.gantt import FORMATS

    with guard():
        inputs = [instance, schedule]
        if output is not None:
            check_output(output, inputs=inputs, suffixes=(".json",), what="the run file")
        if gantt is not None:
            check_output(gantt, inputs=inputs, suffixes=FORMATS, what="the chart file")
        if histogram is not None:
            check_output(histogram, inputs=inputs, suffixes=HISTOGRAM_FORMATS, what="the histogram")
            if runs < 2:
                raise InputError("--histogram needs --runs 2 or more")
        dist = Disturbances.parse(noise, slowdown, fail or (), work_conserving)
        problem = load_instance(instance)
        plan = load_schedule(schedule)
        ex = simulate(problem, plan, dist, seed)
        show(_rows(ex, schedule))
        summaries = [summarize(ex)]
        if runs > 1:
            summaries += _more_runs(problem, plan, seed, dist, runs, jobs)
            typer.echo("")
            for line in _table(summaries, ex.problem.time_unit):
                typer.echo(line)
        if output is not None:
            data = ex.to_json()
            if runs > 1:
                data["monte_carlo"] = _study(summaries)
            output.write_text(json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            save_run_gantt(ex, gantt)
            typer.echo(f"chart written to {gantt}")
        if histogram is not None:
            _save_histogram(summaries, ex, histogram)
            typer.echo(f"histogram written to {histogram}")
    invalid = sum(not s.valid for s in summaries)
    if invalid:
        typer.echo(f"error: {invalid} realized schedules are invalid", err=True)
        raise typer.Exit(1)


def _describe(dist: Disturbances) -> str:
    parts = [
        f"noise {dist.noise}" if dist.noise else "no noise",
        f"slowdown {dist.slowdown.source}" if dist.slowdown else "no slowdown",
        "failures " + ", ".join(map(str, dist.failures)) if dist.failures else "no failures",
        "work-conserving" if dist.work_conserving else "plan starts",
    ]
    return ", ".join(parts)


def _rows(ex: Execution, schedule: Path) -> list[tuple[str, object]]:
    unit = f" ticks of {ex.problem.time_unit}"
    name = ex.problem.name.removesuffix(" (realized)")
    rows: list[tuple[str, object]] = [
        ("instance", f"{name} ({len(ex.runs)} tasks)"),
        ("plan", f"{schedule} (makespan {ex.planned_makespan})"),
        ("disturbances", _describe(ex.disturbances)),
        ("seed", ex.seed),
        ("makespan", f"{ex.makespan}{unit} (planned {ex.planned_makespan})"),
        ("optimism", f"{ex.optimism:.3f} (realized / planned makespan)"),
    ]
    if ex.mean_jct is not None:
        rows.append(("mean JCT", f"{ex.mean_jct:.1f}{unit} (planned {ex.planned_mean_jct:.1f})"))
        rows.append(("p99 JCT", f"{ex.p99_jct:.1f}{unit}"))
    rows.append(
        ("utilisation", ", ".join(f"{r} {100 * u:.1f}%" for r, u in ex.utilisation.items()))
    )
    if ex.disturbances.failures:
        reruns = sum(len(r.lost) for r in ex.runs)
        rows.append(
            (
                "lost work",
                f"{ex.lost_gpu_ticks} GPU-ticks, {ex.lost_task_ticks} task-ticks "
                f"({reruns} lost attempts)",
            )
        )
    rows += [("note", note) for note in ex.notes]
    rows.append(("validator", f"{ex.report} (realized run)"))
    return rows


def _more_runs(
    problem: Problem, plan: Schedule, seed: int, dist: Disturbances, runs: int, jobs: int
) -> list[RunSummary]:
    """The runs after the first (seeds ``seed + 1 ..``), with a progress bar on stderr."""
    from tqdm import tqdm

    with tqdm(total=runs, initial=1, unit="run", file=sys.stderr, desc="replays") as bar:
        return monte_carlo(
            problem,
            plan,
            dist,
            range(seed + 1, seed + runs),
            jobs=jobs,
            progress=lambda _: bar.update(),
        )


def _study(summaries: list[RunSummary]) -> dict[str, Any]:
    """The Monte Carlo figures of ``run.json``: distributions and one row per run."""
    jcts = [s.mean_jct for s in summaries if s.mean_jct is not None]
    return {
        "runs": len(summaries),
        "makespan": distribution([s.makespan for s in summaries]),
        "mean_jct": distribution(jcts) if jcts else None,
        "per_run": [asdict(s) for s in summaries],
    }


def _table(summaries: list[RunSummary], time_unit: str) -> list[str]:
    """The distribution table of the realized makespan and mean JCT."""
    study = _study(summaries)
    header = f"{len(summaries)} runs (ticks of {time_unit})"
    lines = [f"{header:<24}" + "".join(f"{c:>12}" for c in _COLUMNS)]
    for label, key in (("makespan", "makespan"), ("mean JCT", "mean_jct")):
        if study[key] is not None:
            cells = "".join(f"{study[key][c]:>12.1f}" for c in _COLUMNS)
            lines.append(f"{label:<24}{cells}")
    return lines


_COLUMNS = ("mean", "p5", "p50", "p95", "max")


def _save_histogram(summaries: list[RunSummary], ex: Execution, path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=120)
    draw_makespans(fig.add_subplot(), summaries, ex.planned_makespan, ex.problem.time_unit)
    fig.tight_layout()
    fig.savefig(path, format=path.suffix.lower()[1:])

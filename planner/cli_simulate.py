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
ONLINE_TIME_LIMIT = 1.0
"""Seconds per re-plan of ``--online`` for solvers with a time limit, unless ``--time-limit``."""


@app.command("simulate")
def simulate_cmd(
    instance: Annotated[Path, typer.Argument(help="Instance file of the plan.")],
    schedule: Annotated[
        Path | None, typer.Argument(help="The plan: a schedule file (.json or .csv).")
    ] = None,
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
    online: Annotated[
        bool,
        typer.Option(
            "--online", help="Plan online: re-plan as jobs arrive (no SCHEDULE), see --solver."
        ),
    ] = False,
    replan_every: Annotated[
        str,
        typer.Option(help="--online: re-plan at every 'arrival', or every SECONDS of the trace."),
    ] = "arrival",
    solver: Annotated[str, typer.Option(help="--online: the solver of every re-plan.")] = "sgs",
    time_limit: Annotated[
        float | None,
        typer.Option(help=f"--online: seconds per re-plan (default {ONLINE_TIME_LIMIT:g})."),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline", help="--online: also replay with this solver, e.g. exclusive-srtf."
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="--online: an option of --solver as KEY=VALUE (the value read as YAML), "
            "e.g. rule=spt; repeat for more.",
        ),
    ] = None,
) -> None:
    """Replay a plan under noise, interference and node failures; report what it delivers.

    Prints the realized makespan, the mean and p99 JCT, the plan's optimism
    (realized / planned makespan), utilisation, lost work and the validator's
    verdict on the realized schedule; with --runs N the distribution of the
    realized makespan and mean JCT over N seeded runs.

    With --online (and no SCHEDULE) the jobs are planned as they arrive: at every
    arrival (or every --replan-every seconds) what has not started is re-planned with
    --solver; prints the mean and p99 JCT, the makespan, the queueing delay and the
    planner time per re-plan, for the solver and every --baseline.
    """
    from planner.gantt import FORMATS

    if online:
        _online(
            instance,
            schedule,
            noise,
            slowdown,
            fail or (),
            work_conserving,
            seed,
            runs,
            output,
            gantt,
            histogram,
            replan_every,
            solver,
            time_limit,
            baseline or [],
            option or [],
        )
        return
    with guard():
        if schedule is None:
            raise InputError("give the plan (SCHEDULE), or --online to plan as jobs arrive")
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


def _solver_options(specs: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs of ``--option``, each value read as YAML (``5`` is a number)."""
    import yaml

    out: dict[str, object] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option {spec!r}: expected KEY=VALUE, e.g. rule=spt")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise InputError(f"--option {spec!r}: the value is not a YAML scalar") from None
    return out


def _online(
    instance: Path,
    schedule: Path | None,
    noise: str | None,
    slowdown: str,
    fail: list[str] | tuple[str, ...],
    work_conserving: bool,
    seed: int,
    runs: int,
    output: Path | None,
    gantt: Path | None,
    histogram: Path | None,
    replan_every: str,
    solver: str,
    time_limit: float | None,
    baselines: list[str],
    option: list[str],
) -> None:
    """``simulate --online``: the solver and each baseline under the same replay."""
    from planner.cluster import tick_seconds
    from planner.gantt import FORMATS
    from planner.replan import simulate_online
    from solvers.registry import applicable, options_of

    with guard():
        if schedule is not None:
            raise InputError("--online plans as jobs arrive: give no SCHEDULE")
        if runs > 1 or histogram is not None:
            raise InputError("--online replays once: --runs and --histogram do not apply")
        if output is not None:
            check_output(output, inputs=[instance], suffixes=(".json",), what="the run file")
        if gantt is not None:
            check_output(gantt, inputs=[instance], suffixes=FORMATS, what="the chart file")
        dist = Disturbances.parse(noise, slowdown, fail, work_conserving)
        extra = _solver_options(option)
        problem = load_instance(instance)
        every: str | int = replan_every
        if replan_every != "arrival":
            try:
                secs = float(replan_every)
            except ValueError:
                secs = -1.0
            if not secs > 0:
                raise InputError(
                    f"--replan-every {replan_every!r}: expected 'arrival' or seconds > 0"
                )
            tick = tick_seconds(problem.time_unit) if problem.time_unit != "1" else 1.0
            every = max(1, round(secs / tick))
        runs_done = []
        for name in [solver, *baselines]:
            wanted = {"time_limit": ONLINE_TIME_LIMIT if time_limit is None else time_limit}
            if time_limit is not None and name == solver and "time_limit" not in options_of(name):
                raise InputError(f"solver {name!r} has no option 'time_limit'")
            chosen = applicable(name, wanted) | (extra if name == solver else {})
            run = simulate_online(problem, name, every, dist, seed, **chosen)
            runs_done.append(run)
        show(
            [
                ("instance", f"{problem.name} ({len(problem.tasks)} tasks)"),
                ("disturbances", _describe(dist)),
                ("re-plans", f"at every {replan_every}" + ("" if every == "arrival" else " s")),
            ]
        )
        typer.echo("")
        header = ["solver", "re-plans", "mean JCT", "p99 JCT", "makespan", "queueing", "plan s"]
        typer.echo("".join(f"{h:>16}" for h in header) + f"   (ticks of {problem.time_unit})")
        for run in runs_done:
            f = run.figures()
            cells = [
                run.solver,
                f["replans"],
                f"{f['mean_jct']:.1f}",
                f"{f['p99_jct']:.1f}",
                f["makespan"],
                f"{f['mean_queueing']:.1f}",
                f"{f['planner_mean_seconds']:.3f}",
            ]
            typer.echo("".join(f"{c:>16}" for c in cells))
        verdicts = ", ".join(str(r.execution.report) for r in runs_done)
        typer.echo(f"validator: {verdicts} (realized runs)")
        main = runs_done[0]
        if output is not None:
            data = main.execution.to_json()
            data["online"] = [r.figures() for r in runs_done]
            output.write_text(json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            save_run_gantt(main.execution, gantt)
            typer.echo(f"chart written to {gantt}")
    if any(not r.execution.report.ok for r in runs_done):
        typer.echo("error: a realized schedule is invalid", err=True)
        raise typer.Exit(1)

"""``planner simulate``: replay a plan under disturbances, once or as a Monte Carlo study.

The command is registered on :data:`planner.app.cli.app` when this module is
imported, which the last line of :mod:`planner.app.cli` does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from planner.app.base import (
    MAX_WORKERS,
    TIME_LIMIT_RANGE,
    app,
    chosen_options,
    guard,
    refuse_run_as_plan,
    show,
    time_limit_option,
)
from planner.app.colocation import FORMATS as CHART_FORMATS
from planner.app.colocation import save_colocation_chart
from planner.app.gantt import save_run_gantt
from planner.errors import InputError
from planner.execution.disturbances import MAX_RUNS, MAX_SEED, MAX_SIGMA, Disturbances, Noise
from planner.execution.simulate import (
    Execution,
    Study,
    draw_makespans,
    monte_carlo,
    simulate,
    summarize,
)
from planner.execution.table import dispatch_data
from planner.io.instance import load_instance
from planner.io.paths import check_distinct, check_output
from planner.model import Problem
from planner.schedule import Schedule, load_schedule
from planner.times import parse_ticks, tick_label

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
        typer.Option(
            help="Noise on every segment's duration: lognormal:SIGMA (0 <= SIGMA <= "
            f"{MAX_SIGMA:g}) or uniform:A (0 <= A < 1)."
        ),
    ] = None,
    slowdown: Annotated[
        str | None,
        typer.Option(
            help="Interference slowdown: muri (Muri's factors, the default), none, or a "
            "k,factor CSV."
        ),
    ] = None,
    fail: Annotated[
        list[str] | None,
        typer.Option(
            "--fail",
            help="A node failure NODE@TIME[+DOWN]: whole ticks or times with a unit "
            "(node3@2h+30min); repeat for more, a node failing again only once it is back.",
        ),
    ] = None,
    work_conserving: Annotated[
        bool,
        typer.Option(
            "--work-conserving", help="Start tasks as soon as resources allow, not at plan time."
        ),
    ] = False,
    seed: Annotated[
        int,
        typer.Option(min=0, max=MAX_SEED, help=f"Seed of the noise (first run; 0 to {MAX_SEED})."),
    ] = 0,
    runs: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_RUNS,
            help=f"Monte Carlo runs, seeds SEED .. SEED + RUNS - 1 (1 to {MAX_RUNS:,}).",
        ),
    ] = 1,
    jobs: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_WORKERS, help=f"Worker processes of the runs (1 to {MAX_WORKERS})."
        ),
    ] = 1,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the realized run of SEED (.json); job by job (--policy, or a plan "
            "under --interleave), .csv writes its co-location table instead.",
        ),
    ] = None,
    gantt: Annotated[
        Path | None,
        typer.Option(
            help="Chart of the run: job by job its co-location chart (.png, .svg, .pdf), task "
            "by task its Gantt chart (also .html)."
        ),
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
        typer.Option(
            help="--online of a task graph: re-plan at every 'arrival', or every PERIOD: whole "
            "ticks or a time with a unit (30min, 2h)."
        ),
    ] = "arrival",
    solver: Annotated[
        str | None,
        typer.Option(
            "--solver",
            "-s",
            help="--online and --policy planner: the solver of every re-plan (training jobs: "
            "portfolio, the default, searches in the executor's model; a static engine "
            "plans in the static block model; task graphs: sgs by default).",
        ),
    ] = None,
    time_limit: Annotated[
        float | None,
        typer.Option(
            callback=time_limit_option,
            help="--online, --policy planner: seconds per re-plan, for solvers with a limit "
            f"(default "
            f"{ONLINE_TIME_LIMIT:g}; {TIME_LIMIT_RANGE}); sgs makes one pass and takes none.",
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            help="--online: also run this policy on the same jobs (training jobs: muri-s, "
            "srsf-pack, FILE.py:CLASS, ...), or this solver (task graphs: exclusive-srtf, ...).",
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            help="Run a job-level policy instead of a plan: the peers srtf, srsf, tiresias, "
            "muri-s, muri-l, or ours: lp-groups (groups from a linear program re-solved at "
            "every event, for the makespan) and srsf-pack (for the mean JCT), or your own: "
            "FILE.py:CLASS (a planner.execution.policies.Policy); on a Muri trace (.csv) or a "
            "cluster-form instance (no SCHEDULE)."
        ),
    ] = None,
    interleave: Annotated[
        str | None,
        typer.Option(
            help="The interleaving model that sets every GPU set's speed: muri (Muri's "
            "rotation) or fluid (processor sharing). With --policy (default muri); with a "
            "SCHEDULE it executes the plan job by job on its nodes under that model."
        ),
    ] = None,
    data_slots: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            max=64,
            help="The fluid model's data slots per GPU (0.1 to 64; default: the instance's, 1).",
        ),
    ] = None,
    restart: Annotated[
        bool | None,
        typer.Option(
            "--restart/--no-restart",
            help="Job by job: charge each running job its model's restart overhead on every "
            "interval between events, as Muri's simulator does (the default).",
        ),
    ] = None,
    power_cap: Annotated[
        float | None,
        typer.Option(
            "--power-cap",
            min=1.0,
            max=1e9,
            help="Job by job: watts the cluster may draw (1 to 1e9); every running job slows "
            "alike when the GPUs would draw more (default: the instance's power.cap, else none).",
        ),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            min=1, max=10_000, help="--policy on a trace: nodes (1 to 10,000; default 8)."
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            min=1, max=64, help="--policy on a trace: GPUs per node (1 to 64; default 8)."
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="--online, --policy planner: an option of --solver as KEY=VALUE (read as YAML), "
            "e.g. rule=spt; repeat for more.",
        ),
    ] = None,
) -> None:
    """Run a plan, a policy or the planner online; report what it delivers.

    Training jobs run in the job-level executor (one model, stated on one line):
    a plan (SCHEDULE), a policy (--policy), or the planner re-planning at every
    arrival (--online, beside --baseline policies in one table). Prints the
    makespan against the model's bounds, the mean and p99 JCT, the energy, the
    optimism of a plan and the audit's verdict; with --runs N the distribution of
    the makespan and mean JCT over N seeded runs.

    A task graph without training jobs is replayed task by task: the realized
    makespan, JCTs, utilisation, lost work and the validator's verdict on the
    realized schedule.
    """
    from planner.app.gantt import FORMATS
    from planner.execution.runs import DEFAULT_SLOWDOWN, Setting, dl_workload

    with guard():
        if schedule is not None:
            refuse_run_as_plan(schedule, "replay the plan it ran (planner gantt draws a run)")
        job_level_only = {
            "--interleave": interleave is not None,
            "--data-slots": data_slots is not None,
            "--restart/--no-restart": restart is not None,
            "--power-cap": power_cap is not None,
        }
        trace_only = {"--nodes": nodes is not None, "--gpus-per-node": gpus_per_node is not None}
        online_only = {"--replan-every": replan_every != "arrival", "--baseline": bool(baseline)}
        planner_only = {
            "--solver": solver is not None,
            "--time-limit": time_limit is not None,
            "--option": bool(option),
        }
        if not online:
            _refuse(online_only, "applies to --online only")
            if policy != "planner":
                _refuse(planner_only, "applies to --online and --policy planner only")
        if policy is None:
            _refuse(trace_only, "applies to --policy on a trace only")
        planner = None
        if policy == "planner" and not online:
            planner = _planner_options(solver, time_limit, option or [], job_level=True)
    slowdown_given = slowdown
    slowdown = slowdown or DEFAULT_SLOWDOWN
    if online:
        with guard():
            if policy is not None:
                raise InputError("--policy runs a policy; --online runs the planner: give one")
            workload, why = dl_workload(instance)
            planner = _planner_options(solver, time_limit, option or [], workload is not None)
            if workload is not None:
                setting = Setting(
                    interleave, data_slots, slowdown, True if restart is None else restart
                )
                online_run = _JobOnline(setting, power_cap, planner)  # type: ignore[arg-type]
                online_run.run(instance, workload, schedule, noise, seed, fail or (), runs,
                               output, gantt, histogram, replan_every, work_conserving,
                               baseline or [], nodes or 8, gpus_per_node or 8)  # fmt: skip
                return
            _refuse(
                job_level_only, f"runs job by job; {instance} is {why} (task-level online replay)"
            )
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
            planner,  # type: ignore[arg-type]
            baseline or [],
        )
        return
    with guard():
        if policy is None and schedule is None:
            raise InputError(
                "give the plan (SCHEDULE), --policy, or --online to plan as jobs arrive"
            )
        if policy is not None and schedule is not None:
            raise InputError("--policy runs a policy instead of a plan: give no SCHEDULE")
        if policy is not None:  # a policy runs training jobs, or says why it cannot
            from planner.execution.jobs import jobs_from_instance

            workload, why = jobs_from_instance(instance), ""
        else:
            workload, why = dl_workload(instance)
        if workload is not None:
            if work_conserving and policy:
                raise InputError("--work-conserving dispatches a plan; --policy runs no plan")
            if histogram is not None and runs < 2:
                raise InputError("--histogram needs --runs 2 or more")
            if seed + runs - 1 > MAX_SEED:
                raise InputError(f"--seed {seed} --runs {runs}: the last seed passes {MAX_SEED}")
            inputs = [instance, *([schedule] if schedule is not None else [])]
            if output is not None:
                suffixes = (".json", ".csv")
                check_output(output, inputs=inputs, suffixes=suffixes, what="the run file")
            if gantt is not None:
                check_output(gantt, inputs=inputs, suffixes=CHART_FORMATS, what="the chart file")
            if histogram is not None:
                check_output(
                    histogram, inputs=inputs, suffixes=HISTOGRAM_FORMATS, what="the histogram"
                )
            check_distinct({"--output": output, "--gantt": gantt, "--histogram": histogram})
            restarts = True if restart is None else restart
            setting = Setting(interleave, data_slots, slowdown, restarts)
            if data_slots is not None and setting.model(workload).kind != "fluid":
                raise InputError(
                    "--data-slots: data slots are fluid's; muri loads over two of four slots"
                )
            table = _dispatch_file(schedule) if schedule is not None else None
            if table is not None:
                setting = _dispatch_setting(
                    table,
                    {"--interleave": interleave, "--data-slots": data_slots,
                     "--slowdown": slowdown_given, "--restart": restart},
                    {"--noise": noise, "--fail": fail, "--work-conserving": work_conserving,
                     "--power-cap": power_cap},
                )  # fmt: skip
            job_level = _JobLevel(setting, power_cap, planner, table)
            job_level.run(instance, workload, schedule, policy, nodes or 8, gpus_per_node or 8,
                          work_conserving, output, noise, seed, fail or (), runs, jobs,
                          histogram, gantt)  # fmt: skip
            return
        _refuse(job_level_only, f"runs job by job; {instance} is {why} (task-level replay)")
        inputs = [instance, schedule]
        if output is not None:
            check_output(output, inputs=inputs, suffixes=(".json",), what="the run file")
        if gantt is not None:
            check_output(gantt, inputs=inputs, suffixes=FORMATS, what="the chart file")
        if histogram is not None:
            check_output(histogram, inputs=inputs, suffixes=HISTOGRAM_FORMATS, what="the histogram")
            if runs < 2:
                raise InputError("--histogram needs --runs 2 or more")
        check_distinct({"--output": output, "--gantt": gantt, "--histogram": histogram})
        if seed + runs - 1 > MAX_SEED:
            raise InputError(f"--seed {seed} --runs {runs}: the last seed passes {MAX_SEED}")
        problem = load_instance(instance)
        dist = Disturbances.parse(noise, slowdown, fail or (), work_conserving, problem.time_unit)
        plan = load_schedule(schedule)
        try:
            ex = simulate(problem, plan, dist, seed)
        except KeyboardInterrupt:
            typer.echo("interrupted: no run had finished; nothing was written", err=True)
            raise typer.Exit(130) from None
        typer.echo(f"task-level replay: {instance} is {why}")
        if runs > 1:
            typer.echo(f"The run of seed {seed} (the first of {runs}; their distribution follows)")
        show(_rows(ex, schedule))
        study = Study(runs)
        study.add(summarize(ex))
        if runs > 1:
            _more_runs(problem, plan, seed, dist, runs, jobs, study)
            typer.echo("")
            if study.interrupted:
                typer.echo(
                    f"interrupted: {len(study)} of {runs} runs finished; the table and the "
                    "files below hold them"
                )
            for line in _table(study, tick_label(ex.problem.time_unit)):
                typer.echo(line)
        if output is not None:
            data = ex.to_json()
            if runs > 1:
                data["monte_carlo"] = study.figures()
            output.write_text(json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            save_run_gantt(ex, gantt)
            typer.echo(f"chart written to {gantt}")
        if histogram is not None:
            _save_histogram(study, ex.planned_makespan, tick_label(ex.problem.time_unit), histogram)
            typer.echo(f"histogram written to {histogram}")
    if study.invalid:
        typer.echo(f"error: {study.invalid} realized schedules are invalid", err=True)
        raise typer.Exit(1)
    if study.interrupted:
        raise typer.Exit(130)


def _dispatch_file(path: Path) -> Any:
    """The :class:`~planner.execution.table.DispatchPlan` of ``path`` if it is a dispatch
    file of ``planner solve`` (``None``: another file).

    Raises
    ------
    InputError
        For a malformed dispatch file.
    """
    from planner.execution.table import DispatchPlan

    data = dispatch_data(path)
    return None if data is None else DispatchPlan.from_data(data, str(path))


def _dispatch_setting(plan: Any, model: dict[str, object], others: dict[str, object]) -> Any:
    """The setting of the dispatch ``plan``: a dispatch runs in the model it was planned
    in, so the executor's options given (``model``) must be its own, and disturbances
    (``others``) are refused: it replays its events as planned.

    Raises
    ------
    InputError
        For an option that differs from the dispatch's, or a disturbance.
    """
    s = plan.setting
    theirs = {"--interleave": s.interleave, "--data-slots": s.data_slots,
              "--slowdown": s.slowdown, "--restart": s.restart}  # fmt: skip
    for flag, mine in model.items():
        if mine is not None and mine != theirs[flag]:
            raise InputError(
                f"{flag} {mine}: the dispatch was planned with {theirs[flag]} and runs in "
                "the model it was planned in"
            )
    _refuse(others, "does not apply to a dispatch, which runs its events as planned (run "
            "its policy with --policy to disturb it)")  # fmt: skip
    return s


def _refuse(given: dict[str, object], why: str) -> None:
    """Refuse the first option of ``given`` that was given: it ``why``."""
    clash = next((k for k, v in given.items() if v), None)
    if clash is not None:
        raise InputError(f"{clash} {why}")


def _describe(dist: Disturbances) -> str:
    parts = [
        f"noise {dist.noise}" if dist.noise else "no noise",
        f"slowdown {dist.slowdown.source}" if dist.slowdown else "no slowdown",
        "failures " + ", ".join(map(str, dist.failures)) if dist.failures else "no failures",
        "work-conserving" if dist.work_conserving else "plan starts",
    ]
    return ", ".join(parts)


def _rows(ex: Execution, schedule: Path) -> list[tuple[str, object]]:
    unit = f" {tick_label(ex.problem.time_unit)}"
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
                f"({reruns} lost attempt{'s' * (reruns != 1)})",
            )
        )
    rows += [("note", note) for note in ex.notes]
    rows.append(("validator", f"{ex.report} (realized run)"))
    return rows


def _more_runs(
    problem: Problem,
    plan: Schedule,
    seed: int,
    dist: Disturbances,
    runs: int,
    jobs: int,
    study: Study,
) -> None:
    """The runs after the first (seeds ``seed + 1 ..``) into ``study``, with a progress
    bar on stderr; the first Ctrl-C stops them (:attr:`Study.interrupted`), a second
    aborts."""
    from tqdm import tqdm

    from planner.interrupt import Halt

    halt = Halt()
    with tqdm(total=runs, initial=1, unit="run", file=sys.stderr, desc="replays") as bar:
        try:
            monte_carlo(
                problem,
                plan,
                dist,
                runs - 1,
                seed + 1,
                jobs=jobs,
                progress=lambda _: bar.update(),
                study=study,
                halt=halt,
            )
        except KeyboardInterrupt:
            if halt.is_set():
                raise  # the second Ctrl-C
            study.interrupted = True  # a Ctrl-C before the runs began, or as they ended


def _table(study: Study, unit: str) -> list[str]:
    """The distribution table of the realized makespan and mean JCT."""
    figures = study.figures(per_run=False)
    header = f"{len(study)} runs ({unit})"
    lines = [f"{header:<28}" + "".join(f"{c:>12}" for c in _COLUMNS)]
    for label, key in (("makespan", "makespan"), ("mean JCT", "mean_jct")):
        if figures[key] is not None:
            cells = "".join(f"{figures[key][c]:>12.1f}" for c in _COLUMNS)
            lines.append(f"{label:<28}{cells}")
    return lines


_COLUMNS = ("mean", "p5", "p50", "p95", "max")


def _save_histogram(study: Study, planned: float | None, unit: str, path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=120)
    draw_makespans(fig.add_subplot(), study, planned, unit)
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
    planner: tuple[str, dict[str, Any]],
    baselines: list[str],
) -> None:
    """``simulate --online`` of a task graph: the solver (``planner``: it and its options,
    checked) and each baseline under the same replay."""
    from planner.app.gantt import FORMATS
    from planner.solvers.registry import check_options, solver_function

    with guard():
        _check_online(instance, schedule, runs, histogram, output, gantt, FORMATS)
        problem = load_instance(instance)
        dist = Disturbances.parse(noise, slowdown, fail, work_conserving, problem.time_unit)
        every: str | int = replan_every
        if replan_every != "arrival":
            every = parse_ticks(replan_every, problem.time_unit, "--replan-every")
            if every < 1:
                raise InputError("--replan-every: the period must be at least one tick")
        solver, options = planner
        chosen = {solver: options}
        for name in baselines:
            if name not in chosen:
                chosen[name] = chosen_options(name, None, ONLINE_TIME_LIMIT)
                check_options(name, solver_function(name), chosen[name])
        runs_done = _online_runs(problem, chosen, every, dist, seed)
        unit = tick_label(problem.time_unit)
        period = "arrival" if every == "arrival" else f"{every} {unit}"
        show(
            [
                ("instance", f"{problem.name} ({len(problem.tasks)} tasks)"),
                ("disturbances", _describe(dist)),
                ("re-plans", f"at every {period}"),
            ]
        )
        typer.echo("")
        typer.echo(f"JCT, makespan and queueing in {unit}; planner time in seconds per re-plan")
        header = ["solver", "jobs", "re-plans", "mean JCT", "p99 JCT", "makespan", "queueing"]
        typer.echo("".join(f"{h:>14}" for h in [*header, "planner s"]))
        for run in runs_done:
            f = run.figures()
            cells = [
                run.solver,
                f["jobs"],
                f["replans"],
                f"{f['mean_jct']:.1f}",
                f"{f['p99_jct']:.1f}",
                f["makespan"],
                f"{f['mean_queueing']:.1f}",
                f"{f['planner_mean_seconds']:.3f}",
            ]
            typer.echo("".join(f"{c:>14}" for c in cells))
        verdicts = ", ".join(str(r.execution.report) for r in runs_done)
        typer.echo(f"validator: {verdicts} (realized runs)")
        interrupted = runs_done[-1].interrupted or len(runs_done) < len(chosen)
        if interrupted:
            typer.echo(
                f"interrupted: {len(runs_done)} of {len(chosen)} online runs, the last over the "
                f"{runs_done[-1].jobs} jobs arrived by its last re-plan; the files below hold "
                "the first"
            )
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
    if interrupted:
        raise typer.Exit(130)


def _online_runs(
    problem: Problem,
    chosen: dict[str, dict[str, Any]],
    every: str | int,
    dist: Disturbances,
    seed: int,
) -> list[Any]:
    """One online run per solver (``chosen``: solver -> options), each with a progress bar
    on stderr. The first Ctrl-C stops the re-plans after the one in progress; the runs
    done (the cut one included, over the jobs arrived so far) are returned."""
    from tqdm import tqdm

    from planner.execution.online import simulate_online
    from planner.interrupt import Halt, run_interruptibly

    halt = Halt()
    out: list[Any] = []
    for name, options in chosen.items():
        with tqdm(unit="re-plan", file=sys.stderr, desc=f"{name} online") as bar:

            def step(done: int, total: int, bar: Any = bar) -> None:
                bar.total = total
                bar.update(done - bar.n)

            def work(name: str = name, options: dict[str, Any] = options) -> Any:
                return simulate_online(
                    problem, name, every, dist, seed, progress=step, halt=halt, **options
                )

            try:
                run, _ = run_interruptibly(work, halt.set, "online")
            except KeyboardInterrupt:
                if halt.is_set():
                    raise  # the second Ctrl-C aborts
                halt.set()  # a Ctrl-C outside the re-plans: the runs done are kept
                if not out:
                    typer.echo(
                        "interrupted: no re-plan had finished; nothing was written", err=True
                    )
                    raise typer.Exit(130) from None
                break
        out.append(run)
        if halt.is_set():
            break
    return out


def _write_table(path: Path, rows: list[dict[str, Any]]) -> None:
    """The co-location table as CSV: per stretch of a job on one GPU set with the same
    partners, the job, the GPUs (``node3:0-3``, ``+`` between the nodes of a gang), its
    start and end (seconds) and its partners (``;``-separated)."""
    import csv

    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["job", "gpus", "start", "end", "partners"])
        for r in rows:
            start, end = f"{r['start']:.3f}", f"{r['end']:.3f}"
            writer.writerow([r["job"], r["gpus"], start, end, ";".join(r["partners"])])


@dataclass(frozen=True)
class _JobLevel:
    """``simulate --policy`` and ``simulate SCHEDULE`` of an instance with training jobs: the
    job-level executor (:mod:`planner.execution.executor`) under one setting, once or as a
    Monte Carlo study."""

    setting: Any
    """The :class:`~planner.execution.runs.Setting`."""
    power_cap: float | None = None
    """Watts (``None``: the instance's cap, if any)."""
    planner: tuple[str, dict[str, Any]] | None = None
    """``--policy planner`` and ``--online``: the solver and its options."""
    table: Any = None
    """The :class:`~planner.execution.table.DispatchPlan` of the plan file, if it is a
    dispatch file."""

    def run(
        self,
        instance: Path,
        workload: Any,
        schedule: Path | None,
        policy: str | None,
        nodes: int,
        gpus_per_node: int,
        work_conserving: bool,
        output: Path | None,
        noise: str | None = None,
        seed: int = 0,
        fail: Sequence[str] = (),
        runs: int = 1,
        jobs: int = 1,
        histogram: Path | None = None,
        gantt: Path | None = None,
    ) -> None:
        """Run the policy, or the plan, and print (and write) what it gives; with
        ``noise``, every job's iteration time scaled by one factor drawn from ``seed``;
        with ``fail``, nodes down as the failure specs say; with ``runs``, the seeds after
        ``seed`` too, their distribution printed (and drawn in ``histogram``)."""
        from tqdm import tqdm

        from planner.execution.audit import audit
        from planner.execution.disturbances import Failure
        from planner.execution.jobs import outages_of
        from planner.execution.policies import policy_of
        from planner.execution.power import run_energy
        from planner.execution.runs import dispatch_of
        from planner.interrupt import Halt, run_interruptibly

        if policy is not None and policy != "planner":
            policy_of(policy)  # an unknown name, or a user's file that fails: bad input
        if workload.nodes is None:
            from dataclasses import replace

            workload = replace(workload, nodes=nodes, gpus_per_node=gpus_per_node)
        plan = None
        if schedule is not None and self.table is None:
            problem = load_instance(instance)
            plan = (problem, load_schedule(schedule, problem))
        names = workload.names(workload.nodes)
        failures = [Failure.parse(spec, workload.time_unit) for spec in fail]
        outages = outages_of(failures, names, workload.time_unit)
        if self.table is not None:
            dispatch = self.table.dispatch(workload)
        else:
            dispatch = dispatch_of(
                workload,
                self.setting,
                policy or "plan",
                plan,
                work_conserving,
                outages,
                Noise.parse(noise) if noise is not None else None,
                self.power_cap,
            )
        if policy == "planner" and self.planner is not None:
            from planner.execution.policies.planner import online_planner
            from planner.execution.runs import workload_problem

            solver, options = self.planner
            problem = None
            if solver != "portfolio":
                problem = workload_problem(instance, dispatch.nodes, dispatch.gpus_per_node)
            dispatch.make = online_planner(problem, solver, **options)
        halt = Halt()
        bar = tqdm(total=len(dispatch.jobs), unit="job", file=sys.stderr, desc=dispatch.policy)
        with bar:

            def work() -> Any:
                return dispatch.run(seed, lambda done, _: bar.update(done - bar.n), halt)

            run, _ = run_interruptibly(work, halt.set, dispatch.policy)
        if runs > 1:
            typer.echo(f"The run of seed {seed} (the first of {runs}; their distribution follows)")
        ran = dispatch.jobs_of(seed)
        violations = audit(run, ran, dispatch.nodes * dispatch.gpus_per_node)
        energy = None
        if run.finished or output is not None or gantt is not None:
            energy = run_energy(run, ran, dispatch.nodes * dispatch.gpus_per_node,
                                workload.tariff, workload.switch_off)  # fmt: skip
        show(_run_rows(instance, schedule, dispatch, run, self.setting, noise, seed, fail,
                       workload, energy, violations))  # fmt: skip
        wrong = bool(violations)
        if not run.finished:
            typer.echo(f"interrupted: {len(run.finish)} of {len(dispatch.jobs)} jobs had finished")
        study = None
        if runs > 1 and run.finished:
            study = Study(runs)
            study.add(dispatch.summary(seed, run, valid=not violations))
            _more_job_runs(dispatch, seed, runs, jobs, study)
            typer.echo("")
            if study.interrupted:
                typer.echo(
                    f"interrupted: {len(study)} of {runs} runs finished; the table and the "
                    "files below hold them"
                )
            for line in _table(study, "seconds"):
                typer.echo(line)
            wrong = wrong or bool(study.invalid)
        data: dict[str, Any] = {}
        if energy is not None and (output is not None or gantt is not None):
            data = _run_data(instance, dispatch, run, self.setting, fail, names, noise, seed,
                             work_conserving, energy)  # fmt: skip
        if output is not None and output.suffix.lower() == ".csv":
            _write_table(output, data["residences"])
            typer.echo(f"co-location table written to {output}")
        elif output is not None:
            if study is not None:
                data["monte_carlo"] = study.figures()
            output.write_text(json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            sets = save_colocation_chart(data, gantt)
            typer.echo(f"chart written to {gantt} (job-level run of seed {seed}, {sets} GPU sets)")
        if histogram is not None and study is not None:
            _save_histogram(study, dispatch.planned, "seconds", histogram)
            typer.echo(f"histogram written to {histogram}")
        if wrong:
            typer.echo("error: a run fails its audit (a bug)", err=True)
            raise typer.Exit(1)
        if not run.finished or (study is not None and study.interrupted):
            raise typer.Exit(130)


def _run_rows(
    instance: Path,
    schedule: Path | None,
    dispatch: Any,
    run: Any,
    setting: Any,
    noise: str | None,
    seed: int,
    fail: Sequence[str],
    workload: Any,
    energy: Any,
    violations: Sequence[str],
) -> list[tuple[str, object]]:
    """The lines ``simulate`` prints of a job-level run, with its ``energy`` (``None``:
    not figured) and the audit's ``violations``."""
    from planner.execution.fairness import fairness, fairness_rows
    from planner.execution.grouping import mix_bound
    from planner.execution.search import completion_bound
    from planner.interleave import binding, model_bound

    jobs, model, cap = dispatch.jobs_of(seed), dispatch.model, dispatch.power_cap
    total = dispatch.nodes * dispatch.gpus_per_node
    bound = model_bound([(j.gpus, j.iterations, j.stages) for j in jobs], total, model)
    budget = None if cap is None else (cap - total * dispatch.watts[1], dispatch.watts)
    mix = mix_bound(jobs, model, total, budget)
    what = f"{len(jobs)} jobs, {dispatch.nodes} nodes x {dispatch.gpus_per_node} GPUs"
    rows: list[tuple[str, object]] = [
        ("instance", f"{instance} ({what})"),
        ("policy", dispatch.policy)
        if schedule is None
        else (
            "plan",
            f"{schedule} (a dispatch, makespan {dispatch.planned:,.0f} s in this model)"
            if dispatch.policy == "dispatch"
            else f"{schedule} (makespan {dispatch.planned:,.0f} s in the static block model)",
        ),
        ("model", f"{setting.line(model)} (job-level executor)"),
        ("noise", f"{noise}, seed {seed} (one factor per job)" if noise else "none"),
        ("failures", ", ".join(fail) if fail else "none"),
        ("power cap", f"{cap:,.0f} W" if cap else "none"),
        ("bound", f"{bound['bound']:,.0f} s ({binding(bound)}, under {model.kind})"),
        (
            "mix bound",
            f"{mix:,.0f} s (groups of one GPU count, regrouped at will"
            + (", under the power cap)" if cap else ")"),
        ),
    ]
    if run.finished and energy is not None:
        jct_bound = completion_bound(jobs, model, {})
        rows += [
            (
                "makespan",
                f"{run.makespan:,.0f} s ({run.makespan / bound['bound']:.3f} x bound, "
                f"{run.makespan / mix:.3f} x mix bound)",
            ),
            ("mean JCT", f"{run.mean_jct:,.0f} s"),
            (
                "JCT bound",
                f"{jct_bound:,.0f} s mean ({run.mean_jct / jct_bound:.3f} x; every job alone "
                "at its least period from its release)",
            ),
            ("p99 JCT", f"{run.p99_jct:,.0f} s"),
            *fairness_rows(fairness(run, jobs, total)),
            (
                "energy",
                f"{energy.kwh:,.1f} kWh, mean {energy.mean_kw:.1f} kW, peak "
                f"{energy.peak_kw:.1f} kW (GPUs: {run.watts[0]:g} W busy, "
                f"{run.watts[1]:g} W idle" + (", idle ones off)" if workload.switch_off else ")"),
            ),
        ]
        if energy.cost is not None:
            rows.append(("energy cost", f"{energy.cost:,.2f} (the instance's tariff)"))
        if dispatch.planned:
            rows.append(
                ("optimism", f"{run.makespan / dispatch.planned:.3f} (executed / planned makespan)")
            )
    sizes = sum(run.groups.values()) or 1
    share = ", ".join(f"{k}: {100 * n / sizes:.1f}%" for k, n in sorted(run.groups.items()))
    wrong = violations
    verdict = (
        "valid (GPUs, groups and every job's work, from the run's trace)"
        if not wrong
        else f"INVALID: {wrong[0]} ({len(wrong)} violations)"
    )
    if run.planning:
        plans = run.planning
        rows.append(
            (
                "re-plans",
                f"{len(plans)}, mean {sum(plans) / len(plans):.3f} s, longest {max(plans):.3f} s "
                "(wall time)",
            )
        )
    rows += [
        ("groups", f"{share} of job-intervals by group size"),
        ("events", run.events),
        ("runtime", f"{run.runtime:.1f} s"),
        ("audit", verdict),
    ]
    return rows


def _run_data(
    instance: Path,
    dispatch: Any,
    run: Any,
    setting: Any,
    fail: Sequence[str],
    names: Sequence[str],
    noise: str | None,
    seed: int,
    work_conserving: bool,
    energy: Any,
) -> dict[str, Any]:
    """The run file of a job-level run: its figures (its ``energy`` among them), its
    co-location table, and what runs it again (``planner replan --executed`` re-runs it
    to T for the executor's state there)."""
    model = dispatch.model
    return {
        "instance": str(instance),
        "policy": dispatch.policy,
        "interleave": model.kind,
        "data_slots": model.data_slots,
        "slowdown": setting.slowdown,
        "restart": setting.restart,
        "executor": setting.line(model),
        "finished": run.finished,
        "makespan": run.makespan,
        "planned_makespan_seconds": dispatch.planned,
        "mean_jct": run.mean_jct if run.finish else None,
        "energy_kwh": energy.kwh,
        "energy_cost": energy.cost,
        "failures": list(fail),
        "noise": noise,
        "seed": seed,
        "work_conserving": work_conserving,
        "power_cap": dispatch.power_cap,
        "finish": run.finish,
        "residences": run.residences(names),
    }


def _more_job_runs(dispatch: Any, seed: int, runs: int, jobs: int, study: Study) -> None:
    """The job-level runs after the first (seeds ``seed + 1 ..``) into ``study``, with a
    progress bar on stderr; the first Ctrl-C stops them, a second aborts."""
    from tqdm import tqdm

    from planner.execution.simulate import stream_runs
    from planner.interrupt import Halt

    halt = Halt()
    with tqdm(total=runs, initial=1, unit="run", file=sys.stderr, desc="runs") as bar:
        try:
            stream_runs(dispatch, runs - 1, seed + 1, jobs, lambda _: bar.update(), study, halt)
        except KeyboardInterrupt:
            if halt.is_set():
                raise  # the second Ctrl-C
            study.interrupted = True


def _check_online(
    instance: Path,
    schedule: Path | None,
    runs: int,
    histogram: Path | None,
    output: Path | None,
    gantt: Path | None,
    chart_formats: Sequence[str],
) -> None:
    """Refuse what ``--online`` does not take, and outputs it cannot write."""
    if schedule is not None:
        raise InputError("--online plans as jobs arrive: give no SCHEDULE")
    if runs > 1 or histogram is not None:
        raise InputError("--online runs once: --runs and --histogram do not apply")
    if output is not None:
        check_output(output, inputs=[instance], suffixes=(".json",), what="the run file")
    if gantt is not None:
        check_output(gantt, inputs=[instance], suffixes=chart_formats, what="the chart file")
    check_distinct({"--output": output, "--gantt": gantt})


def _planner_options(
    solver: str | None, time_limit: float | None, specs: list[str], job_level: bool
) -> tuple[str, dict[str, Any]]:
    """The online planner's solver and its options (``--time-limit``, ``--option``),
    checked against the solver's. On training jobs (``job_level``) the default is
    ``portfolio``: the search in the executor's model
    (:class:`~planner.execution.policies.planner.SearchPlanner`), which takes
    ``time_limit`` and ``seed``; on task graphs ``sgs``."""
    from planner.execution.policies.planner import SEARCH_OPTIONS
    from planner.solvers.registry import check_options, solver_function

    solver = solver or ("portfolio" if job_level else "sgs")
    options = chosen_options(solver, time_limit, ONLINE_TIME_LIMIT) | _solver_options(specs)
    if job_level and solver == "portfolio":
        unknown = sorted(set(options) - set(SEARCH_OPTIONS))
        if unknown:
            raise InputError(
                f"--option {unknown[0]}: the planner in the executor's model takes "
                f"{' and '.join(SEARCH_OPTIONS)} only"
            )
        return solver, options
    check_options(solver, solver_function(solver), options)
    return solver, options


@dataclass(frozen=True)
class _JobOnline:
    """``simulate --online`` of an instance with training jobs: the planner re-planning at
    arrivals in the job-level executor, and every ``--baseline`` policy beside it, in one
    model and one table."""

    setting: Any
    power_cap: float | None
    planner: tuple[str, dict[str, Any]]

    def run(
        self,
        instance: Path,
        workload: Any,
        schedule: Path | None,
        noise: str | None,
        seed: int,
        fail: Sequence[str],
        runs: int,
        output: Path | None,
        gantt: Path | None,
        histogram: Path | None,
        replan_every: str,
        work_conserving: bool,
        baselines: list[str],
        nodes: int,
        gpus_per_node: int,
    ) -> None:
        """Run the planner and the baselines; print the table (and write the files)."""
        from dataclasses import replace

        from planner.execution.audit import audit
        from planner.execution.disturbances import Failure
        from planner.execution.jobs import outages_of
        from planner.execution.policies import policy_of
        from planner.execution.policies.planner import online_planner
        from planner.execution.power import run_energy
        from planner.execution.runs import dispatch_of, workload_problem

        with guard():
            _check_online(instance, schedule, runs, histogram, output, gantt, CHART_FORMATS)
            if replan_every != "arrival":
                raise InputError("--replan-every: job by job the planner re-plans at every arrival")
            if work_conserving:
                raise InputError(
                    "--work-conserving dispatches a plan; --online plans as jobs arrive"
                )
            for name in baselines:
                policy_of(name)  # a baseline is a policy of the executor
            if workload.nodes is None:
                workload = replace(workload, nodes=nodes, gpus_per_node=gpus_per_node)
            names = workload.names(workload.nodes)
            failures = [Failure.parse(spec, workload.time_unit) for spec in fail]
            outages = outages_of(failures, names, workload.time_unit)
            problem = None
            if self.planner[0] != "portfolio":
                problem = workload_problem(instance, workload.nodes, workload.gpus_per_node)
            noisy = Noise.parse(noise) if noise is not None else None
            done: list[tuple[str, Any, Any]] = []
            for name in ["planner", *baselines]:
                dispatch = dispatch_of(workload, self.setting, name, None, False, outages, noisy,
                                       self.power_cap)  # fmt: skip
                if name == "planner":
                    dispatch.make = online_planner(problem, self.planner[0], **self.planner[1])
                run = _run_with_bar(dispatch, seed, name)
                done.append((name, dispatch, run))
                if not run.finished:
                    break
            solver, options = self.planner
            limit = options.get("time_limit")
            per_plan = f", {limit:g} s per re-plan" if limit is not None else ""
            show(
                [
                    (
                        "instance",
                        f"{instance} ({len(workload.jobs)} jobs, {workload.nodes} nodes "
                        f"x {workload.gpus_per_node} GPUs)",
                    ),
                    ("model", f"{self.setting.line(done[0][1].model)} (job-level executor)"),
                    ("noise", f"{noise}, seed {seed} (one factor per job)" if noise else "none"),
                    ("failures", ", ".join(fail) if fail else "none"),
                    (
                        "planner",
                        f"re-plans at every event in the executor's model ({solver}: the "
                        f"search's policies and tuning{per_plan}, else jct-groups decides)"
                        if solver == "portfolio"
                        else f"re-plans at every arrival with {solver}{per_plan} (static "
                        "block model)",
                    ),
                ]
            )
            typer.echo("")
            typer.echo(
                "JCT, makespan and wait in seconds; worst finish-time fairness; planner time "
                "in seconds per re-plan"
            )
            header = ["policy", "jobs", "re-plans", "mean JCT", "p99 JCT", "makespan", "mean wait",
                      "worst FTF"]  # fmt: skip
            typer.echo("".join(f"{h:>14}" for h in [*header, "planner s"]))
            figures, verdicts = [], []
            for name, dispatch, run in done:
                gpus = dispatch.nodes * dispatch.gpus_per_node
                f = _online_row(name, run, dispatch.jobs_of(seed), gpus)
                wrong = audit(run, dispatch.jobs_of(seed), dispatch.nodes * dispatch.gpus_per_node)
                verdicts.append("valid" if not wrong else f"INVALID: {wrong[0]}")
                f["audit"] = verdicts[-1]
                figures.append(f)
                cells = [name, f["jobs"], f["replans"], f"{f['mean_jct']:,.0f}",
                         f"{f['p99_jct']:,.0f}", f"{f['makespan']:,.0f}", f"{f['mean_wait']:,.0f}",
                         f"{f['ftf_max']:.2f}", f"{f['planner_mean_seconds']:.3f}"]  # fmt: skip
                typer.echo("".join(f"{c:>14}" for c in cells))
            typer.echo(f"audit: {', '.join(verdicts)} (GPUs, groups and every job's work)")
            interrupted = any(not run.finished for _, _, run in done)
            if interrupted:
                typer.echo(
                    f"interrupted: {len(done)} of {1 + len(baselines)} online runs, the last cut "
                    "at its last event; the files below hold the first"
                )
            _, dispatch, run = done[0]
            data: dict[str, Any] = {}
            if output is not None or gantt is not None:
                total = dispatch.nodes * dispatch.gpus_per_node
                energy = run_energy(run, dispatch.jobs_of(seed), total, workload.tariff,
                                    workload.switch_off)  # fmt: skip
                data = _run_data(instance, dispatch, run, self.setting, fail, names, noise, seed,
                                 False, energy)  # fmt: skip
            if output is not None:
                data["online"] = figures
                output.write_text(json.dumps(data, indent=1) + "\n")
                typer.echo(f"run written to {output}")
            if gantt is not None:
                sets = save_colocation_chart(data, gantt)
                typer.echo(f"chart written to {gantt} (the planner's run, {sets} GPU sets)")
        if any(v != "valid" for v in verdicts):
            typer.echo("error: a run fails its audit (a bug)", err=True)
            raise typer.Exit(1)
        if interrupted:
            raise typer.Exit(130)


def _run_with_bar(dispatch: Any, seed: int, name: str) -> Any:
    """One job-level run with a progress bar on stderr; Ctrl-C cuts it at the next event."""
    from tqdm import tqdm

    from planner.interrupt import Halt, run_interruptibly

    halt = Halt()
    with tqdm(total=len(dispatch.jobs), unit="job", file=sys.stderr, desc=name) as bar:

        def work() -> Any:
            return dispatch.run(seed, lambda done, _: bar.update(done - bar.n), halt)

        run, _ = run_interruptibly(work, halt.set, name)
    return run


def _online_row(name: str, run: Any, jobs: Any, gpus: int) -> dict[str, Any]:
    """The figures of one run of ``simulate --online`` (seconds; ``jobs``: the run's, on
    ``gpus`` GPUs)."""
    import numpy as np

    from planner.execution.fairness import fairness

    waits = [run.started[j] - run.release[j] for j in run.finish if j in run.started]
    planning = run.planning
    fair = fairness(run, jobs, gpus).overall
    return {
        "policy": name,
        "jobs": len(run.finish),
        "interrupted": not run.finished,
        "replans": len(planning),
        "mean_jct": run.mean_jct,
        "p99_jct": run.p99_jct,
        "makespan": run.makespan,
        "mean_wait": float(np.mean(waits)) if waits else 0.0,
        "planner_mean_seconds": float(np.mean(planning)) if planning else 0.0,
        "planner_max_seconds": max(planning, default=0.0),
        "longest_wait": fair.longest_wait,
        "ftf_max": fair.ftf_max,
        "jain": fair.jain,
    }

"""The ``planner`` command line: a thin layer over the library.

Library errors are caught at each command's boundary and printed as one line:
exit status 2 for bad input (including a provably infeasible instance), 1 for a
failed run, 0 for success.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

# the commands of their own modules register on ``app`` when imported
from planner.app import cli_compare, cli_files, cli_gavel, cli_replan, cli_run  # noqa: F401
from planner.app.base import (
    DEFAULT_TIME_LIMIT,
    MAX_SOLVER_SEED,
    MAX_WORKERS,
    SCHEDULE_FORMATS,
    SHOWN_VIOLATIONS,
    TIME_LIMIT_RANGE,
    app,
    guard,
    import_app,
    progress_printer,
    run_file,
    show,
    time_limit_option,
    time_text,
)
from planner.bounds import critical_path_bound, energy_bound, horizon
from planner.errors import InputError
from planner.io.instance import NATIVE, load_instance, read_instance, save_instance
from planner.io.paths import check_output
from planner.metrics import schedule_metrics
from planner.model import Problem
from planner.result import Result
from planner.schedule import Schedule, load_schedule
from planner.times import tick_seconds
from planner.validate import Report, validate

if TYPE_CHECKING:
    from planner.app.colocation import RunChart
    from planner.executor.model.jobs import Workload
    from planner.io.instance import InstanceFile

GAIN_TASKS = 2_000
"""Above this many tasks ``planner solve`` runs the exclusive baselines of the
interleaving gain only with ``--gain``: on 5,755 generated jobs they take 19 s, on top
of the time limit."""
OBJECTIVE_LABELS = {"energy": "energy (kWh)", "cost": "energy cost"}
"""How ``planner solve`` names the objectives whose values have a unit."""


def summary(
    problem: Problem, result: Result, gain: tuple[str, float] | str | None = None
) -> list[tuple[str, object]]:
    """The lines ``planner solve`` prints about a result (and the interleaving ``gain``,
    or why it was not figured)."""
    gap = result.gap
    rows: list[tuple[str, object]] = [
        ("instance", f"{problem.name} ({len(problem.tasks)} tasks)"),
        ("solver", result.solver),
        ("status", result.status.value + (" (interrupted)" if result.interrupted else "")),
        (
            OBJECTIVE_LABELS.get(problem.objective, problem.objective),
            "-" if result.objective is None else _objective_text(problem, result.objective),
        ),
        ("lower bound", _bound_text(problem, result)),
        ("gap", "-" if gap is None else f"{100 * gap:.2f}%"),
        ("runtime", f"{result.runtime:.3f} s"),
    ]
    if result.reason:
        rows.append(("reason", result.reason))
    if result.schedule is not None:
        rows.append(("validator", str(validate(problem, result.schedule))))
        if problem.objective != "makespan":
            span = result.schedule.makespan(problem)
            rows.append(("makespan", time_text(problem.time_unit, span)))
        rows += metric_rows(problem, result.schedule)
        if isinstance(gain, str):
            rows.append(("interleaving gain", gain))
        elif gain is not None:
            rows.append(("interleaving gain", f"{gain[1]:.2f}x over {gain[0]}"))
    return rows


def _objective_text(problem: Problem, value: float) -> str:
    """An objective value: a time (:func:`time_text`) for the makespan and the weighted
    completion time, else as it is (energy in kWh, cost)."""
    if problem.objective in ("makespan", "weighted_completion"):
        return time_text(problem.time_unit, value)
    return f"{value:g}"


def _bound_text(problem: Problem, result: Result) -> str:
    """The best bound, and where it comes from when the core's and the solver's differ."""
    if result.lower_bound is None:
        return "-"
    text = _objective_text(problem, result.lower_bound)
    core, own = result.core_bound, result.solver_bound
    if core is not None and own is not None and core != own:
        text += f" (solver {own:g}, core {core:g}{'' if problem.time_unit == '1' else ' ticks'})"
    return text


def metric_rows(problem: Problem, schedule: Schedule) -> list[tuple[str, object]]:
    """Job completion times, utilisation and energy, for instances with jobs.

    On placed instances (with nodes) also the spread of the node utilisation
    (:func:`node_spread`).
    """
    if not problem.jobs:
        return []
    m = schedule_metrics(problem, schedule)

    rows: list[tuple[str, object]] = [
        ("mean JCT", time_text(problem.time_unit, round(m.mean_jct, 1), named=True)),
        ("p99 JCT", time_text(problem.time_unit, round(m.p99_jct, 1), named=True)),
        ("utilisation", ", ".join(f"{r} {100 * u:.1f}%" for r, u in m.utilisation.items())),
    ]
    spread = node_spread(problem, m.node_utilisation)
    if spread is not None:
        rows.append(spread)
    if m.energy_kwh is not None:
        per_job = f", {m.kwh_per_job:,.2f} kWh per job" if m.kwh_per_job is not None else ""
        rows.append(("energy", f"{m.energy_kwh:,.1f} kWh (estimate){per_job}"))
        rows.append(("power", f"mean {m.mean_kw:,.2f} kW, peak {m.peak_kw:,.2f} kW"))
    if m.cost is not None:
        rows.append(("energy cost", f"{m.cost:,.2f} (the instance's tariff)"))
    if m.cap_kw is not None:
        used, cap = m.cap_kw
        rows.append(
            ("power cap", f"peak {used:,.2f} kW of {cap:,.2f} kW above the GPUs' idle draw")
        )
    return rows


def node_spread(
    problem: Problem, node_utilisation: dict[str, dict[str, float]]
) -> tuple[str, str] | None:
    """The ``node GPU use`` line: min (and its node), mean and max (and its node) over nodes.

    Of the node kind ``gpu``, or the first node kind if no node has GPUs
    (:func:`planner.app.gantt.share_kind`); ``None`` without nodes (a pooled plan)
    or when no node has a figure of that kind (an empty schedule).
    """
    from planner.app.gantt_layout import share_kind

    if not problem.nodes:
        return None
    kind = share_kind(problem)
    use = {n: u[kind] for n, u in node_utilisation.items() if kind in u}
    if not use:
        return None
    low, high = min(use, key=use.__getitem__), max(use, key=use.__getitem__)
    mean = sum(use.values()) / len(use)
    text = f"min {use[low]:.2f} ({low})  mean {mean:.2f}  max {use[high]:.2f} ({high})"
    return f"node {kind.upper()} use", text


@app.command()
def solve(
    instance: Annotated[Path, typer.Argument(help="Instance file (.json, .yaml, .sm, .mm, .rcp).")],
    solver: Annotated[
        str, typer.Option("--solver", "-s", help="Solver name (see 'planner solvers').")
    ] = "portfolio",
    time_limit: Annotated[
        float | None,
        time_limit_option(
            f"Seconds the solver may take (default {DEFAULT_TIME_LIMIT:g}, for solvers "
            f"with a time limit; {TIME_LIMIT_RANGE}).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_SOLVER_SEED,
            help=f"Random seed (solvers that take one; 0 to {MAX_SOLVER_SEED}).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_WORKERS,
            help=f"Threads: CP-SAT/MILP search workers, ga parallel runs (1 to {MAX_WORKERS}).",
        ),
    ] = None,
    rule: Annotated[str | None, typer.Option(help="Priority rule for sgs (e.g. lft).")] = None,
    scheme: Annotated[
        str | None, typer.Option(help="Schedule generation scheme for sgs: serial or parallel.")
    ] = None,
    schedules: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=10**12,
            help="Schedule budget for ga/pso (every SGS pass counts; 1 to 10**12).",
        ),
    ] = None,
    backend: Annotated[str | None, typer.Option(help="MILP backend: cbc or highs.")] = None,
    initial: Annotated[
        Path | None,
        typer.Option(
            help="A schedule file to start from (cpsat, portfolio, ga, pso); it must be valid."
        ),
    ] = None,
    solver_log: Annotated[bool, typer.Option("--log", help="Show the solver's own log.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the schedule (.json or .csv).")
    ] = None,
    gantt: Annotated[
        Path | None,
        typer.Option(
            help="Draw the schedule's Gantt chart (.png, .svg, .pdf or .html); training jobs: "
            "the plan's co-location chart (.png, .svg, .pdf or .html)."
        ),
    ] = None,
    gain_wanted: Annotated[
        bool | None,
        typer.Option(
            "--gain/--no-gain",
            help="Figure the interleaving gain: the exclusive baselines run after the search, "
            f"on top of the time limit (default: up to {GAIN_TASKS:,} tasks).",
        ),
    ] = None,
    static: Annotated[
        bool,
        typer.Option(
            "--static",
            help="Training jobs: plan in the static block model (each block at one speed to "
            "its end) and report that model's figures, not the executor's.",
        ),
    ] = False,
    interleave: Annotated[
        str | None,
        typer.Option(
            help="Training jobs: the executor's model, muri or fluid (default: the instance's)."
        ),
    ] = None,
    data_slots: Annotated[
        float | None,
        typer.Option(min=0.01, max=64, help="Training jobs: data slots per GPU under fluid."),
    ] = None,
    slowdown: Annotated[
        str | None,
        typer.Option(
            help="Training jobs: interference slowdown, muri (default), none or a k,factor CSV."
        ),
    ] = None,
    restart: Annotated[
        bool | None,
        typer.Option(
            "--restart/--no-restart", help="Training jobs: charge restart overheads (default: yes)."
        ),
    ] = None,
    no_preempt: Annotated[
        bool,
        typer.Option(
            "--no-preempt",
            help="Training jobs: every job runs once, start to end, on one GPU set (others may "
            "share it): a plan a batch cluster without checkpoints runs.",
        ),
    ] = False,
) -> None:
    """Solve an instance; print objective, bound, gap, status, runtime and the validator verdict.

    An instance with training jobs is planned in the job-level executor's model: the
    plan is a dispatch the executor runs (its figures are the run's, its validator the
    executor's audit), unless --static."""
    from planner.app.gantt import FORMATS
    from planner.solvers import solve as run
    from planner.solvers.registry import options_of

    with guard():
        if output is not None:
            check_output(
                output, inputs=[instance], suffixes=SCHEDULE_FORMATS, what="the schedule file"
            )
        if gantt is not None:
            check_output(gantt, inputs=[instance], suffixes=FORMATS, what="the chart file")
        options = {
            k: v
            for k, v in {
                "time_limit": time_limit,
                "seed": seed,
                "rule": rule,
                "scheme": scheme,
                "backend": backend,
                "workers": workers,
                "schedules": schedules,
                "log": solver_log or None,
            }.items()
            if v is not None
        }
        from planner.app.solve_dl import (
            SolveRequest,
            executed_line,
            plan_in_executor,
            solve_on_types,
            workload_of,
        )

        if no_preempt:
            if static or solver != "portfolio":
                what = "--static" if static else f"solver {solver}"
                raise InputError(
                    f"--no-preempt with {what}: plans without preemption are made in the "
                    "executor's model by the search (the default solver, without --static)"
                )
            options["no_preempt"] = True

        source = read_instance(instance)  # read once, passed down
        workload, _ = workload_of(source)
        request = SolveRequest(instance, solver, options, static, output, gantt)
        if solve_on_types(request, workload):
            return
        problem = source.problem(check=True)
        if "time_limit" in options_of(solver):
            options.setdefault("time_limit", DEFAULT_TIME_LIMIT)
        if initial is not None:
            options["initial_solution"] = load_schedule(initial, problem)

        if plan_in_executor(
            request, workload, problem, (interleave, data_slots, slowdown, restart)
        ):
            return
        result = run(problem, solver, progress=progress_printer(), **options)
        gain: tuple[str, float] | str | None = None
        if problem.jobs and result.schedule is not None and not solver.startswith("exclusive-"):
            from planner.solvers.exclusive import interleaving_gain

            if gain_wanted if gain_wanted is not None else len(problem.tasks) <= GAIN_TASKS:
                gain = interleaving_gain(problem, result.schedule.makespan(problem))
            else:
                gain = f"- (not figured above {GAIN_TASKS:,} tasks; --gain runs its baselines)"
        rows = summary(problem, result, gain)
        if result.schedule is not None and problem.jobs:
            executed = executed_line(workload, problem, result.schedule)
            if executed is not None:
                why = "--static" if static else f"objective {problem.objective}"
                rows.insert(1, ("model", f"static block model ({why}; each block at one "
                                         "speed to its end): the figures below are its own, "
                                         "the executed line the executor's"))  # fmt: skip
                rows.append(executed)
        show(rows)
        if result.schedule is None:
            raise typer.Exit(1)
        if output is not None:
            result.schedule.save(output, problem)
            typer.echo(f"schedule written to {output}")
        if gantt is not None:
            from planner.app.gantt import save_gantt

            save_gantt(problem, result.schedule, gantt)
            typer.echo(f"chart written to {gantt}")
        if result.interrupted:
            raise typer.Exit(130)


@app.command("solvers")
def solvers_cmd() -> None:
    """List every solver with its options, their types and defaults."""
    from planner.solvers.registry import (
        DEFAULT_SOLVER,
        IN_EXECUTOR,
        SOLVERS,
        SUMMARIES,
        options_of,
    )

    for name in IN_EXECUTOR:
        typer.echo(f"{name} (training jobs): {SUMMARIES[name]}")
    for name in SOLVERS:
        default = " (default)" if name == DEFAULT_SOLVER else ""
        typer.echo(f"{name}{default}: {SUMMARIES[name]}")
        for option in options_of(name).values():
            if option.type_name.startswith("callable"):
                continue  # a hook for library callers (progress), not a setting
            value = "" if option.default is None else f" = {option.default!r}"
            typer.echo(f"  {option.name}: {option.type_name}{value}  {option.help}".rstrip())


@app.command("validate")
def validate_cmd(
    instance: Annotated[Path, typer.Argument(help="Instance file.")],
    schedule: Annotated[Path | None, typer.Argument(help="Schedule file (.json or .csv).")] = None,
) -> None:
    """Check an instance, and a schedule against it: prints every violation; exit 1 if any."""
    with guard():
        source = read_instance(instance)  # read once, passed down
        problem = source.problem(check=True)
        if schedule is None:
            typer.echo(f"{instance}: valid instance ({len(problem.tasks)} tasks)")
            return
        from planner.app.solve_dl import audit_static_plan, validate_dispatch, workload_of

        if validate_dispatch(source, schedule):
            return
        sched = load_schedule(schedule, problem)
        report = validate(problem, sched)
        for v in report.violations:
            typer.echo(str(v))
        if not report.ok:
            typer.echo(f"{schedule}: {report}")
            raise typer.Exit(1)
        typer.echo(f"{schedule}: valid, {problem.objective} {sched.objective(problem):g}")
        audit_static_plan(workload_of(source)[0], problem, sched)


@app.command()
def info(instance: Annotated[Path, typer.Argument(help="Instance file.")]) -> None:
    """Print the instance's tasks, resources, horizon and lower bounds."""
    with guard():
        from planner.app.solve_dl import table_info, workload_of

        source = read_instance(instance)  # read once, passed down
        workload, _ = workload_of(source)
        rows = table_info(instance, workload)
        if rows:
            show(rows)
            return
        problem = source.problem(check=True)
        modes = sum(len(t.modes) for t in problem.tasks)
        segments = sum(len(m.segments) for t in problem.tasks for m in t.modes)
        cp, energy = critical_path_bound(problem), energy_bound(problem)
        rows: list[tuple[str, object]] = [
            ("instance", problem.name),
            ("time unit", problem.time_unit),
            ("objective", problem.objective),
            ("tasks", f"{len(problem.tasks)} ({modes} modes, {segments} segments)"),
            ("precedences", len(problem.precedences)),
            ("jobs", len(problem.jobs)),
        ]
        for r in problem.resources:
            extra = f", {len(r.windows)} capacity windows" if r.windows else ""
            extra += _in_units(problem, r.name)
            capacity = f"{r.capacity / problem.unit(r.name):g}"
            rows.append((f"resource {r.name}", f"{r.kind}, capacity {capacity}{extra}"))
        rows += _node_rows(problem)
        rows += [
            ("horizon", horizon(problem)),
            ("critical path", cp),
            ("energy bound", energy),
            ("lower bound", max(cp, energy)),
        ]
        model_rows = _model_bounds(source, workload)
        if model_rows:  # training jobs: in seconds, the static block model's named
            most = max(cp, energy)
            seconds = most * tick_seconds(problem.time_unit)
            rows[-3:] = [("static bound", f"{seconds:,.0f} s ({most} ticks of {problem.time_unit}: "
                          f"critical path {cp}, energy {energy}; the static block model, each "
                          "block at one speed to its end)")]  # fmt: skip
        if any(key == "elastic" for key, _ in model_rows):
            rows[-1] = ("static bound", f"{seconds:,.0f} s ({most} ticks; of the static block "
                                        "model, each job on its own GPUs at its stages, a "
                                        "Pollux job at its first epoch's speed; not of "
                                        "elastic runs)")  # fmt: skip
        rows += model_rows
        show(rows)


def _model_bounds(source: InstanceFile, workload: Workload | None) -> list[tuple[str, object]]:
    """``planner info``'s bounds of a training workload (cluster form; ``workload``: its
    jobs where the executor runs them, compiled already) under each interleaving model, in
    seconds; none for another instance."""
    from planner.executor.configurations import NodeRoom, strongest_bound
    from planner.executor.model.elastic import Hybrid
    from planner.executor.model.jobs import jobs_from_instance
    from planner.executor.runs import Setting

    if source.data is None:
        return []
    try:  # the jobs of an instance the executor does not run (interleave: phases) too
        if workload is None:
            workload = jobs_from_instance(source.path, source.data)
    except InputError:
        return []  # not a cluster-form instance of one GPU count per node
    from planner.executor.model.resources import resource_rows

    gpus = (workload.nodes or 1) * (workload.gpus_per_node or 1)
    rows: list[tuple[str, object]] = [("interleave", workload.interleave)]
    sharing = f"at most {workload.max_colocated} jobs on a GPU set"
    if workload.gpu_memory is not None:
        asks = [j.gpu_mem for j in workload.jobs]
        sharing += (
            f", {workload.gpu_memory:g} GB of memory per GPU, which they share (jobs ask "
            f"{min(asks):g} to {max(asks):g} GB per GPU)"
        )
    rows.append(("GPU sharing", sharing))
    rows += resource_rows(workload)
    elastic = sum(j.elastic is not None for j in workload.jobs)
    if elastic:
        hybrid = sum(isinstance(j.elastic, Hybrid) for j in workload.jobs)
        what = {0: "GPUs and batch sizes", elastic: "GPUs and parallel plans"}.get(
            hybrid, "GPUs, batch sizes and parallel plans"
        )
        rows.append(("elastic", f"{elastic} jobs: {what} are their policy's choice (no bound "
                                "under the interleaving models)"))  # fmt: skip
        return rows
    if workload.table is not None:
        return rows
    setting = Setting()
    model = setting.model(workload)
    budget = None
    if workload.power_cap is not None:
        budget = (workload.power_cap - gpus * workload.watts[1], workload.watts)
    per_node = workload.gpus_per_node or 1
    room = NodeRoom(workload.jobs, workload.cpus, workload.mems, per_node)
    bound, name = strongest_bound(workload.jobs, model, workload.nodes or 1, per_node, budget,
                                  room)  # fmt: skip
    rows.append(("bound", f"{bound:,.0f} s ({name}; in the executor's model: "
                          f"{setting.line(model)}, planner solve's and run's)"))  # fmt: skip
    return rows


def _node_rows(problem: Problem) -> list[tuple[str, object]]:
    """``planner info``'s lines on the nodes of a placed instance: each group of alike
    nodes with their capacity, and every node resource kind summed over the nodes."""
    if not problem.nodes:
        return []
    groups: dict[tuple[object, ...], list[str]] = {}
    for n in problem.nodes:
        groups.setdefault((n.type, tuple(n.capacity.items())), []).append(n.name)
    rows: list[tuple[str, object]] = [("nodes", len(problem.nodes))]
    for (kind, capacity), names in groups.items():
        shown = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        each = ", ".join(f"{k} {q / problem.unit(k):g}" for k, q in capacity)
        typed = f"type {kind}, " if kind is not None else ""
        rows.append((f"nodes {shown}", f"{len(names)} x {typed}{each}"))
    for k in problem.node_kinds:
        total = sum(n.capacity.get(k, 0) for n in problem.nodes) / problem.unit(k)
        rows.append(
            (f"node resource {k}", f"renewable, {total:g} over the nodes{_in_units(problem, k)}")
        )
    return rows


def _in_units(problem: Problem, name: str) -> str:
    """``, demands in 1/U`` for a resource the problem counts in ``units`` (shares)."""
    unit = problem.unit(name)
    return f", demands in 1/{unit}" if unit > 1 else ""


@app.command()
def convert(
    instance: Annotated[Path, typer.Argument(help="Instance file of any supported format.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output .json, .yaml or .yml.")],
) -> None:
    """Write an instance in the native problem form (JSON or YAML)."""
    with guard():
        check_output(output, inputs=[instance], suffixes=NATIVE)
        problem = load_instance(instance)
        save_instance(problem, output)
        typer.echo(f"{instance} -> {output} ({len(problem.tasks)} tasks)")


@app.command("gantt")
def gantt_cmd(
    schedule: Annotated[Path, typer.Argument(help="Schedule file (.json or .csv).")],
    instance: Annotated[
        Path | None, typer.Option("--instance", "-i", help="The schedule's instance file.")
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Chart file: .png, .svg, .pdf or .html.")
    ] = Path("gantt.png"),
    force: Annotated[
        bool, typer.Option(help="Draw an invalid schedule too, with INVALID in the title.")
    ] = False,
    by: Annotated[
        str | None,
        typer.Option(
            help="Rows: task, job, or node (placed plans: the tasks on each node, stacked by "
            "GPU share). Default: per task up to 60 tasks, else per job."
        ),
    ] = None,
) -> None:
    """Draw a schedule's Gantt chart with the load on each renewable resource under it.

    A schedule the validator rejects is not drawn (exit 1, its first violations
    printed) unless ``--force``. A run file of 'planner run -o' is drawn as the
    realized run, planned starts marked (--by node: per node). A job-level run
    (planner policy, or a plan of training jobs) is drawn per GPU set, jobs that
    share a set stacked (no --instance needed).
    """
    from planner.app.colocation import job_level_run, save_colocation_chart
    from planner.app.gantt import FORMATS, save_gantt
    from planner.app.gantt_layout import check_view
    from planner.executor.dispatch import dispatch_data

    with guard():
        inputs = [schedule] if instance is None else [schedule, instance]
        level = job_level_run(schedule)
        if level is not None:
            if by not in (None, "node"):
                raise InputError(f"a job-level run is drawn by GPU set (--by node), not by {by}")
            check_output(output, inputs=inputs, what="the chart file")
            chart = save_colocation_chart(level, output)
            typer.echo(f"chart written to {output} (job-level run, {chart.line()})")
            return
        if dispatch_data(schedule) is not None:
            if instance is None:
                raise InputError(
                    "a dispatch file of planner solve: pass the instance file with --instance",
                    str(schedule),
                )
            if by not in (None, "node"):
                raise InputError(f"a dispatch is drawn by GPU set (--by node), not by {by}")
            check_output(output, inputs=inputs, what="the chart file")
            chart = _dispatch_chart(instance, schedule, output)
            typer.echo(f"chart written to {output} (the dispatch's run, {chart.line()})")
            return
        check_output(output, inputs=inputs, suffixes=FORMATS, what="the chart file")
        if instance is None:
            named = load_schedule(schedule).meta.get("instance")
            hint = f" (the schedule is of instance {named!r})" if named else ""
            raise InputError(f"pass the instance file with --instance{hint}", str(schedule))
        problem = load_instance(instance, check=True)
        run = run_file(schedule)
        if run is not None:
            from planner.app.gantt import save_run_gantt
            from planner.replay.simulate import replay_run

            ex = replay_run(problem, run, str(schedule))
            save_run_gantt(ex, output, by=by, planned=problem)
            typer.echo(f"chart written to {output} (realized run, {ex.report})")
            return
        sched = load_schedule(schedule, problem)
        if by is not None:
            check_view(by, problem)
        report = validate(problem, sched)
        unknown = [v for v in report.violations if v.kind == "unknown"]
        if unknown:
            raise InputError(f"does not fit instance {problem.name!r}: {unknown[0]}", str(schedule))
        if not report.ok and not force:
            refuse_invalid(schedule, problem, report)
        save_gantt(problem, sched, output, by=by)
        typer.echo(f"chart written to {output} ({report})")


def _dispatch_chart(instance: Path, path: Path, output: Path) -> RunChart:
    """Run the dispatch file ``path`` of ``instance`` in the executor, as ``planner run``
    does, and draw its chart; what it drew."""
    from planner.app.colocation import save_run_chart
    from planner.app.job_runs import dispatch_file
    from planner.executor.runs import dl_workload

    workload, _ = dl_workload(instance)
    if workload is None:
        raise InputError("not an instance of training jobs: a dispatch needs one", str(instance))
    plan = dispatch_file(path)
    dispatch = plan.dispatch(workload)
    gpus = dispatch.nodes * dispatch.gpus_per_node
    names = workload.names(dispatch.nodes)
    return save_run_chart(dispatch.run(), names, plan.source, output, dispatch.jobs, gpus)


def refuse_invalid(schedule: Path, problem: Problem, report: Report) -> None:
    """Print what is wrong with an invalid schedule (its first violations) and exit 1."""
    typer.echo(
        f"error: {schedule}: not a valid schedule of instance {problem.name!r} "
        f"({len(report.violations)} violations); not drawn (--force draws it marked INVALID)",
        err=True,
    )
    for violation in report.violations[:SHOWN_VIOLATIONS]:
        typer.echo(f"  {violation}", err=True)
    more = len(report.violations) - SHOWN_VIOLATIONS
    if more > 0:
        typer.echo(f"  and {more} more ('planner validate' lists them all)", err=True)
    raise typer.Exit(1)


app.add_typer(import_app, name="import")
app.add_typer(cli_files.export_app, name="export")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())

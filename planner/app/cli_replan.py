"""``planner replan``: freeze what ran before T, apply events, plan the rest.

The command is registered on :data:`planner.app.cli.app` when this module is
imported, which the last line of :mod:`planner.app.cli` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from planner.app.base import (
    DEFAULT_TIME_LIMIT,
    JOB_RUN,
    MAX_SOLVER_SEED,
    SCHEDULE_FORMATS,
    TIME_LIMIT_RANGE,
    app,
    chosen_options,
    guard,
    has_keys,
    progress_printer,
    refuse_run_as_plan,
    show,
    time_limit_option,
)
from planner.errors import InputError
from planner.executor.dispatch import dispatch_data
from planner.io.instance import NATIVE, read_instance, read_text, save_instance
from planner.io.paths import check_distinct, check_output
from planner.replay.events import parse_event
from planner.replay.job_state import state_from_job_run
from planner.replay.replan import prepare
from planner.replay.state import state_from_run
from planner.schedule import load_schedule
from planner.times import parse_ticks


@app.command("replan")
def replan_cmd(
    instance: Annotated[Path, typer.Argument(help="Instance file of the plan.")],
    schedule: Annotated[Path, typer.Argument(help="The old plan: a schedule file (.json, .csv).")],
    at: Annotated[
        str,
        typer.Option(
            "--at",
            help="The re-planning time T: whole ticks (2000) or a time with a unit (33h, 90s), "
            "rounded up to ticks.",
        ),
    ],
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event",
            help="fail:NODE[+DOWN] (DOWN in ticks or with a unit, e.g. +10h), "
            "overrun:TASK:FACTOR (0 < FACTOR <= 100), arrive:FILE or cancel:JOB (repeat).",
        ),
    ] = None,
    executed: Annotated[
        Path | None,
        typer.Option(
            help="A run of the plan (planner run -o run.json): the state at T, the "
            "executor's for an instance with training jobs."
        ),
    ] = None,
    solver: Annotated[
        str, typer.Option("--solver", "-s", help="Solver of the rest.")
    ] = "portfolio",
    time_limit: Annotated[
        float | None,
        time_limit_option(
            f"Seconds (solvers with a time limit; default {DEFAULT_TIME_LIMIT:g}; "
            f"{TIME_LIMIT_RANGE}).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0, max=MAX_SOLVER_SEED, help=f"Seed (solvers with a seed; 0 to {MAX_SOLVER_SEED})."
        ),
    ] = None,
    stability: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1e6,
            help="Weight of the total start shift of unfinished tasks (0 to 1e6).",
        ),
    ] = 0.0,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the complete schedule (.json or .csv)."),
    ] = None,
    instance_out: Annotated[
        Path | None,
        typer.Option(help="Write the re-planned instance (.json, .yaml): the schedule's instance."),
    ] = None,
) -> None:
    """Re-plan at tick T: keep what ran, apply the events, plan the rest with any solver.

    Tasks finished before T are frozen; running ones continue on their nodes unless
    a node failed under them (then they restart). The rest is planned warm from
    the old plan's order. Prints the new makespan, the tasks moved and the total
    shift; the schedule is complete and valid for the instance plus the events.
    """
    from planner.solvers.registry import options_of

    with guard():
        inputs = [instance, schedule, *([executed] if executed else [])]
        if output is not None:
            check_output(output, inputs=inputs, suffixes=SCHEDULE_FORMATS, what="the schedule")
        if instance_out is not None:
            check_output(instance_out, inputs=inputs, suffixes=NATIVE, what="the instance file")
        check_distinct({"--output": output, "--instance-out": instance_out})
        plan_data = refuse_run_as_plan(
            schedule, "give it with --executed, and the plan as SCHEDULE"
        )
        if dispatch_data(schedule, plan_data) is not None:
            raise InputError(
                "a dispatch, planned in the executor's model: re-plan a static plan (planner "
                "solve INSTANCE --static -o PLAN), or let the planner re-plan at every event "
                "(planner online INSTANCE)",
                str(schedule),
            )
        source = read_instance(instance)  # read once, passed down
        problem = source.problem()
        tick = parse_ticks(at, problem.time_unit, "--at")
        events = [parse_event(e, problem.time_unit) for e in event or ()]
        plan = load_schedule(schedule, problem)
        state = None
        if executed is not None:
            try:
                run = json.loads(read_text(executed))
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"invalid JSON: {exc.msg}", str(executed), f"line {exc.lineno}"
                ) from None
            if has_keys(run, JOB_RUN):
                state = state_from_job_run(
                    instance, problem, plan, run, tick, str(executed), source.data
                )
            else:
                state = state_from_run(problem, run, tick, str(executed))
        built = prepare(problem, plan, tick, events, state)
        options = chosen_options(solver, time_limit, DEFAULT_TIME_LIMIT, seed)
        if "progress" in options_of(solver):
            options["progress"] = progress_printer()
        result = built.solve(solver, stability, **options)
        rows: list[tuple[str, object]] = [
            ("instance", f"{problem.name} ({len(problem.tasks)} tasks)"),
            ("re-planned at", f"tick {tick}" + (f" (state from {executed})" if executed else "")),
            ("events", ", ".join(map(str, events)) or "none"),
            ("solver", solver),
            ("status", result.status.value + (" (interrupted)" if result.interrupted else "")
             + (f" ({result.reason})" if result.reason else "")),
        ]  # fmt: skip
        if result.schedule is None:
            show(rows)
            typer.echo("error: no schedule found", err=True)
            raise typer.Exit(1)
        f = result.stats["replan"]
        rows += [
            (
                "state at T",
                f"{f['finished']} finished, {f['running']} running, {f['killed']} killed, "
                f"{f['cancelled']} cancelled, {f['arrived']} arrived",
            ),
            ("makespan", f"{f['makespan']} (old plan {f['old_makespan']})"),
            ("moved", f"{f['moved']} of {len(built.reference)} unfinished tasks"),
            ("total shift", f"{f['shift']} ticks"),
            ("re-placed", f"{f['replaced']} tasks on other nodes"),
            ("lost work", f"{f['lost_gpu_ticks']} GPU-ticks, {f['lost_task_ticks']} task-ticks"),
            ("restarts", f"{f['restarted']} tasks pay their job's restart cost"),
            ("runtime", f"{result.runtime:.2f} s"),
            ("validator", "valid (instance plus events)"),
        ]
        if built.old_makespan is not None and tick >= built.old_makespan:
            rows.append(
                (
                    "note",
                    f"T = {tick} is at or past the old plan's end ({built.old_makespan}): "
                    "every task of the old plan had finished",
                )
            )
        show(rows)
        if output is not None:
            result.schedule.save(output, built.instance)
            typer.echo(f"schedule written to {output}")
        if instance_out is not None:
            save_instance(built.instance, instance_out)
            typer.echo(f"re-planned instance written to {instance_out}")
        if result.interrupted:
            raise typer.Exit(130)

"""``planner online``: the planner re-planning as jobs arrive, beside baselines; in the
job-level executor for training jobs, in the task-level replay for task graphs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from planner.app.base import chosen_options, guard, progress_bar, seconds_of, show
from planner.app.colocation import FORMATS as CHART_FORMATS
from planner.app.colocation import save_colocation_chart
from planner.app.gantt import save_run_gantt
from planner.app.job_runs import run_data
from planner.app.run_output import describe
from planner.disturbances import Disturbances, Noise
from planner.errors import InputError
from planner.files import write_text
from planner.io.instance import load_instance
from planner.io.paths import check_output
from planner.model import Problem
from planner.times import parse_ticks, tick_label

ONLINE_TIME_LIMIT = 1.0
"""Seconds per re-plan of ``planner online`` for solvers with a time limit, unless
``--time-limit``."""


def solver_options(specs: list[str]) -> dict[str, object]:
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


def online_task_graph(
    instance: Path,
    noise: str | None,
    slowdown: str,
    fail: list[str] | tuple[str, ...],
    work_conserving: bool,
    seed: int,
    output: Path | None,
    gantt: Path | None,
    replan_every: str,
    planner: tuple[str, dict[str, Any]],
    baselines: list[str],
) -> None:
    """``planner online`` of a task graph: the solver (``planner``: it and its options,
    checked) and each baseline under the same replay."""
    from planner.app.gantt import FORMATS
    from planner.solvers.registry import check_options, solver_function

    with guard():
        check_online(instance, output, gantt, FORMATS)
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
                ("disturbances", describe(dist)),
                ("re-plans", f"at every {period}"),
            ]
        )
        typer.echo("")
        scale, shown = seconds_of(problem.time_unit)
        typer.echo(f"JCT, makespan and queueing in {shown}; planner time in seconds per re-plan")
        header = ["solver", "jobs", "re-plans", "mean JCT", "p99 JCT", "makespan", "queueing"]
        typer.echo("".join(f"{h:>14}" for h in [*header, "planner s"]))
        for run in runs_done:
            f = run.figures()
            cells = [
                run.solver,
                f["jobs"],
                f["replans"],
                f"{f['mean_jct'] * scale:.1f}",
                f"{f['p99_jct'] * scale:.1f}",
                f"{f['makespan'] * scale:g}",
                f"{f['mean_queueing'] * scale:.1f}",
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
            write_text(output, json.dumps(data, indent=1) + "\n")
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
    from planner.interrupt import Halt, run_interruptibly
    from planner.replay.online import simulate_online

    halt = Halt()
    out: list[Any] = []
    for name, options in chosen.items():
        with progress_bar(unit="re-plan", desc=f"{name} online") as bar:

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


def check_online(
    instance: Path, output: Path | None, gantt: Path | None, chart_formats: Sequence[str]
) -> None:
    """Refuse the outputs ``planner online`` cannot write."""
    if output is not None:
        check_output(output, inputs=[instance], suffixes=(".json",), what="the run file")
    if gantt is not None:
        check_output(gantt, inputs=[instance], suffixes=chart_formats, what="the chart file")


def planner_options(
    solver: str | None, time_limit: float | None, specs: list[str], job_level: bool
) -> tuple[str, dict[str, Any]]:
    """The online planner's solver and its options (``--time-limit``, ``--option``),
    checked against the solver's. On training jobs (``job_level``) the default is
    ``portfolio``: the search in the executor's model
    (:class:`~planner.replay.planner_policy.SearchPlanner`), which takes
    ``time_limit`` and ``seed``; on task graphs ``sgs``."""
    from planner.replay.planner_policy import SEARCH_OPTIONS
    from planner.solvers.registry import check_options, solver_function

    solver = solver or ("portfolio" if job_level else "sgs")
    options = chosen_options(solver, time_limit, ONLINE_TIME_LIMIT) | solver_options(specs)
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
class JobOnline:
    """``planner online`` of an instance with training jobs: the planner re-planning at
    arrivals in the job-level executor, and every ``--baseline`` policy beside it, in one
    model and one table."""

    setting: Any
    power_cap: float | None
    planner: tuple[str, dict[str, Any]]

    def run(
        self,
        instance: Path,
        workload: Any,
        noise: str | None,
        seed: int,
        fail: Sequence[str],
        output: Path | None,
        gantt: Path | None,
        replan_every: str,
        work_conserving: bool,
        baselines: list[str],
        nodes: int,
        gpus_per_node: int,
    ) -> None:
        """Run the planner and the baselines; print the table (and write the files)."""
        from dataclasses import replace

        from planner.disturbances import Failure
        from planner.executor.audit import audit
        from planner.executor.energy import run_energy
        from planner.executor.model.jobs import outages_of
        from planner.executor.policies import policy_of
        from planner.executor.runs import dispatch_of, workload_problem
        from planner.replay.planner_policy import online_planner

        with guard():
            check_online(instance, output, gantt, CHART_FORMATS)
            if replan_every != "arrival":
                raise InputError("--replan-every: job by job the planner re-plans at every arrival")
            if work_conserving:
                raise InputError(
                    "--work-conserving dispatches a plan; planner online plans as jobs arrive"
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
                        (
                            f"re-plans at every event and round in the executor's model on "
                            f"GPU types ({solver}: het-srpt, srsf and Gavel's max-min "
                            f"fairness, packed{per_plan}, else srsf decides)"
                            if workload.table is not None
                            else f"re-plans at every event in the executor's model ({solver}: "
                            f"the search's policies and tuning{per_plan}, else jct-groups "
                            "decides)"
                        )
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
                data = run_data(instance, dispatch, run, self.setting, fail, names, noise, seed,
                                 False, energy)  # fmt: skip
            if output is not None:
                data["online"] = figures
                write_text(output, json.dumps(data, indent=1) + "\n")
                typer.echo(f"run written to {output}")
            if gantt is not None:
                chart = save_colocation_chart(data, gantt)
                typer.echo(f"chart written to {gantt} (the planner's run, {chart.line()})")
        if any(v != "valid" for v in verdicts):
            typer.echo("error: a run fails its audit (a bug)", err=True)
            raise typer.Exit(1)
        if interrupted:
            raise typer.Exit(130)


def _run_with_bar(dispatch: Any, seed: int, name: str) -> Any:
    """One job-level run with a progress bar on stderr; Ctrl-C cuts it at the next event."""
    from planner.interrupt import Halt, run_interruptibly

    halt = Halt()
    with progress_bar(total=len(dispatch.jobs), unit="job", desc=name) as bar:

        def work() -> Any:
            return dispatch.run(seed, lambda done, _: bar.update(done - bar.n), halt)

        run, _ = run_interruptibly(work, halt.set, name)
    return run


def _online_row(name: str, run: Any, jobs: Any, gpus: int) -> dict[str, Any]:
    """The figures of one run of ``planner online`` (seconds; ``jobs``: the run's, on
    ``gpus`` GPUs)."""
    import numpy as np

    from planner.executor.fairness import fairness

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

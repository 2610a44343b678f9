"""Job-level runs of training jobs for ``planner run``, ``planner study`` and ``planner
policy``: the job-level executor (:mod:`planner.executor.loop`) under one setting,
once or as a Monte Carlo study, its printed rows and its run file."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from planner.app.base import progress_bar, show
from planner.app.colocation import chart_fields, save_colocation_chart
from planner.app.run_output import distribution_table, refuse, save_histogram
from planner.disturbances import Noise
from planner.errors import InputError
from planner.executor.dispatch import dispatch_data
from planner.files import write_text
from planner.io.instance import load_instance
from planner.schedule import load_schedule
from planner.study import Study


def dispatch_file(path: Path, data: dict[str, Any] | None = None) -> Any:
    """The :class:`~planner.executor.dispatch.DispatchPlan` of ``path`` if it is a dispatch
    file of ``planner solve`` (``None``: another file); ``data``: its JSON object, read
    already.

    Raises
    ------
    InputError
        For a malformed dispatch file.
    """
    from planner.executor.dispatch import DispatchPlan

    data = dispatch_data(path, data)
    return None if data is None else DispatchPlan.from_data(data, str(path))


def dispatch_setting(plan: Any, model: dict[str, object], others: dict[str, object]) -> Any:
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
            planned = f"the instance's own {flag[2:]}" if theirs[flag] is None else theirs[flag]
            raise InputError(
                f"{flag} {mine}: the dispatch was planned with {planned} and runs in "
                "the model it was planned in"
            )
    refuse(others, "does not apply to a dispatch, which runs its events as planned (run "
            "its policy with planner policy to disturb it)")  # fmt: skip
    return s


def write_table(path: Path, rows: list[dict[str, Any]]) -> None:
    """The co-location table as CSV: per stretch of a job on one GPU set with the same
    partners, the job, the GPUs (``node3:0-3``, ``+`` between the nodes of a gang), its
    start and end (seconds) and its partners (``;``-separated)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["job", "gpus", "start", "end", "partners"])
    for r in rows:
        start, end = f"{r['start']:.3f}", f"{r['end']:.3f}"
        writer.writerow([r["job"], r["gpus"], start, end, ";".join(r["partners"])])
    write_text(path, buffer.getvalue())


@dataclass(frozen=True)
class JobLevel:
    """``planner policy``, ``planner run`` and ``planner study`` of an instance with
    training jobs: the job-level executor (:mod:`planner.executor.loop`) under one
    setting, once or as a Monte Carlo study."""

    setting: Any
    """The :class:`~planner.executor.runs.Setting`."""
    power_cap: float | None = None
    """Watts (``None``: the instance's cap, if any)."""
    planner: tuple[str, dict[str, Any]] | None = None
    """The policy ``planner``: the solver and its options."""
    table: Any = None
    """The :class:`~planner.executor.dispatch.DispatchPlan` of the plan file, if it is a
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
        from planner.disturbances import Failure
        from planner.executor.audit import audit
        from planner.executor.energy import run_energy
        from planner.executor.model.jobs import outages_of
        from planner.executor.policies import policy_of
        from planner.executor.runs import dispatch_of
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
            from planner.executor.runs import workload_problem
            from planner.replay.planner_policy import online_planner

            solver, options = self.planner
            problem = None
            if solver != "portfolio":
                problem = workload_problem(instance, dispatch.nodes, dispatch.gpus_per_node)
            dispatch.make = online_planner(problem, solver, **options)
        halt = Halt()
        bar = progress_bar(total=len(dispatch.jobs), unit="job", desc=dispatch.policy)
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
            for line in distribution_table(study, "seconds"):
                typer.echo(line)
            wrong = wrong or bool(study.invalid)
        data: dict[str, Any] = {}
        if energy is not None and (output is not None or gantt is not None):
            data = run_data(instance, dispatch, run, self.setting, fail, names, noise, seed,
                             work_conserving, energy)  # fmt: skip
        if output is not None and output.suffix.lower() == ".csv":
            write_table(output, data["residences"])
            typer.echo(f"co-location table written to {output}")
        elif output is not None:
            if study is not None:
                data["monte_carlo"] = study.figures()
            write_text(output, json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            chart = save_colocation_chart(data, gantt)
            typer.echo(f"chart written to {gantt} (job-level run of seed {seed}, {chart.line()})")
        if histogram is not None and study is not None:
            save_histogram(study, dispatch.planned, "seconds", histogram)
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
    """The lines ``planner run`` and ``planner policy`` print of a job-level run, with its
    ``energy`` (``None``: not figured) and the audit's ``violations``."""
    from planner.executor.configurations import strongest_bound
    from planner.executor.fairness import completion_bound, fairness, fairness_rows
    from planner.executor.model.jobs import any_elastic

    jobs, model, cap = dispatch.jobs_of(seed), dispatch.model, dispatch.power_cap
    total = dispatch.nodes * dispatch.gpus_per_node
    what = f"{len(jobs)} jobs, {dispatch.nodes} nodes x {dispatch.gpus_per_node} GPUs"
    elastic = any_elastic(jobs)
    if model.table is not None:
        from planner.executor.model.jobs import type_gpus

        bound, bound_row = _table_bounds(dispatch, jobs)
        gpus = type_gpus(dispatch.types, dispatch.gpus_per_node)
        kinds = ", ".join(f"{n} {t}" for t, n in gpus.items())
        what += f" ({kinds})"
    elif elastic:
        bound = math.nan
        bound_row = "- (elastic jobs: their speed is the policy's choice; not bounded)"
    else:
        budget = None if cap is None else (cap - total * dispatch.watts[1], dispatch.watts)
        bound, name = strongest_bound(jobs, model, dispatch.nodes, dispatch.gpus_per_node,
                                      budget, dispatch.room)  # fmt: skip
        bound_row = f"{bound:,.0f} s ({name}, in this model" + (
            ", under the power cap)" if cap else ")"
        )
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
        ("model", f"{setting.line(model)} (job-level executor){speed_line(jobs)}"),
        ("noise", f"{noise}, seed {seed} (one factor per job)" if noise else "none"),
        ("failures", ", ".join(fail) if fail else "none"),
        ("power cap", f"{cap:,.0f} W" if cap else "none"),
        ("bound", bound_row),
    ]
    if run.finished and energy is not None:
        bounded = not elastic
        jct_bound = completion_bound(jobs, model, {}) if bounded else math.nan
        rows += [
            (
                "makespan",
                f"{run.makespan:,.0f} s ({run.makespan / bound:.3f} x bound)"
                if bounded
                else f"{run.makespan:,.0f} s",
            ),
            ("mean JCT", f"{run.mean_jct:,.0f} s"),
            (
                "JCT bound",
                f"{jct_bound:,.0f} s mean ({run.mean_jct / jct_bound:.3f} x; every job alone "
                "at its least period from its release)"
                if bounded
                else "- (elastic jobs)",
            ),
            ("p99 JCT", f"{run.p99_jct:,.0f} s"),
            *fairness_rows(fairness(run, jobs, total)),
            (
                "energy",
                f"{energy.kwh:,.1f} kWh, mean {energy.mean_kw:.1f} kW, peak "
                f"{energy.peak_kw:.1f} kW ("
                + (
                    "GPUs busy/idle: "
                    + ", ".join(f"{t} {b:g}/{i:g} W" for t, (b, i) in run.type_watts.items())
                    if run.type_watts
                    else f"GPUs: {run.watts[0]:g} W busy, {run.watts[1]:g} W idle"
                )
                + (", idle ones off)" if workload.switch_off else ")"),
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
    allocation = allocation_row(run, jobs)
    if allocation is not None:
        rows.append(allocation)
    elastic = elastic_row(run, jobs)
    if elastic is not None:
        rows.append(elastic)
    rows += [
        ("groups", f"{share} of job-intervals by group size"),
        ("events", run.events),
        ("runtime", f"{run.runtime:.1f} s"),
        ("audit", verdict),
    ]
    return rows


def allocation_row(run: Any, jobs: Sequence[Any]) -> tuple[str, str] | None:
    """The ``allocation`` line of a run whose nodes hold CPU cores or memory: what the
    jobs held of them on average, and how fast the jobs with profiles ran (``None``:
    the nodes hold neither)."""
    from planner.executor.model.resources import held

    figures = held(run, jobs)
    if figures is None:
        return None
    by = f"by the policy ({run.policy})" if figures.decided else "each job its default"
    speed = (
        f", jobs with profiles at {figures.speed:.2f}x their speed on the fair share"
        if any(j.profile is not None for j in jobs)
        else ""
    )
    return (
        "allocation",
        f"{by}: {100 * figures.cpu:.0f}% of the nodes' CPU cores and {100 * figures.mem:.0f}% "
        f"of their memory held on average{speed}",
    )


def elastic_row(run: Any, jobs: Sequence[Any]) -> tuple[str, str] | None:
    """The ``elastic`` line of a run with elastic jobs: how many, how often their GPU
    counts changed, the most GPUs one held, their GPU-hours (``None``: no elastic job)."""
    from planner.executor.model.elastic import elastic_figures

    figures = elastic_figures(run.trace, {j.name for j in jobs if j.elastic is not None})
    if figures is None:
        return None
    counts = list(figures.resizes.values())
    resized = sum(1 for c in counts if c)
    return (
        "elastic",
        f"{figures.jobs} jobs; {resized} resized, {sum(counts)} times in all (at most "
        f"{max(counts)} one job); up to {figures.most} GPUs a job; "
        f"{figures.gpu_hours:,.1f} GPU-hours",
    )


def speed_line(jobs: Sequence[Any]) -> str:
    """What the ``model`` line says of CPU and memory as speed: the models whose jobs have
    throughput profiles (none: nothing)."""
    models = sorted({j.model or j.name for j in jobs if j.profile is not None})
    if not models:
        return ""
    return f"; speed by CPU and memory from throughput profiles ({len(models)} models)"


def _table_bounds(dispatch: Any, jobs: Sequence[Any]) -> tuple[float, str]:
    """The ``table`` model's strongest bound of a run and its line: the larger of
    :func:`planner.executor.model.jobs.typed_bound` and its relaxation (the GPU types' time
    shared at will, alone and in measured pairs, releases at 0)."""
    from planner.executor.model.jobs import typed_bound

    bound, which = typed_bound(jobs, dispatch.types, dispatch.gpus_per_node, dispatch.model.table)
    if bound["lp"] > bound["bound"]:
        return bound[
            "lp"
        ], f"{bound['lp']:,.0f} s (the GPU types' time shared at will, in this model)"
    return bound["bound"], f"{bound['bound']:,.0f} s ({which}, in this model)"


def run_data(
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
    co-location table, how busy it kept each resource
    (:func:`~planner.executor.utilisation.run_utilisation`), and what runs it again
    (``planner replan --executed`` re-runs it to T for the executor's state there)."""
    model = dispatch.model
    gpus = dispatch.nodes * dispatch.gpus_per_node
    return {
        "instance": str(instance),
        "data_slots": model.data_slots,
        "slowdown": setting.slowdown,
        "restart": setting.restart,
        "executor": setting.line(model),
        "finished": run.finished,
        "planned_makespan_seconds": dispatch.planned,
        "mean_jct": run.mean_jct if run.finish else None,
        "energy_kwh": energy.kwh,
        "energy_cost": energy.cost,
        "failures": list(fail),
        "noise": noise,
        "seed": seed,
        "work_conserving": work_conserving,
        "finish": run.finish,
        "release": run.release,
        **chart_fields(run, names, dispatch.policy, dispatch.jobs, gpus),
    }


def _more_job_runs(dispatch: Any, seed: int, runs: int, jobs: int, study: Study) -> None:
    """The job-level runs after the first (seeds ``seed + 1 ..``) into ``study``, with a
    progress bar on stderr; the first Ctrl-C stops them, a second aborts."""
    from planner.interrupt import Halt
    from planner.study import stream_runs

    halt = Halt()
    with progress_bar(total=runs, initial=1, unit="run", desc="runs") as bar:
        try:
            stream_runs(dispatch, runs - 1, seed + 1, jobs, lambda _: bar.update(), study, halt)
        except KeyboardInterrupt:
            if halt.is_set():
                raise  # the second Ctrl-C
            study.interrupted = True

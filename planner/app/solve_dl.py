"""``planner solve`` of an instance with training jobs: a plan in the executor's model.

The plan of such an instance is what the job-level executor runs: the best dispatch
the search finds (:mod:`planner.execution.search`), or a static engine's plan as the
executor dispatches it. Every figure printed is the executor's run of the plan, under
the model stated on the ``model`` line; status and gap are against the executor's bound.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from planner.app.base import progress_printer, show
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.execution.jobs import Workload
    from planner.execution.runs import Setting
    from planner.execution.search import DispatchResult
    from planner.model import Problem

STATIC_SHARE = 0.25
"""The share of the time left that the search's static stage gives the static portfolio."""

STATIC_ONLY = ("rule", "scheme", "schedules", "backend", "workers", "log", "initial_solution")
"""Options of the static engines that the search in the executor's model does not take."""


def solve_in_executor(
    instance: Path,
    workload: Workload,
    problem: Problem,
    solver: str,
    options: dict[str, Any],
    setting: Setting,
    output: Path | None,
    gantt: Path | None,
) -> None:
    """Plan ``workload`` (the instance's training jobs; ``problem`` compiled from the
    same file) in the executor's model under ``setting``: with ``portfolio`` the dispatch
    search, with another solver its static plan as the executor runs it. Prints the
    run's figures; writes the plan (``output``: a dispatch file, or the static plan's
    schedule) and the co-location chart (``gantt``).

    Raises
    ------
    InputError
        For an objective the executor's model does not plan (energy, cost), an option
        the search does not take, or a plan the executor cannot run.
    typer.Exit
        With status 1 if no plan was found or its run fails the audit.
    """
    from planner.execution.audit import audit
    from planner.execution.power import run_energy
    from planner.execution.runs import dispatch_of
    from planner.execution.search import DEFAULT_TIME_LIMIT, OBJECTIVES, search_dispatch

    if problem.objective not in OBJECTIVES:
        raise InputError(
            f"objective {problem.objective}: the executor's model plans makespan and "
            "weighted_completion; plan it in the static block model with --static"
        )
    if workload.nodes is None:  # pragma: no cover - instances name their cluster
        raise InputError("the instance names no cluster")
    weights = {j.name: j.weight for j in problem.jobs}
    dispatch = dispatch_of(workload, setting, "lp-groups")
    printer = progress_printer()
    t0 = time.perf_counter()
    if solver == "portfolio":
        given = [k for k in STATIC_ONLY if k in options]
        if given:
            raise InputError(
                f"--{given[0].replace('_', '-')}: the search in the executor's model does not "
                "take it; name a static engine (--solver) or add --static"
            )

        def static(limit: float) -> tuple[Problem, Any] | None:
            from planner.solvers import solve as run

            share = max(STATIC_SHARE * limit, 0.1)
            plan = run(problem, "portfolio", time_limit=share, seed=options.get("seed", 0))
            return None if plan.schedule is None else (problem, plan.schedule)

        result = search_dispatch(
            dispatch,
            setting,
            problem.objective,
            weights,
            time_limit=options.get("time_limit", DEFAULT_TIME_LIMIT),
            seed=options.get("seed", 0),
            static=static,
            progress=printer,
        )
        static_line = None
    else:
        from planner.solvers import solve as run

        plan = run(problem, solver, progress=printer, **options)
        if plan.schedule is None:
            typer.echo(f"solver {solver}: no plan ({plan.reason or plan.status.value})")
            raise typer.Exit(1)
        schedule = plan.schedule
        result = search_dispatch(
            dispatch,
            setting,
            problem.objective,
            weights,
            stages=("static",),
            static=lambda _limit: (problem, schedule),
        )
        if result.best is not None:
            result.best.source = f"{solver} plan"
        static_line = (
            "static block model",
            f"{plan.objective:g} ticks of {problem.time_unit} planned, {plan.status.value} in "
            "that model (the figures above are its run in the executor)",
        )
    result.runtime = time.perf_counter() - t0
    best = result.best
    if best is None:
        show(_rows(instance, dispatch, setting, solver, result, None, None, None))
        raise typer.Exit(1)
    jobs, gpus = dispatch.jobs, dispatch.nodes * dispatch.gpus_per_node
    if best.static is not None:
        from planner.execution.jobs import plan_of

        jobs = plan_of(best.static[0], best.static[1], dispatch.jobs)[0]
    violations = audit(best.run, jobs, gpus)
    energy = run_energy(best.run, jobs, gpus, workload.tariff, workload.switch_off)
    rows = _rows(instance, dispatch, setting, solver, result, violations, energy,
                 static_line)  # fmt: skip
    show(rows)
    names = workload.names(dispatch.nodes)
    if output is not None:
        if best.static is not None:
            best.static[1].save(output, problem)
            typer.echo(
                f"plan written to {output} (a static plan: 'planner simulate {instance} "
                f"{output}' with the same model runs it)"
            )
        else:
            plan_of_run = result.plan(setting)
            assert plan_of_run is not None
            plan_of_run.save(output, best.run, names)
            typer.echo(f"dispatch written to {output} ('planner simulate {instance} {output}')")
    if gantt is not None:
        from planner.app.colocation import save_colocation_chart

        sets = save_colocation_chart({"residences": best.run.residences(names)}, gantt)
        typer.echo(f"chart written to {gantt} ({sets} GPU sets)")
    if violations:
        typer.echo("error: the plan's run fails its audit (a bug)", err=True)
        raise typer.Exit(1)


def _rows(
    instance: Path,
    dispatch: Any,
    setting: Setting,
    solver: str,
    result: DispatchResult,
    violations: list[str] | None,
    energy: Any,
    static_line: tuple[str, str] | None,
) -> list[tuple[str, object]]:
    """The lines of ``planner solve`` in the executor's model."""
    what = f"{len(dispatch.jobs)} jobs, {dispatch.nodes} nodes x {dispatch.gpus_per_node} GPUs"
    label = "makespan" if result.objective == "makespan" else "weighted mean JCT"
    best = result.best
    gap = result.gap
    stages = "; ".join(
        f"{c.stage} {c.value:,.0f} s ({c.source})" for c in result.stage_best().values()
    )
    how = (
        "in the executor's model: configuration program, policies, a static plan, tuned "
        "policies, recombined"
        if solver == "portfolio"
        else "a static engine; its plan as the executor runs it"
    )
    rows: list[tuple[str, object]] = [
        ("instance", f"{instance} ({what})"),
        ("model", f"{setting.line(dispatch.model)} (job-level executor: the plan is what it runs)"),
        ("solver", f"{solver} ({how})"),
        ("status", result.status + (" (interrupted)" if result.interrupted else "")),
        (label, "-" if best is None else f"{best.value:,.0f} s"),
        ("lower bound", f"{result.bound:,.0f} s ({result.bound_kind})"),
        ("gap", "-" if gap is None else f"{100 * gap:.2f}%"),
    ]
    if best is not None:
        run = best.run
        if result.objective != "makespan":
            rows.append(("makespan", f"{run.makespan:,.0f} s"))
        rows += [
            ("mean JCT", f"{run.mean_jct:,.0f} s"),
            ("p99 JCT", f"{run.p99_jct:,.0f} s"),
        ]
        if energy is not None:
            rows.append(("energy", f"{energy.kwh:,.1f} kWh"))
            if energy.cost is not None:
                rows.append(("energy cost", f"{energy.cost:,.2f} (the instance's tariff)"))
        rows.append(("plan", best.source))
        if static_line is not None:
            rows.append(static_line)
        rows.append(("stages", stages))
    rows.append(("runtime", f"{result.runtime:.1f} s ({len(result.tried)} dispatches run)"))
    if violations is not None:
        verdict = (
            "valid (the executor's audit of the plan's run)"
            if not violations
            else f"INVALID: {violations[0]} ({len(violations)} violations)"
        )
        rows.append(("audit", verdict))
    return rows

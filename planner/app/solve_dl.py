"""Plans of instances with training jobs in the executor's model: ``planner solve`` and
``planner validate`` of them.

The plan of such an instance is what the job-level executor runs: the best dispatch
the search finds (:mod:`planner.solvers.dispatch_search`), or a static engine's plan as the
executor dispatches it. Every figure printed is the executor's run of the plan, under
the model stated on the ``model`` line; status and gap are against the executor's bound.
A static plan (``--static``, or an energy or cost objective) gets the ``executed`` line
of its run; ``validate`` runs a dispatch file, and gives a static plan of training jobs
the executor's audit of its run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from planner.app.base import progress_printer, show, time_text
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.executor.model.jobs import Workload
    from planner.executor.runs import Setting
    from planner.interrupt import Halt
    from planner.io.instance import InstanceFile
    from planner.model import Problem
    from planner.schedule import Schedule
    from planner.solvers.dispatch_search import DispatchResult

STATIC_SHARE = 0.25
"""The share of the time left that the search's static stage gives the static portfolio."""

STATIC_ONLY = ("rule", "scheme", "schedules", "backend", "workers", "log", "initial_solution")
"""Options of the static engines that the search in the executor's model does not take."""


CPSAT_STAGES = ("exact", "policies", "recombine", "colgen")
"""``solve -s cpsat``'s stages in the executor's model: the configuration program where
it enumerates, the policies, their configurations recombined, then column generation
with CP-SAT pricing (:mod:`planner.solvers.colgen`) to the time limit."""

CPSAT_EXECUTOR_OPTIONS = ("time_limit", "seed", "workers")
"""The options ``solve -s cpsat`` takes on training jobs."""


def static_portfolio(
    problem: Problem, seed: int = 0, progress: Callable[[Any], None] | None = None
) -> Callable[[float], tuple[Problem, Schedule] | None]:
    """The search's static stage (:func:`~planner.solvers.dispatch_search.search_dispatch`'s
    ``static``): the static portfolio's plan of ``problem`` in :data:`STATIC_SHARE` of the
    time it is given. The static engines' kernels compile (first run after an install)
    or load now, before the search's clock starts, as for a static solve (``progress``
    is told when they compile)."""
    from planner.solvers import solve
    from planner.solvers.kernels import load_kernels

    load_kernels(progress)

    def make(limit: float) -> tuple[Problem, Schedule] | None:
        plan = solve(problem, "portfolio", time_limit=max(STATIC_SHARE * limit, 0.1), seed=seed)
        return None if plan.schedule is None else (problem, plan.schedule)

    return make


@dataclass(frozen=True)
class SolveRequest:
    """What ``planner solve`` is asked: the instance file (named in what it prints), the
    solver and its options, whether ``--static``, and where to write the plan and its
    chart."""

    instance: Path
    solver: str
    options: dict[str, Any]
    static: bool = False
    output: Path | None = None
    gantt: Path | None = None


def solve_in_executor(
    request: SolveRequest,
    workload: Workload,
    problem: Problem | None,
    setting: Setting,
    goal: tuple[str, dict[str, float]] | None = None,
) -> None:
    """Plan ``workload`` (the instance's training jobs; ``problem`` compiled from the
    same file) in the executor's model under ``setting``: with ``portfolio`` the dispatch
    search, with another solver its static plan as the executor runs it. Prints the
    run's figures; writes the plan (the request's ``output``: a dispatch file, or the
    static plan's schedule) and the co-location chart (its ``gantt``). Under the
    ``table`` model there is no problem: ``goal`` gives the objective and the jobs'
    weights, and the search runs its policies only.

    Raises
    ------
    InputError
        For an objective the executor's model does not plan (energy, cost), an option
        the search does not take, or a plan the executor cannot run.
    typer.Exit
        With status 1 if no plan was found or its run fails the audit.
    """
    from planner.executor.audit import audit
    from planner.executor.energy import run_energy
    from planner.executor.model.jobs import any_elastic
    from planner.executor.runs import dispatch_of
    from planner.interrupt import Halt, run_interruptibly
    from planner.solvers.dispatch_search import OBJECTIVES
    from planner.solvers.registry import dispatch_solver

    instance, solver, options = request.instance, request.solver, request.options
    output, gantt = request.output, request.gantt
    if goal is None:
        assert problem is not None
        goal = (problem.objective, {j.name: j.weight for j in problem.jobs})
    objective, weights = goal
    if objective not in OBJECTIVES:
        raise InputError(
            f"objective {objective}: the executor's model plans makespan and "
            "weighted_completion; plan it in the static block model with --static"
        )
    if workload.nodes is None:  # pragma: no cover - instances name their cluster
        raise InputError("the instance names no cluster")
    dispatch = dispatch_of(workload, setting, "lp-groups")
    printer = progress_printer()
    in_model = solver == "cpsat" and objective == "makespan"  # column generation
    if problem is None or solver == "portfolio" or in_model:
        given = [k for k in STATIC_ONLY if k in options]
        why = ("the search in the executor's model does not take it; name a static engine "
               "(--solver) or add --static")  # fmt: skip
        if in_model:
            given = [k for k in options if k not in CPSAT_EXECUTOR_OPTIONS]
            why = ("solver cpsat plans training jobs in the executor's model (column "
                   "generation), which does not take it; add --static for the static block "
                   "model")  # fmt: skip
        if given:
            raise InputError(f"--{given[0].replace('_', '-')}: {why}")
        static = (
            None
            if problem is None
            or options.get("no_preempt")
            or in_model
            or any_elastic(dispatch.jobs)
            else static_portfolio(problem, options.get("seed", 0), printer)
        )
        stages = CPSAT_STAGES if in_model else None
        t0 = time.perf_counter()
        halt = Halt()
        result, _ = run_interruptibly(
            lambda: _search(dispatch, setting, goal, static, options, printer, halt, stages),
            halt.set,
            "search",
        )
        static_line = None
    else:
        from planner.solvers import solve as run

        t0 = time.perf_counter()

        plan = run(problem, solver, progress=printer, **options)
        if plan.schedule is None:
            typer.echo(f"solver {solver}: no plan ({plan.reason or plan.status.value})")
            raise typer.Exit(1)
        schedule = plan.schedule
        result = dispatch_solver()(
            dispatch,
            setting,
            objective,
            weights,
            stages=("static",),
            static=lambda _limit: (problem, schedule),
        )
        result.interrupted = plan.interrupted
        if result.best is not None:
            result.best.source = f"{solver} plan"
        static_line = (
            "static block model",
            f"{time_text(problem.time_unit, plan.objective)} planned, {plan.status.value} in "
            "that model (the figures above are its run in the executor)",
        )
    result.runtime = time.perf_counter() - t0
    best = result.best
    if best is None:
        show(_rows(instance, dispatch, setting, solver, result, None, None, None))
        raise typer.Exit(1)
    jobs = best.ran if best.ran is not None else dispatch.jobs
    gpus = dispatch.nodes * dispatch.gpus_per_node
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
                f"plan written to {output} (a static plan: 'planner run {instance} "
                f"{output}' with the same model runs it)"
            )
        else:
            plan_of_run = result.plan(setting)
            assert plan_of_run is not None
            plan_of_run.save(output, best.run, names)
            typer.echo(f"dispatch written to {output} ('planner run {instance} {output}')")
    if gantt is not None:
        from planner.app.colocation import save_run_chart

        chart = save_run_chart(best.run, names, f"{solver} plan", gantt, jobs, gpus)
        typer.echo(f"chart written to {gantt} ({chart.line()})")
    if violations:
        typer.echo("error: the plan's run fails its audit (a bug)", err=True)
        raise typer.Exit(1)
    if result.interrupted:
        raise typer.Exit(130)


def _search(
    dispatch: Any,
    setting: Setting,
    goal: tuple[str, dict[str, float]],
    static: Callable[[float], tuple[Problem, Schedule] | None] | None,
    options: dict[str, Any],
    progress: Callable[[Any], None] | None,
    halt: Halt | None = None,
    stages: Sequence[str] | None = None,
) -> DispatchResult:
    """The search in the executor's model of ``dispatch``'s jobs for ``goal`` (objective,
    weights): ``stages`` where given (CP-SAT's workers: ``options["workers"]``), else
    every stage with a static plan (``static``), the policies alone without one (the
    ``table`` model)."""
    from planner.executor.model.elastic import Hybrid
    from planner.executor.model.jobs import any_elastic
    from planner.solvers.dispatch_search import (
        BATCH_POLICIES,
        DEFAULT_TIME_LIMIT,
        ELASTIC_POLICIES,
        STAGES,
    )
    from planner.solvers.registry import dispatch_solver

    objective, weights = goal
    if any_elastic(dispatch.jobs):  # decided by their policies
        hybrid = any(isinstance(j.elastic, Hybrid) for j in dispatch.jobs)
        return dispatch_solver()(
            dispatch, setting, objective, weights,
            time_limit=options.get("time_limit", DEFAULT_TIME_LIMIT), stages=("policies",),
            progress=progress, halt=halt,
            policies=ELASTIC_POLICIES[:2] if hybrid else ELASTIC_POLICIES,
        )  # fmt: skip
    if options.get("no_preempt"):  # every job once to its end: the batch policies alone
        return dispatch_solver()(
            dispatch, setting, objective, weights,
            time_limit=options.get("time_limit", DEFAULT_TIME_LIMIT),
            seed=options.get("seed", 0), stages=("policies",), progress=progress, halt=halt,
            policies=BATCH_POLICIES[objective],
        )  # fmt: skip
    return dispatch_solver()(
        dispatch, setting, objective, weights,
        time_limit=options.get("time_limit", DEFAULT_TIME_LIMIT),
        seed=options.get("seed", 0),
        stages=stages or (STAGES if static is not None else ("policies",)),
        static=static, progress=progress, halt=halt, threads=options.get("workers") or 2,
    )  # fmt: skip


def plan_jobs(
    instance: str | Path,
    time_limit: float = 60.0,
    seed: int = 0,
    setting: Setting | None = None,
    progress: Callable[[Any], None] | None = None,
) -> DispatchResult:
    """Plan the training jobs of ``instance`` in the job-level executor's model, as
    ``planner solve INSTANCE`` does: the search over dispatches (policies, the static
    portfolio's plan, tuned policies, recombined), every figure the executor's run of
    the plan. (``planner.solve`` plans a :class:`~planner.model.Problem` in the static
    block model, each block at one speed to its end.)

    Parameters
    ----------
    instance
        A cluster-form instance (``.yaml``, ``.json``) or a Muri trace (``.csv``).
    time_limit
        Seconds of search.
    seed
        Seeds the search's random draws.
    setting
        The executor's model (:class:`~planner.executor.runs.Setting`); by default the
        instance's, with Muri's slowdown factors and restart overheads (none under the
        ``table`` model).
    progress
        Called with every new best.

    Returns
    -------
    DispatchResult
        Its ``best`` run (``best.run``: a :class:`~planner.executor.loop.ExecutorRun`),
        ``status`` against its ``bound``, and ``plan(setting)``: the dispatch, which
        ``save`` writes as ``planner solve -o`` does.

    Raises
    ------
    InputError
        For a file without training jobs, a trace without a cluster, or an objective the
        executor's model does not plan (energy, cost).
    """
    from planner.executor.runs import Setting, dispatch_of, dl_workload
    from planner.io.instance import load_instance
    from planner.solvers.dispatch_search import OBJECTIVES

    path = Path(instance)
    workload, why = dl_workload(path)
    if workload is None:
        raise InputError(f"no training jobs to plan in the executor's model: {why}", str(path))
    if workload.nodes is None:
        raise InputError("a trace names no cluster: import it with planner import muri", str(path))
    if workload.objective not in OBJECTIVES:
        raise InputError(
            f"objective {workload.objective}: the executor's model plans makespan and "
            "weighted_completion; solve its problem with planner.solve",
            str(path),
        )
    if setting is None:
        setting = Setting(restart=False) if workload.table is not None else Setting()
    static = None
    if workload.table is None:
        problem = load_instance(path, check=True)
        static = static_portfolio(problem, seed, progress)
    goal = (workload.objective, {j.name: j.weight for j in workload.jobs})
    dispatch = dispatch_of(workload, setting, "lp-groups")
    options = {"time_limit": time_limit, "seed": seed}
    return _search(dispatch, setting, goal, static, options, progress)


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
    from planner.app.job_runs import allocation_row, speed_line
    from planner.executor.fairness import fairness, fairness_rows
    from planner.executor.model.jobs import any_elastic

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
    found = result.colgen
    if solver == "cpsat" and result.objective == "makespan":
        how = ("in the executor's model: configuration program, policies, recombined, column "
               "generation with CP-SAT pricing")  # fmt: skip
    if dispatch.model.table is not None:
        how = "in the executor's model on GPU types: " + ", ".join(c.source for c in result.tried)
    if any_elastic(dispatch.jobs):
        how = "elastic jobs, their policies in the executor's model: " + ", ".join(
            c.source for c in result.tried
        )
    rows: list[tuple[str, object]] = [
        ("instance", f"{instance} ({what})"),
        (
            "model",
            f"{setting.line(dispatch.model)} (job-level executor: the plan is what it runs)"
            + speed_line(dispatch.jobs),
        ),
        ("solver", f"{solver} ({how})"),
        ("status", result.status + (" (interrupted)" if result.interrupted else "")),
        (label, "-" if best is None else f"{best.value:,.0f} s"),
        (
            "lower bound",
            f"{result.bound:,.0f} s ({result.bound_kind})"
            if result.bound > 0
            else f"- ({result.bound_kind})",
        ),
        ("gap", "-" if gap is None else f"{100 * gap:.2f}%"),
    ]
    if found is not None:
        rows.append((
            "columns",
            f"{'converged' if found.converged else 'not converged'} in {found.rounds} rounds "
            f"({found.seconds:.1f} s, {found.pricing_seconds:.1f} s pricing): master "
            f"{found.plan.makespan:,.0f} s, {found.greedy_columns} columns priced greedily, "
            f"{found.cpsat_columns} by CP-SAT",
        ))  # fmt: skip
    if best is not None:
        run = best.run
        if result.objective != "makespan":
            rows.append(("makespan", f"{run.makespan:,.0f} s"))
        ran = best.ran if best.ran is not None else dispatch.jobs
        rows += [
            ("mean JCT", f"{run.mean_jct:,.0f} s"),
            ("p99 JCT", f"{run.p99_jct:,.0f} s"),
            *fairness_rows(fairness(run, ran, dispatch.nodes * dispatch.gpus_per_node)),
        ]
        if energy is not None:
            rows.append(("energy", f"{energy.kwh:,.1f} kWh"))
            if energy.cost is not None:
                rows.append(("energy cost", f"{energy.cost:,.2f} (the instance's tariff)"))
        allocation = allocation_row(run, ran)
        if allocation is not None:
            rows.append(allocation)
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


def solve_on_types(request: SolveRequest, workload: Workload | None) -> bool:
    """Solve an instance under the ``table`` model (GPU types, measured rates): the
    search in the executor over the policies for GPU types
    (:data:`~planner.solvers.dispatch_search.TABLE_POLICIES`); whether the instance is one.

    Raises
    ------
    InputError
        For a static engine, ``--static``, an option the search does not take, or an
        objective it does not plan.
    typer.Exit
        With status 1 if its run fails the audit.
    """
    from planner.executor.runs import Setting

    if workload is None or workload.table is None:
        return False
    static, solver, options = request.static, request.solver, request.options
    if static or solver != "portfolio":
        what = "--static" if static else f"solver {solver}"
        raise InputError(
            f"{what}: the table model's jobs have measured rates, not stages; the portfolio "
            "plans them in the executor"
        )
    given = [k for k in options if k not in ("time_limit", "seed")]
    if given:
        raise InputError(
            f"--{given[0].replace('_', '-')}: the search on GPU types takes --time-limit and "
            "--seed only"
        )
    weights = {j.name: j.weight for j in workload.jobs}
    solve_in_executor(request, workload, None, Setting(restart=False),
                      (workload.objective, weights))  # fmt: skip
    return True


def table_info(instance: Path, workload: Workload | None) -> list[tuple[str, object]]:
    """``planner info`` of an instance under the ``table`` model (``workload``: its jobs,
    :func:`workload_of`): its jobs, GPU types and the model's bounds (seconds); empty for
    another instance."""
    from planner.executor.model.jobs import type_gpus, typed_bound
    from planner.rates import alone_seconds

    if workload is None or workload.table is None:
        return []
    per_node = workload.gpus_per_node or 1
    gpus = type_gpus(workload.types, per_node)
    jobs = workload.jobs
    bound, which = typed_bound(jobs, workload.types, per_node, workload.table)
    keys = [(j.model, j.gpus) for j in jobs]
    jct = sum(
        alone_seconds(k, j.iterations, workload.table) for k, j in zip(keys, jobs, strict=True)
    ) / len(jobs)
    return [
        ("instance", str(instance)),
        ("jobs", f"{len(jobs)} ({len(set(keys))} job keys)"),
        ("GPUs", ", ".join(f"{n} {t}" for t, n in gpus.items())),
        ("interleave", "table (measured rates per GPU type, alone and in pairs)"),
        ("makespan bound", f"{bound['bound']:,.0f} s ({which})"),
        ("relaxation", f"{bound['lp']:,.0f} s (types' time shared at will, releases at 0)"),
        ("JCT bound", f"{jct:,.0f} s mean (every job alone on its fastest type)"),
    ]


def plan_in_executor(
    request: SolveRequest,
    jobs: Workload | None,
    problem: Problem,
    model: tuple[str | None, float | None, str | None, bool | None],
) -> bool:
    """Solve an instance with training jobs in the executor's model (:mod:`planner.app.solve_dl`)
    unless ``static`` or its objective is energy or cost; whether it did. ``jobs``: its
    training jobs (:func:`workload_of`). ``model``: the executor's options as given
    (interleave, data slots, slowdown, restart).

    Raises
    ------
    InputError
        For the executor's options where no plan is made in its model.
    """
    from planner.executor.model.jobs import any_elastic
    from planner.executor.runs import DEFAULT_RESTART, DEFAULT_SLOWDOWN, Setting
    from planner.solvers.dispatch_search import OBJECTIVES

    static, solver, options, output = (
        request.static,
        request.solver,
        request.options,
        request.output,
    )
    interleave, data_slots, slowdown, restart = model
    given = [name for name, v in zip(("--interleave", "--data-slots", "--slowdown", "--restart"),
                                      model, strict=True) if v is not None]  # fmt: skip
    workload = jobs if not static and problem.jobs and problem.objective in OBJECTIVES else None
    elastic = workload is not None and any_elastic(workload.jobs)
    others = [k for k in options if k != "time_limit"]
    if elastic and (solver != "portfolio" or others):
        what = f"solver {solver}" if solver != "portfolio" else f"--{others[0].replace('_', '-')}"
        raise InputError(
            f"{what}: elastic jobs are planned by their policies' search (the default solver, "
            "with --time-limit only)"
        )
    if elastic and not all(j.elastic is not None for j in workload.jobs):
        raise InputError("elastic and fixed jobs together: their policies run elastic jobs only")
    if workload is None:
        if given:
            why = "without --static" if static else "with training jobs"
            raise InputError(f"{given[0]}: the executor's model plans instances {why} "
                             "(objective makespan or weighted_completion)")  # fmt: skip
        return False
    output = request.output
    if output is not None and solver == "portfolio" and output.suffix.lower() != ".json":
        raise InputError("--output: a dispatch file is .json", str(output))
    setting = Setting(interleave, data_slots, slowdown or DEFAULT_SLOWDOWN,
                      DEFAULT_RESTART if restart is None else restart)  # fmt: skip
    if setting.model(workload).kind != "fluid" and data_slots is not None:
        raise InputError("--data-slots: data slots are fluid's; muri loads over two of four slots")
    solve_in_executor(request, workload, problem, setting)
    return True


def default_run(workload: Workload | None, problem: Problem, schedule: Schedule) -> Any:
    """A static plan of an instance with training jobs run in the job-level executor with
    the defaults ``planner run INSTANCE PLAN`` runs it with
    (:class:`planner.executor.runs.Setting`): the setting, the dispatch and the run;
    why the executor cannot run the plan (a string, e.g. a pooled plan's); or ``None``
    for a task graph without training jobs (``workload``: :func:`workload_of`)."""
    from planner.executor.runs import Setting, dispatch_of

    if workload is None:
        return None
    setting = Setting()
    try:
        dispatch = dispatch_of(workload, setting, plan=(problem, schedule))
    except InputError as exc:
        return f"the executor cannot run the plan: {exc}"
    return setting, dispatch, dispatch.run()


def executed_line(
    workload: Workload | None, problem: Problem, schedule: Schedule
) -> tuple[str, str] | None:
    """The ``executed`` line of a plan of an instance with training jobs: its makespan in
    the executor (:func:`default_run`), the model on the same line, beside the planned
    one; ``None`` for a task graph without training jobs."""
    ran = default_run(workload, problem, schedule)
    if ran is None:
        return None
    if isinstance(ran, str):
        return ("executed", f"- ({ran})")
    setting, dispatch, run = ran
    return (
        "executed",
        f"{run.makespan:,.0f} s ({setting.line(dispatch.model)}; planned "
        f"{dispatch.planned:,.0f} s in the static block model)",
    )


def audit_static_plan(workload: Workload | None, problem: Problem, schedule: Schedule) -> None:
    """The executor's audit of a static plan of an instance with training jobs, run with
    the default model (:func:`default_run`; nothing for another instance).

    Raises
    ------
    typer.Exit
        With status 1 if the run fails its audit.
    """
    from planner.executor.audit import audit

    ran = default_run(workload, problem, schedule)
    if ran is None:
        return
    if isinstance(ran, str):
        typer.echo(f"executor's audit: - ({ran})")
        return
    setting, dispatch, run = ran
    wrong = audit(run, dispatch.jobs, dispatch.nodes * dispatch.gpus_per_node)
    if wrong:
        typer.echo(f"executor's audit: INVALID: {wrong[0]} ({len(wrong)} violations)")
        raise typer.Exit(1)
    typer.echo(
        f"executor's audit: valid, its run {run.makespan:,.0f} s ({setting.line(dispatch.model)})"
    )


def validate_dispatch(source: InstanceFile, path: Path) -> bool:
    """Validate a dispatch file of ``instance`` (:mod:`planner.executor.dispatch`): the
    executor runs it, its audit is the verdict; whether ``path`` is one.

    Raises
    ------
    InputError
        For a dispatch of an instance without training jobs, or a malformed file.
    typer.Exit
        With status 1 if the run fails its audit.
    """
    from planner.executor.audit import audit
    from planner.executor.dispatch import DispatchPlan, dispatch_data

    data = dispatch_data(path)
    if data is None:
        return False
    workload, why = workload_of(source)
    if workload is None:
        raise InputError(f"a dispatch runs training jobs; {source.path} is {why}", str(path))
    dispatch = DispatchPlan.from_data(data, str(path)).dispatch(workload)
    run = dispatch.run()
    violations = audit(run, dispatch.jobs, dispatch.nodes * dispatch.gpus_per_node)
    for v in violations:
        typer.echo(v)
    if violations or not run.finished:
        typer.echo(f"{path}: INVALID ({len(violations)} violations of the executor's audit)")
        raise typer.Exit(1)
    typer.echo(
        f"{path}: valid (the executor's audit of its run), makespan {run.makespan:,.0f} s, "
        f"mean JCT {run.mean_jct:,.0f} s"
    )
    return True


def workload_of(source: InstanceFile) -> tuple[Workload | None, str]:
    """The training jobs of an instance read once (:func:`planner.executor.runs.dl_workload`
    on its parsed document), or ``None`` and why the task-level replay runs it."""
    from planner.executor.runs import dl_workload

    if source.data is None:
        return None, "a task graph without training jobs"
    return dl_workload(source.path, source.data)

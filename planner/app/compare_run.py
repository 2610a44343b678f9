"""One run of a study of ``planner compare``: a solver (or a policy) on an instance and a
seed, its schedule validated, and under a simulation spec its realized figures; the
columns of the results table it fills (:data:`COLUMNS`, :data:`REALIZED`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.disturbances import Simulation, parse_simulation
from planner.errors import InputError
from planner.io.instance import read_instance
from planner.times import seconds_per_tick

if TYPE_CHECKING:
    from planner.io.instance import InstanceFile
    from planner.model import Problem

log = logging.getLogger(__name__)

COLUMNS = [
    "instance",
    "solver",
    "seed",
    "status",
    "objective",
    "lower_bound",
    "gap_bound",
    "reference",
    "gap_reference",
    "runtime",
    "valid",
    "error",
    "energy_kwh",
    "makespan",
    "unit",
]
"""Columns of the results table, in file order. ``unit``: the unit of the row's times
(objective, bound, makespan and the realized figures, where they are times): ``s`` where
the instance's tick has a length, and for every run in the job-level executor (which
counts seconds); ``ticks`` for a task graph without one (PSPLIB)."""
LEGACY = (COLUMNS[:-3], COLUMNS[:-2], COLUMNS[:-1])
"""The columns of results files written before ``energy_kwh``, ``makespan`` and ``unit``:
such files are read, and resumed with the columns added (empty for their rows; their
times are in ticks)."""
TIMES = ("makespan", "weighted_completion")
"""The objectives whose values are times (the others: energy in kWh, cost)."""
REALIZED = [
    "simulation",
    "realized_makespan_mean",
    "realized_makespan_p95",
    "realized_jct_mean",
    "realized_jct_p99",
    "realized_ftf_max",
    "realized_jain",
    "realized_wait_max",
]
"""Columns a study with a simulation adds after :data:`COLUMNS` (the last four: job-level
runs only)."""
REALIZED_BEFORE = REALIZED[:4]
"""The columns a simulated study added before the fairness figures: such files are read,
and resumed with the columns added."""
ONLINE_PLANNER = "planner"
"""The name of the online planner among a study's policies."""
JOBS_KEY = "_jobs"
"""The key of a row that holds, for a job-level run, every job's JCT (s) and
finish-time fairness in the run of the first seed: not a column; the study writes it to
the side table (:func:`planner.app.compare_jct.append_jobs`)."""
FAILED = ("invalid", "error")
"""Statuses of runs that failed: a schedule the validator rejects, or an exception."""


@dataclass(frozen=True)
class Run:
    """One run of a study: a solver on an instance file with a seed (with ``watts``: the
    instance under ``objective: energy`` with those ``makespan_watts``, a point of a
    makespan-energy front)."""

    instance: str
    path: str
    solver: str
    seed: int
    watts: float | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """What identifies the run in the results file."""
        return (self.instance, self.solver, self.seed)


def columns(simulated: bool) -> list[str]:
    """Columns of a results table, with the :data:`REALIZED` ones if the study simulates."""
    return COLUMNS + REALIZED if simulated else list(COLUMNS)


def run_one(
    run: Run,
    time_limit: float | None = None,
    workers: int | None = None,
    simulation: str | None = None,
) -> dict[str, Any]:
    """Execute ``run`` and return its row (without the reference columns).

    Never raises for a failing solver: a schedule the validator rejects gives
    status ``invalid``, any other exception status ``error``, with the message
    in ``error``. With a ``simulation`` spec the row also has the :data:`REALIZED`
    columns, filled in for a valid schedule.

    Raises
    ------
    KeyboardInterrupt
        If Ctrl-C stopped the solve (``Result.interrupted``): its figures are
        those of a cut-short run, not a result of the study.
    """
    from planner.metrics import schedule_metrics
    from planner.solvers import SolverError, solve
    from planner.solvers.registry import applicable
    from planner.validate import validate

    row: dict[str, Any] = {c: None for c in columns(simulation is not None)}
    row.update(instance=run.instance, solver=run.solver, seed=run.seed, error="")
    if simulation is not None:
        row["simulation"] = simulation
    if run.solver in policy_names() and simulation is not None:
        row["status"] = "policy"
        _realize(row, run.path, None, parse_simulation(simulation))
        return row
    options: dict[str, Any] = {"time_limit": time_limit, "seed": run.seed}
    if workers is not None:
        options["workers"] = workers
    try:
        source = read_instance(run.path)  # read once, passed down
        problem = source.problem()
        sim = None if simulation is None else parse_simulation(simulation, problem.time_unit)
        workload = None
        row["unit"] = "ticks" if problem.time_unit == "1" else "s"
        if run.watts is not None:
            problem = problem.model_copy(
                update={"objective": "energy", "makespan_watts": run.watts}
            )
        else:
            workload = _executor_workload(source, problem)
        if workload is not None and run.solver == "portfolio":
            _search_in_executor(row, run, problem, workload, sim, time_limit)
            return row
        result = solve(problem, run.solver, **applicable(run.solver, options))
    except SolverError as exc:
        row.update(status="invalid", valid=False, error=str(exc))
        return row
    # One failing run must not end the study: record the error and go on.
    except Exception as exc:
        row.update(status="error", error=f"{exc.__class__.__name__}: {exc}")
        return row
    if result.interrupted:
        raise KeyboardInterrupt
    tick = seconds_per_tick(problem.time_unit)
    scale = tick if problem.objective in TIMES else 1.0
    row.update(
        status=result.status.value,
        objective=None if result.objective is None else result.objective * scale,
        lower_bound=None if result.lower_bound is None else result.lower_bound * scale,
        gap_bound=result.gap,
        runtime=round(result.runtime, 6),
    )
    if result.schedule is not None:
        row["valid"] = validate(problem, result.schedule).ok
        if not row["valid"]:
            row["status"] = "invalid"
            return row
        if workload is not None:
            _as_executed(row, problem, result.schedule, workload, sim)
        else:
            row["energy_kwh"] = schedule_metrics(problem, result.schedule).energy_kwh
            row["makespan"] = result.schedule.makespan(problem) * tick
        if sim is not None:
            _realize(row, run.path, (problem, result.schedule), sim, workload, parsed=source.data)
    return row


def _executor_workload(source: InstanceFile, problem: Problem) -> Any:
    """The training jobs of ``source`` where the executor's model plans ``problem``'s
    objective (its plans are runs in the executor), else ``None``."""
    from planner.executor.runs import dl_workload
    from planner.solvers.dispatch_search import OBJECTIVES

    if problem.objective not in OBJECTIVES or source.data is None:
        return None
    return dl_workload(source.path, source.data)[0]


def _search_in_executor(
    row: dict[str, Any],
    run: Run,
    problem: Problem,
    workload: Any,
    sim: Simulation | None,
    time_limit: float | None,
) -> None:
    """``portfolio`` on training jobs plans as ``planner solve`` does: the dispatch search
    in the executor's model (under the simulation's model, if any). The row's figures
    are its best run's, in seconds; status and gap are against the
    executor's bound; under a simulation that run is the realized one.

    A dispatch runs its events as planned: under noise, failures or work-conserving
    starts the row is an error saying so.
    """
    from planner.app.solve_dl import static_portfolio
    from planner.executor.runs import dispatch_of
    from planner.solvers.dispatch_search import DEFAULT_TIME_LIMIT

    if sim is not None:
        dist = sim.disturbances
        if dist.noise or dist.failures or dist.work_conserving:
            row.update(
                status="error",
                error="portfolio plans a dispatch, which runs its events as planned: judge "
                "it without noise, failures or work-conserving starts, or name a policy",
            )
            return
    result, dispatch, setting = _in_executor(
        problem, workload, sim,
        time_limit=time_limit or DEFAULT_TIME_LIMIT, seed=run.seed,
        static=static_portfolio(problem, run.seed),
    )  # fmt: skip
    row["runtime"] = round(result.runtime, 6)
    best = result.best
    if best is None:
        row["status"] = "unknown"
        return
    if result.interrupted:
        raise KeyboardInterrupt
    _executed(row, result, dispatch, workload, problem)
    if row["valid"] and sim is not None:
        plan = result.plan(setting)
        again = (
            plan.dispatch(workload)
            if plan is not None
            else dispatch_of(workload, setting, "plan", best.static)
        )
        _realize(row, run.path, None, sim, workload, again)


def _as_executed(
    row: dict[str, Any], problem: Problem, schedule: Any, workload: Any, sim: Simulation | None
) -> None:
    """A static engine's plan of training jobs, as ``planner solve`` prints it: the row's
    figures become the plan's run in the executor (under the simulation's model, if any),
    in seconds, its status and gap against the executor's bound; the static
    block model's figures are the solver's, not the plan's."""
    result, dispatch, _ = _in_executor(
        problem, workload, sim, stages=("static",), static=lambda _limit: (problem, schedule)
    )
    if result.best is None:
        row.update(status="error", error="the executor cannot run the plan")
        return
    _executed(row, result, dispatch, workload, problem)


def _in_executor(
    problem: Problem, workload: Any, sim: Simulation | None, **search: Any
) -> tuple[Any, Any, Any]:
    """The search in the executor's model (the simulation's, else the defaults) on
    ``workload``, with the ``search`` options of
    :func:`~planner.solvers.dispatch_search.search_dispatch`: its result, the dispatch it ran
    on, and the setting."""
    from planner.executor.runs import Setting, dispatch_of
    from planner.solvers.registry import dispatch_solver

    setting = Setting() if sim is None else _sim_setting(sim)
    dispatch = dispatch_of(workload, setting, "lp-groups")
    weights = {j.name: j.weight for j in problem.jobs}
    return (
        dispatch_solver()(dispatch, setting, problem.objective, weights, **search),
        dispatch,
        setting,
    )


def _executed(
    row: dict[str, Any], result: Any, dispatch: Any, workload: Any, problem: Problem
) -> None:
    """The row's figures from the best run of ``result`` (a search in the executor's
    model, on ``dispatch``'s cluster), in seconds: objective, bound, gap, makespan, energy,
    the audit's verdict, status."""
    from planner.executor.audit import audit
    from planner.executor.energy import run_energy

    best = result.best
    ran = best.ran if best.ran is not None else dispatch.jobs
    gpus = dispatch.nodes * dispatch.gpus_per_node
    valid = not audit(best.run, ran, gpus)
    row.update(
        status=result.status if valid else "invalid",
        valid=valid,
        objective=best.value,
        lower_bound=result.bound,
        gap_bound=result.gap,
        makespan=best.run.makespan,
        unit="s",
        energy_kwh=run_energy(best.run, ran, gpus, workload.tariff, workload.switch_off).kwh,
    )


def _sim_setting(sim: Simulation) -> Any:
    """The executor's :class:`~planner.executor.runs.Setting` a simulation spec names."""
    from planner.executor.runs import Setting

    dist = sim.disturbances
    slowdown = "none" if dist.slowdown is None else dist.slowdown.source
    return Setting(sim.interleave, None, slowdown, sim.restart)


def _realize(
    row: dict[str, Any],
    path: str,
    plan: tuple[Problem, Any] | None,
    sim: Simulation,
    workload: Any = None,
    planned: Any = None,
    parsed: dict[str, Any] | None = None,
) -> None:
    """Fill in the realized figures of ``row``'s plan, or of its peer policy (``plan``
    ``None``), in the row's unit (status ``error`` if running it fails): an instance
    with training jobs runs in the job-level executor (:mod:`planner.executor.runs`, its
    defaults unless ``sim`` says otherwise), a task graph without them in the task-level
    replay. ``workload``: the instance's training jobs, if read already; ``planned``: the
    :class:`~planner.executor.runs.Dispatch` to judge, planned already (a dispatch of
    the search in the executor's model); ``parsed``: the instance file already parsed
    (:attr:`planner.io.instance.InstanceFile.data`), not read again."""
    from planner.executor.fairness import fairness
    from planner.executor.model.jobs import outages_of
    from planner.executor.runs import dispatch_of, dl_workload, judge
    from planner.replay.simulate import rank_by_realized

    jobs: dict[str, tuple[float, float]] = {}
    time_keys = ("makespan_mean", "makespan_p95", "jct_mean", "jct_p99", "wait_max")
    try:
        if workload is None:
            workload, why = dl_workload(path, parsed)
            if workload is None and plan is None:
                raise InputError(f"a policy runs training jobs; {path} is {why}")
        if workload is None:
            problem, schedule = plan  # type: ignore[misc]
            (rank,) = rank_by_realized(
                problem, {row["solver"]: schedule}, sim.disturbances, sim.runs, sim.seed
            )
            figures = {"makespan_mean": rank.makespan["mean"], "makespan_p95": rank.makespan["p95"]}
            if rank.mean_jct is not None:
                figures["jct_mean"] = rank.mean_jct["mean"]
            tick = seconds_per_tick(problem.time_unit)
        else:
            dispatch = planned
            if dispatch is None:
                dist = sim.disturbances
                outages = outages_of(
                    dist.failures, workload.names(workload.nodes or 8), workload.time_unit
                )
                dispatch = dispatch_of(
                    workload, _sim_setting(sim), "plan" if plan else row["solver"], plan,
                    dist.work_conserving, outages, dist.noise,
                )  # fmt: skip
            if row["solver"] == ONLINE_PLANNER and plan is None:
                from planner.replay.planner_policy import SearchPlanner

                dispatch.make = SearchPlanner
            first = dispatch.run(sim.seed)
            figures = dict(judge(dispatch, sim.runs, sim.seed, first=first))
            ran = dispatch.jobs_of(sim.seed)
            fair = fairness(first, ran, dispatch.nodes * dispatch.gpus_per_node).ftf
            jobs = {j: (f - first.release[j], fair[j]) for j, f in first.finish.items()}
            tick = 1.0  # the job-level executor counts seconds
            row["unit"] = "s"
    # A replay that fails is a failed run of the study, not the end of it.
    except Exception as exc:
        row.update(status="error", error=f"simulation: {exc.__class__.__name__}: {exc}")
        return
    for key, value in figures.items():
        row[f"realized_{key}"] = value * tick if key in time_keys else value
    if jobs:
        row[JOBS_KEY] = jobs


def policy_names() -> list[str]:
    """The executor's policies a study runs under a simulation: every policy, and the
    online planner in the executor's model (:data:`ONLINE_PLANNER`, 1 s per event)."""
    from planner.executor.policies import POLICIES

    return [*POLICIES, ONLINE_PLANNER]

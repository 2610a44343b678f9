"""Planning in the executor's model: the best dispatch of a workload with training jobs.

For an instance with training jobs the plan is what the job-level executor runs
(:mod:`planner.executor.dispatch`), so the search evaluates every candidate by running it
there, under the run's own model (``fluid`` or ``muri``, slowdown factors, restart
overheads). Its stages, in order, each within what is left of the time limit:

0. **exact** (makespan): the configuration program
   (:mod:`planner.executor.configurations`) on workloads small enough to enumerate: its
   optimum bounds every dispatch in groups, and its phases run in the executor (without
   restart overheads they attain it: a proof);
1. **policies**: the executor's policies as construction stages (for the makespan
   ``lp-groups`` first, for the completion time ``jct-groups``, ``srsf-pack`` and ``muri-s``
   first);
2. **static**: a static block-model plan (the caller's, e.g. the static portfolio's
   on the problem compiled from the file) as the executor dispatches it
   (:class:`~planner.executor.policies.PlanDispatch`);
3. **tune**: ``lp-groups`` (makespan) or ``srsf-pack`` (completion time) with their
   parameters searched: a fixed grid, then random draws while time is left, until
   :data:`PATIENCE` draws in a row find nothing better;
4. **recombine** (makespan, every job released at 0): the configuration program over the
   configurations the best runs so far used
   (:func:`~planner.executor.configurations.recombined_plan`): the best mix of them, its
   phases run in the executor;
5. **evolve** (makespan): a genetic algorithm over lp-groups' keys (a priority boost per
   job, the critical and re-solve shares), every key decoded by a run in the executor
   (simulation-based decoding), from the best tuned runs, to the time limit or
   :data:`EVOLVE_PATIENCE` children without a better dispatch; tuning then stops at
   :data:`TUNE_SHARE` of the limit.

The best run by the objective (the makespan, or the mean completion time weighted by
the jobs' ``weight``) is the plan. Its status and gap are against the executor's bound
(:func:`~planner.executor.model.grouping.executor_bound`, or the configuration program's
optimum where it ran; for the completion time, every job at its least period from its
release): ``optimal`` only where the gap is 0 (below :data:`OPTIMAL_GAP`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InputError
from planner.interrupt import Halt
from planner.result import Progress

if TYPE_CHECKING:
    from planner.executor.configurations import ConfigurationPlan
    from planner.executor.dispatch import DispatchPlan
    from planner.executor.loop import ExecutorRun
    from planner.executor.model.jobs import ExecutorJob, Where
    from planner.executor.policies import Policy
    from planner.executor.runs import Dispatch, Setting
    from planner.model import Problem
    from planner.schedule import Schedule
    from planner.solvers.colgen import ColumnGeneration

Trace = Sequence[tuple[float, Sequence[tuple[Sequence[str], object, "Where"]]]]
"""A run's trace: per event its time and groups (names, overhead, GPU set)."""

STAGES = ("exact", "policies", "static", "tune", "recombine", "evolve")
"""The portfolio's stages, in the order they run (see the module docstring)."""

ALL_STAGES = (*STAGES, "colgen")
"""Every stage: the portfolio's and ``colgen`` (``planner solve -s cpsat``'s)."""

OBJECTIVES = ("makespan", "weighted_completion")
"""The objectives the search takes."""

MAKESPAN_POLICIES = ("lp-groups", "muri-l", "tiresias", "muri-s", "srsf-pack")
"""The policies stage 1 runs for the makespan, in order."""
TABLE_POLICIES = {
    "makespan": (
        "het-makespan",
        "gavel-min-total-duration-packed",
        "gavel-min-total-duration-perf",
    ),
    "weighted_completion": (
        "het-srpt",
        "gavel-max-min-fairness-packed",
        "gavel-finish-time-fairness-perf",
    ),
}
"""The policies stage 1 runs on GPU types under the ``table`` model (the stage-based
ones need stages), per objective."""
COMPLETION_POLICIES = (
    "jct-groups",
    "srsf-pack",
    "muri-s",
    "ftf-groups",
    "srtf",
    "srsf",
    "muri-l",
    "tiresias",
)
"""The policies stage 1 runs for the completion time, in order."""

BATCH_POLICIES = {
    "makespan": ("batch-lpt", "batch-srtf", "batch-fifo"),
    "weighted_completion": ("batch-srtf", "batch-lpt", "batch-fifo"),
}
"""The policies the search runs for plans without preemption (``solve --no-preempt``):
every job once, start to end, on one GPU set (:mod:`planner.executor.policies.batch`)."""

ALLOCATING_POLICIES = ("grid-srtf-events",)
"""The policies stage 1 runs too where jobs have resource profiles: they decide each
job's CPU and memory (:mod:`planner.executor.policies.grid`)."""


ELASTIC_POLICIES = ("goodput-pack", "goodput", "pollux-tiresias", "pollux-optimus")
"""The search's policies for elastic jobs (for hybrid-parallel ones, the first two)."""


def allocating(jobs: Sequence[ExecutorJob]) -> tuple[str, ...]:
    """:data:`ALLOCATING_POLICIES` where a job of ``jobs`` has a resource profile, else
    none."""
    return ALLOCATING_POLICIES if any(j.profile is not None for j in jobs) else ()


LP_GRID = ((0.95, 0.01), (0.7, 0.0), (1.0, 0.01), (0.95, 0.0), (0.8, 0.005), (0.9, 0.005))
"""``lp-groups``' (critical share, re-solve share) tried first in stage 3."""
PACK_GRID = (0.6, 1.0, 0.4, 0.9, 0.7)
"""``srsf-pack``'s join shares tried first in stage 3."""
BIAS_GRID = (1.0, 4.0, 0.5, 8.0)
"""``ftf-groups``' biases tried first in stage 3 (then drawn log-uniformly, 0.1 to 16)."""
TUNABLE = ("lp-groups", "srsf-pack", "ftf-groups")
"""The policies stage 3 can tune."""
TUNED = {"makespan": "lp-groups", "weighted_completion": "srsf-pack"}
"""The policy stage 3 tunes, by objective, unless the caller names another
(``lp-groups``, ``srsf-pack`` or ``ftf-groups``)."""

POPULATION = 12
"""The genetic algorithm's population (stage ``evolve``)."""
SIGMA = 0.3
"""The spread of a new member's log boosts, and of a mutation."""
MUTATION = 0.1
"""The chance that a child's boost (or its critical share) mutates."""
EVOLVE_PATIENCE = 200
"""The genetic algorithm stops after this many children in a row without a better
dispatch (or at the time limit)."""
KEEP_RUNS = 100
"""The search keeps the traces of this many of its best runs of groups (for
recombining and the plan); of the others, only their figures."""

RECOMBINED_EVENTS = 20_000
"""The recombining stage takes the configurations of the best runs, up to this many
events in all (on trace3', 88 runs' worth took minutes to build and solve)."""

RECOMBINE_SHARE = 0.1
"""The share of the time limit the tuning stage leaves to recombining (without
``evolve``)."""
TUNE_SHARE = 0.5
"""The share of the time limit the tuning stage may take where ``evolve`` follows."""

OPTIMAL_GAP = 1e-6
"""A gap this small is 0: the LP solver's tolerance (the configuration program's
optimum is met to it)."""

PATIENCE = 40
"""Stage 3 stops after this many draws in a row without a better dispatch (or at a
proven optimum, or at the time limit)."""

DEFAULT_TIME_LIMIT = 60.0
"""Seconds of search unless told otherwise."""


@dataclass
class Candidate:
    """One dispatch the search ran: what made it, its objective, its run."""

    source: str
    stage: str
    value: float
    run: ExecutorRun | None
    """Its run (``None`` once it is not among the :data:`KEEP_RUNS` best)."""
    static: tuple[Problem, Schedule] | None = None
    """The static plan it dispatches (stage ``static``); ``None``: a policy's groups."""
    ran: Sequence[ExecutorJob] | None = None
    """The jobs as the static plan dispatches them (what its run's audit checks);
    ``None``: the workload's."""
    genes: tuple[np.ndarray | None, float, float] | None = None
    """lp-groups' per-job log boosts (``None``: none), critical and re-solve shares, where
    it is a run of lp-groups (stages ``tune`` and ``evolve``)."""


@dataclass
class DispatchResult:
    """What the search returns: the best dispatch, its run, the bound and every stage."""

    objective: str
    best: Candidate | None
    bound: float
    bound_kind: str
    runtime: float
    tried: list[Candidate] = field(default_factory=list)
    """Every finished candidate, in the order run."""
    colgen: ColumnGeneration | None = None
    """What stage ``colgen`` reached, where it ran."""
    interrupted: bool = False

    @property
    def value(self) -> float | None:
        """The best candidate's objective (seconds)."""
        return None if self.best is None else self.best.value

    @property
    def gap(self) -> float | None:
        """``(value - bound) / value``: 0 where the bound proves the dispatch optimal."""
        if self.best is None or self.best.value <= 0 or self.bound <= 0:
            return None  # no dispatch, or no bound
        return max(0.0, (self.best.value - self.bound) / self.best.value)

    @property
    def status(self) -> str:
        """``optimal`` where the gap to the executor's bound is 0, else ``feasible``
        (``no solution`` without a dispatch)."""
        if self.best is None:
            return "no solution"
        return "optimal" if self.gap is not None and self.gap <= OPTIMAL_GAP else "feasible"

    def stage_best(self) -> dict[str, Candidate]:
        """The best candidate of each stage that ran."""
        out: dict[str, Candidate] = {}
        for c in self.tried:
            if c.stage not in out or c.value < out[c.stage].value:
                out[c.stage] = c
        return out

    def plan(self, setting: Setting) -> DispatchPlan | None:
        """The best dispatch as a plan the executor runs again (``None``: a static plan's
        dispatch, whose plan is its schedule, or no dispatch)."""
        from planner.executor.dispatch import DispatchPlan

        if self.best is None or self.best.static is not None:
            return None
        return DispatchPlan.of_run(self.best.run, setting, self.best.source)


class Deadline(Halt):
    """A halt that is also set once a time has passed."""

    def __init__(self, deadline: float, outer: Halt | None) -> None:
        super().__init__()
        self.deadline, self.outer = deadline, outer

    def is_set(self) -> bool:
        """Whether the time has passed or the caller asked to stop."""
        return (
            super().is_set()
            or time.perf_counter() >= self.deadline
            or (self.outer is not None and self.outer.is_set())
        )


def objective_value(run: ExecutorRun, objective: str, weights: Mapping[str, float]) -> float:
    """The run's ``objective``: its makespan, or its mean JCT weighted by ``weights``
    (seconds)."""
    if objective == "makespan":
        return run.makespan
    total = sum(weights.get(j, 1.0) for j in run.finish)
    return sum(weights.get(j, 1.0) * (f - run.release[j]) for j, f in run.finish.items()) / total


def search_dispatch(
    dispatch: Dispatch,
    setting: Setting,
    objective: str = "makespan",
    weights: Mapping[str, float] | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    stages: Sequence[str] = STAGES,
    static: Callable[[float], tuple[Problem, Schedule] | None] | None = None,
    progress: Callable[[Progress], None] | None = None,
    halt: Halt | None = None,
    policies: Sequence[str] | None = None,
    tuned: str | None = None,
    threads: int = 2,
) -> DispatchResult:
    """The best dispatch of ``dispatch``'s jobs on its cluster under its model (see the
    module docstring).

    Parameters
    ----------
    dispatch
        The workload's run setting (its jobs, cluster, model, power cap); its policy is
        not used.
    setting
        The model's setting, for the plan (:meth:`DispatchResult.plan`).
    objective
        ``makespan`` or ``weighted_completion`` (:data:`OBJECTIVES`).
    weights
        Job name -> weight of its completion time (default 1).
    time_limit
        Seconds for every stage together; the first policy always runs to its end.
    seed
        Seeds the random draws of stage 3.
    stages
        The stages to run (:data:`STAGES`), to measure what each one gives.
    static
        Makes the static plan of stage 2 within a time limit (seconds); ``None`` or a
        ``None`` plan: stage 2 is skipped.
    progress
        Called with every new best (its objective and the bound).
    halt
        Checked between and within runs: once set, the search returns its best.
    policies
        The policies of stage 1, in order (default: :data:`MAKESPAN_POLICIES` or
        :data:`COMPLETION_POLICIES`).
    tuned
        The policy stage 3 tunes (default: :data:`TUNED`'s for the objective).
    threads
        CP-SAT's workers in stage ``colgen``.

    Raises
    ------
    InputError
        For an unknown objective or stage, or a negative time limit.
    """
    from planner.executor.fairness import completion_bound
    from planner.executor.model.grouping import executor_bound
    from planner.executor.model.jobs import any_elastic
    from planner.executor.policies import POLICIES

    if objective not in OBJECTIVES:
        raise InputError(
            f"the executor's model plans for {' or '.join(OBJECTIVES)}, not {objective!r}"
        )
    unknown = [s for s in stages if s not in ALL_STAGES]
    if unknown:
        raise InputError(f"unknown stage {unknown[0]!r}; choose from {', '.join(ALL_STAGES)}")
    if tuned is not None and tuned not in TUNABLE:
        raise InputError(f"stage tune tunes {', '.join(TUNABLE)}, not {tuned!r}")
    if not time_limit >= 0:
        raise InputError(f"time limit {time_limit:g} s: give 0 or more")
    weights = dict(weights or {})
    t0 = time.perf_counter()
    deadline = Deadline(t0 + time_limit, halt)
    jobs, model = dispatch.jobs, dispatch.model
    gpus = dispatch.nodes * dispatch.gpus_per_node
    if objective == "makespan" and model.table is not None:
        bound, kind = _table_makespan_bound(dispatch)
    elif objective == "makespan":
        budget = None
        if dispatch.power_cap is not None:
            budget = (dispatch.power_cap - gpus * dispatch.watts[1], dispatch.watts)
        bound, kind = executor_bound(jobs, model, gpus, budget)
    else:
        bound, kind = completion_bound(jobs, model, weights), "each job at its least period"
    if any_elastic(jobs):
        bound, kind = 0.0, "elastic jobs: their speed is their policy's choice; not bounded"
    out = DispatchResult(objective, None, bound, kind, 0.0)

    def run(
        policy: Policy,
        source: str,
        stage: str,
        first: bool = False,
        genes: tuple[np.ndarray | None, float, float] | None = None,
    ) -> Candidate | None:
        result = _execute(dispatch, policy, halt if first else deadline)
        if not result.finished:
            return None
        value = objective_value(result, objective, weights)
        candidate = Candidate(source, stage, value, result, genes=genes)
        _keep(out, candidate, progress, t0)
        return candidate

    if "exact" in stages and objective == "makespan":
        _exact(out, dispatch, progress, t0, halt)
    names = policies or (MAKESPAN_POLICIES if objective == "makespan" else COMPLETION_POLICIES)
    if model.table is not None and policies is None:
        names = TABLE_POLICIES[objective]
    if policies is None and model.table is None:
        names = (*names, *allocating(dispatch.jobs))
    if "policies" in stages:
        for name in names:
            if out.tried and (deadline.is_set() or out.status == "optimal"):
                break
            run(POLICIES[name](), name, "policies", first=not out.tried)
    if (
        "static" in stages
        and static is not None
        and not deadline.is_set()
        and out.status != "optimal"
    ):
        _static(out, dispatch, static, t0 + time_limit, objective, weights, progress, t0)
    makespan = objective == "makespan"
    evolve = "evolve" in stages and makespan
    recombine = "recombine" in stages and makespan
    share = TUNE_SHARE if evolve else 1.0 - RECOMBINE_SHARE if recombine else 1.0
    if "tune" in stages:
        _tune(out, run, tuned or TUNED[objective], seed, Deadline(t0 + share * time_limit, halt),
              first=not out.tried)  # fmt: skip
    if recombine and out.status != "optimal" and not deadline.is_set():
        _recombine(out, dispatch, progress, t0, deadline)
    if evolve and out.status != "optimal":
        _evolve(out, run, len(jobs), seed, deadline)
    if "colgen" in stages and makespan and out.status != "optimal" and not deadline.is_set():
        _colgen(out, dispatch, progress, t0, deadline, threads)
    out.runtime = time.perf_counter() - t0
    out.interrupted = halt is not None and halt.is_set()
    return out


def _table_makespan_bound(dispatch: Dispatch) -> tuple[float, str]:
    """The ``table`` model's makespan bound of ``dispatch`` and what it is."""
    from planner.executor.model.jobs import typed_bound

    table = dispatch.model.table
    assert table is not None
    bound, which = typed_bound(dispatch.jobs, dispatch.types, dispatch.gpus_per_node, table)
    if which == "relaxation":
        which = "GPU types' time shared at will, alone and in measured pairs"
    return bound["bound"], which


def _execute(dispatch: Dispatch, policy: Policy, halt: Halt | None) -> ExecutorRun:
    """``policy``'s run of ``dispatch``'s jobs on its cluster, under its model."""
    from planner.executor.loop import run_policy

    return run_policy(
        dispatch.jobs, policy, dispatch.nodes, dispatch.gpus_per_node, dispatch.model,
        dispatch.restart, halt=halt, power_cap=dispatch.power_cap, watts=dispatch.watts,
        types=dispatch.types, cpus=dispatch.cpus, mems=dispatch.mems,
    )  # fmt: skip


def _keep(
    out: DispatchResult,
    candidate: Candidate,
    progress: Callable[[Progress], None] | None,
    t0: float,
) -> None:
    """Record ``candidate``; report it if it is the new best. Past :data:`KEEP_RUNS`
    runs of groups, the worst one's trace goes (never the best's)."""
    out.tried.append(candidate)
    if out.best is None or candidate.value < out.best.value:
        out.best = candidate
        if progress is not None:
            progress(
                Progress(time.perf_counter() - t0, candidate.value, out.bound, candidate.source)
            )
    kept = [c for c in out.tried if c.run is not None and c.static is None and c is not out.best]
    if len(kept) >= KEEP_RUNS:
        max(kept, key=lambda c: c.value).run = None


def _exact(
    out: DispatchResult,
    dispatch: Dispatch,
    progress: Callable[[Progress], None] | None,
    t0: float,
    halt: Halt | None,
) -> None:
    """Stage 0: the configuration program (:mod:`planner.executor.configurations`) where
    the workload is small enough; its optimum bounds every dispatch in groups, and its
    phases run in the executor. It plans jobs with resource profiles at their best speed
    (:func:`~planner.executor.model.resources.fastest`), so that its optimum stays a bound;
    its phases run at the CPU and memory the executor gives them."""
    from planner.executor.configurations import configuration_plan
    from planner.executor.model.resources import fastest

    plan = configuration_plan(fastest(dispatch.jobs), dispatch.model, dispatch.nodes,
                              dispatch.gpus_per_node, dispatch.room)  # fmt: skip
    if plan is None:
        return
    if plan.bound > out.bound:
        out.bound, out.bound_kind = plan.bound, "configuration program"
    source = f"configuration program ({plan.configurations:,} configurations)"
    run_phases(out, dispatch, plan, source, "exact", progress, t0, halt)


def run_phases(
    out: DispatchResult,
    dispatch: Dispatch,
    plan: ConfigurationPlan,
    source: str,
    stage: str,
    progress: Callable[[Progress], None] | None,
    t0: float,
    halt: Halt | None,
) -> None:
    """Run the phases of a configuration program's ``plan`` in the executor and keep the
    run as a candidate of ``stage``."""
    from planner.executor.dispatch import TablePolicy

    result = _execute(dispatch, TablePolicy(plan.events(dispatch.jobs)), halt)
    if result.finished:
        _keep(out, Candidate(source, stage, result.makespan, result), progress, t0)


def best_traces(out: DispatchResult) -> list[Trace]:
    """The traces of the best runs so far in groups, up to :data:`RECOMBINED_EVENTS`
    events (a program GLOP builds in seconds)."""
    runs = sorted((c for c in out.tried
                   if c.run is not None and c.static is None and not c.run.shared),
                  key=lambda c: c.value)  # fmt: skip
    traces: list[Trace] = []
    events = 0
    for c in runs:
        if traces and events + len(c.run.trace) > RECOMBINED_EVENTS:
            break
        traces.append(c.run.trace)
        events += len(c.run.trace)
    return traces


def _recombine(
    out: DispatchResult,
    dispatch: Dispatch,
    progress: Callable[[Progress], None] | None,
    t0: float,
    halt: Halt | None,
) -> None:
    """Stage 4: the configuration program over the configurations the best dispatches so
    far ran in groups, up to :data:`RECOMBINED_EVENTS` events
    (:func:`~planner.executor.configurations.recombined_plan`); its phases run in the
    executor."""
    from planner.executor.configurations import recombined_plan

    traces = best_traces(out)
    plan = recombined_plan(dispatch.jobs, dispatch.model, traces, dispatch.room)
    if plan is None or (halt is not None and halt.is_set()):
        return
    source = f"recombined ({len(plan.phases):,} of {plan.configurations:,} configurations)"
    run_phases(out, dispatch, plan, source, "recombine", progress, t0, halt)


def _colgen(
    out: DispatchResult,
    dispatch: Dispatch,
    progress: Callable[[Progress], None] | None,
    t0: float,
    deadline: Deadline,
    threads: int,
) -> None:
    """Stage ``colgen``: the configuration program by column generation
    (:mod:`planner.solvers.colgen`) to the deadline, from the configurations of the best
    runs so far; its proven bound replaces the search's where higher, and its phases run
    in the executor. Every round is logged (``planner -v``)."""
    from planner.executor.configurations import trace_configurations
    from planner.executor.model.resources import fastest
    from planner.solvers.colgen import column_generation, log_round
    from planner.solvers.restarts import RESTART_SHARE, restart_stage

    left = max(deadline.deadline - time.perf_counter(), 0.0)
    share = RESTART_SHARE if dispatch.restart else 0.0
    initial = trace_configurations(dispatch.jobs, best_traces(out))
    found = column_generation(fastest(dispatch.jobs), dispatch.model, dispatch.nodes,
                              dispatch.gpus_per_node, (1 - share) * left, threads, log_round,
                              deadline, initial=initial, room=dispatch.room)  # fmt: skip
    if found is not None:
        out.colgen = found
        if found.bound > out.bound:
            out.bound, out.bound_kind = found.bound, found.bound_kind
        run_phases(out, dispatch, found.plan, found.source, "colgen", progress, t0, None)
        left = deadline.deadline - time.perf_counter()
        if share and left > 0 and not deadline.is_set():
            made = restart_stage(dispatch.jobs, dispatch.model, found, dispatch.room, left, threads)
            if made is not None:
                run_phases(out, dispatch, *made, "colgen", progress, t0, None)


def _static(
    out: DispatchResult,
    dispatch: Dispatch,
    static: Callable[[float], tuple[Problem, Schedule] | None],
    deadline: float,
    objective: str,
    weights: Mapping[str, float],
    progress: Callable[[Progress], None] | None,
    t0: float,
) -> None:
    """Stage 2: the static plan, as the executor dispatches it."""
    from planner.executor.model.jobs import plan_of

    plan = static(max(deadline - time.perf_counter(), 0.0))
    if plan is None:
        return
    jobs, placed = plan_of(plan[0], plan[1], dispatch.jobs)
    run = replace(dispatch, jobs=jobs, policy="plan", placed=placed, make=None).run()
    if run.finished:
        value = objective_value(run, objective, weights)
        candidate = Candidate("static plan", "static", value, run, plan, ran=jobs)
        _keep(out, candidate, progress, t0)


def _evolve(
    out: DispatchResult,
    run: Callable[..., Candidate | None],
    count: int,
    seed: int,
    deadline: Halt,
) -> None:
    """Stage 5: a steady-state genetic algorithm over lp-groups' keys, each decoded by a
    run in the executor, to the time limit or :data:`EVOLVE_PATIENCE` children without a
    better dispatch: per job a log boost on its priority, and the critical and
    re-solve shares. The population starts from the best runs of lp-groups so far and
    random keys around them; every child (uniform crossover of two tournament winners,
    each boost mutated with probability :data:`MUTATION`) replaces the worst member if
    it is better."""
    from planner.executor.policies.lp_groups import LpGroups

    rng = np.random.default_rng(seed + 1)
    known = sorted((c for c in out.tried if c.genes is not None), key=lambda c: c.value)
    if not known:
        return
    zero = np.zeros(count)
    pop: list[tuple[np.ndarray, float, float]] = []
    fit: list[float] = []
    for c in known[: POPULATION // 2]:
        boosts, critical, resolve = c.genes  # type: ignore[misc]
        pop.append((zero if boosts is None else boosts, critical, resolve))
        fit.append(c.value)

    def decode(genes: tuple[np.ndarray, float, float]) -> float | None:
        boosts, critical, resolve = genes
        policy = LpGroups(list(np.exp(boosts)), critical=critical, resolve=resolve)
        source = f"lp-groups, evolved priorities (critical {critical:.3f}, re-solve {resolve:g})"
        c = run(policy, source, "evolve", genes=genes)
        return None if c is None else c.value

    while len(pop) < POPULATION and not deadline.is_set():
        _, critical, resolve = pop[int(rng.integers(len(pop)))]
        genes = (rng.normal(0.0, SIGMA, count), critical, resolve)
        value = decode(genes)
        if value is not None:
            pop.append(genes)
            fit.append(value)
    since, best = 0, out.value
    while not deadline.is_set() and out.status != "optimal" and since < EVOLVE_PATIENCE:
        a, b = (_tournament(rng, fit) for _ in range(2))
        mask = rng.random(count) < 0.5
        boosts = np.where(mask, pop[a][0], pop[b][0])
        boosts = boosts + (rng.random(count) < MUTATION) * rng.normal(0.0, SIGMA, count)
        critical = pop[a][1] if rng.random() < 0.5 else pop[b][1]
        if rng.random() < MUTATION:
            critical = float(np.clip(critical + rng.normal(0.0, 0.05), 0.5, 1.2))
        resolve = pop[a][2] if rng.random() < 0.5 else pop[b][2]
        value = decode((boosts, critical, resolve))
        worst = int(np.argmax(fit))
        if value is not None and value < fit[worst]:
            pop[worst], fit[worst] = (boosts, critical, resolve), value
        since = 0 if out.value != best else since + 1
        best = out.value


def _tournament(rng: np.random.Generator, fit: Sequence[float]) -> int:
    """The better of two members drawn at random (a binary tournament)."""
    a, b = (int(x) for x in rng.integers(len(fit), size=2))
    return a if fit[a] <= fit[b] else b


def _tune(
    out: DispatchResult,
    run: Callable[..., Candidate | None],
    tuned: str,
    seed: int,
    deadline: Halt,
    first: bool,
) -> None:
    """Stage 3: the tuned policy's grid, then random draws, while time is left."""
    from planner.executor.policies.ftf_groups import FtfGroups
    from planner.executor.policies.lp_groups import LpGroups
    from planner.executor.policies.srsf_pack import SrsfPack

    rng = np.random.default_rng(seed)
    k = since = 0
    while first or not deadline.is_set():
        if out.status == "optimal" or since >= PATIENCE:
            break
        best = out.value
        if tuned == "lp-groups":
            critical, resolve = (
                LP_GRID[k]
                if k < len(LP_GRID)
                else (float(rng.uniform(0.6, 1.1)), float(rng.choice([0.0, 0.005, 0.01, 0.02])))
            )
            policy: Policy = LpGroups(critical=critical, resolve=resolve)
            source = f"lp-groups (critical {critical:.3f}, re-solve {resolve:g})"
            genes: tuple[np.ndarray | None, float, float] | None = (None, critical, resolve)
        elif tuned == "ftf-groups":
            bias = BIAS_GRID[k] if k < len(BIAS_GRID) else float(np.exp(rng.uniform(-2.3, 2.8)))
            policy = FtfGroups(bias=bias)
            source = f"ftf-groups (bias {bias:.3f})"
            genes = None
        else:
            share = PACK_GRID[k] if k < len(PACK_GRID) else float(rng.uniform(0.2, 1.2))
            policy = SrsfPack(join=share)
            source = f"srsf-pack (join {share:.3f})"
            genes = None
        run(policy, source, "tune", first=first, genes=genes)
        first = False
        k += 1
        since = 0 if out.value != best else since + 1

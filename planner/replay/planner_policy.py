"""``planner``: the planner as an online policy of the executor.

:class:`SearchPlanner` (the default, ``--solver portfolio``) plans in the executor's
model: at every event (an arrival, a completion, a failure or a return) it searches
dispatches of the jobs at hand from their state there
(:func:`~planner.solvers.dispatch_search.search_dispatch`, stages ``policies`` and ``tune``
over :data:`ONLINE_POLICIES`, for the weighted completion time), each candidate a run
of the executor from that state (the jobs known then; no arrival foreseen), within a
budget of wall time per event. It
dispatches the best candidate's first groups until the next event, as model-predictive
control does. Where no candidate finished within the budget, a fast policy decides
(``jct-groups``).

:class:`OnlinePlanner` (a static engine named with ``--solver``) plans in the static
block model instead. At every event at which jobs have arrived, the jobs at hand are
planned anew with a solver of the registry, as model-predictive control does: the
executor's state
(iterations done, running jobs on their GPUs, nodes down; :func:`planner.replay.job_state.
state_of_run`) is frozen, the jobs that arrived join (:func:`planner.replay.replan.
prepare`), and the rest is planned in the static block model of the instance (the job
compiler's problem). Until the next re-plan, each waiting job is dispatched at its
planned start onto its planned nodes, as a plan is (:mod:`planner.executor.policies.
plan`); a job waits there while its nodes have no room. Running jobs are never moved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy
from planner.executor.policies.gavel import ROUND
from planner.executor.policies.jct_groups import JctGroups
from planner.executor.policies.plan import PlanDispatch
from planner.executor.policies.srtf import Srsf

if TYPE_CHECKING:
    from planner.model import Problem
    from planner.schedule import Schedule


class OnlinePlanner(PlanDispatch):
    """Re-plan at arrivals with ``solver`` (its ``options``, e.g. ``time_limit``) on
    ``problem``, the workload compiled (the jobs' tasks named ``JOB/...``); dispatch as a
    plan is, the jobs' nodes set by each re-plan."""

    name = "planner"

    def __init__(self, problem: Problem, solver: str = "sgs", **options: Any) -> None:
        super().__init__({})
        self.problem, self.solver, self.options = problem, solver, options
        self.seconds: list[float] = []
        """Wall time of every re-plan (building the instance and solving)."""

    def start(self, context: Context) -> None:
        """Nothing planned yet: the dispatch of a plan that names no nodes."""
        from planner.executor.model.jobs import machines_of
        from planner.times import seconds_per_tick

        self.plan = {j.name: () for j in context.jobs}
        super().start(context)
        self.tick = seconds_per_tick(self.problem.time_unit)
        self.machine = machines_of(self.problem)[0]
        self.iterations = {j.name: j.iterations for j in context.jobs}
        self.arrived: list[JobState] = []
        self.known: set[str] = set()
        self.last_plan: Schedule | None = None
        """The plan of every task of the jobs known, as last re-planned."""
        self.planned: Problem | None = None
        self.due: dict[int, float] = {}
        """Per waiting job, when its plan starts it (s)."""
        self.offered: list[JobState] = []
        self.first: dict[str, float] = {}
        self.finished: dict[str, float] = {}

    def arrive(self, job: JobState) -> None:
        """It waits for the next re-plan."""
        self.arrived.append(job)

    def finish(self, job: JobState, t: float) -> None:
        """Its end, for the state of the next re-plan."""
        self.finished[job.job.name] = t

    def next_event(self) -> float:
        """The next planned start of a waiting job."""
        return min(self.due.values(), default=math.inf)

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Re-plan if jobs arrived, offer the jobs whose planned start has come to the
        plan's dispatch, and keep the running ones where they are."""
        if self.arrived:
            self._replan(t, jobs)
        for idx, at in list(self.due.items()):
            if at <= t + 1e-9:
                del self.due[idx]
                self.offered.append(self.context.state[idx])
        live = {s.idx for s in jobs}
        self.offered = [s for s in self.offered if s.idx in live]
        chosen = self.sets.schedule(self.offered, cluster.down)
        for idx in chosen:
            self.first.setdefault(self.context.jobs[idx].name, t)
        return chosen

    def planning_seconds(self) -> list[float]:
        """Wall time of every re-plan."""
        return list(self.seconds)

    def _replan(self, t: float, jobs: list[JobState]) -> None:
        from planner.replay.events import Arrival
        from planner.replay.job_state import state_of_run
        from planner.replay.online import restrict
        from planner.replay.replan import prepare
        from planner.schedule import Schedule

        t0 = time.perf_counter()
        at = math.floor(t / self.tick + 1e-9)
        new = {s.job.name for s in self.arrived}
        self.arrived = []
        old = self.last_plan
        if old is None or self.planned is None:
            built = prepare(restrict(self.problem, new, at), None, at)
        else:
            snapshot = _Snapshot(self, jobs)
            state = state_of_run(self.planned, old, snapshot, self.iterations, at)  # type: ignore[arg-type]
            arrival = Arrival(restrict(self.problem, new, at), f"{len(new)} jobs")
            built = prepare(self.planned, old, at, [arrival], state)
        result = built.solve(self.solver, **self.options)
        if result.schedule is None:
            raise PlannerError(f"online: no re-plan at {t:g} s: {result.reason}")
        self.known |= new
        planned = restrict(self.problem, self.known, 0)
        modes = dict(old.modes) if old is not None else {}
        starts = dict(old.starts) if old is not None else {}
        nodes = dict(old.nodes) if old is not None else {}
        for task in planned.tasks:
            if task.name in built.frozen or task.name not in result.schedule.starts:
                continue
            modes[task.name] = result.schedule.modes[task.name]
            starts[task.name] = result.schedule.starts[task.name]
            nodes[task.name] = tuple(result.schedule.nodes.get(task.name, ()))
        plan = Schedule(modes=modes, starts=starts, nodes={k: v for k, v in nodes.items() if v})
        self.last_plan, self.planned = plan, planned
        offered = {m.idx for m in self.offered}
        first_task = _first_tasks(planned, built.frozen)
        for s in jobs:
            if s.running or s.job.name not in first_task:
                continue
            task = first_task[s.job.name]
            where = tuple(dict.fromkeys(self.machine[n] for n in plan.nodes.get(task, ())))
            self.sets.move(s.idx, where)
            if s.idx not in offered:
                self.due[s.idx] = max(plan.starts[task] * self.tick, t)
        self.seconds.append(time.perf_counter() - t0)


SEARCH_STAGES = ("policies", "tune")
"""The search's stages the online planner runs at every event."""

ONLINE_POLICIES = ("jct-groups", "ftf-groups", "muri-s", "muri-l")
"""The policies the online planner's search starts from (stage ``policies``); it then
tunes ``ftf-groups``' bias. Policies without groups or that fill GPU sets greedily
(``srsf-pack``, ``srtf``) look best in a rollout without arrivals and run worse with
them: on Muri's testbed trace (Muri's factors and overheads) a planner that could pick
them had a mean JCT of 122,744 s, against 112,769 s without them."""

TABLE_ONLINE_POLICIES = ("het-srpt", "srsf", "gavel-max-min-fairness-packed")
"""On GPU types (the ``table`` model): the policies the online planner's search runs at
every event, and nothing tuned; it also re-plans every
:data:`~planner.executor.policies.gavel.ROUND` seconds, as rounds do."""

SEARCH_OPTIONS = ("time_limit", "seed")
"""The options of the online planner in the executor's model."""


class SearchPlanner(Policy):
    """Re-plan at every event in the executor's model (see the module docstring):
    ``time_limit`` seconds of search per event, ``objective`` the search's (the weighted
    completion time, or the makespan)."""

    name = "planner"
    ranks_classes = True

    def __init__(
        self, time_limit: float = 1.0, seed: int = 0, objective: str = "weighted_completion"
    ) -> None:
        self.time_limit, self.seed, self.objective = time_limit, seed, objective
        self.seconds: list[float] = []
        """Wall time of every re-plan."""
        self.fallbacks = 0
        """Events the fallback policy decided (no candidate within the budget)."""
        self.sources: dict[str, int] = {}
        """How many events each candidate's first groups were dispatched at."""

    def start(self, context: Context) -> None:
        """The fallback policy, started on the same run."""
        super().start(context)
        self.typed = context.model.table is not None
        self.fallback: Policy = Srsf() if self.typed else JctGroups()
        """Decides an event where the search found no dispatch in its budget."""
        self.fallback.start(context)
        self.restart = any(s.cost > 0 for s in context.state)
        self.again = math.inf
        """When it re-plans next without an event (GPU types: every round)."""

    def next_event(self) -> float:
        """On GPU types, a round after the last re-plan."""
        return self.again

    def arrive(self, job: JobState) -> None:
        """The fallback policy learns of it."""
        self.fallback.arrive(job)

    def finish(self, job: JobState, t: float) -> None:
        """The fallback policy learns of it."""
        self.fallback.finish(job, t)

    def planning_seconds(self) -> list[float]:
        """Wall time of every re-plan."""
        return list(self.seconds)

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Search dispatches of ``jobs`` from their state at ``t``; run the best one's
        first groups (the fallback's answer if none finished in time)."""
        from planner.executor.loop import by_class
        from planner.executor.runs import Dispatch, Setting
        from planner.solvers.dispatch_search import Deadline, allocating
        from planner.solvers.registry import dispatch_solver

        t0 = time.perf_counter()
        context = self.context
        if not jobs:
            return {}
        now = [
            replace(
                s.job,
                iterations=max(1, math.ceil(s.remaining - 1e-6)),
                release=0.0,
                duration=s.remaining * s.alone,
                holds=(),
                reweights=(),
            )
            for s in jobs
        ]
        outages = [(k, max(down - t, 0.0), back - t) for k, down, back in context.outages
                   if back > t]  # fmt: skip
        dispatch = Dispatch(now, "planner", context.nodes, context.gpus_per_node,
                            context.model, self.restart, outages=outages,
                            types=context.types, cpus=context.cpus,
                            mems=context.mems)  # fmt: skip
        weights = {s.job.name: s.job.weight for s in jobs}
        deadline = Deadline(t0 + self.time_limit, None)
        if self.typed:
            self.again = t + ROUND
            result = dispatch_solver()(dispatch, Setting(), self.objective, weights,
                                     self.time_limit, self.seed, ("policies",), halt=deadline,
                                     policies=TABLE_ONLINE_POLICIES)  # fmt: skip
        else:
            result = dispatch_solver()(dispatch, Setting(), self.objective, weights,
                                     self.time_limit, self.seed, SEARCH_STAGES, halt=deadline,
                                     policies=(*ONLINE_POLICIES, *allocating(now)),
                                     tuned="ftf-groups")  # fmt: skip
        best = result.best
        if best is None or best.run is None or not best.run.trace:
            self.fallbacks += 1
            for s in jobs:
                s.alloc = None
            levels = sorted({s.job.priority for s in jobs}, reverse=True)
            chosen = (
                by_class(self.fallback, t, jobs, cluster, levels)
                if len(levels) > 1
                else self.fallback.schedule(t, jobs, cluster)
            )
        else:
            self.sources[best.source] = self.sources.get(best.source, 0) + 1
            state = {s.job.name: s for s in jobs}
            given = best.run.allocation[0] if best.run.allocation else {}
            chosen = {}
            for names, _, where in best.run.trace[0][1]:
                for n in names:
                    state[n].alloc = given.get(n)
                chosen.update(self.group([state[n] for n in names], where))
        self.seconds.append(time.perf_counter() - t0)
        return chosen


def _first_tasks(problem: Problem, frozen: Mapping[str, int]) -> dict[str, str]:
    """Per job, its first task not frozen (by the compiler's order)."""
    out: dict[str, str] = {}
    for task in problem.tasks:
        if task.job is not None and task.name not in frozen and task.job not in out:
            out[task.job] = task.name
    return out


class _Snapshot:
    """The executor's state at ``t`` as :func:`~planner.replay.job_state.state_of_run` reads
    a run stopped there."""

    def __init__(self, policy: OnlinePlanner, jobs: list[JobState]) -> None:
        context = policy.context
        self.done = {j.name: float(j.iterations) for j in context.jobs if j.name in policy.finished}
        self.done.update((s.job.name, s.job.iterations - max(s.remaining, 0.0)) for s in jobs)
        self.started = dict(policy.first)
        self.finish = dict(policy.finished)
        self.running = {s.job.name: s.where for s in jobs if s.running}
        self.outages = tuple(context.outages)


def online_planner(
    problem: Problem | None, solver: str = "portfolio", **options: Any
) -> Callable[[], Policy]:
    """What makes a new online planner for every run (picklable: a Monte Carlo study's
    workers each make their own): :class:`SearchPlanner` for ``portfolio`` (the search
    in the executor's model; ``problem`` unused), else :class:`OnlinePlanner` with the
    static engine ``solver`` on ``problem``."""
    if solver == "portfolio":
        return partial(SearchPlanner, **options)
    if problem is None:
        raise PlannerError(f"online: {solver} plans the compiled problem: give it")
    return partial(OnlinePlanner, problem, solver, **options)

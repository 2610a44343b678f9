"""``planner``: the planner as an online policy of the executor.

At every event at which jobs have arrived, the jobs at hand are planned anew with a
solver of the registry, as model-predictive control does: the executor's state
(iterations done, running jobs on their GPUs, nodes down; :func:`planner.execution.runs.
state_of_run`) is frozen, the jobs that arrived join (:func:`planner.execution.replan.
prepare`), and the rest is planned in the static block model of the instance (the job
compiler's problem). Until the next re-plan, each waiting job is dispatched at its
planned start onto its planned nodes, as a plan is (:mod:`planner.execution.policies.
plan`); a job waits there while its nodes have no room. Running jobs are never moved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError
from planner.execution.policies.base import Chosen, Cluster, Context, JobState, Policy
from planner.execution.policies.plan import PlanDispatch

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
        from planner.execution.jobs import machines_of
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
        from planner.execution.events import Arrival
        from planner.execution.online import restrict
        from planner.execution.replan import prepare
        from planner.execution.runs import state_of_run
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


def _first_tasks(problem: Problem, frozen: Mapping[str, int]) -> dict[str, str]:
    """Per job, its first task not frozen (by the compiler's order)."""
    out: dict[str, str] = {}
    for task in problem.tasks:
        if task.job is not None and task.name not in frozen and task.job not in out:
            out[task.job] = task.name
    return out


class _Snapshot:
    """The executor's state at ``t`` as :func:`~planner.execution.runs.state_of_run` reads
    a run stopped there."""

    def __init__(self, policy: OnlinePlanner, jobs: list[JobState]) -> None:
        context = policy.context
        self.done = {j.name: float(j.iterations) for j in context.jobs if j.name in policy.finished}
        self.done.update((s.job.name, s.job.iterations - max(s.remaining, 0.0)) for s in jobs)
        self.started = dict(policy.first)
        self.finish = dict(policy.finished)
        self.running = {s.job.name: s.where for s in jobs if s.running}
        self.outages = tuple(context.outages)


def online_planner(problem: Problem, solver: str = "sgs", **options: Any) -> Callable[[], Policy]:
    """What makes a new :class:`OnlinePlanner` for every run (picklable: a Monte Carlo
    study's workers each make their own)."""
    return partial(OnlinePlanner, problem, solver, **options)

"""The job-level executor: training jobs on a GPU cluster under a policy.

This is a job-level executor of the kind Muri's simulator is (Zhao et al., SIGCOMM
2022; ``simulator/run_sim.py`` of its public artifact): jobs run iteration after
iteration on GPU sets of a cluster of ``nodes x gpus_per_node`` GPUs, and at every
scheduling event (an arrival or a completion) the policy decides anew which jobs run,
in which groups and where. The speed of every group comes from the interleaving model
(:class:`planner.interleave.Interleave`), nothing else.

What a run does at an event at time ``t`` (as Muri's simulator does):

1. The jobs whose predicted end is ``t`` complete; the jobs released at ``t`` arrive.
2. Every running job progresses by ``max(0, t - last - overhead) / period``
   iterations, ``overhead`` being its restart overhead (the catalog's measured
   restart time of its model at its GPU count; a group pays the sum of its
   members'). It is charged on every interval between events, not only on a real
   restart, as Muri does; ``restart=False`` charges none. A job that completes at an
   event is not charged for its last interval.
3. The policy (:mod:`planner.executor.policies`) says which jobs run, in which
   groups, on which GPUs; the ones it leaves out wait.
4. Every running job's end is predicted from its remaining iterations and period.

The run's trace (every event's groups) is checked by the audit
(:func:`planner.executor.audit.audit`), independently of this loop.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InputError
from planner.executor.model.elastic import Hybrid
from planner.executor.model.jobs import (
    ExecutorJob,
    Outage,
    Where,
    Workload,
    any_elastic,
    check_jobs,
    check_types,
    model_of,
)
from planner.executor.model.power import WATTS, compute_share, throttle
from planner.executor.model.resources import check_memory, default_alloc, fair_share
from planner.executor.policies import (
    Chosen,
    Cluster,
    Context,
    JobState,
    Periods,
    PlanDispatch,
    Policy,
    policy_of,
    where_label,
)
from planner.interleave import MAX_MURI_GROUP, Interleave

if TYPE_CHECKING:
    from planner.interrupt import Halt


@dataclass
class ExecutorRun:
    """A run of a policy: when each job finished, and the figures (seconds)."""

    policy: str
    interleave: Interleave
    restart: bool
    finish: dict[str, float]
    release: dict[str, float]
    events: int
    runtime: float
    """Wall time of the run (s)."""
    finished: bool = True
    """Whether every job ran to its end (false if Ctrl-C stopped the run)."""
    groups: dict[int, int] = field(default_factory=dict)
    """Job-intervals run in groups of each size (1 = alone), over all events; on shared
    GPUs a job's group is the residents of its busiest GPU, a gang one member."""
    trace: list[tuple[float, list[tuple[tuple[str, ...], float, Where]]]] = field(
        default_factory=list
    )
    """Per event, its time and the groups that run from it: (member names, overhead,
    GPU set)."""
    outages: tuple[Outage, ...] = ()
    """The node failures the run went through."""
    gpus_per_node: int = 8
    power_cap: float | None = None
    """The cluster's power cap (watts), if it had one."""
    watts: tuple[float, float] = WATTS
    """A GPU's (busy, idle) watts."""
    throttle: list[float] = field(default_factory=list)
    """Per event, the speed the power cap left every running job (1: none)."""
    shared: bool = False
    """Whether jobs shared single GPUs (a plan under ``fluid``): every trace entry is then
    one job, ``(job, *co-residents)``, on its own GPUs, which others may share."""
    done: dict[str, float] = field(default_factory=dict)
    """Every job's iterations done when the run ended (at ``until`` if it stopped there)."""
    started: dict[str, float] = field(default_factory=dict)
    """When each job that ran first ran."""
    running: dict[str, Where] = field(default_factory=dict)
    """The jobs running when the run ended, on their GPU sets."""
    planning: list[float] = field(default_factory=list)
    """Wall time (s) of each plan the policy made (the online planner's re-plans)."""
    types: tuple[str, ...] = ()
    """Each node's GPU type (empty: one type)."""
    type_watts: dict[str, tuple[float, float]] = field(default_factory=dict)
    """On GPU types: a GPU's (busy, idle) watts per type (empty: ``watts`` for all)."""
    cpus: tuple[float, ...] = ()
    """Each node's CPU cores (empty: not held)."""
    mems: tuple[float, ...] = ()
    """Each node's GB of host memory (empty: not held)."""
    allocation: list[dict[str, tuple[float, float]]] = field(default_factory=list)
    """Per event (as :attr:`trace`), the CPU cores and GB of host memory per GPU the policy
    gave each running job it decided them for; every other job holds its default
    (:func:`~planner.executor.model.resources.default_alloc`)."""
    configs: list[dict[str, tuple[int, int]]] = field(default_factory=list)
    """Per event (as :attr:`trace`), each running elastic job's configuration: its local
    batch and accumulation steps (:mod:`planner.executor.model.elastic`); empty without
    elastic jobs."""

    @property
    def fair(self) -> tuple[float, float] | None:
        """The GPU-proportional share per GPU
        (:func:`~planner.executor.model.resources.fair_share`)."""
        return fair_share(self.cpus, self.mems, self.gpus_per_node)

    def residences(self, names: Sequence[str] = ()) -> list[dict[str, object]]:
        """The run as a co-location table: one row per stretch of a job on one GPU set
        with the same partners (job, GPUs as ``NODE:i-j``, start, end, partners), in
        start order; ``names`` name the nodes (by index)."""
        open_: dict[str, dict[str, object]] = {}
        rows: list[dict[str, object]] = []
        for k, (t, groups) in enumerate(self.trace):
            end = self.trace[k + 1][0] if k + 1 < len(self.trace) else t
            seen = set()
            for members, _, where in groups:
                gpus = where_label(where, names)
                for m in members[:1] if self.shared else members:
                    seen.add(m)
                    partners = [x for x in members if x != m]
                    row = open_.get(m)
                    if row is None or row["gpus"] != gpus or row["partners"] != partners:
                        row = {"job": m, "gpus": gpus, "start": t, "end": end,
                               "partners": partners}  # fmt: skip
                        open_[m] = row
                        rows.append(row)
                    row["end"] = end
            for m in [m for m in open_ if m not in seen]:
                del open_[m]
        return rows

    @property
    def makespan(self) -> float:
        """The last completion."""
        return max(self.finish.values(), default=0.0)

    @property
    def jct(self) -> np.ndarray:
        """Every job's completion time (finish - release)."""
        return np.array([f - self.release[j] for j, f in self.finish.items()])

    @property
    def mean_jct(self) -> float:
        """The mean JCT."""
        return float(self.jct.mean()) if self.finish else 0.0

    @property
    def p99_jct(self) -> float:
        """The 99th percentile of the JCT."""
        return float(np.percentile(self.jct, 99)) if self.finish else 0.0


def run_policy(
    jobs: Sequence[ExecutorJob] | Workload,
    policy: str | Policy,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    interleave: Interleave | None = None,
    restart: bool = True,
    progress: Callable[[int, int], None] | None = None,
    halt: Halt | None = None,
    plan: Mapping[str, Sequence[int]] | None = None,
    outages: Sequence[Outage] = (),
    power_cap: float | None = None,
    watts: tuple[float, float] = WATTS,
    until: float = math.inf,
    types: Sequence[str] = (),
    type_watts: Mapping[str, tuple[float, float]] | None = None,
    cpus: Sequence[float] = (),
    mems: Sequence[float] = (),
) -> ExecutorRun:
    """Run ``jobs`` on the cluster under ``policy`` (see the module docstring).

    Parameters
    ----------
    jobs
        The jobs, in trace order (which breaks ties); or the
        :class:`~planner.executor.model.jobs.Workload` of an instance
        (:func:`~planner.executor.model.jobs.jobs_from_instance`), which brings its cluster,
        its interleaving model, its power cap and its GPU types.
    policy
        A policy, its name in :data:`~planner.executor.policies.POLICIES`, or a user's
        ``FILE.py:CLASS`` (:func:`~planner.executor.policies.policy_of`); with ``plan``,
        ignored (the plan's dispatch runs).
    nodes, gpus_per_node
        The cluster: a workload's own (given too, they must be the same); for a list of
        jobs (a Muri trace names no cluster), by default Muri's, 8 nodes of 8 GPUs.
    interleave
        The interleaving model; by default a workload's, else ``muri`` with Muri's
        factors (:data:`~planner.interleave.MURI_GROUP_FACTORS`).
    restart
        Charge the restart overhead on every interval (Muri's simulator does).
    progress
        Called with (jobs finished, jobs) after each event.
    halt
        Checked at every event: once set, the run stops there (:attr:`ExecutorRun.finished`
        is then false, and the figures cover the jobs finished).
    plan
        The nodes (indices) of every job of a plan: the plan's dispatch runs
        (:class:`~planner.executor.policies.PlanDispatch`). A job stays on its GPUs to
        its end, to a failure of one of its nodes, or to the end of a block after which
        its plan leaves a gap (its ``holds``: it comes back at the next block's planned
        start).
    outages
        Node failures: (node, down, back) in seconds. A failure and a return are
        scheduling events. While a node is down, nothing is placed on it; the jobs that
        ran there stop at the failure, keeping the iterations done (progress is credited
        at every event, as if checkpointed there), and run again wherever the policy
        places them next (a plan: on their planned nodes, once all are up), paying their
        restart overhead again.
    power_cap
        Watts the cluster may draw (:mod:`planner.executor.model.power`: every GPU draws
        ``watts``, busy while it computes, else idle). Whenever the running groups would
        draw more, every job runs slower by one factor, the cap over their draw (above
        idle), as GPU power capping does; ``None``: no cap.
    until
        Stop at this time (seconds), every running job credited its progress to it: the
        run's :attr:`ExecutorRun.done`, :attr:`ExecutorRun.started` and :attr:`ExecutorRun.running`
        are then the executor's state there (what re-planning from a run freezes).
    types
        Each node's GPU type, on a cluster of several (the ``table`` model's types):
        a job's GPUs are all of one type, its speed that type's measured rate.
    type_watts
        On GPU types: a GPU's (busy, idle) watts per type, for the run's energy.
    cpus, mems
        Each node's CPU cores and GB of host memory (:mod:`~planner.executor.model.resources`;
        empty: not held). The jobs on a node never hold more; a job with a resource
        profile runs at its speed at the CPU and memory its policy gives it (by default
        the GPU-proportional share).

    Raises
    ------
    InputError
        For an unknown policy or a policy file that fails, a job larger than the
        cluster, or a plan that puts a job on nodes that cannot hold it
        (:func:`check_jobs`), an outage of a node the cluster does not have or with its
        return before its failure, or a power cap not above the GPUs' idle draw; GPU
        types without the ``table`` model, or a job no GPU type of the cluster can run;
        a cluster given that is not the workload's.
    """
    if isinstance(jobs, Workload):
        from planner.disturbances import Slowdown

        workload = jobs
        cluster = (("nodes", nodes, workload.nodes),
                   ("gpus_per_node", gpus_per_node, workload.gpus_per_node))  # fmt: skip
        for name, given, own in cluster:
            if given is not None and own is not None and given != own:
                raise InputError(
                    f"{name}={given}: the workload's cluster has {own}; leave it out to run "
                    "on the instance's cluster"
                )
        nodes, gpus_per_node = nodes or workload.nodes, gpus_per_node or workload.gpus_per_node
        interleave = interleave or model_of(workload, slowdown=Slowdown.parse("muri"))
        if power_cap is None:
            power_cap = workload.power_cap
        if watts == WATTS:
            watts = workload.watts
        types, type_watts = types or workload.types, type_watts or workload.type_watts
        cpus, mems = cpus or workload.cpus, mems or workload.mems
        jobs = workload.jobs
    nodes, gpus_per_node = nodes or 8, gpus_per_node or 8
    model = interleave or Interleave("muri")
    check_memory(jobs, model.gpu_memory)
    types = tuple(types)
    check_types(jobs, nodes, gpus_per_node, model, types, power_cap)
    if plan is not None:
        jobs, plan = PlanDispatch.prepare(jobs, plan, model, gpus_per_node)
        chosen_policy: Policy = PlanDispatch(plan)
    else:
        chosen_policy = policy_of(policy)
    total = nodes * gpus_per_node
    check_jobs(jobs, nodes, gpus_per_node, plan)
    if model.table is not None and chosen_policy.needs_stages:
        from planner.executor.policies import table_policies

        raise InputError(
            f"policy {chosen_policy.name} needs stage times or leaves GPUs unplaced; under "
            f"the table model run {table_policies()}"
        )
    if model.table is None and chosen_policy.needs_types:
        raise InputError(
            f"policy {chosen_policy.name} runs on GPU types under the table model "
            "(planner import gavel writes such an instance)"
        )
    fixed = [j.name for j in jobs if j.elastic is None]
    if chosen_policy.needs_elastic and fixed:
        raise InputError(
            f"policy {chosen_policy.name} runs elastic jobs (planner import pollux writes "
            f"them); job {fixed[0]!r} is not"
        )
    if not chosen_policy.places_gpus and len(fixed) < len(jobs):
        raise InputError(
            f"policy {chosen_policy.name} counts GPUs without placing them; elastic jobs run "
            "on the GPUs a policy places (pollux-tiresias is Tiresias for them)"
        )
    hybrid = [j.name for j in jobs if isinstance(j.elastic, Hybrid)]
    if chosen_policy.needs_elastic and not chosen_policy.runs_hybrid and hybrid:
        raise InputError(
            f"policy {chosen_policy.name} runs Pollux's elastic jobs; job {hybrid[0]!r} is "
            "hybrid-parallel (run it with goodput)"
        )
    for node, down, back in outages:
        if not 0 <= node < nodes or not 0 <= down <= back < math.inf:
            raise InputError(f"outage of node {node} from {down:g} s to {back:g} s: no such node")
    changes = sorted({x for _, down, back in outages for x in (down, back)})
    idle_draw = total * watts[1]
    if power_cap is not None and not idle_draw < power_cap < math.inf:
        raise InputError(
            f"power cap {power_cap:g} W: the cluster's {total} GPUs draw {idle_draw:g} W idle"
        )
    throttles: list[float] = []
    t0 = time.perf_counter()
    cpus, mems = _per_node(cpus, "cpus", nodes), _per_node(mems, "mems", nodes)
    fair = fair_share(cpus, mems, gpus_per_node)
    if fair is None and any(j.profile is not None for j in jobs):
        raise InputError(
            "jobs with resource profiles need the nodes' CPU cores and memory (cpus, mems)"
        )
    state = [JobState(j, k, model, restart, fair) for k, j in enumerate(jobs)]
    order = sorted(state, key=lambda s: s.job.release)
    cluster = Cluster(nodes, gpus_per_node, types)
    periods = Periods(model, jobs, fair)
    chosen_policy.start(
        Context(jobs, state, model, periods, nodes, gpus_per_node, outages, types, cpus, mems)
    )
    held = bool(cpus or mems)
    allocation: list[dict[str, tuple[float, float]]] = []
    configs: list[dict[str, tuple[int, int]]] = []
    elastic = any_elastic(jobs)
    shared = chosen_policy.shared
    limited = model.gpu_memory is not None or model.max_colocated < MAX_MURI_GROUP
    classes = sorted({j.priority for j in jobs}, reverse=True)
    if len(classes) < 2 or plan is not None or shared or chosen_policy.ranks_classes:
        classes = []
    runnable: list[JobState] = []
    trace: list[tuple[float, list[tuple[tuple[str, ...], float, Where]]]] = []
    ends: list[tuple[float, list[JobState]]] = []
    finish: dict[str, float] = {}
    started: dict[str, float] = {}
    groups: dict[int, int] = {}
    head = events = change = 0
    paused: list[tuple[float, int, JobState]] = []  # (resume time, index, job): a plan's gaps
    while head < len(order) or runnable or paused:
        if halt is not None and halt.is_set():
            break
        start = order[head].job.release if head < len(order) else math.inf
        if paused:
            start = min(start, paused[0][0])
        end = ends[0][0] if ends else math.inf
        turn = changes[change] if change < len(changes) else math.inf
        jump = chosen_policy.next_event()
        if start == math.inf and end == math.inf and turn == math.inf and jump == math.inf:
            raise InputError("the cluster cannot run the jobs left")  # pragma: no cover
        if end < math.inf and math.isclose(end, start, abs_tol=1e-4):
            t, ending, arriving = start, ends[0][1], True
        elif end < start:
            t, ending, arriving = end, ends[0][1], False
        else:
            t, ending, arriving = start, [], True
        if t > jump:
            t, ending, arriving = jump, [], False
        if t > turn:
            t, ending, arriving = turn, [], False
        if t > until:
            for s in runnable:
                if s.running:
                    s.remaining -= max(until - s.last - s.overhead, 0.0) / s.period
            break
        while change < len(changes) and changes[change] <= t:
            change += 1
        cluster.down = frozenset(k for k, down, back in outages if down <= t < back)
        events += 1
        for s in ending:
            if s.reweighing:  # a block of another speed starts: its weight, below
                continue
            s.executed += t - s.last
            if s.pausing:  # a block of a plan done: wait for the next one's planned start
                s.remaining, resume = s.holds.pop(0)
                s.pausing = s.running = False
                runnable.remove(s)
                heapq.heappush(paused, (resume, s.idx, s))
                continue
            finish[s.job.name] = t
            runnable.remove(s)
            s.running = False
            chosen_policy.finish(s, t)
        while arriving and paused and paused[0][0] == start:
            s = heapq.heappop(paused)[2]
            s.last = t
            s.remaining_time = s.remaining * s.alone
            runnable.append(s)
        while arriving and head < len(order) and order[head].job.release == start:
            s = order[head]
            head += 1
            s.last = t
            s.remaining_time = s.remaining * s.alone
            runnable.append(s)
            chosen_policy.arrive(s)
        for s in runnable:
            if s.running:
                s.remaining -= max(t - s.last - s.overhead, 0.0) / s.period
                s.executed += t - s.last
                s.remaining_time = s.remaining * s.alone
            s.last = t
            s.settle()
        if classes:
            chosen = by_class(chosen_policy, t, runnable, cluster, classes)
        else:
            chosen = chosen_policy.schedule(t, runnable, cluster)
        if limited and not shared:
            chosen = _within_room(chosen, chosen_policy, model)
        if held and not shared:
            chosen = _within_nodes(chosen, chosen_policy, cpus, mems, fair)
        if held:
            allocation.append(
                {state[i].job.name: a for i in chosen if (a := state[i].alloc) is not None}
            )
        speed = _speed(chosen, total, power_cap, watts, shared)
        throttles.append(speed)
        running: dict[tuple[str, ...], tuple[float, Where]] = {}
        for s in runnable:
            run = chosen.get(s.idx)
            s.running = run is not None
            if run is not None:
                members, s.period, s.overhead, where = run
                s.where = where
                started.setdefault(s.job.name, t)
                s.period /= speed
                size = chosen_policy.size(s, members)
                groups[size] = groups.get(size, 0) + 1
                running[tuple(m.job.name for m in members)] = (s.overhead, where)
        trace.append((t, [(names, cost, where) for names, (cost, where) in running.items()]))
        if elastic:
            configs.append({
                s.job.name: s.config
                or s.job.elastic.default_config(sum(len(ids) for _, ids in s.where))
                for s in runnable if s.running and s.job.elastic is not None
            })  # fmt: skip
        by_end: dict[float, list[JobState]] = {}
        for s in runnable:
            if s.running:
                by_end.setdefault(s.next_event(t), []).append(s)
        ends = sorted(by_end.items())
        if progress is not None:
            progress(len(finish), len(jobs))
    return ExecutorRun(
        finished=len(finish) == len(jobs),
        policy=chosen_policy.name,
        interleave=model,
        restart=restart,
        finish=finish,
        release={j.name: j.release for j in jobs},
        events=events,
        runtime=time.perf_counter() - t0,
        groups=groups,
        trace=trace,
        outages=tuple(outages),
        gpus_per_node=gpus_per_node,
        power_cap=power_cap,
        watts=watts,
        throttle=throttles,
        shared=shared,
        done={
            s.job.name: s.job.iterations
            if s.job.name in finish
            else s.job.iterations - max(s.remaining, 0.0)
            for s in state
        },
        started=started,
        running={s.job.name: s.where for s in runnable if s.running},
        planning=chosen_policy.planning_seconds(),
        types=types,
        type_watts=dict(type_watts or {}),
        cpus=cpus,
        mems=mems,
        allocation=allocation,
        configs=configs,
    )


def _per_node(values: Sequence[float], name: str, nodes: int) -> tuple[float, ...]:
    """``values`` (one per node, or none) as a tuple.

    Raises
    ------
    InputError
        For another count than ``nodes`` or a value not > 0.
    """
    out = tuple(float(v) for v in values)
    if out and (len(out) != nodes or not all(0 < v < math.inf for v in out)):
        raise InputError(f"{name}: give one figure > 0 per node ({nodes}), got {list(values)}")
    return out


def _within_nodes(
    chosen: Chosen,
    policy: Policy,
    cpus: tuple[float, ...],
    mems: tuple[float, ...],
    fair: tuple[float, float] | None,
) -> Chosen:
    """``chosen`` with every node's jobs within its CPU cores and host memory: each job
    holds its ``alloc`` (else :func:`default_alloc`) per GPU on every node of its GPU
    set; in the policy's order, a job that does not fit waits for a later event (its
    set's others keep it, at their periods there)."""
    size = max(len(cpus), len(mems))
    cap_cpu = [c + 1e-9 for c in cpus] or [math.inf] * size
    cap_mem = [g + 1e-9 for g in mems] or [math.inf] * size
    used_cpu, used_mem = [0.0] * size, [0.0] * size
    out: Chosen = {}
    seen: set[int] = set()
    for idx, (members, *_rest, where) in chosen.items():
        if idx in seen:
            continue
        if len(members) > 1:
            seen.update(m.idx for m in members)
        kept: list[JobState] = []
        for m in members:
            cpu, mem = m.alloc if m.alloc is not None else default_alloc(m.job, fair, len(members))
            if all(
                used_cpu[k] + cpu * len(ids) <= cap_cpu[k]
                and used_mem[k] + mem * len(ids) <= cap_mem[k]
                for k, ids in where
            ):
                kept.append(m)
                for k, ids in where:
                    used_cpu[k] += cpu * len(ids)
                    used_mem[k] += mem * len(ids)
        if len(kept) == len(members):
            out.update({m.idx: chosen[m.idx] for m in members})
        elif kept:
            out.update(policy.group(kept, where) if len(kept) > 1 else policy.alone(kept[0], where))
    return out


def _within_room(chosen: Chosen, policy: Policy, model: Interleave) -> Chosen:
    """``chosen`` with every GPU set within the model's room (:meth:`Interleave.room`: at
    most ``max_colocated`` jobs, their GPU memory within a GPU's): of a set over it, the
    members the policy put first that fit keep the set (at their periods there), the
    others wait for a later event."""
    out: Chosen = {}
    seen: set[int] = set()
    for idx, (members, *_rest, where) in chosen.items():
        if len(members) == 1:  # a job alone fits its GPUs (checked before the run)
            out[idx] = chosen[idx]
            continue
        if idx in seen:
            continue
        seen.update(m.idx for m in members)
        if model.room([m.job.gpu_mem for m in members]):
            out.update({m.idx: chosen[m.idx] for m in members})
            continue
        kept: list[JobState] = []
        for m in members:
            if model.room([k.job.gpu_mem for k in (*kept, m)]):
                kept.append(m)
        out.update(policy.group(kept, where) if len(kept) > 1 else policy.alone(kept[0], where))
    return out


def by_class(
    policy: Policy, t: float, runnable: list[JobState], cluster: Cluster, classes: list[int]
) -> Chosen:
    """The policy's answer class by class, highest first: each class on the GPUs the
    classes above it left (strict classes)."""
    chosen: Chosen = {}
    held = [0] * len(cluster.free)
    for level in classes:
        jobs = [s for s in runnable if s.job.priority == level]
        if not jobs:
            continue
        cluster.held = list(held)
        part = policy.schedule(t, jobs, cluster)
        for idx, (members, _, _, where) in part.items():
            if where:
                for k, gpus in where:
                    held[k] = max(held[k], max(gpus) + 1)
            elif members[0].idx == idx:  # GPUs counted, not placed: hold them first-fit
                need = members[0].job.gpus
                for k in range(len(held)):
                    take = min(need, cluster.per_node - held[k])
                    held[k] += take
                    need -= take
        chosen.update(part)
    cluster.held = [0] * len(held)
    return chosen


def _speed(
    chosen: Chosen,
    gpus: int,
    cap: float | None,
    watts: tuple[float, float],
    shared: bool = False,
) -> float:
    """The speed a power ``cap`` leaves the groups of ``chosen`` (:func:`throttle`);
    ``shared``: every job on GPUs of its own (its compute share on them)."""
    if cap is None:
        return 1.0
    sets: dict[tuple[int, ...], tuple[int, float]] = {}
    for idx, (members, period, _, _) in chosen.items():
        if shared:
            job = members[0].job
            sets[(idx,)] = (job.gpus, compute_share([job.stages.gpu], [period]))
            continue
        key = tuple(sorted(m.idx for m in members))
        if key not in sets:
            share = compute_share(
                [m.job.stages.gpu for m in members], [chosen[m.idx][1] for m in members]
            )
            sets[key] = (members[0].job.gpus, share)
    return throttle(list(sets.values()), gpus, cap, watts)

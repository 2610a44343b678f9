"""Peer schedulers in one executor: SRTF, SRSF, Muri-S and Muri-L on a GPU cluster.

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
3. The policy orders the jobs and places them first-fit (``yarn``: a job of ``g <=
   G`` GPUs on the first node with ``g`` free GPUs; of ``g > G`` on ``g // G`` idle
   nodes and one more node with ``g % G`` free); the ones that do not fit wait.
4. Every running job's end is predicted from its remaining iterations and period.

Policies:

- ``srtf``: shortest remaining time first, each job alone on its GPUs.
- ``srsf``: smallest remaining service (remaining time x GPUs) first, alone.
- ``tiresias``: discretised two-dimensional least attained service, as Muri's
  simulator runs it (``dlas-gpu``): three queues split at 3,250 and 7,200 GPU-seconds
  of attained service; a job enters the first queue and moves down as it crosses a
  limit (a demotion is an event of its own); jobs run queue by queue, in queue order,
  while GPUs are free (GPUs counted, not placed on nodes), and the jobs left waiting
  go to the end of their queue.
- ``muri-s``: Muri with known durations (jobs ordered by remaining service);
  ``muri-l``: Muri without (ordered by attained service: running wall time x GPUs).
  Both take the first-fit set of the ordered jobs, each placed one admitting the next
  three jobs of its GPU count, and group jobs of the same GPU count by repeated
  maximum-weight matching (``rustworkx.max_weight_matching``, compiled; the weight of a
  pair of groups is their members' summed stage time over four times the merged
  group's period). Groups are merged, in the matching's order, only while the GPUs
  the candidates request exceed the cluster's, for at most four rounds. A group
  slower than its members one after another is split again. Groups are then placed
  by their first member, largest GPU count first, the others on the same GPUs.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from planner.dl.catalog import restart_seconds
from planner.errors import InputError
from planner.execution.grouping import MixDispatch, SrsfPack
from planner.execution.jobs import (
    Outage,
    PeerJob,
    Where,
    check_jobs,
    shared_periods,
)
from planner.execution.power import WATTS, compute_share, throttle
from planner.interleave import MURI_GROUP_FACTORS, Interleave, fluid_rates, fluid_stretch

if TYPE_CHECKING:
    from planner.interrupt import Halt

POLICIES = ("srtf", "srsf", "tiresias", "muri-s", "muri-l", "lp-groups", "srsf-pack")
"""The peer policies."""

DEFAULT_OVERHEAD = 10.0
"""Restart overhead (s) of a model the catalog does not know, as in Muri's simulator."""

GROUP = 4
"""The most jobs in a Muri group."""

WEIGHT_SCALE = 10**9
"""Edge weights (used ratios in (0, 1]) are matched as whole numbers of 1e-9."""


_Chosen = dict[int, tuple[list["_Job"], float, float, Where]]
"""Per running job (index): its group, its period, the group's overhead, its GPU set."""


@dataclass
class PeerRun:
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


class _Job:
    """A job's state in a run."""

    __slots__ = (
        "alone",
        "cost",
        "executed",
        "holds",
        "idx",
        "job",
        "last",
        "overhead",
        "pausing",
        "period",
        "remaining",
        "remaining_time",
        "reweighing",
        "reweights",
        "running",
        "sort_val",
        "weight",
        "where",
    )  # fmt: skip

    def __init__(self, job: PeerJob, idx: int, model: Interleave, restart: bool) -> None:
        self.job = job
        self.idx = idx
        self.remaining = float(job.iterations)
        self.running = False
        self.last = 0.0
        self.alone = model.periods([job.stages], alone=[job.iteration_time])[0]
        self.period = self.alone
        self.overhead = 0.0
        self.executed = 0.0
        self.remaining_time = 0.0
        self.sort_val = 0.0
        known = restart_seconds(job.model, job.gpus) if job.model else None
        self.cost = (known if known is not None else DEFAULT_OVERHEAD) if restart else 0.0
        self.holds = list(job.holds)
        self.pausing = False
        self.reweights = list(job.reweights)
        self.reweighing = False
        self.weight = job.weight
        self.where: Where = ()

    def settle(self) -> None:
        """Take the weight of the block of its plan it is in."""
        while self.reweights and self.reweights[0][0] >= self.remaining - 1e-6:
            self.weight = self.reweights.pop(0)[1]

    def next_event(self, t: float) -> float:
        """When the running job next ends (from ``t``, at its period): its end, the end
        of a block of its plan whose next block the plan starts later (it pauses there:
        ``pausing``), or the start of a block of its plan at another speed (its weight
        changes there: ``reweighing``)."""
        while self.holds and self.holds[0][0] >= self.remaining - 1e-9:
            self.holds.pop(0)  # a block end already passed
        self.pausing = self.reweighing = False
        at = t + self.remaining * self.period
        if self.holds:
            left, resume = self.holds[0]
            end = t + (self.remaining - left) * self.period
            if resume > end + 1e-6:
                self.pausing = True
                at = end
        if self.reweights:
            change = t + (self.remaining - self.reweights[0][0]) * self.period
            if change < at - 1e-9:
                self.pausing, self.reweighing = False, True
                at = change
        return at


def where_label(where: Where, names: Sequence[str] = ()) -> str:
    """``where`` as ``NODE:i-j`` (``+`` between nodes); ``names`` name the nodes."""
    parts = []
    for k, gpus in where:
        node = names[k] if k < len(names) else str(k)
        run = gpus == tuple(range(gpus[0], gpus[0] + len(gpus))) if gpus else False
        span = f"{gpus[0]}-{gpus[-1]}" if run and len(gpus) > 1 else ",".join(map(str, gpus))
        parts.append(f"{node}:{span}")
    return "+".join(parts)


class _Cluster:
    """Free GPUs per node, placed first-fit (Muri's ``yarn``), none on nodes down."""

    def __init__(self, nodes: int, per_node: int) -> None:
        self.per_node = per_node
        self.free = [per_node] * nodes
        self.down: frozenset[int] = frozenset()

    def empty(self) -> None:
        """Free every GPU of the nodes up."""
        self.free = [0 if k in self.down else self.per_node for k in range(len(self.free))]

    def place(self, gpus: int) -> Where | None:
        """Take ``gpus`` GPUs first-fit; where they were found (``None``: nowhere).
        Every placement since :meth:`empty` takes a node's lowest free GPUs."""
        free, g = self.free, self.per_node
        if gpus <= g:
            for k, f in enumerate(free):
                if f >= gpus:
                    free[k] -= gpus
                    return ((k, tuple(range(g - f, g - f + gpus))),)
            return None
        full, rest = divmod(gpus, g)
        idle = [k for k, f in enumerate(free) if f == g][:full]
        if len(idle) < full:
            return None
        last = None
        if rest:
            last = next((k for k, f in enumerate(free) if k not in idle and f >= rest), None)
            if last is None:
                return None
        where = [(k, tuple(range(g))) for k in idle]
        for k in idle:
            free[k] = 0
        if last is not None:
            f = free[last]
            where.append((last, tuple(range(g - f, g - f + rest))))
            free[last] -= rest
        return tuple(where)


def run_policy(
    jobs: Sequence[PeerJob],
    policy: str,
    nodes: int = 8,
    gpus_per_node: int = 8,
    interleave: Interleave | None = None,
    restart: bool = True,
    progress: Callable[[int, int], None] | None = None,
    halt: Halt | None = None,
    plan: Mapping[str, Sequence[int]] | None = None,
    outages: Sequence[Outage] = (),
    power_cap: float | None = None,
    watts: tuple[float, float] = WATTS,
    until: float = math.inf,
) -> PeerRun:
    """Run ``jobs`` on the cluster under ``policy`` (see the module docstring).

    Parameters
    ----------
    jobs
        The jobs, in trace order (which breaks ties).
    policy
        One of :data:`POLICIES`, or ``plan`` with ``plan``.
    nodes, gpus_per_node
        The cluster.
    interleave
        The interleaving model; by default ``muri`` with Muri's factors
        (:data:`~planner.interleave.MURI_GROUP_FACTORS`).
    restart
        Charge the restart overhead on every interval (Muri's simulator does).
    progress
        Called with (jobs finished, jobs) after each event.
    halt
        Checked at every event: once set, the run stops there (:attr:`PeerRun.finished`
        is then false, and the figures cover the jobs finished).
    plan
        ``policy="plan"``: the nodes (indices) of every job. A job is dispatched at its
        release (its planned start), in release order, onto its planned nodes. Under
        ``muri``: on free GPUs alone, else into the GPU set of the same size there with
        the fewest members (fewer than ``max_colocated``). Under ``fluid``: onto single
        GPUs shared with jobs of any size, by its weight (:class:`_SharedGpus`). Else it
        waits and later jobs are tried. It stays on its GPUs to its end (a plan does not
        preempt), to a failure of one of its nodes, or to the end of a block after which
        its plan leaves a gap (its ``holds``: it comes back at the next block's planned
        start); the speeds are asked of the interleaving model whenever the members of a
        set change.
    outages
        Node failures: (node, down, back) in seconds. A failure and a return are
        scheduling events. While a node is down, nothing is placed on it; the jobs that
        ran there stop at the failure, keeping the iterations done (progress is credited
        at every event, as if checkpointed there), and run again wherever the policy
        places them next (a plan: on their planned nodes, once all are up), paying their
        restart overhead again.
    power_cap
        Watts the cluster may draw (:mod:`planner.execution.power`: every GPU draws
        ``watts``, busy while it computes, else idle). Whenever the running groups would
        draw more, every job runs slower by one factor, the cap over their draw (above
        idle), as GPU power capping does; ``None``: no cap.
    until
        Stop at this time (seconds), every running job credited its progress to it: the
        run's :attr:`PeerRun.done`, :attr:`PeerRun.started` and :attr:`PeerRun.running`
        are then the executor's state there (what re-planning from a run freezes).

    Raises
    ------
    InputError
        For an unknown policy, a job larger than the cluster, or a plan that puts a job
        on nodes that cannot hold it (:func:`check_jobs`), an outage of a node the
        cluster does not have or with its return before its failure, or a power cap
        not above the GPUs' idle draw.
    """
    if policy not in POLICIES and not (policy == "plan" and plan is not None):
        raise InputError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    model = interleave or Interleave("muri", factors=MURI_GROUP_FACTORS)
    total = nodes * gpus_per_node
    if plan is not None and model.kind != "fluid":
        jobs, plan = _machines_only(jobs, plan, gpus_per_node)
    check_jobs(jobs, nodes, gpus_per_node, plan)
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
    state = [_Job(j, k, model, restart) for k, j in enumerate(jobs)]
    order = sorted(state, key=lambda s: s.job.release)
    cluster = _Cluster(nodes, gpus_per_node)
    muri = policy.startswith("muri")
    periods = _Periods(model, jobs)
    grouping = _Grouping(periods, total) if muri else None
    queues = _Queues(total) if policy == "tiresias" else None
    mix: MixDispatch | SrsfPack | None = None
    if policy == "lp-groups":
        mix = MixDispatch(jobs, model, periods)
    elif policy == "srsf-pack":
        mix = SrsfPack(model, periods)
    shared = plan is not None and model.kind == "fluid"
    sets: _PlanSets | _SharedGpus | None = None
    if shared:
        sets = _SharedGpus(model, nodes, gpus_per_node, plan, state)  # type: ignore[arg-type]
    elif plan is not None:
        sets = _PlanSets(periods, nodes, gpus_per_node, plan, state)
    runnable: list[_Job] = []
    trace: list[tuple[float, list[tuple[tuple[str, ...], float, Where]]]] = []
    ends: list[tuple[float, list[_Job]]] = []
    finish: dict[str, float] = {}
    started: dict[str, float] = {}
    groups: dict[int, int] = {}
    head = events = change = 0
    paused: list[tuple[float, int, _Job]] = []  # (resume time, index, job): a plan's gaps
    while head < len(order) or runnable or paused:
        if halt is not None and halt.is_set():
            break
        start = order[head].job.release if head < len(order) else math.inf
        if paused:
            start = min(start, paused[0][0])
        end = ends[0][0] if ends else math.inf
        turn = changes[change] if change < len(changes) else math.inf
        if start == math.inf and end == math.inf and turn == math.inf:
            raise InputError("the cluster cannot run the jobs left")  # pragma: no cover
        if end < math.inf and math.isclose(end, start, abs_tol=1e-4):
            t, ending, arriving = start, ends[0][1], True
        elif end < start:
            t, ending, arriving = end, ends[0][1], False
        else:
            t, ending, arriving = start, [], True
        if queues is not None and t > queues.jump:
            t, ending, arriving = queues.jump, [], False
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
            if queues is not None:
                queues.remove(s)
        while arriving and paused and paused[0][0] == start:
            s = heapq.heappop(paused)[2]
            s.last = t
            s.remaining_time = s.remaining * s.alone
            runnable.append(s)
        while arriving and head < len(order) and order[head].job.release == start:
            s = order[head]
            head += 1
            s.last = t
            s.remaining_time = s.job.duration if muri else s.remaining * s.alone
            runnable.append(s)
            if queues is not None:
                queues.add(s)
        for s in runnable:
            if s.running:
                s.remaining -= max(t - s.last - s.overhead, 0.0) / s.period
                s.executed += t - s.last
                s.remaining_time = s.remaining * s.alone
            s.last = t
            s.settle()
        if policy == "srtf":
            runnable.sort(key=lambda s: s.remaining_time)
        elif policy == "srsf":
            runnable.sort(key=lambda s: s.remaining_time * s.job.gpus)
        elif muri:
            for s in runnable:
                s.sort_val = (
                    s.remaining_time * s.job.gpus if policy == "muri-s" else s.executed * s.job.gpus
                )
            runnable.sort(key=lambda s: s.sort_val)
        chosen: _Chosen
        if grouping is not None:
            chosen = grouping.schedule(runnable, cluster)
        elif mix is not None:
            chosen = mix.schedule(runnable, cluster)
        elif queues is not None:
            chosen = queues.schedule(runnable, t, gpus_per_node * len(cluster.down))
        elif sets is not None:
            chosen = sets.schedule(runnable, cluster.down)
        else:
            cluster.empty()
            chosen = {}
            for s in runnable:
                where = cluster.place(s.job.gpus)
                if where is not None:
                    chosen[s.idx] = ([s], s.alone, s.cost, where)
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
                # on shared GPUs a job's group is its busiest GPU's residents
                size = sets.size(s.idx) if isinstance(sets, _SharedGpus) else len(members)
                groups[size] = groups.get(size, 0) + 1
                running[tuple(m.job.name for m in members)] = (s.overhead, where)
        trace.append((t, [(names, cost, where) for names, (cost, where) in running.items()]))
        by_end: dict[float, list[_Job]] = {}
        for s in runnable:
            if s.running:
                by_end.setdefault(s.next_event(t), []).append(s)
        ends = sorted(by_end.items())
        if progress is not None:
            progress(len(finish), len(jobs))
    return PeerRun(
        finished=len(finish) == len(jobs),
        policy=policy,
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
    )


def _audit_speed(
    groups: Sequence[tuple[tuple[str, ...], float, Where]],
    by_name: Mapping[str, PeerJob],
    model: Interleave,
    gpus: int,
    cap: float | None,
    watts: tuple[float, float],
    periods: Mapping[str, float] | None = None,
) -> float:
    """The power cap's speed at an event, from the trace's groups and the model alone
    (groups too large for the model are left out: the audit reports them); ``periods``:
    every job's period on GPUs it shares (a shared run), before the cap."""
    if cap is None:
        return 1.0
    sets = []
    for names, _, _ in groups:
        if periods is not None:
            job = by_name[names[0]]
            sets.append((job.gpus, compute_share([job.stages.gpu], [periods[job.name]])))
            continue
        if len(names) > model.max_colocated:
            continue
        members = [by_name[n] for n in names]
        periods_ = model.periods([m.stages for m in members], [m.iteration_time for m in members])
        sets.append((members[0].gpus, compute_share([m.stages.gpu for m in members], periods_)))
    return throttle(sets, gpus, cap, watts)


def _speed(
    chosen: _Chosen,
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


def audit(run: PeerRun, jobs: Sequence[PeerJob], gpus: int) -> list[str]:
    """What is wrong with ``run`` (empty: nothing), checked from its trace alone.

    Replays the trace's intervals with the interleaving model's periods, independently
    of the executor's bookkeeping: at every event the groups' GPUs fit the cluster's
    ``gpus`` less those of the nodes down, a placed group holds as many GPUs as its jobs
    ask, on nodes up, none of them shared with another group, no group has more than
    ``max_colocated`` members, a ``muri`` group has one GPU count, no job runs before
    its release or after its finish; and every finished
    job was credited exactly its iterations: ``(interval - overhead) / period`` per
    interval (at least 0), its last interval not charged the overhead.
    """
    model = run.interleave
    by_name = {j.name: j for j in jobs}
    done = dict.fromkeys(by_name, 0.0)
    wrong: list[str] = []
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else t
        down = {n for n, a, b in run.outages if a <= t < b}
        shared = shared_periods(groups, by_name, model, done) if run.shared else None
        speed = _audit_speed(
            groups,
            by_name,
            model,
            gpus,
            run.power_cap,
            run.watts,
            None if shared is None else shared[0],
        )
        used = 0
        held: set[tuple[int, int]] = set()
        if shared is not None:
            periods, residents = shared
            wrong += _audit_shared(t, groups, residents, by_name, model, down, run.gpus_per_node)
            for names, overhead, _ in groups:
                m = by_name[names[0]]
                if m.release > t + 1e-9 or run.finish.get(m.name, math.inf) < end - 1e-6:
                    wrong.append(f"job {m.name!r} runs at {t:g} s, outside its release and finish")
                last = math.isclose(run.finish.get(m.name, -1.0), end, abs_tol=1e-4)
                span = end - t if last else max(end - t - overhead, 0.0)
                done[m.name] += span / (periods[m.name] / speed)
            continue
        for names, overhead, where in groups:
            members = [by_name[n] for n in names]
            used += members[0].gpus
            gpus_held = {(n, i) for n, ids in where for i in ids}
            if where and (
                len(gpus_held) != members[0].gpus
                or gpus_held & held
                or down.intersection(n for n, _ in where)
                or any(not 0 <= i < run.gpus_per_node for _, i in gpus_held)
            ):
                label = where_label(where)
                wrong.append(f"at {t:g} s: {list(names)} on GPUs {label}, taken or down")
            held |= gpus_held
            if len(members) > model.max_colocated:
                wrong.append(f"at {t:g} s: {len(members)} jobs share one GPU set")
                continue
            if model.kind == "muri" and len({m.gpus for m in members}) > 1:
                wrong.append(f"at {t:g} s: a Muri group of several GPU counts {list(names)}")
            stages = [m.stages for m in members]
            periods = model.periods(stages, alone=[m.iteration_time for m in members])
            periods = [period / speed for period in periods]
            for m, period in zip(members, periods, strict=True):
                if m.release > t + 1e-9 or run.finish.get(m.name, math.inf) < end - 1e-6:
                    wrong.append(f"job {m.name!r} runs at {t:g} s, outside its release and finish")
                last = math.isclose(run.finish.get(m.name, -1.0), end, abs_tol=1e-4)
                span = end - t if last else max(end - t - overhead, 0.0)
                done[m.name] += span / period
        if used > gpus - len(down) * run.gpus_per_node:
            wrong.append(f"at {t:g} s: groups hold {used} GPUs of {gpus}, {len(down)} nodes down")
    for name, finish in run.finish.items():
        need = by_name[name].iterations
        if not math.isclose(done[name], need, rel_tol=1e-6):
            wrong.append(
                f"job {name!r} finished at {finish:g} s after {done[name]:g} of {need} iterations"
            )
    return wrong


def _audit_shared(
    t: float,
    groups: Sequence[tuple[tuple[str, ...], float, Where]],
    residents: Mapping[tuple[int, int], list[str]],
    by_name: Mapping[str, PeerJob],
    model: Interleave,
    down: set[int],
    per_node: int,
) -> list[str]:
    """What is wrong at ``t`` in a shared run: a job on another number of GPUs than it
    asks, on a node down or a GPU that does not exist, a GPU with more than
    ``max_colocated`` residents, or a job's co-residents not those of its GPUs."""
    wrong = []
    for names, _, where in groups:
        job = by_name[names[0]]
        held = {(n, i) for n, ids in where for i in ids}
        if (
            len(held) != job.gpus
            or down.intersection(n for n, _ in where)
            or any(not 0 <= i < per_node for _, i in held)
        ):
            wrong.append(f"at {t:g} s: {job.name!r} on GPUs {where_label(where)}, taken or down")
        partners = {x for g in held for x in residents.get(g, ())} - {job.name}
        if set(names[1:]) != partners:
            wrong.append(f"at {t:g} s: {job.name!r} is not with the jobs on its GPUs")
    for (node, i), names in residents.items():
        if len(names) > model.max_colocated:
            wrong.append(f"at {t:g} s: {len(names)} jobs share GPU {i} of node {node}")
    return wrong


def _machines_only(
    jobs: Sequence[PeerJob], plan: Mapping[str, Sequence[int]], gpus_per_node: int
) -> tuple[list[PeerJob], dict[str, tuple[int, ...]]]:
    """A plan on single GPUs as a plan on machines, for Muri's GPU sets: each job on the
    machines that hold most of its planned GPUs, as many as it needs."""
    out, machines = [], dict(plan)
    for j in jobs:
        if j.on:
            need = max(1, -(-j.gpus // gpus_per_node))
            most = sorted(j.on, key=lambda kv: (-len(kv[1]), kv[0]))[:need]
            machines[j.name] = tuple(sorted(k for k, _ in most))
            j = replace(j, on=())
        out.append(j)
    return out, machines


class _SharedGpus:
    """A plan's dispatch under ``fluid`` onto single GPUs (see :func:`run_policy`, ``plan``): a
    job takes, on each of its planned nodes, the GPUs (all of them for a gang) that its shares
    fit best beside their residents, fewer than ``max_colocated`` each (a plan on single GPUs
    names them: the job's ``on``); each GPU's residents share it by processor sharing weighted
    by the plan's speeds (:func:`~planner.interleave.fluid_rates`), a job at its slowest GPU's
    rate."""

    def __init__(
        self,
        model: Interleave,
        nodes: int,
        per_node: int,
        plan: Mapping[str, Sequence[int]],
        state: Sequence[_Job],
    ) -> None:
        self.model, self.per_node = model, per_node
        self.residents: list[list[list[_Job]]] = [
            [[] for _ in range(per_node)] for _ in range(nodes)
        ]
        self.where = {s.idx: tuple(plan[s.job.name]) for s in state}
        self.placed: dict[int, tuple[_Job, Where]] = {}

    def schedule(self, runnable: list[_Job], down: frozenset[int] = frozenset()) -> _Chosen:
        """Drop the finished jobs and those on nodes ``down``, admit the waiting jobs in
        plan order, and give every running job its period."""
        live = {s.idx for s in runnable}
        for idx, (s, where) in list(self.placed.items()):
            if idx not in live or down.intersection(k for k, _ in where):
                for k, ids in where:
                    for i in ids:
                        self.residents[k][i].remove(s)
                del self.placed[idx]
        for s in runnable:
            if s.idx not in self.placed and not down.intersection(self.where[s.idx]):
                where = self._admit(s, down)
                if where is not None:
                    self.placed[s.idx] = (s, where)
        rates: dict[tuple[int, int], dict[int, float]] = {}
        for _, where in self.placed.values():
            for k, ids in where:
                for i in ids:
                    if (k, i) not in rates:
                        r = self.residents[k][i]
                        speeds = fluid_rates(
                            [x.job.stages for x in r],
                            [x.weight for x in r],
                            self.model.data_slots,
                        )
                        rates[k, i] = {x.idx: v for x, v in zip(r, speeds, strict=True)}
        chosen: _Chosen = {}
        for idx, (s, where) in self.placed.items():
            on = [self.residents[k][i] for k, ids in where for i in ids]
            rate = min(rates[k, i][idx] for k, ids in where for i in ids)
            partners = list(dict.fromkeys(x for r in on for x in r if x is not s))
            period = s.job.stages.total / rate * self.model.factor(max(map(len, on)))
            chosen[idx] = ([s, *partners], period, s.cost + sum(x.cost for x in partners), where)
        return chosen

    def size(self, idx: int) -> int:
        """The most jobs on one GPU of the placed job ``idx`` (itself included)."""
        _, where = self.placed[idx]
        return max(len(self.residents[k][i]) for k, ids in where for i in ids)

    def _stretch(self, residents: Sequence[_Job]) -> float:
        return fluid_stretch([r.job.stages for r in residents], self.model.data_slots)

    def _room(self, k: int) -> list[int]:
        """The GPUs of node ``k`` with room for one more resident."""
        return [i for i, r in enumerate(self.residents[k]) if len(r) < self.model.max_colocated]

    def _admit(self, s: _Job, down: frozenset[int] = frozenset()) -> Where | None:
        if s.job.on:
            full = any(
                len(self.residents[k][i]) >= self.model.max_colocated
                for k, ids in s.job.on
                for i in ids
            )
            if full:
                return None
            for k, ids in s.job.on:
                for i in ids:
                    self.residents[k][i].append(s)
            return s.job.on
        g = s.job.gpus
        on = self.where[s.idx] or _first_fit(
            g, self.per_node, down, lambda k: self._room(k), len(self.residents)
        )
        if on is None:
            return None
        need = self.per_node if len(on) > 1 else g
        where = []
        for k in on:
            room = self._room(k)
            if len(room) < need:
                return None
            room.sort(
                key=lambda i: (
                    self._stretch([*self.residents[k][i], s]),
                    len(self.residents[k][i]),
                    i,
                )
            )
            where.append((k, tuple(sorted(room[:need]))))
        for k, ids in where:
            for i in ids:
                self.residents[k][i].append(s)
        return tuple(where)


def _first_fit(
    gpus: int,
    per_node: int,
    down: frozenset[int],
    room: Callable[[int], Sequence[int]],
    nodes: int,
) -> tuple[int, ...] | None:
    """Where the executor puts a job a pooled plan places nowhere: the first node up with
    ``gpus`` GPUs with ``room``, or for a gang the first nodes up with room on all their
    GPUs; ``None`` if none has."""
    if gpus <= per_node:
        return next(((k,) for k in range(nodes) if k not in down and len(room(k)) >= gpus), None)
    need = -(-gpus // per_node)
    whole = [k for k in range(nodes) if k not in down and len(room(k)) == per_node]
    return tuple(whole[:need]) if len(whole) >= need else None


class _Periods:
    """Each member's period in a group of jobs (indices), from the interleaving model and
    cached by membership: groups recur from one event to the next."""

    def __init__(self, model: Interleave, jobs: Sequence[PeerJob]) -> None:
        self.model, self.jobs = model, jobs
        self.of_sorted = cache(self._of_sorted)

    def __call__(self, members: Sequence[int]) -> dict[int, float]:
        return self.of_sorted(tuple(sorted(members)))

    def _of_sorted(self, members: tuple[int, ...]) -> dict[int, float]:
        jobs = [self.jobs[k] for k in members]
        periods = self.model.periods(
            [j.stages for j in jobs], alone=[j.iteration_time for j in jobs]
        )
        return dict(zip(members, periods, strict=True))


class _GpuSet:
    """GPUs that a group of jobs shares: ``gpus`` of them, on the nodes of ``where``."""

    __slots__ = ("gpus", "members", "nodes", "where")

    def __init__(self, where: Where, gpus: int) -> None:
        self.where, self.gpus = where, gpus
        self.nodes = tuple(k for k, _ in where)
        self.members: list[_Job] = []


class _PlanSets:
    """A plan's dispatch onto GPU sets (see :func:`run_policy`, ``plan``)."""

    def __init__(
        self,
        periods: _Periods,
        nodes: int,
        per_node: int,
        plan: Mapping[str, Sequence[int]],
        state: Sequence[_Job],
    ) -> None:
        self.periods, self.model, self.per_node = periods, periods.model, per_node
        self.free: list[set[int]] = [set(range(per_node)) for _ in range(nodes)]
        self.where = {s.idx: tuple(plan[s.job.name]) for s in state}
        self.sets: list[_GpuSet] = []
        self.set_of: dict[int, _GpuSet] = {}

    def schedule(self, runnable: list[_Job], down: frozenset[int] = frozenset()) -> _Chosen:
        """Drop the finished jobs and the sets on nodes ``down``, admit the waiting jobs
        in plan order, and give every running job its set's speed."""
        live = {s.idx for s in runnable}
        for gset in self.sets:
            gset.members = [m for m in gset.members if m.idx in live]
        for gset in [g for g in self.sets if not g.members or down.intersection(g.nodes)]:
            self.sets.remove(gset)
            for k, gpus in gset.where:
                self.free[k].update(gpus)
        self.set_of = {m.idx: g for g in self.sets for m in g.members}
        for s in runnable:
            if s.idx not in self.set_of and not down.intersection(self.where[s.idx]):
                gset = self._admit(s, down)
                if gset is not None:
                    gset.members.append(s)
                    self.set_of[s.idx] = gset
        chosen: _Chosen = {}
        for gset in self.sets:
            members = gset.members
            periods = self.periods([m.idx for m in members])
            cost = sum(m.cost for m in members)
            for m in members:
                chosen[m.idx] = (members, periods[m.idx], cost, gset.where)
        return chosen

    def _admit(self, s: _Job, down: frozenset[int] = frozenset()) -> _GpuSet | None:
        g = s.job.gpus
        on = self.where[s.idx] or _first_fit(
            g, self.per_node, down, lambda k: self.free[k], len(self.free)
        )
        if on is None:  # a pooled plan's job: share the least full set of its size
            shared = [x for x in self.sets if x.gpus == g and not down.intersection(x.nodes)]
            return self._least_full(shared)
        need = self.per_node if len(on) > 1 else g
        if all(len(self.free[k]) >= need for k in on):
            where = []
            for k in on:
                gpus = tuple(sorted(self.free[k])[:need])
                self.free[k].difference_update(gpus)
                where.append((k, gpus))
            gset = _GpuSet(tuple(where), g)
            self.sets.append(gset)
            return gset
        return self._least_full([x for x in self.sets if x.nodes == on and x.gpus == g])

    def _least_full(self, sets: Sequence[_GpuSet]) -> _GpuSet | None:
        """The set of ``sets`` with the fewest members, if one has room."""
        room = [x for x in sets if len(x.members) < self.model.max_colocated]
        return min(room, key=lambda x: len(x.members), default=None)


class _Queues:
    """Tiresias' priority queues (see the module docstring)."""

    LIMITS = (3250.0, 7200.0)
    """Attained GPU-seconds at which a job leaves the first and the second queue."""

    def __init__(self, gpus: int) -> None:
        self.gpus = gpus
        self.queues: list[list[_Job]] = [[] for _ in range(len(self.LIMITS) + 1)]
        self.level: dict[int, int] = {}
        self.jump = math.inf
        """The next demotion of a running job."""

    def add(self, s: _Job) -> None:
        self.level[s.idx] = 0
        self.queues[0].append(s)

    def remove(self, s: _Job) -> None:
        self.queues[self.level.pop(s.idx)].remove(s)

    def schedule(self, runnable: list[_Job], t: float, down: int = 0) -> _Chosen:
        """Demote the jobs past their queue's limit, then run queue by queue while GPUs
        are free (``down`` GPUs are on nodes down); the jobs left waiting go to the end
        of their queue."""
        for s in runnable:
            q = self.level[s.idx]
            # a demotion event lands on the limit itself, up to rounding
            reached = (
                s.executed * s.job.gpus >= self.LIMITS[q] - 1e-6 if q < len(self.LIMITS) else False
            )
            if s.running and reached:
                self.queues[q].remove(s)
                self.queues[q + 1].append(s)
                self.level[s.idx] = q + 1
        free = self.gpus - down
        chosen: _Chosen = {}
        for queue in self.queues:
            for s in queue:
                if free >= s.job.gpus:
                    free -= s.job.gpus
                    chosen[s.idx] = ([s], s.alone, s.cost, ())
            queue.sort(key=lambda s: s.idx not in chosen)
        self.jump = min(
            (
                math.ceil(self.LIMITS[q] / s.job.gpus) - s.executed + t
                for s in runnable
                if s.idx in chosen and (q := self.level[s.idx]) < len(self.LIMITS)
            ),
            default=math.inf,
        )
        return chosen


class _Grouping:
    """Muri's grouping at one event (see the module docstring)."""

    def __init__(self, periods: _Periods, cluster_gpus: int) -> None:
        self.periods, self.jobs = periods, periods.jobs
        self.cluster_gpus = cluster_gpus
        self.mates = cache(self._mates)

    def schedule(self, runnable: list[_Job], cluster: _Cluster) -> _Chosen:
        """Job index -> (its group, its period, the group's overhead, its GPU set)."""
        by_gpu: dict[int, list[_Job]] = {}
        for s in runnable:
            by_gpu.setdefault(s.job.gpus, []).append(s)
        taken = dict.fromkeys(by_gpu, 0)
        used: set[int] = set()
        cluster.empty()
        for s in runnable:
            if s.idx in used:
                continue
            g = s.job.gpus
            if cluster.place(g) is not None:
                upto = min(taken[g] + GROUP, len(by_gpu[g]))
                used.update(x.idx for x in by_gpu[g][taken[g] : upto])
                taken[g] = upto
        candidates = {g: by_gpu[g][: taken[g]] for g in by_gpu if taken[g]}
        packings = self._match(candidates)
        packings = self._autopack(packings, runnable, cluster)
        return self._place(packings, runnable, cluster)

    def _match(self, candidates: dict[int, list[_Job]]) -> dict[int, list[tuple[int, ...]]]:
        """Up to four rounds of maximum-weight matching of same-GPU-count groups, merged
        while the candidates request more GPUs than the cluster has."""
        packings = {g: [(s.idx,) for s in jobs] for g, jobs in candidates.items()}
        required = sum(g * len(p) for g, p in packings.items())
        for _ in range(GROUP):
            ready: list[tuple[int, list[tuple[int, ...]]]] = []
            for g, groups in packings.items():
                mate = self.mates(tuple(groups))
                for u in range(len(groups)):
                    v = mate.get(u)
                    if v is None:
                        ready.append((g, [groups[u]]))
                    elif v < u:
                        ready.append((g, [groups[v], groups[u]]))
            merged: dict[int, list[tuple[int, ...]]] = {g: [] for g in packings}
            for g, pair in ready:
                if required <= self.cluster_gpus or len(pair) == 1:
                    merged[g].extend(pair)
                else:
                    merged[g].append(pair[0] + pair[1])
                    required -= g
            packings = merged
            if required <= self.cluster_gpus:
                break
        return packings

    def _mates(self, groups: tuple[tuple[int, ...], ...]) -> dict[int, int]:
        """The maximum-weight matching of ``groups`` (positions), cached: between two
        events most GPU counts keep their candidates."""
        import rustworkx as rx

        graph = rx.PyGraph()
        graph.add_nodes_from(range(len(groups)))
        for u in range(len(groups)):
            for v in range(u + 1, len(groups)):
                if len(groups[u]) + len(groups[v]) <= GROUP:
                    w = self._used_ratio(groups[u] + groups[v])
                    if w > 0 and not math.isclose(w, 0, rel_tol=1e-5):
                        graph.add_edge(u, v, round(w * WEIGHT_SCALE))
        mate: dict[int, int] = {}
        for a, b in rx.max_weight_matching(graph, weight_fn=int):
            mate[a], mate[b] = b, a
        return mate

    def _used_ratio(self, members: tuple[int, ...]) -> float:
        work = sum(self.jobs[k].stages.total for k in members)
        return work / (self.period(members) * GROUP)

    def period(self, members: tuple[int, ...]) -> float:
        """The group's period: its slowest member's (all members' under ``muri``)."""
        return max(self.periods(members).values())

    def _autopack(
        self,
        packings: dict[int, list[tuple[int, ...]]],
        runnable: list[_Job],
        cluster: _Cluster,
    ) -> list[tuple[int, ...]]:
        """Split the groups slower than their members one after another, order the rest
        by their least sort key and keep those that fit, first-fit."""
        key = {s.idx: s.sort_val for s in runnable}
        ordered: list[tuple[float, tuple[int, ...]]] = []
        for groups in packings.values():
            for members in groups:
                alone = sum(self.period((k,)) for k in members)
                if self.period(members) / alone > 1:
                    ordered.extend((key[k], (k,)) for k in members)
                else:
                    ordered.append((min(key[k] for k in members), members))
        ordered.sort(key=lambda e: e[0])
        cluster.empty()
        return [m for _, m in ordered if cluster.place(self.jobs[m[0]].gpus) is not None]

    def _place(
        self, packings: list[tuple[int, ...]], runnable: list[_Job], cluster: _Cluster
    ) -> _Chosen:
        """Place the groups by their members, largest GPU count first: the first member
        met takes the GPUs, the others share them."""
        group_of = {k: members for members in packings for k in members}
        state = {s.idx: s for s in runnable}
        placed: dict[tuple[int, ...], Where] = {}
        out: _Chosen = {}
        cluster.empty()
        runnable.sort(key=lambda s: -s.job.gpus)  # in place: it breaks later ties, as in Muri
        for s in runnable:
            members = group_of.get(s.idx)
            if members is None:
                continue
            if members not in placed:
                where = cluster.place(s.job.gpus)
                if where is None:
                    continue
                placed[members] = where
            cost = sum(state[k].cost for k in members)
            period = self.periods(members)[s.idx]
            out[s.idx] = ([state[k] for k in members], period, cost, placed[members])
        return out

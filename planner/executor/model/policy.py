"""What a policy of the executor sees and answers (:mod:`planner.executor.loop`).

At every event (an arrival, a completion, a failure, a time a policy asked for) the
executor asks its policy one thing: given the jobs at hand (:class:`JobState`) and the
cluster (:class:`Cluster`: free GPUs per node, the nodes down), which jobs run, in
which groups, on which GPUs (:data:`Chosen`). The speed of every group comes from the
interleaving model (:class:`Periods`), never from the policy. A policy is a
:class:`Policy` subclass, one module each in this folder; a user's policy file runs the
same way (:func:`planner.executor.policies.policy_of`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from planner.dl.catalog import restart_seconds
from planner.executor.model.elastic import EPSILON, elastic_periods
from planner.executor.model.jobs import ExecutorJob, Outage, Where
from planner.executor.model.resources import at_speed, speed_of
from planner.interleave import Interleave

DEFAULT_OVERHEAD = 10.0
"""Restart overhead (s) of a model the catalog does not know, as in Muri's simulator."""


def restart_cost(job: ExecutorJob) -> float:
    """``job``'s restart overhead (s): its own, else the catalog's of its model on its GPU
    count, else :data:`DEFAULT_OVERHEAD`."""
    known = job.restart
    if known is None and job.model:
        known = restart_seconds(job.model, job.gpus)
    return known if known is not None else DEFAULT_OVERHEAD


Chosen = dict[int, tuple[list["JobState"], float, float, Where]]
"""What a policy answers at an event, per running job (its index): its group (itself
first where it runs alone), its period in that group, the group's restart overhead, its
GPU set. Jobs it leaves out wait."""


class JobState:
    """A job's state in a run: what a policy reads (``job``, ``idx``, ``remaining``
    iterations, ``remaining_time`` alone, ``executed`` wall time, ``alone`` its period
    alone, ``cost`` its restart overhead, ``running``), what it sets (``alloc``: CPU and
    memory per GPU; ``config``: an elastic job's local batch and accumulation steps) and
    the executor's bookkeeping."""

    __slots__ = (
        "alloc",
        "alone",
        "config",
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
        "share",
        "sort_val",
        "where",
    )  # fmt: skip

    def __init__(
        self,
        job: ExecutorJob,
        idx: int,
        model: Interleave,
        restart: bool,
        fair: tuple[float, float] | None = None,
    ) -> None:
        self.job = job
        self.idx = idx
        self.remaining = float(job.iterations)
        self.running = False
        self.last = 0.0
        self.alloc: tuple[float, float] | None = None
        self.config: tuple[int, int] | None = None
        if model.table is not None:  # its period on its fastest GPU type
            rate = model.table.best((job.model, job.gpus))[1]
            self.alone = 1.0 / rate if rate > 0 else math.inf
        else:  # on the fair share of CPU and memory, where they set its speed
            stages, alone = at_speed(job.stages, job.iteration_time, speed_of(job, fair, 1))
            self.alone = model.periods([stages], alone=[alone])[0]
        self.period = self.alone
        self.overhead = 0.0
        self.executed = 0.0
        self.remaining_time = 0.0
        self.sort_val = 0.0
        self.cost = restart_cost(job) if restart else 0.0
        self.holds = list(job.holds)
        self.pausing = False
        self.reweights = list(job.reweights)
        self.reweighing = False
        self.share = job.share
        self.where: Where = ()

    def settle(self) -> None:
        """Take the weight of the block of its plan it is in."""
        while self.reweights and self.reweights[0][0] >= self.remaining - 1e-6:
            self.share = self.reweights.pop(0)[1]

    def next_event(self, t: float) -> float:
        """When the running job next ends (from ``t``, at its period): its end, the end
        of a block of its plan whose next block the plan starts later (it pauses there:
        ``pausing``), or the start of a block of its plan at another speed (its weight
        changes there: ``reweighing``); for an elastic job, the start of its next epoch
        (``reweighing``), or its end, its overhead charged on its last interval too."""
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
        elastic = self.job.elastic
        if elastic is not None:  # charged its overhead to its end; its speed changes
            at = t + self.overhead + self.remaining * self.period  # where an epoch starts
            done = self.job.iterations - self.remaining
            boundary = elastic.next_epoch(done)
            if done + EPSILON < boundary < self.job.iterations - EPSILON:
                self.pausing, self.reweighing = False, True
                at = t + self.overhead + (boundary - done) * self.period
        return at

    @property
    def progress(self) -> float:
        """Iterations done (an elastic job's progress)."""
        return self.job.iterations - self.remaining


def where_label(where: Where, names: Sequence[str] = ()) -> str:
    """``where`` as ``NODE:i-j`` (``+`` between nodes); ``names`` name the nodes."""
    parts = []
    for k, gpus in where:
        node = names[k] if k < len(names) else str(k)
        run = gpus == tuple(range(gpus[0], gpus[0] + len(gpus))) if gpus else False
        span = f"{gpus[0]}-{gpus[-1]}" if run and len(gpus) > 1 else ",".join(map(str, gpus))
        parts.append(f"{node}:{span}")
    return "+".join(parts)


class Cluster:
    """Free GPUs per node, placed first-fit (Muri's ``yarn``), none on nodes down, none
    of those a higher class holds (``held``: per node, its lowest GPUs); on a cluster of
    several GPU types (``types``: one per node), a job's GPUs are all of one type."""

    def __init__(self, nodes: int, per_node: int, types: Sequence[str] = ()) -> None:
        self.per_node = per_node
        self.free = [per_node] * nodes
        self.down: frozenset[int] = frozenset()
        self.held = [0] * nodes
        self.types = tuple(types)
        self.of_type = {
            t: [k for k, x in enumerate(self.types) if x == t] for t in dict.fromkeys(self.types)
        }

    def free_of(self, gpu_type: str) -> int:
        """Free GPUs of ``gpu_type``."""
        return sum(self.free[k] for k in self.of_type.get(gpu_type, ()))

    def empty(self) -> None:
        """Free every GPU of the nodes up but those a higher class holds."""
        self.free = [
            0 if k in self.down else self.per_node - self.held[k] for k in range(len(self.free))
        ]

    def place(self, gpus: int, gpu_type: str | None = None) -> Where | None:
        """Take ``gpus`` GPUs first-fit (of ``gpu_type``; on a cluster of several types,
        by default of the first type in node order that has them); where they were found
        (``None``: nowhere). Every placement since :meth:`empty` takes a node's lowest
        free GPUs."""
        if not self.types:
            return self._place(gpus, range(len(self.free)))
        for t in [gpu_type] if gpu_type is not None else self.of_type:
            where = self._place(gpus, self.of_type.get(t, []))
            if where is not None:
                return where
        return None

    def _place(self, gpus: int, nodes: Sequence[int]) -> Where | None:
        """:meth:`place` on ``nodes`` only."""
        free, g = self.free, self.per_node
        if gpus <= g:
            for k in nodes:
                f = free[k]
                if f >= gpus:
                    free[k] -= gpus
                    return ((k, tuple(range(g - f, g - f + gpus))),)
            return None
        full, rest = divmod(gpus, g)
        idle = [k for k in nodes if free[k] == g][:full]
        if len(idle) < full:
            return None
        last = None
        if rest:
            last = next((k for k in nodes if k not in idle and free[k] >= rest), None)
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


class Periods:
    """Each member's period in a group of jobs (indices), from the interleaving model at
    the CPU and memory each is given (:func:`~planner.executor.model.resources.at_speed`;
    by default the ``fair`` share split among the group), cached by membership and
    allocation: groups recur from one event to the next."""

    def __init__(
        self,
        model: Interleave,
        jobs: Sequence[ExecutorJob],
        fair: tuple[float, float] | None = None,
    ) -> None:
        self.model, self.jobs, self.fair = model, jobs, fair
        self.of_sorted = cache(self._of_sorted)
        self.single: dict[tuple[int, str, tuple[float, float] | None], dict[int, float]] = {}

    def __call__(
        self,
        members: Sequence[int],
        gpu_type: str = "",
        allocs: Mapping[int, tuple[float, float]] | None = None,
    ) -> dict[int, float]:
        """The periods of ``members`` on one GPU set (of ``gpu_type``), each at its
        allocation in ``allocs`` (CPU cores and GB per GPU), else its default share."""
        if len(members) == 1:  # the commonest ask, kept apart
            k = members[0]
            alloc = allocs.get(k) if allocs else None
            key = (k, gpu_type, alloc)
            found = self.single.get(key)
            if found is None:
                found = self.of_sorted((k,), gpu_type, () if alloc is None else (alloc,))
                self.single[key] = found
            return found
        ordered = tuple(sorted(members))
        if not allocs:
            return self.of_sorted(ordered, gpu_type)
        return self.of_sorted(ordered, gpu_type, tuple(allocs.get(k) for k in ordered))

    def _of_sorted(
        self,
        members: tuple[int, ...],
        gpu_type: str = "",
        allocs: tuple[tuple[float, float] | None, ...] = (),
    ) -> dict[int, float]:
        jobs = [self.jobs[k] for k in members]
        if self.model.table is not None:
            keys = [(j.model, j.gpus) for j in jobs]
            return dict(zip(members, self.model.table.periods(keys, gpu_type), strict=True))
        n = len(jobs)
        given = allocs or (None,) * n
        paced = [
            at_speed(j.stages, j.iteration_time, speed_of(j, self.fair, n, a))
            for j, a in zip(jobs, given, strict=True)
        ]
        periods = self.model.periods([p[0] for p in paced], alone=[p[1] for p in paced])
        return dict(zip(members, periods, strict=True))


@dataclass(frozen=True)
class Context:
    """What a policy is given once, before the first event."""

    jobs: Sequence[ExecutorJob]
    """The jobs, in trace order (a job's ``idx`` is its place here)."""
    state: Sequence[JobState]
    """Every job's state, in the same order."""
    model: Interleave
    periods: Periods
    nodes: int
    gpus_per_node: int
    outages: Sequence[Outage] = ()
    """The run's node failures: (node, down, back) in seconds."""
    types: tuple[str, ...] = ()
    """Each node's GPU type (empty: one type)."""
    cpus: tuple[float, ...] = ()
    """Each node's CPU cores (empty: not held)."""
    mems: tuple[float, ...] = ()
    """Each node's GB of host memory (empty: not held)."""

    @property
    def fair(self) -> tuple[float, float] | None:
        """The GPU-proportional share of CPU cores and GB of host memory per GPU
        (:func:`~planner.executor.model.resources.fair_share`)."""
        return self.periods.fair

    @property
    def gpus(self) -> int:
        """The cluster's GPUs."""
        return self.nodes * self.gpus_per_node


class Policy:
    """A scheduling policy: subclass it and answer :meth:`schedule`.

    The executor calls :meth:`start` once, :meth:`arrive` when a job arrives (after
    setting its ``remaining_time`` to its remaining iterations at its period alone),
    :meth:`finish` when it ends, and :meth:`schedule` at every event; it also stops at
    :meth:`next_event`. :meth:`alone` and :meth:`group` build the answer's entries with
    the interleaving model's periods.
    """

    name = "policy"
    """What the run is called (``--policy``)."""
    ranks_classes = False
    """Whether the policy serves the jobs' classes (``priority``) itself; else the
    executor asks it class by class, highest first, each on the GPUs left."""
    shared = False
    """Whether every answer's entry is one job on GPUs of its own that others may share
    (its group: the jobs on its GPUs), not a group on one GPU set."""
    needs_types = False
    """Whether the policy runs only on GPU types under the ``table`` model."""
    needs_stages = False
    """Whether the policy needs the jobs' stage times or counts GPUs without placing them
    (so not under the ``table`` model, whose speeds are per placed GPU type)."""
    needs_elastic = False
    """Whether the policy runs elastic jobs only (:mod:`planner.executor.model.elastic`)."""
    places_gpus = True
    """Whether the policy places jobs on GPUs (not: counts them only, as ``tiresias``)."""
    runs_hybrid = False
    """Whether an elastic policy also runs hybrid-parallel jobs (not Pollux's only)."""

    def start(self, context: Context) -> None:
        """Take the run's context (kept as ``self.context``)."""
        self.context = context

    def arrive(self, job: JobState) -> None:
        """A job arrives (or comes back from a pause of its plan)."""

    def finish(self, job: JobState, t: float) -> None:
        """A job ends at ``t``."""

    def next_event(self) -> float:
        """A time (s) the policy wants to be asked again at, if no other event comes
        first (``inf``: none)."""
        return math.inf

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Which of ``jobs`` (the jobs at hand at ``t``, arrived and not finished) run,
        in which groups, on which GPUs of ``cluster`` (call :meth:`Cluster.empty` first
        to place anew). The executor keeps ``jobs``' order: a policy may sort it."""
        raise NotImplementedError

    def planning_seconds(self) -> list[float]:
        """Wall time of each plan the policy made in the run (none: it plans nothing)."""
        return []

    def size(self, job: JobState, members: Sequence[JobState]) -> int:
        """The size of ``job``'s group ``members`` in the run's report of group sizes."""
        return len(members)

    def gpu_type(self, where: Where) -> str:
        """The GPU type of ``where`` (``""`` on a cluster of one type)."""
        types = self.context.types
        return types[where[0][0]] if types and where else ""

    def alone(self, job: JobState, where: Where) -> Chosen:
        """``job`` alone on ``where``, at its period alone (on a GPU set's type, under a
        table of measured rates; at the CPU and memory it is given, its ``alloc``; an
        elastic job at its configuration there)."""
        if job.job.elastic is not None:
            return self.group([job], where)
        period = job.alone
        if self.context.model.table is not None or job.alloc is not None:
            allocs = {job.idx: job.alloc} if job.alloc is not None else None
            period = self.context.periods([job.idx], self.gpu_type(where), allocs)[job.idx]
        return {job.idx: ([job], period, job.cost, where)}

    def group(self, members: Sequence[JobState], where: Where) -> Chosen:
        """``members`` sharing ``where``, each at its period in the group (and at the CPU
        and memory it is given, its ``alloc``)."""
        if any(m.job.elastic is not None for m in members):
            found = elastic_periods(
                [(m.job.elastic, m.job.stages, m.alone, m.config, m.progress) for m in members],
                where,
                self.context.model,
            )
            periods = {m.idx: p for m, p in zip(members, found, strict=True)}
        else:
            allocs = {m.idx: m.alloc for m in members if m.alloc is not None}
            periods = self.context.periods([m.idx for m in members], self.gpu_type(where), allocs)
        cost = sum(m.cost for m in members)
        group = list(members)
        return {m.idx: (group, periods[m.idx], cost, where) for m in members}

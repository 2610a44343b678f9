"""``plan``: a plan's dispatch. Every job is dispatched at its release (its planned
start), in release order, onto its planned nodes (a pooled plan names none: the first
nodes whose GPUs no job is on, else the first with room). Under ``muri``: on free GPUs
alone, else into the GPU set of the same size there with the fewest members (fewer
than ``max_colocated``, within a GPU's memory). Under ``fluid``: onto single GPUs
shared with jobs of any size, by its weight (:class:`_SharedGpus`). Else it waits and
later jobs are tried. It stays on its GPUs to its end (a plan does not preempt), to a
failure of one of its nodes, or to the end of a block after which its plan leaves a
gap (the executor pauses it); the speeds are asked of the interleaving model whenever
the members of a set change."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from planner.executor.model.jobs import ExecutorJob, Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Periods, Policy
from planner.executor.model.resources import Holdings, at_speed, speed_of
from planner.interleave import Interleave, Stages, fluid_rates, fluid_stretch


class PlanDispatch(Policy):
    """The dispatch of a plan: ``plan`` gives the nodes (indices) of every job."""

    name = "plan"

    def __init__(self, plan: Mapping[str, Sequence[int]]) -> None:
        self.plan = plan

    @staticmethod
    def prepare(
        jobs: Sequence[ExecutorJob],
        plan: Mapping[str, Sequence[int]],
        model: Interleave,
        per_node: int,
    ) -> tuple[list[ExecutorJob], dict[str, tuple[int, ...]]]:
        """The jobs and the plan as the dispatch under ``model`` takes them: under ``muri``
        a plan on single GPUs becomes a plan on machines."""
        if model.kind == "fluid":
            return list(jobs), {k: tuple(v) for k, v in plan.items()}
        return _machines_only(jobs, plan, per_node)

    def start(self, context: Context) -> None:
        """Shared single GPUs under ``fluid``, GPU sets else."""
        super().start(context)
        self.shared = context.model.kind == "fluid"
        if self.shared:
            self.sets: _SharedGpus | _PlanSets = _SharedGpus(
                context.model,
                context.nodes,
                context.gpus_per_node,
                self.plan,
                context.state,
                Holdings(context.cpus, context.mems, context.fair),
            )
        else:
            self.sets = _PlanSets(
                context.periods, context.nodes, context.gpus_per_node, self.plan, context.state
            )

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Admit the jobs in order, keep the running ones where they are."""
        return self.sets.schedule(jobs, cluster.down)

    def size(self, job: JobState, members: Sequence[JobState]) -> int:
        """On shared GPUs, the most jobs on one of ``job``'s GPUs (a gang one member)."""
        if isinstance(self.sets, _SharedGpus):
            return self.sets.size(job.idx)
        return len(members)


def _machines_only(
    jobs: Sequence[ExecutorJob], plan: Mapping[str, Sequence[int]], gpus_per_node: int
) -> tuple[list[ExecutorJob], dict[str, tuple[int, ...]]]:
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
    """A plan's dispatch under ``fluid`` onto single GPUs (see :class:`PlanDispatch`): a
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
        state: Sequence[JobState],
        holdings: Holdings | None = None,
    ) -> None:
        self.model, self.per_node = model, per_node
        self.holdings = holdings or Holdings((), (), None)
        """What the jobs placed hold of each node's CPU and memory."""
        self.fair = self.holdings.fair
        self.profiled = any(s.job.profile is not None for s in state)
        """Whether a job's speed follows its share of CPU and memory."""
        self.residents: list[list[list[JobState]]] = [
            [[] for _ in range(per_node)] for _ in range(nodes)
        ]
        self.where = {s.idx: tuple(plan[s.job.name]) for s in state}
        self.placed: dict[int, tuple[JobState, Where]] = {}
        self.rates: dict[tuple[int, int], dict[int, float]] = {}
        """Per GPU, its residents' rates."""
        self.entries: Chosen = {}
        """Per placed job, its entry of the answer."""
        self.seen: dict[int, float] = {}
        """Per placed job, the weight its entry was made with."""
        self.by_idx = {s.idx: s for s in state}
        self.nodes_of = {
            s.idx: tuple(k for k, _ in s.job.on) or self.where[s.idx] or tuple(range(nodes))
            for s in state
        }
        self.seq: dict[int, int] = {}
        """Per job at hand, when it joined them: the executor's order of the jobs."""
        self.count = 0
        self.waiting_on: list[set[int]] = [set() for _ in range(nodes)]
        """Per node, the jobs at hand not placed that may go there."""
        self.down: frozenset[int] = frozenset()
        self.retry: set[int] = set()
        """Waiting jobs moved to other nodes: tried at the next event."""
        self.short: dict[int, int] = {}
        """Per node, the fewest GPUs with room a job lacked there at this event: room
        only shrinks within an event, so a job that needs as many waits too."""
        self.free: dict[int, int] = {}
        """Per node, its GPUs with room for one more resident, counted once per event
        (and again once a job joins it)."""
        self.empty: dict[int, int] = {}
        """Per node, its GPUs no job is on, counted as :attr:`free` is."""
        self.most_free: int | None = None
        """The most GPUs with room on one node up at this event (``None``: not counted)."""

    def schedule(self, runnable: list[JobState], down: frozenset[int] = frozenset()) -> Chosen:
        """Drop the finished jobs and those on nodes ``down``, admit the waiting jobs in
        plan order, and give every running job its period. Only the jobs on GPUs whose
        residents, or residents' weights, changed get a new entry."""
        live = {s.idx for s in runnable}
        dirty: set[tuple[int, int]] = set()
        self.short, self.free, self.empty, self.most_free = {}, {}, {}, None
        # A waiting job is tried again only where room may have grown: on a node a job
        # left, or once the nodes down changed; the others would find none again.
        candidates: set[int] = set()
        freed: set[int] = set()
        for idx, (s, where) in list(self.placed.items()):
            if idx not in live or down.intersection(k for k, _ in where):
                for k, ids in where:
                    freed.add(k)
                    for i in ids:
                        self.residents[k][i].remove(s)
                        dirty.add((k, i))
                self.holdings.take(s.job, where, -1)
                del self.placed[idx]
                del self.entries[idx]
                if idx in live:
                    self._wait(idx)
                else:
                    del self.seq[idx]
            elif s.share != self.seen[idx]:
                dirty.update((k, i) for k, ids in where for i in ids)
        arrived = len(live) - len(self.seq)
        for s in runnable[len(runnable) - arrived :] if arrived else ():
            self.seq[s.idx] = self.count
            self.count += 1
            self._wait(s.idx)
            candidates.add(s.idx)
        if down != self.down:
            self.down = down
            freed.update(range(len(self.waiting_on)))
        for k in freed:
            candidates |= self.waiting_on[k]
        candidates |= self.retry & self.seq.keys()
        self.retry.clear()
        for idx in sorted(candidates, key=self.seq.__getitem__):
            s = self.by_idx[idx]
            if down.intersection(self.where[idx]):
                continue
            where = self._admit(s, down)
            if where is not None:
                for k in self.nodes_of[idx]:
                    self.waiting_on[k].discard(idx)
                self.placed[idx] = (s, where)
                dirty.update((k, i) for k, ids in where for i in ids)
        if self.profiled:  # a job's speed follows its share of CPU: its other GPUs too
            dirty |= {
                (k2, i2)
                for k, i in list(dirty)
                for x in self.residents[k][i]
                for k2, ids in self.placed[x.idx][1]
                for i2 in ids
            }
        for k, i in dirty:
            r = self.residents[k][i]
            speeds = fluid_rates([self._paced(x) for x in r], [x.share for x in r],
                                 self.model.data_slots)  # fmt: skip
            self.rates[k, i] = {x.idx: v for x, v in zip(r, speeds, strict=True)}
        for idx in {x.idx for k, i in dirty for x in self.residents[k][i]}:
            s, where = self.placed[idx]
            on = [self.residents[k][i] for k, ids in where for i in ids]
            rate = min(self.rates[k, i][idx] for k, ids in where for i in ids)
            partners = list(dict.fromkeys(x for r in on for x in r if x is not s))
            period = self._paced(s).total / rate * self.model.factor(max(map(len, on)))
            cost = s.cost + sum(x.cost for x in partners)
            self.entries[idx] = ([s, *partners], period, cost, where)
            self.seen[idx] = s.share
        return {idx: self.entries[idx] for idx in self.placed}

    def _wait(self, idx: int) -> None:
        for k in self.nodes_of[idx]:
            self.waiting_on[k].add(idx)

    def move(self, idx: int, nodes: tuple[int, ...]) -> None:
        """A job not placed goes to ``nodes`` (none: the first with room) from now on."""
        waiting = idx in self.seq
        if waiting:
            for k in self.nodes_of[idx]:
                self.waiting_on[k].discard(idx)
        self.where[idx] = nodes
        self.nodes_of[idx] = nodes or tuple(range(len(self.waiting_on)))
        if waiting:
            self._wait(idx)
            self.retry.add(idx)

    def size(self, idx: int) -> int:
        """The most jobs on one GPU of the placed job ``idx`` (itself included)."""
        _, where = self.placed[idx]
        return max(len(self.residents[k][i]) for k, ids in where for i in ids)

    def _paced(self, s: JobState) -> Stages:
        """A placed job's stages at its share of its node's CPU and memory (the fair
        share over the most jobs on one of its GPUs: :func:`shared_periods`)."""
        if s.job.profile is None:
            return s.job.stages
        on = self.placed[s.idx][1]
        count = max(len(self.residents[k][i]) for k, ids in on for i in ids)
        return at_speed(s.job.stages, 1.0, speed_of(s.job, self.fair, count))[0]

    def _stretch(self, residents: Sequence[JobState]) -> float:
        return fluid_stretch([r.job.stages for r in residents], self.model.data_slots)

    def _room(self, k: int, job: JobState | None = None) -> list[int]:
        """The GPUs of node ``k`` with room for one more resident (for ``job``: its GPU
        memory too, :meth:`~planner.interleave.Interleave.room`)."""
        residents, most = self.residents[k], self.model.max_colocated
        if job is None or self.model.gpu_memory is None:
            return [i for i, r in enumerate(residents) if len(r) < most]
        need = job.job.gpu_mem
        return [
            i
            for i, r in enumerate(residents)
            if self.model.room([*(x.job.gpu_mem for x in r), need])
        ]

    def _admit(self, s: JobState, down: frozenset[int] = frozenset()) -> Where | None:
        if s.job.on:
            full = any(
                len(self.residents[k][i]) >= self.model.max_colocated
                for k, ids in s.job.on
                for i in ids
            )
            if full or not self.holdings.fits(s.job, s.job.on):
                return None
            for k, ids in s.job.on:
                self._joined(k)
                for i in ids:
                    self.residents[k][i].append(s)
            self.holdings.take(s.job, s.job.on)
            return s.job.on
        g = s.job.gpus
        on = self.where[s.idx] or self._first_fit(g, down)
        if on is None:
            return None
        need = self.per_node if len(on) > 1 else g
        if any(need >= self.short.get(k, need + 1) for k in on):
            return None  # a node of its set had too little room for as much this event
        rooms = []
        for k in on:
            room = self._room(k)
            if len(room) < need:
                self.short[k] = min(need, self.short.get(k, need))
                return None
            if self.model.gpu_memory is not None:
                room = self._room(k, s)  # GPU memory: this job's own room, not the node's
                if len(room) < need:
                    return None
            rooms.append(room)
        where = []
        for k, room in zip(on, rooms, strict=True):
            room.sort(
                key=lambda i: (
                    self._stretch([*self.residents[k][i], s]),
                    len(self.residents[k][i]),
                    i,
                )
            )
            where.append((k, tuple(sorted(room[:need]))))
        if not self.holdings.fits(s.job, where):
            return None
        for k, ids in where:
            self._joined(k)
            for i in ids:
                self.residents[k][i].append(s)
        self.holdings.take(s.job, where)
        return tuple(where)

    def _empty(self, k: int) -> int:
        """The GPUs of node ``k`` no job is on (counted once per event and node, until a
        job joins the node)."""
        n = self.empty.get(k)
        if n is None:
            n = self.empty[k] = sum(1 for r in self.residents[k] if not r)
        return n

    def _free(self, k: int) -> int:
        """The GPUs of node ``k`` with room for one more resident (counted once per
        event and node, until a job joins the node)."""
        n = self.free.get(k)
        if n is None:
            n = self.free[k] = len(self._room(k))
        return n

    def _joined(self, k: int) -> None:
        """A job joins node ``k``: its room is counted again when asked."""
        self.free.pop(k, None)
        self.empty.pop(k, None)
        self.most_free = None

    def _first_fit(self, gpus: int, down: frozenset[int]) -> tuple[int, ...] | None:
        """:func:`_first_fit` on this event's room, at once ``None`` where no node up has
        room for the job (most of the time, in a full cluster)."""
        nodes = len(self.residents)
        if self.most_free is None:
            self.most_free = max((self._free(k) for k in range(nodes) if k not in down), default=0)
        if self.most_free < min(gpus, self.per_node):
            return None
        # GPUs no job is on first: a pooled plan's jobs spread over the cluster, and share
        # GPUs only where the plan runs more than the GPUs hold alone
        spread = _first_fit(gpus, self.per_node, down, self._empty, nodes)
        return spread or _first_fit(gpus, self.per_node, down, self._free, nodes)


def _first_fit(
    gpus: int,
    per_node: int,
    down: frozenset[int],
    free: Callable[[int], int],
    nodes: int,
) -> tuple[int, ...] | None:
    """Where the executor puts a job a pooled plan places nowhere: the first node up with
    ``gpus`` GPUs with room (``free``: a node's GPUs with room), or for a gang the first
    nodes up with room on all their GPUs; ``None`` if none has."""
    if gpus <= per_node:
        return next(((k,) for k in range(nodes) if k not in down and free(k) >= gpus), None)
    need = -(-gpus // per_node)
    whole = [k for k in range(nodes) if k not in down and free(k) == per_node]
    return tuple(whole[:need]) if len(whole) >= need else None


class _GpuSet:
    """GPUs that a group of jobs shares: ``gpus`` of them, on the nodes of ``where``."""

    __slots__ = ("gpus", "members", "nodes", "where")

    def __init__(self, where: Where, gpus: int) -> None:
        self.where, self.gpus = where, gpus
        self.nodes = tuple(k for k, _ in where)
        self.members: list[JobState] = []


class _PlanSets:
    """A plan's dispatch onto GPU sets (see :class:`PlanDispatch`)."""

    def __init__(
        self,
        periods: Periods,
        nodes: int,
        per_node: int,
        plan: Mapping[str, Sequence[int]],
        state: Sequence[JobState],
    ) -> None:
        self.periods, self.model, self.per_node = periods, periods.model, per_node
        self.free: list[set[int]] = [set(range(per_node)) for _ in range(nodes)]
        self.where = {s.idx: tuple(plan[s.job.name]) for s in state}
        self.sets: list[_GpuSet] = []
        self.set_of: dict[int, _GpuSet] = {}

    def schedule(self, runnable: list[JobState], down: frozenset[int] = frozenset()) -> Chosen:
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
        chosen: Chosen = {}
        for gset in self.sets:
            members = gset.members
            periods = self.periods([m.idx for m in members])
            cost = sum(m.cost for m in members)
            for m in members:
                chosen[m.idx] = (members, periods[m.idx], cost, gset.where)
        return chosen

    def move(self, idx: int, nodes: tuple[int, ...]) -> None:
        """A job not placed goes to ``nodes`` (none: the first with room) from now on."""
        self.where[idx] = nodes

    def _admit(self, s: JobState, down: frozenset[int] = frozenset()) -> _GpuSet | None:
        g = s.job.gpus
        on = self.where[s.idx] or _first_fit(
            g, self.per_node, down, lambda k: len(self.free[k]), len(self.free)
        )
        if on is None:  # a pooled plan's job: share the least full set of its size
            shared = [x for x in self.sets if x.gpus == g and not down.intersection(x.nodes)]
            return self._least_full(shared, s)
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
        return self._least_full([x for x in self.sets if x.nodes == on and x.gpus == g], s)

    def _least_full(self, sets: Sequence[_GpuSet], job: JobState) -> _GpuSet | None:
        """The set of ``sets`` with the fewest members, if one has room for ``job``."""
        room = [
            x
            for x in sets
            if self.model.room([*(m.job.gpu_mem for m in x.members), job.job.gpu_mem])
        ]
        return min(room, key=lambda x: len(x.members), default=None)

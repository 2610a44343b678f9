"""``goodput``: ours, for elastic jobs (:mod:`planner.executor.model.elastic`): GPU counts and
batch sizes by goodput, decided every 60 seconds and at every arrival and end.

At every decision each job's *speed-up* on ``n`` GPUs is its best goodput on ``n`` GPUs
packed on the fewest nodes (over the batch sizes its application allows, with gradient
accumulation; in its current epoch) over its goodput on one GPU. The GPUs then go one
at a time to the job whose speed-up gains the most per second of its remaining time on
one GPU (a job on none gains its whole speed-up on one): Smith's rule on marginal
goodput, which serves short jobs first and spends GPUs where they scale. A running job
keeps its GPU count where the new one would change its speed-up by at most
:data:`HYSTERESIS` (a change costs its rescale time). Jobs are then placed, largest
first, on the nodes whose free GPUs fit them most tightly, kept where their count
stayed; a job runs at the configuration of best goodput there, chosen anew at every
epoch's start (Pollux's simulator does the same, free of charge). Unlike Pollux's
rounds, an arrival or an end is decided at once: GPUs do not idle to the next round.

A hybrid-parallel job (:class:`~planner.executor.model.elastic.Hybrid`) takes only the GPU
counts of its plans that fit a GPU's memory, and runs the fastest of them on its count:
plan and GPU count are chosen together. Its speed-up on ``n`` GPUs is its speed there
over its speed per GPU on its own plan (its ``gpus``), and its time on one GPU its
iterations left at that speed per GPU.

``goodput-pack`` (:class:`GoodputPack`) also co-locates: after the GPU steps, each job
left without GPUs, in Smith's order (its speed-up on one GPU over its time left there),
joins the GPU set of running jobs where the set's *worth* grows most: the sum over its
members of each one's speed-up on the set's GPUs, times its speed in the set over its
speed alone there, over its time left on one GPU. It joins only a set of as many GPUs as
a plan of its has (a Pollux job: up to its most), within the model's group size and the
GPUs' memory, and stays in the set it joined while the set runs and still gains. A set
waits for its last member's rescale.
"""

from __future__ import annotations

import heapq
import math
from functools import cache

import numpy as np

from planner.dl.pollux import Application, packed
from planner.executor.model.elastic import Hybrid, placement
from planner.executor.model.jobs import Where
from planner.executor.model.policy import Cluster, Context, JobState
from planner.executor.policies.pollux import PolluxRounds

HYSTERESIS = 0.1
"""The least gain of speed-up, over its speed-up at its current count, for which a running
job's GPU count changes."""

BATCHES = 50
"""Total batch sizes tried per GPU count (geometric, as Pollux's optimizer samples)."""


@cache
def best_config(app: Application, shape: tuple[int, ...], epoch: int) -> tuple[float, int, int]:
    """The goodput, local batch and accumulation steps of best goodput on a placement of
    ``shape`` (GPUs per node) in ``epoch``."""
    replicas = sum(shape)
    least = app.least_batch(replicas)
    if least > app.max_batch_size:
        return 0.0, 0, 0
    best = (0.0, 0, 0)
    for batch in np.unique(np.geomspace(least, app.max_batch_size, BATCHES).astype(int)):
        local = batch / replicas
        accum = max(math.ceil(local / app.max_local_bsz - 1e-8) - 1, 0)
        if replicas == 1 and local > app.init_batch_size + 1e-8:
            accum = max(accum, 1)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        if not app.min_local_bsz <= atomic <= app.max_local_bsz:
            continue
        total = replicas * atomic * (accum + 1)
        if total > app.max_batch_size:
            continue
        found = app.goodput(shape, atomic, accum, epoch)
        if found > best[0]:
            best = (found, atomic, accum)
    return best


@cache
def _after(app: Application, epoch: int) -> float:
    """Seconds on one GPU at its best goodput from ``epoch``'s start to the end."""
    if epoch >= app.max_epochs:
        return 0.0
    rate = best_config(app, (1,), epoch)[0]
    span = app.progress_at(epoch + 1) - app.progress_at(epoch)
    return (span / rate if rate > 0 else math.inf) + _after(app, epoch + 1)


def _per_gpu(s: JobState) -> float:
    """A hybrid-parallel job's iterations per second per GPU on its own plan."""
    spec = s.job.elastic
    assert isinstance(spec, Hybrid)
    return spec.best(s.job.gpus)[0] / s.job.gpus


def _counts(s: JobState, most: int) -> list[int]:
    """The GPU counts ``s`` may run on, up to ``most``: any for a Pollux job, its plans'
    that fit for a hybrid-parallel one."""
    spec = s.job.elastic
    if isinstance(spec, Hybrid):
        return [n for n in spec.counts() if n <= most]
    return list(range(1, most + 1))


class Goodput(PolluxRounds):
    """Ours: GPU counts by Smith's rule on marginal goodput (see the module docstring)."""

    name = "goodput"
    runs_hybrid = True

    def speedups(self, s: JobState, most: int) -> list[float]:
        """``s``'s speed-up on 0 .. ``most`` GPUs (non-decreasing: a job may leave GPUs
        idle rather than slow down); computed once per job and epoch."""
        spec = s.job.elastic
        assert spec is not None
        key = (s.idx, spec.epoch(s.progress))
        out = self.curves.get(key)
        if out is None:
            out = self.curves[key] = self._speedups(s)
        return out[: most + 1]

    def _speedups(self, s: JobState) -> list[float]:
        """``s``'s speed-up on 0 .. :meth:`_most` GPUs (at most the cluster's) in its
        current epoch."""
        spec = s.job.elastic
        assert spec is not None
        out = [0.0]
        most = min(self.context.gpus, self._most(s))
        if isinstance(spec, Hybrid):
            unit = _per_gpu(s)
            for n in range(1, most + 1):
                out.append(max(out[-1], spec.best(n)[0] / unit))
            return out
        app, epoch = spec.app, spec.epoch(s.progress)
        per_node = self.context.gpus_per_node
        base = best_config(app, (1,), epoch)[0]
        for n in range(1, most + 1):
            out.append(max(out[-1], best_config(app, packed(n, per_node), epoch)[0] / base))
        return out

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """The round's GPU counts (each next GPU, or a hybrid job's GPUs to its next plan,
        to the greatest gain per GPU: a heap of each job's next step), then their
        placement."""
        left = self.context.gpus - len(cluster.down) * self.context.gpus_per_node
        jobs = [s for s in jobs if s.job.elastic is not None]
        most = {s.idx: min(left, self._most(s)) for s in jobs}
        curve = {s.idx: self.speedups(s, most[s.idx]) for s in jobs}
        size = {s.idx: self._time_left(s) for s in jobs}
        steps = {s.idx: _counts(s, most[s.idx]) for s in jobs}
        count = dict.fromkeys(curve, 0)
        heap: list[tuple[float, int, int, int]] = []

        def push(order: int, idx: int) -> None:
            n, c = count[idx], curve[idx]
            m = next((x for x in steps[idx] if x > n), None)
            if m is not None and (gain := (c[m] - c[n]) / (m - n) / size[idx]) > 0:
                heapq.heappush(heap, (-gain, order, idx, m))

        for order, idx in enumerate(curve):
            push(order, idx)
        while left > 0 and heap:  # a step too large now stays too large: dropped
            _, order, idx, m = heapq.heappop(heap)
            if m - count[idx] <= left:
                left -= m - count[idx]
                count[idx] = m
                push(order, idx)
        for idx, where in self.placed.items():  # keep a running job's count where close
            n, have = count.get(idx, 0), sum(len(ids) for _, ids in where)
            c = curve.get(idx)
            if c is None or n <= 0 or have >= len(c):
                continue
            if abs(c[n] - c[have]) <= HYSTERESIS * c[have]:
                count[idx] = have
        return self._place(count, cluster)

    def _time_left(self, s: JobState) -> float:
        """``s``'s seconds left on one GPU, each epoch left at its best goodput there (a
        hybrid-parallel job's: at its speed per GPU on its own plan)."""
        spec = s.job.elastic
        assert spec is not None
        if isinstance(spec, Hybrid):
            return max(s.remaining / _per_gpu(s), 1.0)
        app, epoch = spec.app, spec.epoch(s.progress)
        rate = best_config(app, (1,), epoch)[0]
        here = (app.progress_at(epoch + 1) - s.progress) / rate if rate > 0 else math.inf
        return max(here + _after(app, epoch + 1), 1.0)

    def _most(self, s: JobState) -> int:
        """The most GPUs ``s`` may use: its application's largest batch over its least
        local batch (a hybrid-parallel job's: its largest plan that fits)."""
        spec = s.job.elastic
        if isinstance(spec, Hybrid):
            return max(spec.counts())
        app = spec.app  # type: ignore[union-attr]
        return max(1, app.max_batch_size // app.min_local_bsz)

    def _place(self, count: dict[int, int], cluster: Cluster) -> dict[int, Where]:
        """Jobs kept where their count stayed; the others, largest first, on the nodes
        whose free GPUs fit them most tightly (:meth:`node_for`)."""
        kept = {
            idx: where
            for idx, where in self._owned().items()
            if count.get(idx) == sum(len(ids) for _, ids in where)
            and not cluster.down.intersection(k for k, _ in where)
        }
        wanted = sorted(((n, i) for i, n in count.items() if n and i not in kept), reverse=True)
        return self.place(kept, [(i, n) for n, i in wanted], cluster)

    def _owned(self) -> dict[int, Where]:
        """The jobs placed on GPU sets of their own, and where."""
        return self.placed

    def node_for(self, free: dict[int, set[int]], need: int) -> int:
        """The node whose free GPUs fit ``need`` most tightly, else the one with the most."""
        fits = [k for k in free if len(free[k]) >= need]
        if fits:
            return min(fits, key=lambda k: (len(free[k]), k))
        return max(free, key=lambda k: (len(free[k]), -k))

    def due(self, arrived: list[JobState]) -> bool:
        """Decide anew where a job arrived or ended since the last decision, too."""
        now = frozenset(s.idx for s in arrived)
        changed, self.seen = now != self.seen, now
        return changed

    def start(self, context: Context) -> None:
        """A run starts: no job seen."""
        super().start(context)
        self.seen: frozenset[int] = frozenset()
        self.curves: dict[tuple[int, int], list[float]] = {}

    def configure(self, job: JobState, where: Where) -> None:
        """The configuration of best goodput on ``where`` in ``job``'s current epoch."""
        spec = job.job.elastic
        if isinstance(spec, Hybrid):
            n = sum(len(ids) for _, ids in where)
            job.config = spec.default_config(n) if spec.best(n)[1] >= 0 else None
        elif spec is not None:
            _, atomic, accum = best_config(spec.app, placement(where), spec.epoch(job.progress))
            job.config = (atomic, accum) if atomic else None


class GoodputPack(Goodput):
    """``goodput`` that also co-locates: a job the GPU steps leave without GPUs joins the
    GPU set of running jobs where it adds the most worth (see the module docstring)."""

    name = "goodput-pack"

    def start(self, context: Context) -> None:
        """A run starts: no job joined."""
        super().start(context)
        self.joined: dict[int, Where] = {}
        self.shares: dict[tuple[tuple[int, ...], tuple[tuple[int, int], ...]], list[float]] = {}

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """:class:`Goodput`'s GPU sets, then each job left without GPUs, in Smith's order,
        into the set where the set's worth (:meth:`worth`) grows most; a job that joined a
        set is weighed for that set alone while it runs (it stays where it still adds
        worth, else waits: no move from set to set)."""
        out = super().decide(t, jobs, cluster)
        here = {s.idx: s for s in jobs if s.job.elastic is not None}
        sets: dict[Where, list[JobState]] = {}
        for idx, where in out.items():
            sets.setdefault(where, []).append(here[idx])
        waiting = [s for s in here.values() if s.idx not in out]
        waiting.sort(key=lambda s: (-self.speedups(s, 1)[1] / self._time_left(s), s.idx))
        worth: dict[tuple[Where, tuple[int, ...]], float] = {}

        def value(where: Where, members: list[JobState]) -> float:
            key = (where, tuple(m.idx for m in members))
            if key not in worth:
                worth[key] = self.worth(where, members)
            return worth[key]

        joined: dict[int, Where] = {}
        for s in waiting:
            before = self.joined.get(s.idx)
            options = [before] if before in sets else list(sets)
            best, gain = None, 0.0
            for where in options:
                members = sets[where]
                if not self._admits(s, where, members):
                    continue
                more = value(where, [*members, s]) - value(where, members)
                if more > gain + 1e-12:
                    best, gain = where, more
            if best is not None:
                sets[best].append(s)
                joined[s.idx] = out[s.idx] = best
        self.joined = joined
        return out

    def worth(self, where: Where, members: list[JobState]) -> float:
        """The worth of ``members`` sharing ``where``: each member's speed-up on its GPUs,
        times its speed in the set over its speed alone there, over its time left on one
        GPU (Smith's rule, as the GPU steps weigh)."""
        n = sum(len(ids) for _, ids in where)
        shares = self._shares(where, members)
        return sum(
            self.speedups(m, n)[n] * share / self._time_left(m)
            for m, share in zip(members, shares, strict=True)
        )

    def _shares(self, where: Where, members: list[JobState]) -> list[float]:
        """Each member's speed sharing ``where`` over its speed alone there; computed once
        per placement, members and their epochs."""
        shape = placement(where)
        key = (shape, tuple((m.idx, m.job.elastic.epoch(m.progress)) for m in members))  # type: ignore[union-attr]
        found = self.shares.get(key)
        if found is None:
            for m in members:
                self.configure(m, where)
            shared = self.group(members, where)
            found = self.shares[key] = [
                self.group([m], where)[m.idx][1] / shared[m.idx][1] for m in members
            ]
        return found

    def _admits(self, s: JobState, where: Where, members: list[JobState]) -> bool:
        """Whether ``s`` may join ``members`` on ``where``: a plan of its on as many GPUs
        (for a Pollux job, at most its most), room in the model for one more (members and
        GPU memory)."""
        n = sum(len(ids) for _, ids in where)
        spec = s.job.elastic
        if isinstance(spec, Hybrid):
            if spec.best(n)[1] < 0:
                return False
        elif n > self._most(s):
            return False
        return self.context.model.room([_memory(m, n) for m in [*members, s]])

    def _owned(self) -> dict[int, Where]:
        """The jobs placed on GPU sets of their own: those that joined none."""
        return {i: w for i, w in self.placed.items() if i not in self.joined}


def _memory(s: JobState, n: int) -> float:
    """GB per GPU ``s`` needs on ``n`` GPUs (a hybrid-parallel job's: its plan's there)."""
    spec = s.job.elastic
    if isinstance(spec, Hybrid):
        return spec.plans[spec.best(n)[1]].gpu_mem
    return s.job.gpu_mem

"""``goodput``: ours, for elastic jobs (:mod:`planner.execution.elastic`): GPU counts and
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
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from planner.dl.pollux import Application, packed
from planner.execution.elastic import placement
from planner.execution.jobs import Where
from planner.execution.policies.base import Cluster, Context, JobState
from planner.execution.policies.pollux import PolluxRounds

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


class Goodput(PolluxRounds):
    """Ours: GPU counts by Smith's rule on marginal goodput (see the module docstring)."""

    name = "goodput"

    def speedups(self, s: JobState, most: int) -> list[float]:
        """``s``'s speed-up on 0 .. ``most`` GPUs (non-decreasing: a job may leave GPUs
        idle rather than slow down)."""
        spec = s.job.elastic
        assert spec is not None
        app, epoch = spec.app, spec.epoch(s.progress)
        per_node = self.context.gpus_per_node
        base = best_config(app, (1,), epoch)[0]
        out = [0.0]
        for n in range(1, most + 1):
            out.append(max(out[-1], best_config(app, packed(n, per_node), epoch)[0] / base))
        return out

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """The round's GPU counts, then their placement."""
        left = self.context.gpus - len(cluster.down) * self.context.gpus_per_node
        jobs = [s for s in jobs if s.job.elastic is not None]
        most = {s.idx: min(left, self._most(s)) for s in jobs}
        curve = {s.idx: self.speedups(s, most[s.idx]) for s in jobs}
        size = {s.idx: self._time_left(s) for s in jobs}
        count = dict.fromkeys(curve, 0)
        while left > 0:
            best, pick = 0.0, None
            for idx, c in curve.items():
                n = count[idx]
                if n < len(c) - 1:
                    gain = (c[n + 1] - c[n]) / size[idx]
                    if gain > best:
                        best, pick = gain, idx
            if pick is None:
                break
            count[pick] += 1
            left -= 1
        for idx, where in self.placed.items():  # keep a running job's count where close
            n, have = count.get(idx, 0), sum(len(ids) for _, ids in where)
            c = curve.get(idx)
            if c is None or n <= 0 or have >= len(c):
                continue
            if abs(c[n] - c[have]) <= HYSTERESIS * c[have]:
                count[idx] = have
        return self._place(count, cluster)

    def _time_left(self, s: JobState) -> float:
        """``s``'s seconds left on one GPU, each epoch left at its best goodput there."""
        spec = s.job.elastic
        assert spec is not None
        app, epoch = spec.app, spec.epoch(s.progress)
        rate = best_config(app, (1,), epoch)[0]
        here = (app.progress_at(epoch + 1) - s.progress) / rate if rate > 0 else math.inf
        return max(here + _after(app, epoch + 1), 1.0)

    def _most(self, s: JobState) -> int:
        """The most GPUs ``s`` may use: its application's largest batch over its least
        local batch."""
        app = s.job.elastic.app  # type: ignore[union-attr]
        return max(1, app.max_batch_size // app.min_local_bsz)

    def _place(self, count: dict[int, int], cluster: Cluster) -> dict[int, Where]:
        """Jobs kept where their count stayed; the others, largest first, on the nodes
        whose free GPUs fit them most tightly (:meth:`node_for`)."""
        kept = {
            idx: where
            for idx, where in self.placed.items()
            if count.get(idx) == sum(len(ids) for _, ids in where)
            and not cluster.down.intersection(k for k, _ in where)
        }
        wanted = sorted(((n, i) for i, n in count.items() if n and i not in kept), reverse=True)
        return self.place(kept, [(i, n) for n, i in wanted], cluster)

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

    def configure(self, job: JobState, where: Where) -> None:
        """The configuration of best goodput on ``where`` in ``job``'s current epoch."""
        spec = job.job.elastic
        if spec is not None:
            _, atomic, accum = best_config(spec.app, placement(where), spec.epoch(job.progress))
            job.config = (atomic, accum) if atomic else None

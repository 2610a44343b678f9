"""Our policies for a cluster of GPU types under the ``table`` model: ``het-jct`` (the
mean JCT, with a bound on how long a job may fall behind) and ``het-makespan``.

Both decide at every event (an arrival, a completion), not in rounds, and place every job
on GPUs of one type:

1. **Order.** ``het-jct``: shortest remaining time first (each job's remaining steps at
   its rate on its fastest type, over its weight: Smith's rule), except that a job whose
   finish-time fairness would pass :data:`FAIR` if it waited one more
   :data:`HORIZON` goes first (oldest first). ``het-makespan``: longest remaining time
   first, each job's time on the type the min-total-duration program gives it most of.
2. **Types.** In that order each job takes the GPU type, among those with room, where
   it runs fastest relative to its fastest type (``het-makespan``: its program's type
   first); a job no type has room for waits.
3. **Pairs.** Then each waiting job joins, on its GPU set, the running job it packs best
   with (lowest in the order first), where the table measures the pair, the two
   normalised rates sum to at least :data:`PACK` and the partner keeps at least
   :data:`KEEP` of its rate.
"""

from __future__ import annotations

import math

import numpy as np

from planner.execution.policies import gavel_lp
from planner.execution.policies.base import Chosen, Cluster, Context, JobState, Policy
from planner.execution.policies.gavel import ROUND, GavelRounds

FAIR = 2.0
"""``het-jct``: the finish-time fairness (JCT over the job's time alone on its fair
share) past which a waiting job goes first."""

HORIZON = 3600.0
"""``het-jct``: how far ahead (s) it looks for a job about to pass :data:`FAIR`."""

PACK = 1.25
"""The least sum of a pair's normalised rates (each over its rate alone on the type)."""

KEEP = 0.6
"""The least share of its rate alone a running job keeps beside a partner."""

FLOOR = 0.5
"""``het-srpt``: every job's least throughput, as a share of an equal share of the
cluster."""


class _Hetero(Policy):
    """The engine of both policies (see the module docstring)."""

    makespan = False
    needs_types = True

    def start(self, context: Context) -> None:
        super().start(context)
        table = context.model.table
        if table is None or not context.types:
            from planner.errors import InputError

            raise InputError(f"{self.name} runs on GPU types under the table model")
        self.table = table
        self.type_list = list(dict.fromkeys(context.types))
        self.gpus = {t: context.types.count(t) * context.gpus_per_node for t in self.type_list}
        self.rate = {}
        for j in context.jobs:
            key = (j.model, j.gpus)
            self.rate[j.name] = {t: table.alone.get(t, {}).get(key, 0.0) for t in self.type_list}
        self.best = {n: max(r.values()) for n, r in self.rate.items()}
        self.preferred: dict[str, str] = {}
        self.alone_time = {
            j.name: j.iterations / self.best[j.name] if self.best[j.name] > 0 else math.inf
            for j in context.jobs
        }

    def _order(self, t: float, jobs: list[JobState]) -> list[JobState]:
        """The jobs in the order they choose GPUs."""
        if self.makespan:
            return sorted(jobs, key=lambda s: (-self._remaining(s), s.idx))
        crowd = max(1.0, len(jobs) * np.mean([s.job.gpus for s in jobs]) / sum(self.gpus.values()))

        def late(s: JobState) -> bool:
            ideal = self.alone_time[s.job.name] * max(1.0, crowd)
            return (t + HORIZON - s.job.release) / ideal > FAIR

        return sorted(
            jobs,
            key=lambda s: (
                not late(s),
                s.job.release if late(s) else self._remaining(s) * s.job.gpus / s.job.weight,
                s.idx,
            ),
        )

    def _spread(self, s: JobState) -> float:
        """How much faster ``s`` runs on its fastest type than on its slowest."""
        rates = [r for r in self.rate[s.job.name].values() if r > 0]
        return max(rates) / min(rates) if rates else 0.0

    def _remaining(self, s: JobState) -> float:
        """Seconds left at its rate on its fastest type."""
        rate = self.best[s.job.name]
        return s.remaining / rate if rate > 0 else math.inf

    def _types(self, s: JobState) -> list[str]:
        """The types in the order ``s`` tries them."""
        rates = self.rate[s.job.name]
        order = sorted(self.type_list, key=lambda g: -rates[g])
        first = self.preferred.get(s.job.name)
        if first is not None:
            order.remove(first)
            order.insert(0, first)
        return [g for g in order if rates[g] > 0]

    def _plan(self, jobs: list[JobState]) -> None:
        """``het-makespan``: each job's preferred type from the min-total-duration
        program over the jobs at hand (Gavel's, solved once per event)."""
        from planner.execution.policies import gavel_lp

        types = sorted(self.type_list)
        snap = gavel_lp.Snapshot(
            jobs=[s.idx for s in jobs],
            types=types,
            workers=np.array([self.gpus[g] for g in types], dtype=float),
            rate=np.array([[self.rate[s.job.name][g] for g in types] for s in jobs]),
            scale=np.array([s.job.gpus for s in jobs], dtype=float),
            weight=np.array([s.job.weight for s in jobs], dtype=float),
            remaining=np.array([max(s.remaining, 0.0) for s in jobs]),
            since=np.zeros(len(jobs)),
            pairs=[],
            pair_rate=np.zeros((0, len(types), 2)),
        )
        shares = gavel_lp.min_total_duration(snap, "perf")
        self.preferred = {}
        for s in jobs:
            x = shares.get((s.idx,))
            if x is not None and x.max() > 0:
                self.preferred[s.job.name] = types[int(np.argmax(x))]

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        cluster.empty()
        if not jobs:
            return {}
        if self.makespan:
            self._plan(jobs)
        order = self._order(t, jobs)
        room, chosen_set = sum(self.gpus.values()), []
        for s in order:
            if s.job.gpus <= room:
                chosen_set.append(s)
                room -= s.job.gpus
        if not self.makespan:  # the most type-sensitive jobs of the set choose first
            chosen_set.sort(key=lambda s: -self._spread(s))
        placed: dict[int, tuple[JobState, object]] = {}
        for s in chosen_set + [s for s in order if s not in chosen_set]:
            where = None
            for gpu_type in self._types(s):
                where = cluster.place(s.job.gpus, gpu_type)
                if where is not None:
                    break
            if where is not None:
                placed[s.idx] = (s, where)
        waiting = [s for s in order if s.idx not in placed]
        chosen: Chosen = {}
        paired: set[int] = set()
        running = list(placed.values())
        for w in waiting:
            partner = self._partner(w, running, paired)
            if partner is not None:
                r, where = partner
                paired.update((r.idx, w.idx))
                chosen.update(self.group([r, w], where))  # type: ignore[arg-type]
        for s, where in running:
            if s.idx not in paired:
                chosen.update(self.alone(s, where))  # type: ignore[arg-type]
        return chosen

    def _partner(
        self, w: JobState, running: list[tuple[JobState, object]], paired: set[int]
    ) -> tuple[JobState, object] | None:
        """The running job ``w`` packs best with, lowest in the order first."""
        best, pick = PACK, None
        for r, where in reversed(running):
            if r.idx in paired or r.job.gpus != w.job.gpus:
                continue
            gpu_type = self.gpu_type(where)  # type: ignore[arg-type]
            keys = (r.job.model, r.job.gpus), (w.job.model, w.job.gpus)
            both = self.table.pair(gpu_type, *keys)
            alone_r, alone_w = self.rate[r.job.name][gpu_type], self.rate[w.job.name][gpu_type]
            if min(both) <= 0 or alone_r <= 0 or alone_w <= 0 or both[0] < KEEP * alone_r:
                continue
            gain = both[0] / alone_r + both[1] / alone_w
            if gain > best:
                best, pick = gain, (r, where)
        return pick


class HeteroJct(_Hetero):
    """``het-jct``: the mean JCT on GPU types (see the module docstring)."""

    name = "het-jct"


class HeteroMakespan(_Hetero):
    """``het-makespan``: the makespan on GPU types (see the module docstring)."""

    name = "het-makespan"
    makespan = True


class HeteroRounds(GavelRounds):
    """``het-srpt``: ours, for the mean JCT, in Gavel's rounds on GPU types with pairs;
    its program (:func:`~planner.execution.policies.gavel_lp.shortest_first`) weighs every
    job's throughput by its weight over its steps left, each job kept at least
    :data:`FLOOR` of an equal share; computed anew at every round the jobs at hand
    changed (Gavel waits :data:`~planner.execution.policies.gavel.RESET` seconds).

    Parameters
    ----------
    packing
        Let pairs share a GPU (off: every job alone).
    aware
        Let the program see each type's rates (off: every type at the job's fastest
        rate, as a heterogeneity-agnostic program sees them).
    """

    def __init__(
        self, seed: int = 0, round_seconds: float = ROUND, packing: bool = True, aware: bool = True
    ) -> None:
        super().__init__("shortest_first", "packed" if packing else "perf", seed, round_seconds)
        self.name = "het-srpt"
        self.aware = aware
        self.reset_every = 0.0
        self.least_gain = 1.0  # a pair slower than its members in turn never helps

    def program(self, snap: gavel_lp.Snapshot) -> dict[tuple[int, ...], np.ndarray]:
        if not self.aware:
            best = snap.rate.max(axis=1)
            norm = np.where(snap.rate > 0, best[:, None] / np.maximum(snap.rate, 1e-12), 0.0)
            pair_rate = snap.pair_rate.copy()
            for p, (a, b) in enumerate(snap.pairs):
                pair_rate[p, :, 0] *= norm[a]
                pair_rate[p, :, 1] *= norm[b]
            snap.rate = np.where(snap.rate > 0, best[:, None], 0.0)
            snap.pair_rate = pair_rate
        return gavel_lp.shortest_first(snap, FLOOR)

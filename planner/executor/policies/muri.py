"""``muri-s`` and ``muri-l``: Muri (Zhao et al., SIGCOMM 2022), as its simulator runs it.

``muri-s`` knows durations (jobs ordered by remaining service; a new job's remaining
time is its trace duration); ``muri-l`` does not (ordered by attained service: running
wall time x GPUs). Both take the first-fit set of the ordered jobs, each placed one
admitting the next three jobs of its GPU count, and group jobs of the same GPU count by
repeated maximum-weight matching (``rustworkx.max_weight_matching``, compiled; the
weight of a pair of groups is their members' summed stage time over four times the
merged group's period). Groups are merged, in the matching's order, only while the GPUs
the candidates request exceed the cluster's, for at most four rounds. A group slower
than its members one after another is split again. Groups are then placed by their
first member, largest GPU count first, the others on the same GPUs. A merge never
exceeds the model's room (:meth:`~planner.interleave.Interleave.room`: its
``max_colocated``, the GPU memory the members need).
"""

from __future__ import annotations

import math
from functools import cache

from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Periods, Policy

GROUP = 4
"""The most jobs in a Muri group."""

WEIGHT_SCALE = 10**9
"""Edge weights (used ratios in (0, 1]) are matched as whole numbers of 1e-9."""


class MuriS(Policy):
    """Muri with known durations."""

    needs_stages = True

    name = "muri-s"

    def start(self, context: Context) -> None:
        """Muri's grouping over the run's periods."""
        super().start(context)
        self.grouping = _Grouping(context.periods, context.gpus)

    def arrive(self, job: JobState) -> None:
        """A new job's remaining time is its trace duration (as Muri-S takes it)."""
        job.remaining_time = job.job.duration

    def key(self, job: JobState) -> float:
        """Remaining service (remaining time x GPUs) over the job's weight."""
        return job.remaining_time * job.job.gpus / job.job.weight

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Order the jobs, then group and place them (see the module docstring)."""
        for s in jobs:
            s.sort_val = self.key(s)
        jobs.sort(key=lambda s: s.sort_val)
        return self.grouping.schedule(jobs, cluster)


class MuriL(MuriS):
    """Muri without durations: attained service first."""

    name = "muri-l"

    def key(self, job: JobState) -> float:
        """Attained service (running wall time x GPUs) over the job's weight."""
        return job.executed * job.job.gpus / job.job.weight


class _Grouping:
    """Muri's grouping at one event (see the module docstring)."""

    def __init__(self, periods: Periods, cluster_gpus: int) -> None:
        self.periods, self.jobs = periods, periods.jobs
        self.model = periods.model
        self.most = min(GROUP, self.model.max_colocated)
        self.cluster_gpus = cluster_gpus
        self.mates = cache(self._mates)

    def schedule(self, runnable: list[JobState], cluster: Cluster) -> Chosen:
        """Job index -> (its group, its period, the group's overhead, its GPU set)."""
        by_gpu: dict[int, list[JobState]] = {}
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
        packings = self._match(candidates, self.cluster_gpus - sum(cluster.held))
        packings = self._autopack(packings, runnable, cluster)
        return self._place(packings, runnable, cluster)

    def _match(
        self, candidates: dict[int, list[JobState]], room: int
    ) -> dict[int, list[tuple[int, ...]]]:
        """Up to four rounds of maximum-weight matching of same-GPU-count groups, merged
        while the candidates request more GPUs than the cluster has (``room``: the
        cluster's GPUs less those a higher class holds)."""
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
            ready = self.merge_order(ready)
            merged: dict[int, list[tuple[int, ...]]] = {g: [] for g in packings}
            for g, pair in ready:
                if required <= room or len(pair) == 1:
                    merged[g].extend(pair)
                else:
                    merged[g].append(pair[0] + pair[1])
                    required -= g
            packings = merged
            if required <= room:
                break
        return packings

    def merge_order(
        self, ready: list[tuple[int, list[tuple[int, ...]]]]
    ) -> list[tuple[int, list[tuple[int, ...]]]]:
        """The order in which the matched pairs (GPU count, the two groups) merge while
        the GPUs the candidates request exceed the cluster's: Muri's, the matching's
        (by GPU count, then by the first group's place in the order)."""
        return ready

    def _mates(self, groups: tuple[tuple[int, ...], ...]) -> dict[int, int]:
        """The maximum-weight matching of ``groups`` (positions), cached: between two
        events most GPU counts keep their candidates."""
        import rustworkx as rx

        graph = rx.PyGraph()
        graph.add_nodes_from(range(len(groups)))
        for u in range(len(groups)):
            for v in range(u + 1, len(groups)):
                if len(groups[u]) + len(groups[v]) <= self.most and self._fits(
                    groups[u], groups[v]
                ):
                    w = self._used_ratio(groups[u] + groups[v])
                    if w > 0 and not math.isclose(w, 0, rel_tol=1e-5):
                        graph.add_edge(u, v, round(w * WEIGHT_SCALE))
        mate: dict[int, int] = {}
        for a, b in rx.max_weight_matching(graph, weight_fn=int):
            mate[a], mate[b] = b, a
        return mate

    def _fits(self, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
        """Whether groups ``a`` and ``b`` together keep to a GPU's memory."""
        if self.model.gpu_memory is None:
            return True
        return self.model.room([self.jobs[k].gpu_mem for k in (*a, *b)])

    def _used_ratio(self, members: tuple[int, ...]) -> float:
        work = sum(self.jobs[k].stages.total for k in members)
        return work / (self.period(members) * GROUP)

    def period(self, members: tuple[int, ...]) -> float:
        """The group's period: its slowest member's (all members' under ``muri``)."""
        return max(self.periods(members).values())

    def _autopack(
        self,
        packings: dict[int, list[tuple[int, ...]]],
        runnable: list[JobState],
        cluster: Cluster,
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
        self, packings: list[tuple[int, ...]], runnable: list[JobState], cluster: Cluster
    ) -> Chosen:
        """Place the groups by their members, largest GPU count first: the first member
        met takes the GPUs, the others share them."""
        group_of = {k: members for members in packings for k in members}
        state = {s.idx: s for s in runnable}
        placed: dict[tuple[int, ...], Where] = {}
        out: Chosen = {}
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

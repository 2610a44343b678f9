"""``jct-groups``: Muri's grouping, merging where it costs the mean JCT least.

Muri-S (:mod:`planner.executor.policies.muri`) merges matched pairs of groups, while
the candidates request more GPUs than the cluster has, in the matching's order: the
pairs of the smallest remaining services first, which slows the jobs that would end
soonest. ``jct-groups`` runs the same candidates, matching and placement, and merges the
pairs in the order of the completion rate a merge costs per GPU it frees: for groups
``a`` and ``b`` of ``g`` GPUs, ``(v(a) + v(b) - v(a + b)) / g``, with ``v`` the weighted
progress ``sum w_j / (period_j x iterations left_j)`` that SRPT maximises at every
instant (:meth:`planner.executor.policies.srsf_pack.SrsfPack.value`). Jobs are ordered
by remaining service over their weight, as Muri-S orders them.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Periods
from planner.executor.policies.muri import MuriS, _Grouping


class JctGroups(MuriS):
    """Muri-S's grouping with merges by least completion rate lost per GPU freed."""

    name = "jct-groups"

    def start(self, context: Context) -> None:
        """The grouping over the run's periods."""
        super().start(context)
        self.grouping = _CheapMerges(context.periods, context.gpus)

    def arrive(self, job: JobState) -> None:
        """A new job's remaining time: its iterations at its period alone (the executor's
        figure, not the trace's duration)."""
        job.remaining_time = job.remaining * job.alone

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Muri-S's answer with this merge order."""
        self.grouping.weights = {s.idx: s.job.weight / max(s.remaining, 1e-9) for s in jobs}
        return super().schedule(t, jobs, cluster)


class _CheapMerges(_Grouping):
    """Muri's grouping, its pairs merged by least completion rate lost per GPU freed."""

    def __init__(self, periods: Periods, cluster_gpus: int) -> None:
        super().__init__(periods, cluster_gpus)
        self.weights: dict[int, float] = {}
        """Per job (index) at this event: its weight over its iterations left."""

    def value(self, members: Sequence[int]) -> float:
        """The weighted progress of a group (see the module docstring)."""
        periods = self.periods(members)
        return sum(self.weights[k] / periods[k] for k in members)

    def merge_order(
        self, ready: list[tuple[int, list[tuple[int, ...]]]]
    ) -> list[tuple[int, list[tuple[int, ...]]]]:
        """Pairs by the completion rate their merge costs per GPU it frees, least first;
        single groups keep their place (they never merge)."""

        def cost(entry: tuple[int, list[tuple[int, ...]]]) -> float:
            g, pair = entry
            if len(pair) == 1:
                return 0.0
            a, b = pair
            return (self.value(a) + self.value(b) - self.value(a + b)) / g

        return sorted(ready, key=cost)

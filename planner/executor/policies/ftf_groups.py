"""``ftf-groups`` and ``fair-groups``: finish-time fairness first, in Muri's groups.

Themis (Mahajan et al., NSDI 2020) serves first the jobs furthest behind their fair
share: a job's finish-time fairness is its JCT over its JCT alone on ``1/n`` of the
cluster (:mod:`planner.executor.fairness`). At every event these policies project each
job's at hand, ``rho = (t - release + left x period) / (alone x max(1, n x gpus / G))``
(``left``: its iterations left; ``period``: alone, or in the group it would join;
``alone``: its whole run alone; ``n``: the jobs at hand; ``G``: the cluster's GPUs), and
order the jobs by remaining service over ``rho ** bias`` (smallest first), grouped and
placed as ``jct-groups`` does. ``bias`` 0 is ``jct-groups`` (remaining service first);
the larger, the more the jobs furthest behind come first, whatever their size.

``cap`` bounds what a group may cost its members: a matched pair does not merge where a
member's projected ``rho`` in the merged group would pass ``cap`` (the pair then stays
two groups, and whichever fits runs). A short job grouped with long-period partners is
the worst-treated job of a grouping policy (its JCT several times its JCT alone); the
cap keeps it alone. ``ftf-groups`` has no cap; ``fair-groups`` caps at :data:`CAP`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Periods
from planner.executor.policies.jct_groups import JctGroups, _CheapMerges

BIAS = 2.0
"""The default ``bias`` (see the module docstring)."""

CAP = 2.0
"""``fair-groups``' cap on a member's projected finish-time fairness in a merged group."""


class FtfGroups(JctGroups):
    """Jobs by remaining service over projected finish-time fairness to the ``bias``;
    merges that would take a member's projected fairness past ``cap`` refused."""

    name = "ftf-groups"

    def __init__(self, bias: float = BIAS, cap: float = math.inf) -> None:
        self.bias, self.cap = bias, cap

    def start(self, context: Context) -> None:
        """The grouping, with the cap."""
        super().start(context)
        self.merges = _FairMerges(context.periods, context.gpus, self.cap)
        self.grouping = self.merges

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Project every job's finish-time fairness, then order and group them."""
        crowd = len(jobs) / self.context.gpus
        merges = self.merges
        merges.at, merges.state = t, {s.idx: s for s in jobs}
        merges.ideal = {
            s.idx: max(s.job.iterations * s.alone * max(1.0, crowd * s.job.gpus), 1e-9)
            for s in jobs
        }
        self.rho = {
            s.idx: (t - s.job.release + s.remaining * s.alone) / merges.ideal[s.idx] for s in jobs
        }
        return super().schedule(t, jobs, cluster)

    def key(self, job: JobState) -> float:
        """Remaining service over the job's weight, over its projected fairness to the
        ``bias``."""
        return super().key(job) / max(self.rho[job.idx], 1e-9) ** self.bias


class FairGroups(FtfGroups):
    """``ftf-groups`` with its merges capped at :data:`CAP`."""

    name = "fair-groups"

    def __init__(self, bias: float = BIAS, cap: float = CAP) -> None:
        super().__init__(bias, cap)


class _FairMerges(_CheapMerges):
    """``jct-groups``' merge order; a pair whose merge would take a member's projected
    finish-time fairness past the cap stays two groups."""

    def __init__(self, periods: Periods, cluster_gpus: int, cap: float) -> None:
        super().__init__(periods, cluster_gpus)
        self.cap = cap
        self.at = 0.0
        self.state: dict[int, JobState] = {}
        self.ideal: dict[int, float] = {}

    def worst(self, members: Sequence[int]) -> float:
        """The largest projected finish-time fairness of ``members`` in one group."""
        periods = self.periods(members)
        return max(
            (self.at - self.state[k].job.release + self.state[k].remaining * periods[k])
            / self.ideal[k]
            for k in members
        )

    def merge_order(
        self, ready: list[tuple[int, list[tuple[int, ...]]]]
    ) -> list[tuple[int, list[tuple[int, ...]]]]:
        """``jct-groups``' order, the pairs past the cap split."""
        out: list[tuple[int, list[tuple[int, ...]]]] = []
        for g, pair in super().merge_order(ready):
            if (
                len(pair) == 2
                and math.isfinite(self.cap)
                and self.worst(pair[0] + pair[1]) > self.cap
            ):
                out.extend([(g, [pair[0]]), (g, [pair[1]])])
            else:
                out.append((g, pair))
        return out

"""``ftf-groups``: finish-time fairness first, in Muri's groups.

Themis (Mahajan et al., NSDI 2020) serves first the jobs furthest behind their fair
share: a job's finish-time fairness is its JCT over its JCT alone on ``1/n`` of the
cluster (:mod:`planner.execution.fairness`). At every event this policy projects each
job's at hand: ``rho = (t - release + left alone) / (alone x max(1, n x gpus / G))``
(``left alone``: its iterations left at its period alone; ``n``: the jobs at hand; ``G``:
the cluster's GPUs), and orders the jobs by remaining service over ``rho ** bias``
(smallest first), grouped and placed as ``jct-groups`` does. ``bias`` 0 is
``jct-groups`` (remaining service first); the larger, the more the jobs furthest behind
come first, whatever their size.
"""

from __future__ import annotations

from planner.execution.policies.base import Chosen, Cluster, JobState
from planner.execution.policies.jct_groups import JctGroups

BIAS = 2.0
"""The policy's default ``bias`` (see the module docstring)."""


class FtfGroups(JctGroups):
    """Jobs by remaining service over projected finish-time fairness to the ``bias``."""

    name = "ftf-groups"

    def __init__(self, bias: float = BIAS) -> None:
        self.bias = bias

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Project every job's finish-time fairness, then order and group them."""
        crowd = len(jobs) / self.context.gpus
        self.rho = {}
        for s in jobs:
            alone = s.job.iterations * s.alone
            ideal = alone * max(1.0, crowd * s.job.gpus)
            self.rho[s.idx] = (t - s.job.release + s.remaining * s.alone) / max(ideal, 1e-9)
        return super().schedule(t, jobs, cluster)

    def key(self, job: JobState) -> float:
        """Remaining service over the job's weight, over its projected fairness to the
        ``bias``."""
        return super().key(job) / max(self.rho[job.idx], 1e-9) ** self.bias

"""Ours on a cluster of GPU types under the ``table`` model: ``het-srpt`` (the mean JCT)
and ``het-makespan``, both in Gavel's rounds with measured pairs
(:class:`~planner.executor.policies.gavel.GavelRounds`), with programs of our own or
re-solved more often than Gavel's.

- ``het-srpt``: its program (:func:`~planner.executor.policies.gavel_lp.shortest_first`)
  weighs every job's throughput by its weight over its steps left, so the jobs nearest
  their end go first (shortest remaining time first, in shares of time on each type),
  every job kept at least :data:`FLOOR` of an equal share of the cluster.
- ``het-makespan``: Gavel's min-total-duration program with pairs (the least ``M`` at
  which every job can finish), solved anew every two rounds where the jobs at hand
  changed.

Gavel computes its allocation again at most every
:data:`~planner.executor.policies.gavel.RESET` seconds; ``het-srpt`` at every round
where jobs have come or gone. Both leave out of their programs the pairs whose
normalised rates sum below 1: such a pair is slower than its members one after the
other, and the program is smaller.
"""

from __future__ import annotations

import numpy as np

from planner.executor.policies import gavel_lp
from planner.executor.policies.gavel import ROUND, GavelRounds

FLOOR = 0.5
"""``het-srpt``: every job's least throughput, as a share of an equal share of the
cluster (at its rate on its fastest type)."""


class HeteroRounds(GavelRounds):
    """Ours in rounds on GPU types (see the module docstring).

    Parameters
    ----------
    objective
        ``jct`` (``het-srpt``) or ``makespan`` (``het-makespan``).
    packing
        Let pairs share a GPU (off: every job alone).
    aware
        Let the program see each type's rates (off: every type at the job's fastest
        rate, as a heterogeneity-agnostic program sees them).
    """

    def __init__(
        self,
        objective: str = "jct",
        seed: int = 0,
        round_seconds: float = ROUND,
        packing: bool = True,
        aware: bool = True,
    ) -> None:
        policy = "shortest_first" if objective == "jct" else "min_total_duration"
        super().__init__(policy, "packed" if packing else "perf", seed, round_seconds)
        self.name = "het-srpt" if objective == "jct" else "het-makespan"
        self.objective = objective
        self.aware = aware
        self.reset_every = 0.0 if objective == "jct" else 2 * round_seconds
        self.least_gain = 1.0
        self.eager = True

    def program(self, snap: gavel_lp.Snapshot) -> dict[tuple[int, ...], np.ndarray]:
        """Our program over the jobs at hand (heterogeneity-blind where not ``aware``)."""
        if not self.aware:
            best = snap.rate.max(axis=1)
            norm = np.where(snap.rate > 0, best[:, None] / np.maximum(snap.rate, 1e-12), 0.0)
            pair_rate = snap.pair_rate.copy()
            for p, (a, b) in enumerate(snap.pairs):
                pair_rate[p, :, 0] *= norm[a]
                pair_rate[p, :, 1] *= norm[b]
            snap.rate = np.where(snap.rate > 0, best[:, None], 0.0)
            snap.pair_rate = pair_rate
        if self.objective == "jct":
            return gavel_lp.shortest_first(snap, FLOOR)
        return gavel_lp.min_total_duration(snap, "perf")


class HeteroSrpt(HeteroRounds):
    """``het-srpt``: the mean JCT on GPU types (see the module docstring)."""

    def __init__(self, seed: int = 0, round_seconds: float = ROUND) -> None:
        super().__init__("jct", seed, round_seconds)


class HeteroMakespan(HeteroRounds):
    """``het-makespan``: the makespan on GPU types (see the module docstring)."""

    def __init__(self, seed: int = 0, round_seconds: float = ROUND) -> None:
        super().__init__("makespan", seed, round_seconds)

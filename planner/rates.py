"""Measured speeds per GPU type: the ``table`` interleaving model's data.

Gavel (Narayanan et al., OSDI 2020) measures every job type on every GPU type, alone
and beside every partner on one GPU. This module holds such a table: per GPU type,
each job's steps per second alone and each pair's two rates side by side. A job is
keyed by its type and its GPU count (``('ResNet-18 (batch size 64)', 1)``), as Gavel
keys it; a pair only of jobs of one GPU count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.errors import InputError

JobKey = tuple[str, int]
"""A job type and its GPU count (Gavel's key of a throughput)."""


@dataclass(frozen=True, eq=False)
class Throughputs:
    """Measured steps per second per GPU type: of each job alone, and of each pair of
    jobs sharing a GPU (each one's own rate)."""

    alone: dict[str, dict[JobKey, float]]
    """Per GPU type, per job key, its steps per second alone."""
    pairs: dict[str, dict[tuple[JobKey, JobKey], tuple[float, float]]]
    """Per GPU type, per (job, partner), the two steps per second side by side."""

    @property
    def types(self) -> list[str]:
        """The GPU types measured."""
        return list(self.alone)

    def only(self, types: Sequence[str]) -> Throughputs:
        """The table of ``types`` only (a cluster's: Gavel's files also measure types
        such as ``v100_unconsolidated`` that a cluster of its spec does not have)."""
        keep = [t for t in self.alone if t in set(types)]
        pairs = {t: self.pairs.get(t, {}) for t in keep}
        return Throughputs({t: self.alone[t] for t in keep}, pairs)

    def rate(self, gpu_type: str, key: JobKey) -> float:
        """Steps per second of the job ``key`` alone on ``gpu_type``.

        Raises
        ------
        InputError
            For a type or a job the table does not measure.
        """
        per_type = self.alone.get(gpu_type)
        if per_type is None:
            raise InputError(
                f"GPU type {gpu_type!r} is not measured (types: {', '.join(self.types)})"
            )
        if key not in per_type:
            raise InputError(f"job {key[0]!r} on {key[1]} GPU(s) is not measured on {gpu_type}")
        return per_type[key]

    def pair(self, gpu_type: str, key: JobKey, partner: JobKey) -> tuple[float, float]:
        """Steps per second of ``key`` and of ``partner`` sharing a GPU of ``gpu_type``
        (``(0, 0)`` where the table has no such pair: they cannot share)."""
        return self.pairs.get(gpu_type, {}).get((key, partner), (0.0, 0.0))

    def best(self, key: JobKey) -> tuple[str, float]:
        """The GPU type where ``key`` runs fastest alone, and its rate there."""
        rates = [(r.get(key, 0.0), t) for t, r in self.alone.items()]
        rate, gpu_type = max(rates, default=(0.0, ""))
        return gpu_type, rate

    def seconds(self, key: JobKey, steps: float) -> dict[str, float]:
        """A job's duration alone (``steps`` of ``key``) on every GPU type that measures
        it (``inf`` where its rate is 0: it cannot run there)."""
        out = {}
        for gpu_type, per_type in self.alone.items():
            rate = per_type.get(key)
            if rate is not None:
                out[gpu_type] = steps / rate if rate > 0 else math.inf
        return out

    def periods(self, keys: Sequence[JobKey], gpu_type: str) -> list[float]:
        """Seconds per step of each of ``keys`` (one or two jobs) on one GPU set of
        ``gpu_type``: alone its measured rate, in a pair the pair's measured rates
        (``inf`` where a rate is 0: it cannot run so).

        Raises
        ------
        InputError
            For more than two jobs (the table measures pairs only), or a job or type
            it does not measure.
        """
        if len(keys) == 1:
            rates: Sequence[float] = [self.rate(gpu_type, keys[0])]
        elif len(keys) == 2:
            rates = self.pair(gpu_type, keys[0], keys[1])
        else:
            raise InputError(f"{len(keys)} jobs on one GPU set: the table measures pairs only")
        return [1.0 / r if r > 0 else math.inf for r in rates]


def table_bound(
    work: Sequence[tuple[JobKey, float, float]], gpus: dict[str, int], table: Throughputs
) -> dict[str, float]:
    """Lower bounds on the makespan (seconds) of jobs on a cluster of GPU types under the
    ``table`` model. ``work``: per job, its key, its steps and its release; ``gpus``: the
    GPUs of each type.

    ``lp``: a relaxation of every schedule. Jobs of one key are pooled: per key, the
    shares of time of its jobs alone and in each measured pair on each type (a share of
    one: a GPU set held all along) must do its steps within ``M``, with no more of them
    running at once than it has jobs and no type holding more GPU sets than its GPUs;
    the least such ``M`` (releases relaxed to 0). ``longest``: the latest release plus
    steps at the job's fastest rate, alone or in a pair. ``bound`` is the largest.
    """
    from planner.lp import INF, LinearProgram

    classes: dict[JobKey, list[float]] = {}
    for key, steps, _ in work:
        got = classes.setdefault(key, [0.0, 0.0])
        got[0] += steps
        got[1] += 1
    keys = list(classes)
    types = [t for t in gpus if gpus[t] > 0]
    combos: list[tuple[JobKey, ...]] = [(k,) for k in keys]
    for a, k in enumerate(keys):
        for m in keys[a:]:
            if k[1] == m[1] and (k != m or classes[k][1] >= 2):
                rates = [table.pair(t, k, m) for t in types]
                if any(min(r) > 0 for r in rates):
                    combos.append((k, m))
    width = len(types)
    lp = LinearProgram(len(combos) * width + 1)
    inv = len(combos) * width
    lp.cost[inv] = -1.0
    for j, t in enumerate(types):
        cols = np.arange(len(combos)) * width + j
        lp.row(cols, np.array([c[0][1] for c in combos], dtype=float), -INF, float(gpus[t]))
    for k in keys:
        cols, rates, uses = [], [], []
        for r, combo in enumerate(combos):
            if k not in combo:
                continue
            for j, t in enumerate(types):
                got = [table.rate(t, k) if (t in table.alone and k in table.alone[t]) else 0.0]
                if len(combo) == 2:
                    pair = table.pair(t, combo[0], combo[1])
                    got = [pair[i] for i, x in enumerate(combo) if x == k]
                cols.append(r * width + j)
                rates.append(sum(got))
                uses.append(len(got))
        lp.row(np.append(cols, inv), np.append(-np.array(rates), classes[k][0]), -INF, 0.0)
        lp.row(np.array(cols), np.array(uses, dtype=float), -INF, classes[k][1])
    x = lp.solve()
    relaxed = 1.0 / x[inv] if x is not None and x[inv] > 0 else math.inf
    fastest = {}
    for k in keys:
        rates = [r for t in types for r in [table.alone.get(t, {}).get(k, 0.0)]]
        rates += [max(table.pair(t, k, m)[0], 0.0) for t in types for m in keys if m[1] == k[1]]
        fastest[k] = max(rates, default=0.0)
    ends = [r + s / fastest[k] if fastest[k] > 0 else math.inf for k, s, r in work]
    longest = max(ends, default=0.0)
    return {"lp": float(relaxed), "longest": float(longest), "bound": float(max(relaxed, longest))}


def alone_seconds(key: JobKey, steps: float, table: Throughputs) -> float:
    """Seconds of ``steps`` of ``key`` alone on its fastest GPU type."""
    return min(table.seconds(key, steps).values(), default=math.inf)

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

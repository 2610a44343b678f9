"""Gavel's allocations (Narayanan et al., OSDI 2020; ``scheduler/policies/`` of its public
simulator): for the jobs at hand, the share of time each job (or pair of jobs sharing a
GPU) should get on each GPU type. :mod:`planner.executor.policies.gavel` turns them
into rounds.

Every program is Gavel's, solved by HiGHS's interior-point method without crossover
(Gavel's ECOS is an interior-point solver too: where a program has many optima, both
return one inside the optimal face, not a vertex). The variables are ``x[r, j]``, the
share of time of combination ``r`` (a job, or a pair of jobs of one GPU count) on type
``j``, under Gavel's base constraints: the GPUs a type's shares ask fit its GPUs
(``sum_r scale_r x[r, j] <= W_j``) and no job gets more than all of the time
(``sum_{r containing i} sum_j x[r, j] <= 1``).

- ``max_min_fairness``: the largest least weighted, normalised throughput. ``_perf`` and
  ``_packed`` normalise a job's throughput by its throughput on an equal share of every
  type (Gavel's ``X^equal``, :func:`proportional`); the agnostic form sees every type as
  equal.
- ``min_total_duration``: the largest ``1 / M`` with every job's throughput at least its
  remaining steps over ``M`` (the agnostic form sees every type at the job's rate on a
  V100, as Gavel's does; else on its fastest type).
- ``finish_time_fairness``: the least largest ratio of a job's expected finish time
  under the allocation over that under the agnostic max-min allocation, found by
  bisection on the ratio (Gavel solves the same convex program at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.lp import INF, LinearProgram


@dataclass
class Snapshot:
    """The jobs at hand as Gavel's programs see them."""

    jobs: list[int]
    """Their indices in the run, in arrival order."""
    types: list[str]
    """The GPU types, sorted (Gavel's order in its programs)."""
    workers: np.ndarray
    """GPUs of each type."""
    rate: np.ndarray
    """(job, type): steps per second alone."""
    scale: np.ndarray
    """Each job's GPUs."""
    weight: np.ndarray
    """Each job's priority weight."""
    remaining: np.ndarray
    """Each job's steps left."""
    since: np.ndarray
    """Seconds since each job arrived."""
    pairs: list[tuple[int, int]]
    """Pairs of positions in ``jobs`` (of one GPU count) that may share a GPU."""
    pair_rate: np.ndarray
    """(pair, type, member): steps per second side by side."""

    @property
    def combos(self) -> list[tuple[int, ...]]:
        """Positions in ``jobs`` of every combination: each job, then each pair."""
        return [(i,) for i in range(len(self.jobs))] + list(self.pairs)

    def coefficients(self) -> list[list[tuple[int, np.ndarray]]]:
        """Per job, its rates per type in every combination it is in: (row, rates)."""
        out: list[list[tuple[int, np.ndarray]]] = [
            [(i, self.rate[i])] for i in range(len(self.jobs))
        ]
        for p, (a, b) in enumerate(self.pairs):
            row = len(self.jobs) + p
            out[a].append((row, self.pair_rate[p, :, 0]))
            out[b].append((row, self.pair_rate[p, :, 1]))
        return out

    def combo_scale(self) -> np.ndarray:
        """Each combination's GPUs."""
        return np.array([self.scale[c[0]] for c in self.combos], dtype=float)


def _base(snap: Snapshot, extra: int = 0) -> LinearProgram:
    """Gavel's base constraints over ``x[r, j]`` (column ``r * T + j``), with ``extra``
    columns after them."""
    rows, t = len(snap.combos), len(snap.types)
    lp = LinearProgram(rows * t + extra)
    lp.upper[: rows * t] = 1.0
    scale = snap.combo_scale()
    for j in range(t):
        lp.row(np.arange(rows) * t + j, scale, -INF, float(snap.workers[j]))
    for terms in snap.coefficients():
        cols = np.concatenate([r * t + np.arange(t) for r, _ in terms])
        lp.row(cols, np.ones(len(cols)), -INF, 1.0)
    return lp


def _throughput_rows(
    snap: Snapshot, coef: Sequence[Sequence[tuple[int, np.ndarray]]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per job, its throughput as a row: (columns, coefficients)."""
    t = len(snap.types)
    out = []
    for terms in coef:
        cols = np.concatenate([r * t + np.arange(t) for r, _ in terms])
        vals = np.concatenate([c for _, c in terms])
        out.append((cols, vals))
    return out


def _unpack(snap: Snapshot, x: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
    """The allocation per combination of job indices."""
    t = len(snap.types)
    x = np.clip(x[: len(snap.combos) * t], 0.0, 1.0).reshape(-1, t)
    return {tuple(snap.jobs[i] for i in c): x[r] for r, c in enumerate(snap.combos)}


def _scaled(snap: Snapshot, coef: list[list[tuple[int, np.ndarray]]]) -> None:
    """Multiply every coefficient by its combination's GPUs (Gavel's scale factor term)."""
    scale = snap.combo_scale()
    for terms in coef:
        for k, (r, c) in enumerate(terms):
            terms[k] = (r, c * scale[r])


def max_min(snap: Snapshot, coef: list[list[tuple[int, np.ndarray]]]) -> np.ndarray | None:
    """Maximise the least of the jobs' rows ``coef`` (already weighted)."""
    n = len(snap.combos) * len(snap.types)
    lp = _base(snap, extra=1)
    lp.cost[n] = -1.0
    lp.upper[n] = INF
    for cols, vals in _throughput_rows(snap, coef):
        lp.row(np.append(cols, n), np.append(-vals, 1.0), -INF, 0.0)
    return lp.solve()


def agnostic_shares(snap: Snapshot) -> np.ndarray:
    """Gavel's heterogeneity-agnostic max-min allocation of the jobs alone, (job, type)."""
    single = Snapshot(
        snap.jobs, snap.types, snap.workers, np.ones_like(snap.rate), snap.scale, snap.weight,
        snap.remaining, snap.since, [], np.zeros((0, len(snap.types), 2)),
    )  # fmt: skip
    coef = [[(i, np.ones(len(snap.types)) / snap.weight[i])] for i in range(len(snap.jobs))]
    _scaled(single, coef)
    x = max_min(single, coef)
    t = len(snap.types)
    if x is None:  # pragma: no cover - the program is always feasible (x = 0)
        return np.zeros((len(snap.jobs), t))
    return np.clip(x[: len(snap.jobs) * t], 0.0, 1.0).reshape(-1, t)


def proportional(snap: Snapshot) -> np.ndarray:
    """Each job's throughput on an equal share of every type (Gavel's ``X^equal``: of
    each type the same share for every job, in proportion to its GPUs, all of the time)."""
    share = snap.workers / max(float(snap.workers.sum()), 1e-12)
    return np.maximum(snap.rate @ share, 1e-12)


def max_min_fairness(snap: Snapshot, mode: str) -> dict[tuple[int, ...], np.ndarray]:
    """Gavel's ``max_min_fairness`` (``mode``: ``agnostic``, ``perf`` or ``packed``)."""
    coef = snap.coefficients()
    if mode in ("packed", "perf"):
        norm = proportional(snap) * snap.weight
        coef = [[(r, c / norm[i]) for r, c in terms] for i, terms in enumerate(coef)]
    else:
        coef = [[(i, np.ones(len(snap.types)) / snap.weight[i])] for i in range(len(snap.jobs))]
    _scaled(snap, coef)
    x = max_min(snap, coef)
    return {} if x is None else _unpack(snap, x)


def min_total_duration(snap: Snapshot, mode: str) -> dict[tuple[int, ...], np.ndarray]:
    """Gavel's ``min_total_duration`` (``mode``: ``agnostic``, ``perf`` or ``packed``)."""
    coef = snap.coefficients()
    if mode == "agnostic":
        types = snap.types
        fastest = snap.rate[:, types.index("v100")] if "v100" in types else snap.rate.max(1)
        coef = [[(i, np.full(len(snap.types), fastest[i]))] for i in range(len(snap.jobs))]
    n = len(snap.combos) * len(snap.types)
    lp = _base(snap, extra=1)
    lp.cost[n] = -1.0
    for i, (cols, vals) in enumerate(_throughput_rows(snap, coef)):
        lp.row(np.append(cols, n), np.append(-vals, snap.remaining[i]), -INF, 0.0)
    x = lp.solve()
    return {} if x is None else _unpack(snap, x)


def finish_time_fairness(
    snap: Snapshot, mode: str, steps: int = 30, memory: dict[int, list[float]] | None = None
) -> dict[tuple[int, ...], np.ndarray]:
    """Gavel's ``finish_time_fairness`` (``mode``: ``agnostic``, ``perf`` or ``packed``):
    the least ``rho`` with every job's expected finish time under the allocation at most
    ``rho`` times that in isolation, by bisection. In isolation: ``_perf`` as Gavel's
    later code, on an equal split of every type over the jobs at hand (its
    ``IsolatedPolicy``), the time the steps done so far would have taken there counted
    allocation by allocation (``memory``, per job: that time, its steps left and its
    isolated throughput at the last allocation); else under the agnostic max-min
    allocation."""
    coef = snap.coefficients()
    rate = snap.rate
    if mode == "agnostic":
        rate = np.ones_like(snap.rate)
        coef = [[(i, np.ones(len(snap.types)))] for i in range(len(snap.jobs))]
    elif mode == "packed":
        norm = snap.rate.sum(axis=1) * snap.weight
        rate = snap.rate / norm[:, None]
        coef = [[(r, c / norm[i]) for r, c in terms] for i, terms in enumerate(coef)]
    if mode == "perf" and memory is not None:
        total = snap.workers.sum()
        share = snap.workers[None, :] * snap.scale.min() / (snap.scale[:, None] * total)
        iso = np.maximum((rate * share).sum(axis=1), 1e-12)
        past = np.zeros(len(snap.jobs))
        for i, k in enumerate(snap.jobs):
            spent, left, before = memory.get(k, [0.0, snap.remaining[i], iso[i]])
            past[i] = spent + (left - snap.remaining[i]) / before
            memory[k] = [past[i], snap.remaining[i], iso[i]]
        expected = past + snap.remaining / iso
    else:
        iso = np.maximum((rate * agnostic_shares(snap)).sum(axis=1), 1e-12)
        expected = snap.since + snap.remaining / iso
    rows = _throughput_rows(snap, coef)

    def feasible(rho: float, interior: bool = False) -> np.ndarray | None:
        lp = _base(snap)
        for i, (cols, vals) in enumerate(rows):
            room = rho * expected[i] - snap.since[i]
            lp.row(cols, vals, snap.remaining[i] / room, INF)
        return lp.solve(interior)

    # the simplex method decides each ratio (it proves infeasibility fast); the interior
    # point method gives the allocation at the least feasible one, as Gavel's ECOS would
    lo = float(np.max(snap.since / expected)) if len(expected) else 0.0
    hi = max(1.0, 2 * lo)
    while feasible(hi) is None and hi < 1e6:  # isolation need not be an allocation here
        lo, hi = hi, 2 * hi
    for _ in range(steps):
        if hi - lo < 1e-3 * hi:
            break
        mid = (lo + hi) / 2
        if feasible(mid) is None:
            lo = mid
        else:
            hi = mid
    best = feasible(hi, interior=True)
    return {} if best is None else _unpack(snap, best)


def shortest_first(snap: Snapshot, floor: float = 0.0) -> dict[tuple[int, ...], np.ndarray]:
    """Ours, for the mean JCT: the most remaining work done per second, each job's
    throughput weighted by its weight over its steps left (so the jobs nearest their end
    first, as shortest-remaining-time-first), packed; with every job given at least
    ``floor`` of an equal share of the cluster, in its rate on its fastest type."""
    coef = snap.coefficients()
    best = np.maximum(snap.rate.max(axis=1), 1e-12)
    lp = _base(snap)
    speed = float((snap.workers * (snap.rate / best[:, None]).mean(axis=0)).sum())
    fair = floor * min(1.0, speed / max(float(snap.scale.sum()), 1.0))
    for i, (cols, vals) in enumerate(_throughput_rows(snap, coef)):
        lp.cost[cols] -= snap.weight[i] * vals / max(snap.remaining[i], 1e-9)
        if fair > 0:
            lp.row(cols, vals / best[i], fair, INF)
    x = lp.solve()
    if x is None and fair > 0:  # the floor cannot hold: without it
        return shortest_first(snap, 0.0)
    return {} if x is None else _unpack(snap, x)

"""The interleaving model: how fast jobs progress when they share one GPU set.

A deep-learning job repeats an iteration of three stages: data loading, GPU
compute and gradient synchronisation (:class:`Stages`, seconds per iteration).
Jobs placed on the same GPUs interleave their stages per iteration. Two models say
how fast each then progresses; the executor and the peer policies
(:mod:`planner.executor.loop`) ask this module and nothing else.

- ``fluid``: processor sharing. Each GPU of a set offers per unit of time
  ``data_slots`` of data loading (1 by default; 2 is Muri's overlap), 1 of GPU
  compute and 1 of network. A job alone runs at its stage-sum period
  ``T = data + gpu + sync`` and uses the shares ``data / T``, ``gpu / T`` and
  ``sync / T`` of its GPUs. Co-resident jobs run at full speed while every
  resource's summed shares fit, and all slow down in proportion when they do
  not: their periods grow by ``max(1, max_r sum_r / capacity_r)``.
- ``muri``: Muri's rotation (Zhao et al., SIGCOMM 2022; its simulator's
  ``_Packing.calc_iteration_time`` in ``simulator/matching.py``). A group of at
  most four jobs with the same GPU count rotates over four slots per period. In
  slot ``i`` member ``(i + 1) mod 4`` synchronises, member ``(i + 2) mod 4``
  computes, and member ``(i + 3) mod 4`` loads data over two slots, so two
  members load data at once. With ``f`` the ends of the slots (``f_0 = 0``)::

      f_{i+1} = max( f_i + sync[(i+1) % 4],  f_i + gpu[(i+2) % 4],
                     f_{i-1} + data[(i+3) % 4] )        (terms of absent members dropped)

  over two rounds (eight slots); the period is ``f_{i+1} - f_{i-3}`` once it
  repeats (relative tolerance 1e-3), else ``f_8 - f_4``. The group's period is
  the least over every order of its members and, for a pair, also
  ``max(d_a, g_b + s_b) + max(d_b, g_a + s_a)``. A job alone runs at its trace
  ``iteration_time``.

- ``table``: measured speeds (:class:`planner.rates.Throughputs`, Gavel's kind of
  table). A job alone on a GPU set of some type runs at its measured rate there; two
  jobs sharing one run at their measured pair rates; no group is larger than a pair.
  Jobs have no stages here: the speed of a job is the table's, per GPU type.

Interference: a group of ``k`` jobs is slowed by a factor ``s(k)`` on top, in
either model (:data:`MURI_GROUP_FACTORS`: 1.33, 1.5 and 1.37 over 1.015 for 2, 3
and 4 members, and 1.015 for a job alone).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np
from numba import njit

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.rates import Throughputs

MODELS = ("fluid", "muri")
"""The stage-based interleaving models."""

TABLE = "table"
"""The measured model: speeds per GPU type from a table, alone and in pairs."""

MAX_MURI_GROUP = 4
"""Muri rotates at most four jobs over its four slots."""

MURI_GROUP_FACTORS = (1.015, 1.33 / 1.015, 1.5 / 1.015, 1.37 / 1.015)
"""Muri's simulator's slowdown of a group of 1, 2, 3 and 4 jobs (its
``itertime_overhead_list``): a job alone by 1.015, a group by the rest, over its
ideal period."""


@dataclass(frozen=True)
class Stages:
    """One iteration of a job: seconds of data loading, GPU compute and synchronisation."""

    data: float
    gpu: float
    sync: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) and v >= 0 for v in (self.data, self.gpu, self.sync)):
            raise InputError(f"stage times must be finite and >= 0, got {self}")
        if self.total <= 0:
            raise InputError("stage times are all 0: an iteration takes some time")

    @property
    def total(self) -> float:
        """The stage-sum period: the iteration alone, stages back to back."""
        return self.data + self.gpu + self.sync


_PERMUTATIONS = {
    n: np.array(list(itertools.permutations(range(n))), dtype=np.int64) for n in (2, 3, 4)
}
"""Every order of 2, 3 and 4 members, in :func:`itertools.permutations` order."""


@njit(cache=True)
def _best_rotation(stages: np.ndarray, orders: np.ndarray) -> tuple[float, int]:
    """The least period of Muri's four-slot rotation over ``orders`` (rows of member
    indices) of ``stages`` (one row ``data, gpu, sync`` per member), and its row: the
    first one in case of ties (see the module docstring for the recurrence)."""
    n = stages.shape[0]
    best, arg = np.inf, 0
    f = np.zeros(9)
    for p in range(orders.shape[0]):
        f[:] = 0.0
        period = -1.0
        for i in range(8):
            x = 0.0
            if (i + 1) % 4 < n:
                x = max(x, f[i] + stages[orders[p, (i + 1) % 4], 2])
            if (i + 2) % 4 < n:
                x = max(x, f[i] + stages[orders[p, (i + 2) % 4], 1])
            if i > 0 and (i + 3) % 4 < n:
                x = max(x, f[i - 1] + stages[orders[p, (i + 3) % 4], 0])
            f[i + 1] = x
            if i >= 4:
                a, b = f[i + 1] - f[i - 3], f[i] - f[i - 4]
                if abs(a - b) <= 1e-3 * max(abs(a), abs(b)):  # math.isclose(rel_tol=1e-3)
                    period = a
                    break
        if not period > 0:
            period = f[8] - f[4]
        if period < best:
            best, arg = period, p
    return best, arg


def muri_period(members: Sequence[Stages]) -> tuple[float, tuple[int, ...]]:
    """The ideal period of a Muri group (no interference factor) and the member order
    that gives it (indices into ``members``).

    A single member's period is its stage sum here; Muri runs a job alone at its
    trace ``iteration_time`` instead (:class:`Interleave` does so).

    Raises
    ------
    InputError
        For no member or more than :data:`MAX_MURI_GROUP`.
    """
    if not 1 <= len(members) <= MAX_MURI_GROUP:
        raise InputError(f"a Muri group has 1 to {MAX_MURI_GROUP} members, got {len(members)}")
    if len(members) == 1:
        return members[0].total, (0,)
    orders = _PERMUTATIONS[len(members)]
    stages = np.array([(m.data, m.gpu, m.sync) for m in members], dtype=np.float64)
    best, row = _best_rotation(stages, orders)
    order = tuple(int(k) for k in orders[row])
    if len(members) == 2:
        a, b = members
        pair = max(a.data, b.gpu + b.sync) + max(b.data, a.gpu + a.sync)
        if pair < best:
            best, order = pair, (0, 1)
    return best, order


def fluid_stretch(members: Sequence[Stages], data_slots: float = 1.0) -> float:
    """By how much the co-resident ``members`` of one GPU set all slow down under
    processor sharing: ``max(1, max_r sum of shares of r / capacity of r)``."""
    shares = [0.0, 0.0, 0.0]
    for m in members:
        t = m.total
        if t > 0:
            shares[0] += m.data / t
            shares[1] += m.gpu / t
            shares[2] += m.sync / t
    return max(1.0, shares[0] / data_slots, shares[1], shares[2])


def fluid_rates(
    members: Sequence[Stages], weights: Sequence[float], data_slots: float = 1.0
) -> tuple[float, ...]:
    """The speed (at most 1) of each of the co-resident ``members`` of one GPU under
    processor sharing weighted by ``weights`` (a plan's speeds): the largest ``l`` such
    that every resource's summed shares at speeds ``min(1, l * weight)`` fit its capacity,
    each member at ``min(1, l * weight)``. Equal weights give every member ``1 /``
    :func:`fluid_stretch`. Cached: a GPU's residents recur from one event to the next."""
    return _fluid_rates(tuple(members), tuple(weights), data_slots)


@lru_cache(maxsize=1 << 16)
def _fluid_rates(
    members: tuple[Stages, ...], weights: tuple[float, ...], data_slots: float
) -> tuple[float, ...]:
    shares = []
    for m in members:
        t = m.total
        shares.append((m.data / t, m.gpu / t, m.sync / t) if t > 0 else (0.0, 0.0, 0.0))
    caps = (data_slots, 1.0, 1.0)
    level = math.inf
    for r, cap in enumerate(caps):
        # the sum over members of min(1, l * w) * share is piecewise linear in l
        at = sorted((1.0 / w, s[r], w) for s, w in zip(shares, weights, strict=True) if s[r])
        full, slope, prev = 0.0, sum(s * w for _, s, w in at), 0.0
        for knee, s, w in at:
            if full + slope * knee > cap:
                break
            full, slope, prev = full + s, slope - s * w, knee
        else:
            continue  # every member at full speed fits
        level = min(level, (cap - full) / slope if slope > 0 else prev)
    return tuple(min(1.0, level * w) for w in weights)


@dataclass(frozen=True)
class Interleave:
    """An interleaving model with its parameters: the one truth on speeds.

    Parameters
    ----------
    kind
        ``fluid``, ``muri`` or ``table`` (see the module docstring).
    data_slots
        ``fluid``: data-loading slots per GPU (1; Muri's overlap is 2).
    max_colocated
        The most jobs on one GPU set (4, as in Muri).
    factors
        ``s(1), s(2), ...``: the slowdown of a set of ``k`` jobs over its ideal
        period (a ``k`` past the end takes the last). By default Muri's measured
        factors (:data:`MURI_GROUP_FACTORS`), as every command runs; ``None``: no
        slowdown. ``table`` takes none: its pairs are measured.
    table
        ``table``: the measured rates per GPU type.
    gpu_memory
        GB of one GPU, which the jobs on it share: a set whose members need more (each
        its GB per GPU) does not run (``None``: not limited).
    """

    kind: Literal["fluid", "muri", "table"] = "fluid"
    data_slots: float = 1.0
    max_colocated: int = 4
    factors: tuple[float, ...] | None = MURI_GROUP_FACTORS
    table: Throughputs | None = None
    gpu_memory: float | None = None

    def __post_init__(self) -> None:
        if self.kind == TABLE:
            if self.table is None:
                raise InputError("the table model needs its measured rates (a throughputs file)")
            object.__setattr__(self, "max_colocated", min(self.max_colocated, 2))
            object.__setattr__(self, "factors", None)
            return
        if self.kind not in MODELS:
            kinds = ", ".join((*MODELS, TABLE))
            raise InputError(f"interleave {self.kind!r} is not one of {kinds}")
        if not (math.isfinite(self.data_slots) and self.data_slots > 0):
            raise InputError(f"data_slots must be a number > 0, got {self.data_slots}")
        if self.gpu_memory is not None and not self.gpu_memory > 0:
            raise InputError(f"gpu_memory must be a number > 0, got {self.gpu_memory}")
        most = MAX_MURI_GROUP if self.kind == "muri" else 64
        if not 1 <= self.max_colocated <= most:
            raise InputError(f"max_colocated must be from 1 to {most}, got {self.max_colocated}")
        if self.factors is not None and (
            not self.factors or any(not (math.isfinite(f) and f > 0) for f in self.factors)
        ):
            raise InputError(f"slowdown factors must be numbers > 0, got {self.factors}")

    def room(self, memory: Sequence[float]) -> bool:
        """Whether jobs needing ``memory`` (GB per GPU, one figure each) may share a GPU
        set: at most :attr:`max_colocated` of them, within :attr:`gpu_memory` together."""
        if len(memory) > self.max_colocated:
            return False
        return self.gpu_memory is None or sum(memory) <= self.gpu_memory + 1e-9

    def factor(self, k: int) -> float:
        """``s(k)``, 1 without factors."""
        if self.factors is None:
            return 1.0
        return self.factors[min(k, len(self.factors)) - 1]

    def periods(
        self, members: Sequence[Stages], alone: Sequence[float] | None = None
    ) -> list[float]:
        """Seconds per iteration of each of ``members`` sharing one GPU set.

        ``alone``: each member's measured period alone (the trace's
        ``iteration_time``), which ``muri`` uses for a job alone; by default the
        stage sums.
        """
        if self.kind == TABLE:
            raise InputError("the table model speeds jobs by GPU type: ask its table")
        k = len(members)
        if not 1 <= k <= self.max_colocated:
            raise InputError(f"{k} jobs on one GPU set: at most {self.max_colocated}")
        s = self.factor(k)
        if self.kind == "muri":
            if k == 1:
                return [(alone[0] if alone is not None else members[0].total) * s]
            period = muri_period(members)[0] * s
            return [period] * k
        stretch = fluid_stretch(members, self.data_slots) * s
        return [m.total * stretch for m in members]


def model_bound(
    work: Sequence[tuple[int, float, Stages]], gpus: int, model: Interleave
) -> dict[str, float]:
    """Lower bounds on the makespan (seconds) of jobs on ``gpus`` GPUs under ``model``.

    ``work``: per job, its GPUs, its iterations and its stages. Per resource, the
    work of every job (iterations x stage time x GPUs) over the cluster's capacity:
    data on ``data_slots`` per GPU (``fluid``) or two slots per GPU (``muri``),
    compute and network on one. ``longest``: the longest job alone at full speed.
    ``bound`` is the largest.
    """
    slots = model.data_slots if model.kind == "fluid" else 2.0
    data = sum(g * n * s.data for g, n, s in work) / (gpus * slots)
    gpu = sum(g * n * s.gpu for g, n, s in work) / gpus
    net = sum(g * n * s.sync for g, n, s in work) / gpus
    # in either model a job's iteration takes its stages back to back at least (in
    # Muri's rotation a member loads over two slots, then computes, then syncs)
    longest = max((n * s.total for _, n, s in work), default=0.0)
    return {
        "data": data,
        "gpu": gpu,
        "network": net,
        "longest": longest,
        "bound": max(data, gpu, net, longest),
    }


def binding(bound: dict[str, float]) -> str:
    """Which part of a :func:`model_bound` is the bound: ``data``, ``gpu``, ``network`` or
    ``longest``."""
    return max(("data", "gpu", "network", "longest"), key=lambda k: bound[k])

"""Grouping as a decision: the mix of co-located groups from a linear program, and a
grouping for the mean JCT.

Under an interleaving model a group of jobs sharing one GPU set progresses at the
periods the model gives (:class:`planner.interleave.Interleave`). Which jobs to group
decides how busy the GPUs' stages are: a data-heavy job beside a GPU-heavy one keeps
both busy, two data-heavy ones leave the GPU idle. This module decides the groups
from the whole workload rather than from the jobs at hand.

**Job types.** Jobs with the same GPU count and model (else the same stage profile)
form a type; a class of one GPU count keeps at most :data:`MAX_TYPES` types (the
least-worked are merged into their nearest). **Columns** are every multiset of at
most ``max_colocated`` types of one class, with the period of each member from the
model (types' stages weighted by their jobs' iterations).

**The linear program** (GLOP, from OR-Tools), on the jobs left at a time: ``x_c``
set-seconds of each column, and the makespan ``C``:

    minimise C  subject to, for every type t,
        sum_c x_c * count_t(c) / period_t(c) >= iterations left of t's jobs
        sum_c x_c * count_t(c)               <= jobs of t * C   (a job runs once at a time)
    and sum_c gpus(c) * x_c <= GPUs up * C.

Its optimum over the whole workload at time 0 is a lower bound on the makespan of
any run that groups jobs of one GPU count (and regroups as often as it likes), up to
the merging of types (:func:`mix_bound`; exact when no class merges types).

**The dispatch** (policy ``lp-groups`` of :func:`planner.execution.peers.run_policy`)
solves the program on what is left, again whenever the jobs at hand have changed by
:data:`RESOLVE`, and at every event rounds its rates ``x_c / C`` (concurrent GPU sets
of each column) to whole groups. First, every critical job (its
remaining time alone at least :data:`CRITICAL` x ``C``, longest first) joins the
column of highest rate that holds its type (else runs alone): the program spreads a
type's work over its jobs, and only this keeps the longest job from being the tail.
Then columns by rate, largest first, each taken as often as its rate rounds to (at
least once while it has a rate), its members the not yet grouped jobs of its types
with the longest remaining time, placed first-fit. The GPUs left go to the waiting
jobs, longest first, alone.

**For the mean JCT** (policy ``srsf-pack``) the jobs go in order of remaining
service, smallest first, and each takes GPUs of its own or joins a set already open,
by the weighted progress ``sum 1 / (period x iterations left)`` that SRPT maximises
at every instant (:class:`SrsfPack`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InputError
from planner.execution.power import compute_share
from planner.interleave import Interleave, Stages

if TYPE_CHECKING:
    from planner.execution.jobs import PeerJob
    from planner.execution.peers import Where, _Chosen, _Cluster, _Job, _Periods

MAX_TYPES = 10
"""The most job types per GPU count in the program (columns grow as types^4)."""

RESOLVE = 0.01
"""The program is solved again once the jobs at hand have changed by more than this
share since it was last solved (and whenever a type runs out or appears, or GPUs
fail or come back); in between its rates are rounded anew on the jobs at hand."""

JOIN_SHARE = 0.8
"""``srsf-pack``: a job joins an open GPU set, though GPUs of its own are free, when
that adds at least this share of the weighted progress it would make alone (on
Muri's testbed trace with factors 1, 0.6 gave a mean JCT 0.5% above 0.8's; 0.4 and 1,
5% and 9% above)."""

CRITICAL = 0.9
"""A job whose remaining time alone is at least this share of the program's makespan
is critical: it is grouped first."""


@dataclass(frozen=True)
class _Column:
    gpus: int
    types: tuple[int, ...]
    """Member types (a multiset, sorted)."""
    periods: tuple[float, ...]


def job_types(jobs: Sequence[PeerJob], most: int = MAX_TYPES) -> list[int]:
    """Each job's type (an index): same GPU count and model (a job without one: same
    stage profile, to 1e-3 s), at most ``most`` types per GPU count; the types of
    least work (iterations x period alone x GPUs) are merged into their nearest (by
    stage shares and period alone) until ``most`` are left."""
    keys: dict[tuple[object, ...], int] = {}
    of_job = []
    for j in jobs:
        s = j.stages
        name: object = j.model or (round(s.data, 3), round(s.gpu, 3), round(s.sync, 3))
        of_job.append(keys.setdefault((j.gpus, name), len(keys)))
    work = np.zeros(len(keys))
    vec = np.zeros((len(keys), 4))
    for j, t in zip(jobs, of_job, strict=True):
        s, w = j.stages, j.iterations * j.iteration_time * j.gpus
        work[t] += w
        total = s.total or 1.0
        vec[t] += w * np.array([s.data / total, s.gpu / total, s.sync / total, j.iteration_time])
    vec /= np.maximum(work, 1e-12)[:, None]
    vec[:, 3] = np.log(np.maximum(vec[:, 3], 1e-9))
    parent = list(range(len(keys)))
    for g in {k[0] for k in keys}:
        alive = [t for k, t in keys.items() if k[0] == g]
        while len(alive) > most:
            small = min(alive, key=lambda t: work[t])
            alive.remove(small)
            near = min(alive, key=lambda t: float(np.sum((vec[t] - vec[small]) ** 2)))
            parent[small] = near
            work[near] += work[small]
    for t in range(len(parent)):
        while parent[t] != parent[parent[t]]:
            parent[t] = parent[parent[t]]
    index = {t: k for k, t in enumerate(sorted(set(parent)))}
    return [index[parent[t]] for t in of_job]


class GroupMix:
    """The group-mix program of a workload (see the module docstring)."""

    def __init__(
        self,
        jobs: Sequence[PeerJob],
        model: Interleave,
        power: tuple[float, tuple[float, float]] | None = None,
    ) -> None:
        self.power = power
        self.type_of = job_types(jobs)
        count = max(self.type_of, default=-1) + 1
        self.gpus = [0] * count
        weight = np.zeros(count)
        sums = np.zeros((count, 4))
        for j, t in zip(jobs, self.type_of, strict=True):
            self.gpus[t] = j.gpus
            w = float(j.iterations)
            weight[t] += w
            s = j.stages
            sums[t] += w * np.array([s.data, s.gpu, s.sync, j.iteration_time])
        means = sums / np.maximum(weight, 1e-12)[:, None]
        self.stages = [Stages(*map(float, m[:3])) for m in means]
        self.alone = [float(m[3]) for m in means]
        self.columns: list[_Column] = []
        for g in sorted(set(self.gpus)):
            types = [t for t in range(count) if self.gpus[t] == g]
            for size in range(1, model.max_colocated + 1):
                for members in itertools.combinations_with_replacement(types, size):
                    periods = model.periods(
                        [self.stages[t] for t in members], alone=[self.alone[t] for t in members]
                    )
                    self.columns.append(_Column(g, members, tuple(periods)))
        self._build()

    def _build(self) -> None:
        from ortools.linear_solver import pywraplp

        solver = pywraplp.Solver.CreateSolver("GLOP")
        if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
            raise InputError("the LP solver GLOP is not available")
        self.solver = solver
        inf = solver.infinity()
        self.makespan = solver.NumVar(0.0, inf, "C")
        self.x = [solver.NumVar(0.0, inf, f"x{k}") for k in range(len(self.columns))]
        count = len(self.gpus)
        self.work = [solver.Constraint(0.0, inf) for _ in range(count)]
        self.once = [solver.Constraint(-inf, 0.0) for _ in range(count)]
        self.capacity = solver.Constraint(-inf, 0.0)
        for x, col in zip(self.x, self.columns, strict=True):
            for t, period in zip(col.types, col.periods, strict=True):
                self.work[t].SetCoefficient(x, self.work[t].GetCoefficient(x) + 1.0 / period)
                self.once[t].SetCoefficient(x, self.once[t].GetCoefficient(x) + 1.0)
            self.capacity.SetCoefficient(x, float(col.gpus))
        if self.power is not None:
            # a power cap: the sets' draw above idle, over set-seconds, within the budget
            # (in shares of the budget: GLOP is steadier on rows of unit scale)
            budget, (busy, idle) = self.power
            row = solver.Constraint(-inf, 0.0)
            row.SetCoefficient(self.makespan, -1.0)
            for x, col in zip(self.x, self.columns, strict=True):
                gpu = [self.stages[t].gpu for t in col.types]
                draw = col.gpus * compute_share(gpu, col.periods) * (busy - idle)
                row.SetCoefficient(x, draw / budget)
        solver.Objective().SetCoefficient(self.makespan, 1.0)
        solver.Objective().SetMinimization()
        self.counts = [0] * count
        self.gpus_up = 0

    def solve(
        self, left: Sequence[float], jobs: Sequence[int], gpus: int
    ) -> tuple[float, np.ndarray]:
        """The program on ``left`` iterations and ``jobs`` jobs per type with ``gpus``
        GPUs up: its makespan ``C`` and each column's rate ``x_c / C`` (0 and zeros if
        nothing is left)."""
        from ortools.linear_solver import pywraplp

        if not any(v > 0 for v in left):
            return 0.0, np.zeros(len(self.columns))
        # only what changed is set: GLOP then re-solves from its last basis
        for t, (need, n) in enumerate(zip(left, jobs, strict=True)):
            self.work[t].SetLb(float(need))
            if self.counts[t] != n:
                self.once[t].SetCoefficient(self.makespan, -float(n))
                self.counts[t] = n
        if self.gpus_up != gpus:
            self.capacity.SetCoefficient(self.makespan, -float(gpus))
            self.gpus_up = gpus
        status = self.solver.Solve()
        if status != pywraplp.Solver.OPTIMAL:
            raise InputError("the group-mix program has no solution (a bug)")  # pragma: no cover
        from ortools.linear_solver import linear_solver_pb2

        response = linear_solver_pb2.MPSolutionResponse()
        self.solver.FillSolutionResponseProto(response)
        values = np.array(response.variable_value)  # C, then the columns in order
        c = float(values[0])
        return c, values[1:] / max(c, 1e-12)


def mix_bound(
    jobs: Sequence[PeerJob],
    model: Interleave,
    gpus: int,
    power: tuple[float, tuple[float, float]] | None = None,
) -> float:
    """A lower bound (seconds) on any run of ``jobs`` on ``gpus`` GPUs that groups jobs
    of one GPU count under ``model`` (as every policy here does), and regroups them as
    often as it likes: the group-mix program's makespan on the whole workload, or the
    longest job with its stages back to back if that is longer. It holds where every
    type's jobs share one stage profile (no merged types, no noise). ``power``: the
    watts above idle a power cap leaves, and a GPU's (busy, idle) watts
    (:mod:`planner.execution.power`)."""
    mix = GroupMix(jobs, model, power)
    left = np.zeros(len(mix.gpus))
    count = np.zeros(len(mix.gpus))
    for j, t in zip(jobs, mix.type_of, strict=True):
        left[t] += j.iterations
        count[t] += 1
    longest = max((j.iterations * j.stages.total for j in jobs), default=0.0)
    return max(mix.solve(list(left), list(count), gpus)[0], longest)


class MixDispatch:
    """Policy ``lp-groups``: groups rounded from the program at every event (see the
    module docstring)."""

    def __init__(self, jobs: Sequence[PeerJob], model: Interleave, periods: _Periods) -> None:
        # no power row, even under a cap: on trace3' at 60% of peak it gave 4,473,795 s
        # against 4,454,288 s without (the cap, not the mix, sets the pace there)
        self.mix = GroupMix(jobs, model)
        self.periods = periods
        self.last: tuple[float, np.ndarray] | None = None
        self.present: tuple[bool, ...] = ()
        self.gpus_up = 0
        self.jobs_then = 0

    def schedule(self, runnable: Sequence[_Job], cluster: _Cluster) -> _Chosen:
        """Job index -> (its group, its period, the group's overhead, its GPU set)."""
        mix = self.mix
        count = len(mix.gpus)
        left, jobs = [0.0] * count, [0] * count
        pools: list[list[_Job]] = [[] for _ in range(count)]
        for s in runnable:
            t = mix.type_of[s.idx]
            left[t] += s.remaining
            jobs[t] += 1
            pools[t].append(s)
        for pool in pools:
            pool.sort(key=lambda s: -s.remaining * s.alone)
        cluster.empty()
        gpus = sum(cluster.free)
        present = tuple(n > 0 for n in jobs)
        if (
            self.last is None
            or present != self.present
            or gpus != self.gpus_up
            or abs(len(runnable) - self.jobs_then) > RESOLVE * self.jobs_then
        ):
            self.last = mix.solve(left, jobs, gpus)
            self.present, self.gpus_up, self.jobs_then = present, gpus, len(runnable)
        makespan, rates = self.last
        order = [int(c) for c in np.argsort(-rates, kind="stable") if rates[c] > 1e-9]
        used: set[int] = set()
        chosen: _Chosen = {}

        def take(col: _Column, first: _Job | None = None) -> bool:
            members = [first] if first is not None else []
            skip = {first.idx} if first is not None else set()
            need = list(col.types)
            if first is not None:
                need.remove(mix.type_of[first.idx])
            for t in need:
                s = next((s for s in pools[t] if s.idx not in used and s.idx not in skip), None)
                if s is None:
                    return False
                members.append(s)
                skip.add(s.idx)
            where = cluster.place(col.gpus)
            if where is None:
                return False
            used.update(skip)
            self._run(members, where, chosen)
            return True

        # a job whose own remaining time nears the program's makespan runs first, in the
        # column of highest rate that holds its type
        critical = [s for s in runnable if s.remaining * s.alone >= CRITICAL * makespan]
        for s in sorted(critical, key=lambda s: -s.remaining * s.alone):
            t = mix.type_of[s.idx]
            if s.idx in used:
                continue
            if not any(t in mix.columns[c].types and take(mix.columns[c], s) for c in order):
                where = cluster.place(s.job.gpus)
                if where is not None:
                    used.add(s.idx)
                    self._run([s], where, chosen)
        for c in order:
            for _ in range(max(1, round(float(rates[c])))):
                if not take(mix.columns[c]):
                    break
        waiting = [s for s in runnable if s.idx not in used]
        waiting.sort(key=lambda s: -s.remaining * s.alone)
        for s in waiting:
            if not any(cluster.free):
                break
            where = cluster.place(s.job.gpus)
            if where is not None:
                self._run([s], where, chosen)
        return chosen

    def _run(self, members: list[_Job], where: Where, chosen: _Chosen) -> None:
        periods = self.periods([m.idx for m in members])
        cost = sum(m.cost for m in members)
        for m in members:
            chosen[m.idx] = (members, periods[m.idx], cost, where)


class SrsfPack:
    """Policy ``srsf-pack``: smallest remaining service first, each job on GPUs of its
    own or into a GPU set already open, whichever adds more weighted progress (see
    :meth:`SrsfPack.schedule`)."""

    def __init__(self, model: Interleave, periods: _Periods) -> None:
        self.model, self.periods = model, periods

    def value(self, members: Sequence[_Job]) -> float:
        """The weighted progress of a group: the share of its remaining iterations each
        member does per second, summed (what SRPT maximises at every instant)."""
        periods = self.periods([m.idx for m in members])
        return sum(1.0 / (periods[m.idx] * max(m.remaining, 1e-9)) for m in members)

    def schedule(self, runnable: Sequence[_Job], cluster: _Cluster) -> _Chosen:
        """Jobs by remaining service (time alone x GPUs), smallest first. A job joins the
        open set of its GPU count (fewer than ``max_colocated`` members) where the
        group's weighted progress grows most if that growth is at least
        :data:`JOIN_SHARE` of its progress alone; else it takes GPUs of its own
        (first-fit) if any fit; else it joins that set anyway if the growth is
        positive; else it waits."""
        order = sorted(runnable, key=lambda s: s.remaining * s.alone * s.job.gpus)
        cluster.empty()
        groups: list[tuple[list[_Job], Where]] = []
        values: list[float] = []
        by_gpus: dict[int, list[int]] = {}
        for s in order:
            best, gain = -1, 0.0
            for k in by_gpus.get(s.job.gpus, ()):
                members = groups[k][0]
                if len(members) < self.model.max_colocated:
                    more = self.value([*members, s]) - values[k]
                    if more > gain:
                        best, gain = k, more
            alone = self.value([s])
            if best < 0 or gain < JOIN_SHARE * alone:
                where = cluster.place(s.job.gpus) if any(cluster.free) else None
                if where is not None:
                    by_gpus.setdefault(s.job.gpus, []).append(len(groups))
                    groups.append(([s], where))
                    values.append(alone)
                    continue
            if best >= 0:
                groups[best][0].append(s)
                values[best] += gain
        chosen: _Chosen = {}
        for members, where in groups:
            periods = self.periods([m.idx for m in members])
            cost = sum(m.cost for m in members)
            for m in members:
                chosen[m.idx] = (members, periods[m.idx], cost, where)
        return chosen

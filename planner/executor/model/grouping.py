"""Grouping as a decision: the mix of co-located groups from a linear program.

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

The policy ``lp-groups`` (:mod:`planner.executor.policies.lp_groups`) rounds it to
groups at every event.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InputError
from planner.executor.model.power import compute_share
from planner.executor.model.resources import fastest
from planner.interleave import Interleave, Stages

if TYPE_CHECKING:
    from planner.executor.model.jobs import ExecutorJob

MAX_TYPES = 10
"""The most job types per GPU count in the program (columns grow as types^4)."""


@dataclass(frozen=True)
class Column:
    gpus: int
    types: tuple[int, ...]
    """Member types (a multiset, sorted)."""
    periods: tuple[float, ...]


def job_types(jobs: Sequence[ExecutorJob], most: int = MAX_TYPES) -> list[int]:
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
        jobs: Sequence[ExecutorJob],
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
        self.columns: list[Column] = []
        for g in sorted(set(self.gpus)):
            types = [t for t in range(count) if self.gpus[t] == g]
            for size in range(1, model.max_colocated + 1):
                for members in itertools.combinations_with_replacement(types, size):
                    periods = model.periods(
                        [self.stages[t] for t in members], alone=[self.alone[t] for t in members]
                    )
                    self.columns.append(Column(g, members, tuple(periods)))
        self._build()

    def _build(self, backend: str = "GLOP") -> None:
        from ortools.linear_solver import pywraplp

        solver = pywraplp.Solver.CreateSolver(backend)
        if solver is None:  # pragma: no cover - GLOP and CLP ship with OR-Tools
            raise InputError(f"the LP solver {backend} is not available")
        self.solver, self.backend = solver, backend
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

    def _solve(self, left: Sequence[float], jobs: Sequence[int], gpus: int) -> int:
        """Set what changed since the last solve (GLOP then starts from its last basis)
        and solve; GLOP's status."""
        for t, (need, n) in enumerate(zip(left, jobs, strict=True)):
            self.work[t].SetLb(float(need))
            if self.counts[t] != n:
                self.once[t].SetCoefficient(self.makespan, -float(n))
                self.counts[t] = n
        if self.gpus_up != gpus:
            self.capacity.SetCoefficient(self.makespan, -float(gpus))
            self.gpus_up = gpus
        return self.solver.Solve()

    def solve(
        self, left: Sequence[float], jobs: Sequence[int], gpus: int
    ) -> tuple[float, np.ndarray]:
        """The program on ``left`` iterations and ``jobs`` jobs per type with ``gpus``
        GPUs up: its makespan ``C`` and each column's rate ``x_c / C`` (0 and zeros if
        nothing is left)."""
        from ortools.linear_solver import pywraplp

        if not any(v > 0 for v in left):
            return 0.0, np.zeros(len(self.columns))
        status = self._solve(left, jobs, gpus)
        if status != pywraplp.Solver.OPTIMAL and self.backend != "CLP":
            # GLOP can end ABNORMAL on these rows (5,755 generated jobs, seed 0, mid-run;
            # trace3' with a few types left, from scratch too); CLP solves them: from here
            # on, the program is built anew for it
            self._build("CLP")
            status = self._solve(left, jobs, gpus)
        if status != pywraplp.Solver.OPTIMAL:
            raise InputError("the group-mix program has no solution (a bug)")  # pragma: no cover
        from ortools.linear_solver import linear_solver_pb2

        response = linear_solver_pb2.MPSolutionResponse()
        self.solver.FillSolutionResponseProto(response)
        values = np.array(response.variable_value)  # C, then the columns in order
        c = float(values[0])
        return c, values[1:] / max(c, 1e-12)


def mix_bound(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    gpus: int,
    power: tuple[float, tuple[float, float]] | None = None,
) -> float:
    """A lower bound (seconds) on any run of ``jobs`` on ``gpus`` GPUs that groups jobs
    of one GPU count under ``model`` (as every policy here does), and regroups them as
    often as it likes: the group-mix program's makespan on the whole workload, or the
    longest job at its least period (:func:`longest_job`) if that is longer. It holds where every
    type's jobs share one stage profile (no merged types, no noise). ``power``: the
    watts above idle a power cap leaves, and a GPU's (busy, idle) watts
    (:mod:`planner.executor.model.power`). Jobs with resource profiles count at their best
    speed (:func:`~planner.executor.model.resources.fastest`)."""
    jobs = fastest(jobs)
    mix = GroupMix(jobs, model, power)
    left = np.zeros(len(mix.gpus))
    count = np.zeros(len(mix.gpus))
    for j, t in zip(jobs, mix.type_of, strict=True):
        left[t] += j.iterations
        count[t] += 1
    return max(mix.solve(list(left), list(count), gpus)[0], longest_job(jobs, model))


def longest_job(jobs: Sequence[ExecutorJob], model: Interleave) -> float:
    """The longest job at its least period under ``model`` (seconds): its stages back to
    back (no group runs a member faster: :func:`~planner.interleave.muri_period`), or under
    ``muri`` its measured period alone where that is shorter; a job with a resource
    profile at its best speed."""
    jobs = fastest(jobs)
    least = (
        (lambda j: min(j.stages.total, j.iteration_time))
        if model.kind == "muri"
        else (lambda j: j.stages.total)
    )
    return max((j.iterations * least(j) for j in jobs), default=0.0)


def exact_types(jobs: Sequence[ExecutorJob]) -> bool:
    """Whether the group-mix program's types are exact on ``jobs``: no type merged, and
    every type's jobs of one stage profile and period alone (so :func:`mix_bound` is a
    bound)."""
    types = job_types(jobs)
    if len(set(types)) != len(set(job_types(jobs, len(jobs) + 1))):
        return False
    seen: dict[int, tuple[object, float]] = {}
    for j, t in zip(jobs, types, strict=True):
        if seen.setdefault(t, (j.stages, j.iteration_time)) != (j.stages, j.iteration_time):
            return False
    return True


def executor_bound(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    gpus: int,
    power: tuple[float, tuple[float, float]] | None = None,
) -> tuple[float, str]:
    """A lower bound (seconds) on the makespan of any run of ``jobs`` on ``gpus`` GPUs
    under ``model`` that groups jobs on GPU sets (every policy, every dispatch of
    ``planner solve``), and what it is: the larger of the per-resource bound
    (:func:`~planner.interleave.model_bound`; under ``fluid`` only, where every iteration
    holds its stages) and the group-mix bound (:func:`mix_bound`, where its types are
    exact: :func:`exact_types`), at least the longest job (:func:`longest_job`)."""
    from planner.interleave import model_bound

    jobs = fastest(jobs)
    parts = {"longest job": longest_job(jobs, model)}
    if model.kind == "fluid":
        work = [(j.gpus, j.iterations, j.stages) for j in jobs]
        parts["per resource"] = model_bound(work, gpus, model)["bound"]
    if exact_types(jobs):
        parts["group mix"] = mix_bound(jobs, model, gpus, power)
    label = max(parts, key=parts.__getitem__)
    return parts[label], label

"""The configuration program: the least makespan in the executor's model, exactly, for
small workloads.

A **configuration** is a set of disjoint groups that run at once: each group at most
``max_colocated`` jobs of one GPU count within a GPU's memory on a GPU set of that
count, the sets placed on the cluster's nodes first-fit, largest first (as the executor's
:class:`~planner.execution.policies.Cluster` places them; exact packing where the GPU
counts divide one another and the node size, as in every trace here). While it runs,
each member progresses at its period in its group (the interleaving model's).

A run that regroups at will (no restart overhead) is a sequence of configurations with
durations ``d_k``; its makespan is ``sum d_k`` and job ``j`` is done once
``sum_k d_k / period_j(k) >= iterations_j``. So the least makespan of every dispatch in
groups is the linear program

    minimise sum_k d_k  subject to  sum_{k holds j} d_k / period_j(k) >= iterations_j,  d >= 0

over every configuration (:func:`configuration_plan`; GLOP, from OR-Tools). Its optimum
is a lower bound on any run of the jobs in groups (restart overheads only add time), and
its phases, run in the executor (:mod:`planner.execution.table`), attain it where no
overhead is charged: a proof of optimality in the executor's model. The group-mix
program (:mod:`planner.execution.grouping`) is its relaxation over job types.

It enumerates the configurations, so it takes workloads of at most :data:`MAX_JOBS` jobs,
all released at 0, and gives up past :data:`MAX_CONFIGURATIONS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.execution.policies.base import Cluster, Periods

if TYPE_CHECKING:
    from planner.execution.jobs import ExecutorJob, Where
    from planner.execution.table import Event
    from planner.interleave import Interleave

MAX_JOBS = 12
"""The most jobs the program enumerates configurations for."""
MAX_CONFIGURATIONS = 200_000
"""The most configurations it enumerates before it gives up."""
MARGIN = 1e-9
"""Every phase runs this share longer than the program says, so that each job ends
within its last phase despite rounding (its figure: the program's x ``1 + MARGIN``)."""


@dataclass(frozen=True)
class ConfigurationPlan:
    """The program's optimum: its makespan (s), and its phases in order, each a duration
    (s) and its groups (job indices, GPU set), stretched where the solver's tolerance left
    a job short of its iterations."""

    makespan: float
    """The program's optimum (a lower bound on every dispatch in groups)."""
    phases: tuple[tuple[float, tuple[tuple[tuple[int, ...], Where], ...]], ...]
    configurations: int
    """How many configurations the program had."""

    def events(self, jobs: Sequence[ExecutorJob]) -> tuple[Event, ...]:
        """The phases as a dispatch's events (member names), each phase
        :data:`MARGIN` longer."""
        out: list[Event] = []
        t = 0.0
        for duration, groups in self.phases:
            named = tuple(
                (tuple(jobs[k].name for k in members), where) for members, where in groups
            )
            out.append((t, named))
            t += duration * (1 + MARGIN)
        return tuple(out)


def _configurations(
    jobs: Sequence[ExecutorJob], model: Interleave, nodes: int, per_node: int
) -> list[tuple[tuple[tuple[int, ...], Where], ...]] | None:
    """Every configuration of ``jobs`` (groups of at most ``max_colocated`` jobs of one GPU
    count within a GPU's memory, placed first-fit largest first on ``nodes`` x
    ``per_node`` GPUs), or ``None`` past :data:`MAX_CONFIGURATIONS`."""
    most = model.max_colocated
    total = nodes * per_node
    out: list[tuple[tuple[tuple[int, ...], Where], ...]] = []

    def place(groups: list[list[int]]) -> tuple[tuple[tuple[int, ...], Where], ...] | None:
        cluster = Cluster(nodes, per_node)
        placed = []
        for members in sorted(groups, key=lambda g: -jobs[g[0]].gpus):
            where = cluster.place(jobs[members[0]].gpus)
            if where is None:
                return None
            placed.append((tuple(members), where))
        return tuple(sorted(placed))

    def grow(k: int, groups: list[list[int]], used: int) -> bool:
        if len(out) > MAX_CONFIGURATIONS:
            return False
        if k == len(jobs):
            if groups:
                config = place(groups)
                if config is not None:
                    out.append(config)
            return True
        if not grow(k + 1, groups, used):  # job k not in it
            return False
        g = jobs[k].gpus
        for members in groups:  # job k joins a group of its GPU count
            fits = model.room([jobs[m].gpu_mem for m in [*members, k]])
            if jobs[members[0]].gpus == g and len(members) < most and fits:
                members.append(k)
                ok = grow(k + 1, groups, used)
                members.pop()
                if not ok:
                    return False
        if used + g <= total:  # job k opens a group
            groups.append([k])
            ok = grow(k + 1, groups, used + g)
            groups.pop()
            if not ok:
                return False
        return True

    return out if grow(0, [], 0) else None


def solve_configurations(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    configs: Sequence[tuple[tuple[tuple[int, ...], Where], ...]],
) -> ConfigurationPlan | None:
    """The configuration program over ``configs`` (``None``: no solution, a job that no
    configuration holds).

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
        raise InputError("the LP solver GLOP is not available")
    periods = Periods(model, jobs)
    rows = [solver.Constraint(float(j.iterations), solver.infinity()) for j in jobs]
    durations = []
    objective = solver.Objective()
    for k, config in enumerate(configs):
        d = solver.NumVar(0.0, solver.infinity(), f"d{k}")
        durations.append(d)
        objective.SetCoefficient(d, 1.0)
        for members, _ in config:
            for j, period in periods(members).items():
                rows[j].SetCoefficient(d, 1.0 / period)
    objective.SetMinimization()
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    found = [d.solution_value() for d in durations]
    return configuration_phases(jobs, periods, configs, found, objective.Value())


def configuration_phases(
    jobs: Sequence[ExecutorJob],
    periods: Periods,
    configs: Sequence[tuple[tuple[tuple[int, ...], Where], ...]],
    durations: Sequence[float],
    value: float,
) -> ConfigurationPlan:
    """The plan of a solution of the configuration program over ``configs`` (each one's
    duration in ``durations``, the program's ``value``): its configurations that run, in
    order, stretched where the solver's tolerance left a job short of its iterations
    (``periods``: the jobs' periods in a group)."""
    chosen = [(d, config) for d, config in zip(durations, configs, strict=True) if d > 1e-9]
    done = [0.0] * len(jobs)
    for d, config in chosen:
        for members, _ in config:
            for j, period in periods(members).items():
                done[j] += d / period
    stretch = max(1.0, *(j.iterations / max(x, 1e-300) for j, x in zip(jobs, done, strict=True)))
    phases = tuple((d * stretch, config) for d, config in chosen)
    return ConfigurationPlan(value, phases, len(configs))


def trace_configurations(
    jobs: Sequence[ExecutorJob],
    runs: Sequence[Sequence[tuple[float, Sequence[tuple[Sequence[str], object, Where]]]]],
) -> list[tuple[tuple[tuple[int, ...], Where], ...]]:
    """The configurations that ``runs`` (their traces: per event its time and groups)
    ran, each once, ordered by when it first ran (as a share of its run)."""
    index = {j.name: k for k, j in enumerate(jobs)}
    first: dict[tuple[tuple[tuple[int, ...], Where], ...], float] = {}
    for trace in runs:
        end = max(trace[-1][0], 1e-300) if trace else 1.0
        for t, groups in trace:
            if groups:
                config = tuple(
                    sorted((tuple(sorted(index[n] for n in names)), where)
                           for names, _, where in groups)
                )  # fmt: skip
                first[config] = min(first.get(config, math.inf), t / end)
    return sorted(first, key=first.__getitem__)


def recombined_plan(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    runs: Sequence[Sequence[tuple[float, Sequence[tuple[Sequence[str], object, Where]]]]],
) -> ConfigurationPlan | None:
    """The configuration program over the configurations that ``runs`` ran
    (:func:`trace_configurations`): the best mix of what the runs did, whose value is at
    most the best of them where no restart overhead is charged (each run is one solution
    of it). ``None`` where a job is released after 0, or the runs ran nothing.

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    if not jobs or any(j.release > 0 for j in jobs):
        return None
    configs = trace_configurations(jobs, runs)
    return solve_configurations(jobs, model, configs) if configs else None


def configuration_plan(
    jobs: Sequence[ExecutorJob], model: Interleave, nodes: int, per_node: int
) -> ConfigurationPlan | None:
    """The configuration program's optimum (see the module docstring), or ``None`` where
    it does not apply: more than :data:`MAX_JOBS` jobs, a job released after 0, or more
    than :data:`MAX_CONFIGURATIONS` configurations.

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    if not jobs or len(jobs) > MAX_JOBS or any(j.release > 0 for j in jobs):
        return None
    configs = _configurations(jobs, model, nodes, per_node)
    if not configs:
        return None
    return solve_configurations(jobs, model, configs)


def strongest_bound(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    nodes: int,
    per_node: int,
    power: tuple[float, tuple[float, float]] | None = None,
) -> tuple[float, str]:
    """The strongest lower bound (seconds) on the makespan of any run of ``jobs`` in
    groups on ``nodes`` x ``per_node`` GPUs under ``model``, and its name: the executor's
    bound (:func:`~planner.execution.grouping.executor_bound`), or the configuration
    program's optimum where it applies and is higher (no power cap: the program knows
    none). ``planner info``, ``solve`` and ``run`` print this one.

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    from planner.execution.grouping import executor_bound
    from planner.execution.resources import fastest

    bound, name = executor_bound(jobs, model, nodes * per_node, power)
    if power is None and model.table is None:
        plan = configuration_plan(fastest(jobs), model, nodes, per_node)
        if plan is not None and plan.makespan > bound:
            bound, name = plan.makespan, "configuration program"
    return bound, name

"""The configuration program: the least makespan in the executor's model, exactly, for
small workloads.

A **configuration** is a set of disjoint groups that run at once: each group at most
``max_colocated`` jobs of one GPU count within a GPU's memory on a GPU set of that
count, the sets placed on the cluster's nodes first-fit, largest first (as the executor's
:class:`~planner.executor.policies.Cluster` places them; exact packing where the GPU
counts divide one another and the node size, as in every trace here). While it runs,
each member progresses at its period in its group (the interleaving model's).

A run that regroups at will (no restart overhead) is a sequence of configurations with
durations ``d_k``; its makespan is ``sum d_k`` and job ``j`` is done once
``sum_k d_k / period_j(k) >= iterations_j``. So the least makespan of every dispatch in
groups is the linear program

    minimise sum_k d_k  subject to  sum_{k holds j} d_k / period_j(k) >= iterations_j,  d >= 0

over every configuration (:func:`configuration_plan`; GLOP, from OR-Tools). Its optimum
is a lower bound on any run of the jobs in groups (restart overheads only add time), and
its phases, run in the executor (:mod:`planner.executor.dispatch`), attain it where no
overhead is charged: a proof of optimality in the executor's model. The group-mix
program (:mod:`planner.executor.model.grouping`) is its relaxation over job types.

It enumerates the configurations, so it takes workloads of at most :data:`MAX_JOBS` jobs,
all released at 0, and gives up past :data:`MAX_CONFIGURATIONS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.executor.model.policy import Cluster, Periods
from planner.executor.model.resources import default_alloc, fair_share

if TYPE_CHECKING:
    from planner.executor.model.jobs import ExecutorJob, Where
    from planner.interleave import Interleave

MAX_JOBS = 12
"""The most jobs the program enumerates configurations for."""
MAX_CONFIGURATIONS = 200_000
"""The most configurations it enumerates before it gives up."""
Configuration = tuple[tuple[tuple[int, ...], "Where"], ...]
"""A configuration: its groups (job indices, GPU set)."""
PLACE_STEPS = 20_000
"""The most steps :meth:`NodeRoom.place` searches for one configuration."""
MARGIN = 1e-9
"""Every phase runs this share longer than the program says, so that each job ends
within its last phase despite rounding (its figure: the program's x ``1 + MARGIN``)."""


@dataclass(frozen=True)
class ConfigurationPlan:
    """The program's optimum: its makespan (s), and its phases in order, each a duration
    (s) and its groups (job indices, GPU set), stretched where the solver's tolerance left
    a job short of its iterations."""

    makespan: float
    """The program's optimum over the configurations its phases may use."""
    phases: tuple[tuple[float, tuple[tuple[tuple[int, ...], Where], ...]], ...]
    configurations: int
    """How many configurations the program had."""
    bound: float = math.nan
    """The program's optimum over every configuration, those beyond the nodes' CPU cores
    and host memory too (a lower bound on every dispatch in groups; ``nan``: the
    ``makespan``)."""

    def __post_init__(self) -> None:
        if math.isnan(self.bound):
            object.__setattr__(self, "bound", self.makespan)

    def events(
        self, jobs: Sequence[ExecutorJob]
    ) -> tuple[tuple[float, tuple[tuple[tuple[str, ...], Where], ...]], ...]:
        """The phases as a dispatch's events (:data:`~planner.executor.dispatch.Event`: member
        names), each phase :data:`MARGIN` longer."""
        out: list[tuple[float, tuple[tuple[tuple[str, ...], Where], ...]]] = []
        t = 0.0
        for duration, groups in self.phases:
            named = tuple(
                (tuple(jobs[k].name for k in members), where) for members, where in groups
            )
            out.append((t, named))
            t += duration * (1 + MARGIN)
        return tuple(out)


def _configurations(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    nodes: int,
    per_node: int,
    room: NodeRoom | None = None,
) -> list[tuple[tuple[tuple[int, ...], Where], ...]] | None:
    """Every configuration of ``jobs`` (groups of at most ``max_colocated`` jobs of one GPU
    count within a GPU's memory, placed first-fit largest first on ``nodes`` x
    ``per_node`` GPUs; with ``room``, placed within the nodes' CPU cores and memory by
    :meth:`NodeRoom.place`), or ``None`` past :data:`MAX_CONFIGURATIONS`."""
    most = model.max_colocated
    total = nodes * per_node
    out: list[tuple[tuple[tuple[int, ...], Where], ...]] = []

    def place(groups: list[list[int]]) -> tuple[tuple[tuple[int, ...], Where], ...] | None:
        if room is not None and room.limited:
            return room.place([tuple(g) for g in groups], nodes, per_node)
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


class NodeRoom:
    """Whether a configuration's groups hold within every node's CPU cores and host memory,
    each job what it holds by default per GPU of its set
    (:func:`~planner.executor.model.resources.default_alloc`), as the executor checks at every
    event: a configuration beyond them does not run as planned."""

    def __init__(
        self,
        jobs: Sequence[ExecutorJob],
        cpus: Sequence[float],
        mems: Sequence[float],
        per_node: int,
    ) -> None:
        self.jobs, self.cpus, self.mems = jobs, tuple(cpus), tuple(mems)
        self.fair = fair_share(self.cpus, self.mems, per_node)
        self.exhaustive = True
        """Whether every :meth:`place` that found nothing searched every placement."""

    @property
    def limited(self) -> bool:
        """Whether the nodes give CPU cores or host memory at all."""
        return bool(self.cpus or self.mems)

    @property
    def binding(self) -> bool:
        """Whether keeping within the nodes binds every run as it binds a plan: the nodes
        limit, and no job has a resource profile (whose CPU and memory a policy may
        choose below its default)."""
        return self.limited and all(j.profile is None for j in self.jobs)

    def place(
        self, groups: Sequence[tuple[int, ...]], nodes: int, per_node: int
    ) -> Configuration | None:
        """``groups`` (job indices, a group's GPU count its first member's) on ``nodes`` x
        ``per_node`` GPUs within every node's GPUs, CPU cores and memory: a search over
        the nodes of each group of one node, largest first (a group of several nodes
        takes whole nodes first-fit); ``None`` where none is found within
        :data:`PLACE_STEPS` steps (then :attr:`exhaustive` turns false)."""
        need = []
        for members in groups:
            cpu = mem = 0.0
            for j in members:
                c, m = default_alloc(self.jobs[j], self.fair, len(members))
                cpu, mem = cpu + c, mem + m
            need.append((self.jobs[members[0]].gpus, cpu, mem, tuple(members)))
        need.sort(key=lambda n: -n[0])
        cap_cpu = self.cpus or (math.inf,) * nodes
        cap_mem = self.mems or (math.inf,) * nodes
        free = [per_node] * nodes
        used = [[0.0, 0.0] for _ in range(nodes)]
        out: list[tuple[tuple[int, ...], Where]] = []
        steps = [0]

        def fits(k: int, n: int, cpu: float, mem: float) -> bool:
            return (free[k] >= n and used[k][0] + cpu * n <= cap_cpu[k] + 1e-9
                    and used[k][1] + mem * n <= cap_mem[k] + 1e-9)  # fmt: skip

        def take(k: int, n: int, cpu: float, mem: float, sign: int) -> None:
            free[k] -= sign * n
            used[k][0] += sign * cpu * n
            used[k][1] += sign * mem * n

        def search(i: int) -> bool:
            steps[0] += 1
            if steps[0] > PLACE_STEPS:
                self.exhaustive = False
                return False
            if i == len(need):
                return True
            gpus, cpu, mem, members = need[i]
            if gpus > per_node:
                full, rest = divmod(gpus, per_node)
                idle = [k for k in range(nodes) if free[k] == per_node][:full]
                last = [k for k in range(nodes) if k not in idle and fits(k, rest, cpu, mem)]
                if (
                    len(idle) < full
                    or (rest and not last)
                    or not all(fits(k, per_node, cpu, mem) for k in idle)
                ):
                    self.exhaustive = False  # other whole nodes are not tried
                    return False
                parts = [(k, per_node) for k in idle] + ([(last[0], rest)] if rest else [])
                where = tuple((k, tuple(range(per_node - free[k], per_node - free[k] + n)))
                              for k, n in parts)  # fmt: skip
                for k, n in parts:
                    take(k, n, cpu, mem, 1)
                out.append((members, where))
                if search(i + 1):
                    return True
                out.pop()
                for k, n in parts:
                    take(k, n, cpu, mem, -1)
                return False
            tried = set()
            for k in range(nodes):
                state = (
                    free[k],
                    round(used[k][0], 9),
                    round(used[k][1], 9),
                    cap_cpu[k],
                    cap_mem[k],
                )
                if state in tried or not fits(k, gpus, cpu, mem):
                    continue
                tried.add(state)
                first = per_node - free[k]
                take(k, gpus, cpu, mem, 1)
                out.append((members, ((k, tuple(range(first, first + gpus))),)))
                if search(i + 1):
                    return True
                out.pop()
                take(k, gpus, cpu, mem, -1)
            return False

        return tuple(sorted(out)) if search(0) else None

    def __call__(self, config: Sequence[tuple[Sequence[int], Where]]) -> bool:
        """Whether ``config`` holds within every node (always, where they give neither)."""
        if not self.limited:
            return True
        size = max(len(self.cpus), len(self.mems))
        used = [[0.0, 0.0] for _ in range(size)]
        for members, where in config:
            for j in members:
                cpu, mem = default_alloc(self.jobs[j], self.fair, len(members))
                for k, ids in where:
                    used[k][0] += cpu * len(ids)
                    used[k][1] += mem * len(ids)
        return all(
            (not self.cpus or u[0] <= self.cpus[k] + 1e-9)
            and (not self.mems or u[1] <= self.mems[k] + 1e-9)
            for k, u in enumerate(used)
        )


def solve_configurations(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    configs: Sequence[tuple[tuple[tuple[int, ...], Where], ...]],
    room: NodeRoom | None = None,
) -> ConfigurationPlan | None:
    """The configuration program over ``configs`` (``None``: no solution, a job that no
    configuration holds). With ``room``, where its optimum runs a configuration beyond
    the nodes' CPU cores or memory, its plan is the program's over those within them (its
    ``bound`` still the optimum over all).

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    periods = Periods(model, jobs)
    found = _solve_program(jobs, periods, configs)
    if found is None:
        return None
    durations, value = found
    if (
        room is not None
        and room.limited
        and any(d > 1e-9 and not room(c) for d, c in zip(durations, configs, strict=True))
    ):
        configs = [c for c in configs if room(c)]
        again = _solve_program(jobs, periods, configs)
        if again is None:
            return None
        return configuration_phases(jobs, periods, configs, again[0], again[1], value)
    return configuration_phases(jobs, periods, configs, durations, value)


def _solve_program(
    jobs: Sequence[ExecutorJob],
    periods: Periods,
    configs: Sequence[tuple[tuple[tuple[int, ...], Where], ...]],
) -> tuple[list[float], float] | None:
    """The configuration program over ``configs`` by GLOP: each one's duration and the
    optimum (``None``: no solution)."""
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
        raise InputError("the LP solver GLOP is not available")
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
    return [d.solution_value() for d in durations], objective.Value()


def configuration_phases(
    jobs: Sequence[ExecutorJob],
    periods: Periods,
    configs: Sequence[tuple[tuple[tuple[int, ...], Where], ...]],
    durations: Sequence[float],
    value: float,
    bound: float = math.nan,
) -> ConfigurationPlan:
    """The plan of a solution of the configuration program over ``configs`` (each one's
    duration in ``durations``, the program's ``value``; ``bound``: its optimum over every
    configuration, where ``configs`` leave some out): its configurations that run, in
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
    return ConfigurationPlan(value, phases, len(configs), bound)


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
    room: NodeRoom | None = None,
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
    return solve_configurations(jobs, model, configs, room) if configs else None


def configuration_plan(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    nodes: int,
    per_node: int,
    room: NodeRoom | None = None,
) -> ConfigurationPlan | None:
    """The configuration program's optimum (see the module docstring; with ``room``, its
    plan over the configurations within the nodes' CPU cores and memory, its ``bound``
    that optimum where every run keeps within them as the plan does
    (:attr:`NodeRoom.binding`, every placement searched), else the optimum over all), or
    ``None`` where it does not apply: more than :data:`MAX_JOBS` jobs, a job released
    after 0, or more than :data:`MAX_CONFIGURATIONS` configurations.

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    if not jobs or len(jobs) > MAX_JOBS or any(j.release > 0 for j in jobs):
        return None
    if room is None or not room.limited:
        configs = _configurations(jobs, model, nodes, per_node)
        return solve_configurations(jobs, model, configs) if configs else None
    configs = _configurations(jobs, model, nodes, per_node, room)
    plan = solve_configurations(jobs, model, configs) if configs else None
    if plan is None or (room.binding and room.exhaustive):
        return plan  # every run keeps within the nodes: the optimum within them bounds it
    relaxed = configuration_plan(jobs, model, nodes, per_node)
    return replace(plan, bound=relaxed.bound) if relaxed is not None else None


def strongest_bound(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    nodes: int,
    per_node: int,
    power: tuple[float, tuple[float, float]] | None = None,
    room: NodeRoom | None = None,
) -> tuple[float, str]:
    """The strongest lower bound (seconds) on the makespan of any run of ``jobs`` in
    groups on ``nodes`` x ``per_node`` GPUs under ``model``, and its name: the executor's
    bound (:func:`~planner.executor.model.grouping.executor_bound`), or the configuration
    program's optimum where it applies and is higher (no power cap: the program knows
    none; with ``room``, the nodes' CPU cores and memory, as :func:`configuration_plan`
    takes them). ``planner info``, ``solve`` and ``run`` print this one.

    Raises
    ------
    InputError
        If the LP solver is not available (a broken OR-Tools).
    """
    from planner.executor.model.grouping import executor_bound
    from planner.executor.model.resources import fastest

    bound, name = executor_bound(jobs, model, nodes * per_node, power)
    if power is None and model.table is None:
        plan = configuration_plan(fastest(jobs), model, nodes, per_node, room)
        if plan is not None and plan.bound > bound:
            bound, name = plan.bound, "configuration program"
    return bound, name

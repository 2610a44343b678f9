"""The configuration program by column generation, for workloads too large to enumerate.

The configuration program (:mod:`planner.executor.configurations`) has a column per
configuration: a set of disjoint groups that run at once. Here the master holds only
the columns found so far; its duals ``y_j`` (one per job's row) price every other
configuration ``k`` at ``1 - sum_{j in k} y_j / period_j(k)``, and a configuration of
negative reduced cost joins the master. **Pricing** is a packing problem: groups, each
of a *pattern* (at most ``max_colocated`` job types of one GPU count, a type being the
jobs of one stage profile and period alone), their GPUs within the cluster's, each job
in at most one group, of greatest ``sum y_j / period_j``. A greedy packing is tried
first; where it finds nothing, CP-SAT solves the packing exactly (per job and pattern a
Boolean, per pattern a count of groups).

Where CP-SAT proves that no configuration prices below 0 the master's value is the
program's optimum: the least makespan of any dispatch that regroups at will without
restart overheads (a lower bound with them). Before that, every round with an exact
pricing value ``v`` (or CP-SAT's bound on it) gives Farley's bound ``master / v``: ``y /
v`` is feasible for the program's dual. The master is solved by HiGHS (SciPy). Jobs
must all be released at 0 (the program has no release times).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.executor.configurations import (
    Configuration,
    ConfigurationPlan,
    NodeRoom,
    configuration_phases,
)
from planner.executor.model.policy import Cluster, Periods

if TYPE_CHECKING:
    from planner.executor.model.jobs import ExecutorJob
    from planner.interleave import Interleave
    from planner.interrupt import Halt

log = logging.getLogger(__name__)

TOLERANCE = 1e-7
"""Reduced costs above ``-TOLERANCE`` do not improve the master."""
SCALE = 10**9
"""CP-SAT's objective: the pricing values times this over the largest, rounded up."""
MAX_PATTERNS = 50_000
"""The most group patterns pricing considers."""
ROUNDING = 1e-6
"""Where CP-SAT's bound on the pricing value (its coefficients rounded up) is within
this of 1 and its configuration prices at most 1, no column improves the master by more
than this share: column generation has converged (the bound is the master's value over
that bound)."""
GREEDY_STARTS = 8
"""Greedy packings per round, each from another of the best groups."""


@dataclass(frozen=True)
class Pattern:
    """A group's job types: its GPU count, per type how many members, and per type its
    members' rate (iterations per second) in such a group."""

    gpus: int
    counts: tuple[tuple[int, int], ...]
    rates: dict[int, float]


@dataclass
class ColumnGeneration:
    """What column generation reached: the master's plan over its columns, the best
    proven lower bound, whether it converged (then ``bound`` is the plan's value within
    :data:`ROUNDING`), its rounds, and the columns each pricing found."""

    plan: ConfigurationPlan
    bound: float
    converged: bool
    configs: tuple[Configuration, ...]
    """Every column the master had, in the order added."""
    durations: tuple[float, ...]
    """Each column's duration in the master's last solution."""
    rounds: int
    greedy_columns: int
    cpsat_columns: int
    pricing_seconds: float
    seconds: float

    @property
    def bound_kind(self) -> str:
        """What proves :attr:`bound`."""
        return "configuration program" if self.converged else "column generation (Farley)"

    @property
    def source(self) -> str:
        """Its plan, as the search names a candidate."""
        return (f"column generation ({self.rounds} rounds, {len(self.plan.phases):,} of "
                f"{self.plan.configurations:,} configurations)")  # fmt: skip


def period_types(jobs: Sequence[ExecutorJob]) -> dict[int, list[int]]:
    """Per type, its jobs (indices): jobs alike but for name, iterations, release,
    weight and restart share a type, their periods in any group the same (exact, unlike
    the group-mix program's merged :func:`~planner.executor.model.grouping.job_types`)."""
    keys: dict[object, int] = {}
    out: dict[int, list[int]] = {}
    for k, j in enumerate(jobs):
        key = replace(j, name="", iterations=0, duration=0.0, release=0.0, weight=1.0,
                      priority=0, restart=None)  # fmt: skip
        out.setdefault(keys.setdefault(key, len(keys)), []).append(k)
    return out


def patterns(
    jobs: Sequence[ExecutorJob], members: dict[int, list[int]], model: Interleave, total: int
) -> list[Pattern] | None:
    """Every group pattern of ``jobs`` of the types ``members`` gives
    (:func:`period_types`; ``None``: more than :data:`MAX_PATTERNS`): at most
    ``max_colocated`` members of one GPU count, no more of a type than it has jobs, within
    a GPU's memory, on at most ``total`` GPUs."""
    by_gpus: dict[int, list[int]] = {}
    for t, ks in members.items():
        if jobs[ks[0]].gpus <= total:
            by_gpus.setdefault(jobs[ks[0]].gpus, []).append(t)
    periods = Periods(model, jobs)
    out = []
    for gpus, kinds in by_gpus.items():
        for size in range(1, model.max_colocated + 1):
            for combo in itertools.combinations_with_replacement(kinds, size):
                counts = Counter(combo)
                if any(n > len(members[t]) for t, n in counts.items()):
                    continue
                rep = [k for t, n in counts.items() for k in members[t][:n]]
                if not model.room([jobs[k].gpu_mem for k in rep]):
                    continue
                found = periods(rep)
                rates = {t: 1.0 / found[members[t][0]] for t in counts}
                out.append(Pattern(gpus, tuple(sorted(counts.items())), rates))
                if len(out) > MAX_PATTERNS:
                    return None
    return out


class Pricing:
    """The pricing of configurations for duals ``y`` (see the module docstring)."""

    def __init__(
        self,
        jobs: Sequence[ExecutorJob],
        model: Interleave,
        nodes: int,
        per_node: int,
        room: NodeRoom | None = None,
    ) -> None:
        self.jobs, self.nodes, self.per_node, self.room = jobs, nodes, per_node, room
        self.total = nodes * per_node
        self.members = period_types(jobs)
        self.types = {k: t for t, ks in self.members.items() for k in ks}
        found = patterns(jobs, self.members, model, self.total)
        if found is None:
            raise ValueError("too many group patterns")
        self.patterns = found

    def _groups(self, choice: Sequence[tuple[Pattern, list[int]]]) -> Configuration | None:
        """Groups of patterns and their members, placed first-fit largest first (``None``:
        they do not fit)."""
        cluster = Cluster(self.nodes, self.per_node)
        out = []
        for pattern, members in sorted(choice, key=lambda c: -c[0].gpus):
            where = cluster.place(pattern.gpus)
            if where is None:
                return None
            out.append((tuple(sorted(members)), where))
        return tuple(sorted(out))

    def _runnable(self, config: Configuration | None) -> Configuration | None:
        """``config`` where it holds within the nodes (:class:`NodeRoom`), else ``None``."""
        return config if config is None or self.room is None or self.room(config) else None

    def _best_groups(
        self, y: np.ndarray, used: set[int], left: int
    ) -> list[tuple[float, Pattern, list[int], float]]:
        """Per pattern of at most ``left`` GPUs, its group of the jobs not ``used`` of the
        largest duals: (value per GPU, pattern, members, value), best first."""
        ranked = {t: sorted((k for k in ks if k not in used), key=lambda k: -y[k])
                  for t, ks in self.members.items()}  # fmt: skip
        out = []
        for p in self.patterns:
            if p.gpus > left or any(len(ranked[t]) < n for t, n in p.counts):
                continue
            members = [k for t, n in p.counts for k in ranked[t][:n]]
            worth = sum(p.rates[t] * y[k] for t, n in p.counts for k in ranked[t][:n])
            if worth > 0:
                out.append((worth / p.gpus, p, members, worth))
        out.sort(key=lambda g: -g[0])
        return out

    def greedy(self, y: np.ndarray, starts: int = 1) -> list[tuple[float, Configuration]]:
        """Configurations of high value by greedy packings, one from each of the
        ``starts`` best groups: then the group of the greatest value per GPU of the jobs
        left, until the GPUs run out (value, configuration)."""
        out = []
        for first in self._best_groups(y, set(), self.total)[:starts]:
            choice = [(first[1], first[2])]
            used, left, value = set(first[2]), self.total - first[1].gpus, first[3]
            while left > 0:
                for _, p, members, worth in self._best_groups(y, used, left):
                    if self._runnable(self._groups([*choice, (p, members)])) is not None:
                        choice.append((p, members))
                        used.update(members)
                        left -= p.gpus
                        value += worth
                        break
                else:
                    break
            config = self._runnable(self._groups(choice))
            if config is not None:
                out.append((value, config))
        return out

    def exact(
        self, y: np.ndarray, seconds: float, threads: int
    ) -> tuple[float, float, Configuration | None]:
        """CP-SAT's packing of greatest value: its value, a proven upper bound on every
        configuration's value (its objective's bound, the values rounded up; ``inf``
        where it found nothing), and the configuration (``None``: none found)."""
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        top = max((p.rates[t] * y[k] for p in self.patterns for t, _ in p.counts
                   for k in self.members[t]), default=0.0)  # fmt: skip
        if top <= 0:
            return 0.0, 0.0, None
        scale = SCALE / top
        count, x, objective = {}, {}, []
        of_job: dict[int, list] = {}
        for i, p in enumerate(self.patterns):
            count[i] = model.NewIntVar(0, self.total // p.gpus, f"n{i}")
            for t, n in p.counts:
                row = []
                for k in self.members[t]:
                    x[k, i] = model.NewBoolVar(f"x{k}_{i}")
                    row.append(x[k, i])
                    of_job.setdefault(k, []).append(x[k, i])
                    objective.append(math.ceil(scale * p.rates[t] * y[k]) * x[k, i])
                model.Add(sum(row) == n * count[i])
        for row in of_job.values():
            model.AddAtMostOne(row)
        model.Add(sum(p.gpus * count[i] for i, p in enumerate(self.patterns)) <= self.total)
        whole = [(math.ceil(p.gpus / self.per_node), count[i])
                 for i, p in enumerate(self.patterns) if p.gpus > self.per_node]  # fmt: skip
        if whole:
            model.Add(sum(a * v for a, v in whole) <= self.nodes)
        model.Maximize(sum(objective))
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(seconds, 0.1)
        solver.parameters.num_workers = threads
        status = solver.Solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return 0.0, math.inf, None
        upper = solver.BestObjectiveBound() / scale
        choice = []
        for i, p in enumerate(self.patterns):
            n = solver.Value(count[i])
            if not n:
                continue
            by_type = {
                t: [k for k in self.members[t] if solver.Value(x[k, i])] for t, _ in p.counts
            }
            for g in range(n):
                members = [k for t, m in p.counts for k in by_type[t][g * m : (g + 1) * m]]
                choice.append((p, members))
        value = sum(p.rates[self.types[k]] * y[k] for p, ms in choice for k in ms)
        return value, upper, self._groups(choice)


def _master(
    jobs: Sequence[ExecutorJob], columns: Sequence[dict[int, float]]
) -> tuple[float, np.ndarray, np.ndarray]:
    """The restricted master (HiGHS, :class:`~planner.lp.LinearProgram`): its value, the
    durations of the columns and the jobs' duals.

    Raises
    ------
    ValueError
        If HiGHS does not solve it (every job alone is a column: it is feasible).
    """
    from planner.lp import INF, LinearProgram

    rows: list[tuple[list[int], list[float]]] = [([], []) for _ in jobs]
    for c, rates in enumerate(columns):
        for j, rate in rates.items():
            rows[j][0].append(c)
            rows[j][1].append(rate)
    lp = LinearProgram(len(columns))
    lp.cost[:] = 1.0
    for job, (index, value) in zip(jobs, rows, strict=True):
        lp.row(np.array(index), np.array(value), float(job.iterations), INF)
    found = lp.solve_with_duals()
    if found is None:
        raise ValueError("the master LP failed")
    x, y = found
    return float(x.sum()), x, np.maximum(y, 0.0)


def log_round(k: int, value: float, bound: float, columns: int, source: str) -> None:
    """Log a round of :func:`column_generation` (``planner -v`` shows it)."""
    log.info("colgen round %d: master %.1f s, bound %.1f s, %d columns (%s pricing)",
             k, value, bound, columns, source)  # fmt: skip


def column_generation(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    nodes: int,
    per_node: int,
    time_limit: float,
    threads: int = 2,
    on_round: Callable[[int, float, float, int, str], None] | None = None,
    halt: Halt | None = None,
    greedy: bool = True,
    initial: Sequence[Configuration] = (),
    room: NodeRoom | None = None,
) -> ColumnGeneration | None:
    """The configuration program by column generation (see the module docstring) within
        ``time_limit`` seconds; ``on_round`` is called after every round with its number,
        the master's value, the best bound so far, the columns and the pricing that found
        the last column. ``greedy=False`` prices by CP-SAT alone; ``initial``: configurations
    to start from (e.g. those good dispatches ran), besides every job alone; ``room``: the
    nodes' CPU cores and memory, which the greedy pricing's columns and the plan keep
    within (CP-SAT's pricing, and so the bound, knows none of them). ``None`` where it
    does not apply: a job released after 0, no jobs, or too many group patterns."""
    t0 = time.perf_counter()
    if not jobs or any(j.release > 0 for j in jobs) or model.table is not None:
        return None
    try:
        pricing = Pricing(jobs, model, nodes, per_node, room)
    except ValueError:
        return None
    periods = Periods(model, jobs)
    configs: list[Configuration] = []
    columns: list[dict[int, float]] = []
    seen: set[Configuration] = set()

    def add(config: Configuration) -> None:
        if config in seen:
            return
        seen.add(config)
        configs.append(config)
        rates = {}
        for members, _ in config:
            for j, period in periods(members).items():
                rates[j] = 1.0 / period
        columns.append(rates)

    for k in range(len(jobs)):  # every job alone: a feasible master
        where = Cluster(nodes, per_node).place(jobs[k].gpus)
        if where is None:
            return None
        add((((k,), where),))
    for config in initial:
        add(config)
    bound, converged, rounds, found = 0.0, False, 0, {"greedy": 0, "cpsat": 0}
    pricing_seconds = 0.0
    while True:
        value, durations, y = _master(jobs, columns)
        rounds += 1
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0 or (halt is not None and halt.is_set()):
            break
        started = time.perf_counter()
        new = [c for w, c in (pricing.greedy(y, GREEDY_STARTS) if greedy else [])
               if w > 1 + TOLERANCE and c not in seen]  # fmt: skip
        source = "greedy"
        if not new:
            worth, upper, config = pricing.exact(y, left, threads)
            source = "cpsat"
            if upper > 0 and math.isfinite(upper):
                bound = max(bound, value / max(upper, 1.0))
            if worth <= 1 + TOLERANCE and upper <= 1 + ROUNDING:
                converged = True  # the bound is the master's value up to the rounding
            if config is not None and worth > 1 + TOLERANCE and config not in seen:
                new = [config]
        pricing_seconds += time.perf_counter() - started
        if on_round is not None:
            on_round(rounds, value, bound, len(columns), source)
        if converged or not new:
            break
        found[source] += len(new)
        for config in new:
            add(config)
    plan = configuration_phases(jobs, periods, configs, durations, value)
    if (
        room is not None
        and room.limited
        and any(d > 1e-9 and not room(c) for d, c in zip(durations, configs, strict=True))
    ):  # the master over the columns within the nodes
        kept = [k for k, c in enumerate(configs) if room(c)]
        value_in, x, _ = _master(jobs, [columns[k] for k in kept])
        plan = configuration_phases(jobs, periods, [configs[k] for k in kept], x, value_in, value)
    return ColumnGeneration(
        plan,
        bound,
        converged,
        tuple(configs),
        tuple(float(d) for d in durations),
        rounds,
        found["greedy"],
        found["cpsat"],
        pricing_seconds,
        time.perf_counter() - t0,
    )

"""Schedule generation schemes and priority-rule heuristics over the complete model.

A serial pass takes the tasks in the order of an activity list and starts each
at the earliest tick after its release and its predecessors (finish or start
plus lag) at which every tick of every segment fits the capacity left (capacity
windows included). A parallel pass repeatedly starts the eligible task that can
start first. Mode choice keeps the non-renewable budgets reachable and a
colocated job's placement key consistent; a pass that would miss a deadline
yields no schedule. The passes run as numba kernels (:mod:`solvers.sgs_numba`);
:mod:`solvers.sgs_reference` is the plain-Python version the tests compare with.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, get_args

import numpy as np

from planner.arrays import OK
from planner.bounds import earliest_starts, horizon, latest_starts
from planner.errors import InputError
from planner.graph import task_graph
from planner.model import Problem
from planner.result import Progress, Result, Status
from planner.schedule import Schedule
from planner.solvers import capacity_numba as cap
from planner.solvers import passes_numba as dec
from planner.solvers import sgs_numba as k
from planner.solvers.coarse import coarsen, refine
from planner.solvers.encoding import Data, compile_problem, failure_reason, to_schedule

Rule = Literal["lft", "lst", "mts", "spt", "lpt", "est", "grpw", "mslk", "grw"]
RULES: tuple[str, ...] = get_args(Rule)
"""Priority rules: latest finish, latest start, most total successors, shortest
processing time, longest processing time, earliest start, greatest rank positional
weight, minimum slack, greatest resource work (ties broken by task order)."""


def priorities(problem: Problem, rule: str) -> np.ndarray:
    """Priority value per task for ``rule``; smaller is scheduled first.

    Raises
    ------
    InputError
        If ``rule`` is not one of :data:`RULES`.
    """
    a = problem.arrays
    dmin = a.min_duration().astype(float)
    names = [t.name for t in problem.tasks]
    if rule in ("lft", "lst", "mslk"):
        ls = latest_starts(problem, horizon(problem))
        lst = np.array([ls[t] for t in names], dtype=float)
        if rule == "mslk":
            es = earliest_starts(problem)
            return lst - np.array([es[t] for t in names], dtype=float)
        return lst + dmin if rule == "lft" else lst
    if rule == "spt":
        return dmin
    if rule == "lpt":
        # the longest blocks first: on nodes they book whole nodes early, and the short
        # ones fill around them (trace3' placed, 4 blocks: 67,284 against grw's 70,406)
        return -dmin
    if rule == "mts":
        import networkx as nx

        g = task_graph(problem)
        return -np.array([len(nx.descendants(g, t)) for t in names], dtype=float)
    if rule == "est":
        es = earliest_starts(problem)
        return np.array([es[t] for t in names], dtype=float)
    if rule == "grw":
        # the work a task puts on the renewables, each as a share of its capacity:
        # the big jobs of a batch first, so that they do not trail at the end
        caps = np.maximum(a.capacity, 1).astype(float)
        seg_work = (a.seg_duration[:, None] * a.seg_demand / caps).sum(axis=1)
        if a.node_names:
            # a node resource: k nodes' demand over the capacity summed over the nodes
            pooled = np.maximum(a.node_capacity.sum(axis=0), 1).astype(float)
            on = np.repeat(a.mode_nodes, np.diff(a.seg_start))
            seg_work += (a.seg_duration[:, None] * a.seg_local * on[:, None] / pooled).sum(axis=1)
        mode_work = np.add.reduceat(seg_work, a.seg_start[:-1]) if len(seg_work) else seg_work
        return -np.minimum.reduceat(mode_work, a.mode_start[:-1])
    if rule == "grpw":
        weight = dmin.copy()
        np.add.at(weight, a.prec_before, dmin[a.prec_after])
        return -weight
    raise InputError(f"unknown priority rule {rule!r}; choose one of {', '.join(RULES)}")


class Decoder:
    """Runs the compiled passes of one problem, reusing one capacity profile.

    Parameters
    ----------
    problem
        The problem; its arrays are compiled once.
    capacity
        The form of the capacity profile, ``cap.TICKS`` or ``cap.SKYLINE``; by default the
        one that suits the problem (see :func:`solvers.capacity_numba.new_capacity`).
    """

    def __init__(self, problem: Problem, capacity: int | None = None) -> None:
        self.problem = problem
        self.data: Data = compile_problem(problem)
        self.nodes, self.index = cap.new_capacity(self.data, capacity)
        self.start = np.zeros(self.data.n, dtype=np.int64)
        self.mode = np.zeros(self.data.n, dtype=np.int64)
        self.placed = np.full((self.data.n, self.data.gang_max), -1, dtype=np.int64)
        """Node numbers per task (padded with -1)."""

    def order(self, priority: np.ndarray) -> np.ndarray:
        """The activity list that takes the eligible task of least ``priority`` first."""
        return dec.keys_to_order(self.data, np.asarray(priority, dtype=np.float64), False)

    def run(
        self, order: np.ndarray, pref: np.ndarray | None = None, parallel: bool = False
    ) -> tuple[int, int]:
        """One pass over ``order`` (preferred global modes ``pref``, -1 or None: finish first).

        Fills :attr:`start`, :attr:`mode` and :attr:`placed`; returns ``(status, failed task)``.
        """
        if pref is None:
            pref = np.full(self.data.n, -1, dtype=np.int64)
        kernel = k.parallel_pass if parallel else k.serial_pass
        status, task = kernel(
            self.data,
            np.asarray(order, dtype=np.int64),
            np.asarray(pref, dtype=np.int64),
            self.start,
            self.mode,
            self.placed,
            self.nodes,
            self.index,
        )
        return int(status), int(task)

    def justify(self) -> int:
        """Forward-backward improvement of :attr:`start` / :attr:`mode`; returns passes used."""
        return int(
            dec.justify(self.data, self.start, self.mode, self.placed, self.nodes, self.index, 2)
        )

    def objective(self) -> float:
        """Objective of :attr:`start` / :attr:`mode`."""
        return float(dec.objective(self.data, self.start, self.mode))

    def schedule(self) -> Schedule:
        """:attr:`start` / :attr:`mode` as a :class:`Schedule`."""
        return to_schedule(self.problem, self.start, self.mode, self.placed)


def _pass(problem: Problem, priority: np.ndarray, parallel: bool) -> tuple[Schedule | None, str]:
    dec = Decoder(problem)
    status, task = dec.run(dec.order(priority), parallel=parallel)
    if status != OK:
        return None, failure_reason(problem, status, task)
    return dec.schedule(), ""


def serial_sgs(problem: Problem, priority: np.ndarray) -> tuple[Schedule | None, str]:
    """Serial SGS taking eligible tasks by smallest ``priority``; modes finish first.

    Returns the schedule, or ``None`` with the reason when a deadline, a budget
    or a placement cannot be met by this pass.
    """
    return _pass(problem, priority, parallel=False)


def parallel_sgs(problem: Problem, priority: np.ndarray) -> tuple[Schedule | None, str]:
    """Parallel SGS (see :func:`solvers.sgs_numba.parallel_pass`) with ties by ``priority``."""
    return _pass(problem, priority, parallel=True)


def solve_sgs(
    problem: Problem,
    *,
    rule: Rule = "lft",
    scheme: Literal["serial", "parallel"] = "serial",
    justify: bool = False,
    chains: bool = False,
    progress: Callable[[Progress], None] | None = None,
) -> Result:
    """Solve with one SGS pass under priority ``rule``.

    Parameters
    ----------
    problem
        The problem.
    rule
        The priority rule (:data:`RULES`).
    scheme
        ``"serial"`` or ``"parallel"``.
    justify
        Also run forward-backward improvement (two more passes).
    chains
        Decode the problem with each job's chain of blocks merged into one task
        (:mod:`solvers.coarse`): a job's blocks back to back in one mode on one node set,
        placed at once.
    progress
        Called once with the schedule's objective.
    """
    if scheme not in ("serial", "parallel"):
        raise InputError(f"unknown scheme {scheme!r}; choose serial or parallel")
    t0 = time.perf_counter()
    fine = problem
    coarse = coarsen(problem) if chains else None
    if coarse is not None:
        problem = coarse.problem
    dec = Decoder(problem)
    status, task = dec.run(dec.order(priorities(problem, rule)), parallel=scheme == "parallel")
    stats: dict[str, object] = {"rule": rule, "scheme": scheme, "schedules": 1}
    if chains:
        stats["merged"] = 0 if coarse is None else len(fine.tasks) - len(problem.tasks)
    if status != OK:
        reason = failure_reason(problem, status, task)
        return Result(
            "sgs", Status.UNKNOWN, runtime=time.perf_counter() - t0, reason=reason, stats=stats
        )
    if justify:
        stats["schedules"] = 1 + dec.justify()
    value = dec.objective()
    if progress is not None:
        progress(Progress(time.perf_counter() - t0, objective=value, message=f"rule {rule}"))
    schedule = dec.schedule()
    if coarse is not None:
        schedule = refine(coarse, fine, schedule)
    return Result(
        "sgs",
        Status.FEASIBLE,
        schedule,
        objective=value,
        runtime=time.perf_counter() - t0,
        stats=stats,
    )

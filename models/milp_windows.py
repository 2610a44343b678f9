"""The time windows of the MILP (:mod:`models.milp_model`): per task and mode the start
ticks a step binary is made for, from the critical path and an upper bound; the caps on
jobs' completions; and the model's size estimated before it is built, so that an
instance too large for it is refused early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from planner.arrays import FS
from planner.bounds import earliest_starts
from planner.graph import task_graph
from planner.model import Mode, Problem
from planner.models.placement import node_segments

BYTES_PER_VARIABLE = 1_200
"""Measured memory of one PuLP binary with its name, solver copy and file row."""
BYTES_PER_NONZERO = 250
"""Measured memory of one coefficient in PuLP expressions, the model file and the solver."""


@dataclass(frozen=True)
class Windows:
    """Start windows of every mode over ``[0, horizon)``.

    Attributes
    ----------
    horizon
        Every task finishes by this tick.
    earliest
        Earliest start per task.
    latest
        Latest start per global mode number (below ``earliest`` for a mode that cannot run).
    """

    horizon: int
    earliest: np.ndarray
    latest: np.ndarray

    def width(self, mode: int, task: int) -> int:
        """Number of start ticks in the window of ``mode`` (of ``task``)."""
        return max(0, int(self.latest[mode]) - int(self.earliest[task]) + 1)


def start_windows(
    problem: Problem, horizon: int, job_caps: dict[str, int] | None = None
) -> Windows:
    """Start windows of the modes for a schedule that ends by ``horizon``.

    Parameters
    ----------
    problem
        The instance (with an acyclic task graph).
    horizon
        Every task must finish by this tick.
    job_caps
        Optional latest completion per job name (for the weighted-completion objective).

    Returns
    -------
    Windows
        The earliest start per task and the latest start per mode, each mode
        bounded with its own duration.
    """
    a = problem.arrays
    es = earliest_starts(problem)
    earliest = np.array([es[t.name] for t in problem.tasks], dtype=np.int64)
    end_cap = np.full(a.n_tasks, horizon, dtype=np.int64)
    for i, t in enumerate(problem.tasks):
        if t.deadline is not None:
            end_cap[i] = min(end_cap[i], t.deadline)
        if job_caps and t.job in job_caps:
            end_cap[i] = min(end_cap[i], job_caps[t.job])
    latest = np.zeros(len(a.mode_task), dtype=np.int64)
    task_latest = np.zeros(a.n_tasks, dtype=np.int64)
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(a.n_tasks)]
    for b, f, k, lag in zip(a.prec_before, a.prec_after, a.prec_kind, a.prec_lag, strict=True):
        out[int(b)].append((int(f), int(k), int(lag)))
    index = problem.task_index
    for name in reversed(list(nx.topological_sort(task_graph(problem)))):
        i = index[name]
        finish_by, start_by = int(end_cap[i]), math.inf
        for f, kind, lag in out[i]:
            if kind == FS:
                finish_by = min(finish_by, int(task_latest[f]) - lag)
            else:
                start_by = min(start_by, int(task_latest[f]) - lag)
        modes = range(a.mode_start[i], a.mode_start[i + 1])
        for m in modes:
            latest[m] = min(finish_by - int(a.mode_duration[m]), start_by)
        task_latest[i] = max(latest[m] for m in modes)
    return Windows(horizon=horizon, earliest=earliest, latest=latest)


def job_completion_caps(problem: Problem, upper: float) -> dict[str, int]:
    """Latest completion per job of any schedule whose weighted completion is at most ``upper``.

    Every other job finishes no earlier than its critical-path bound, so job
    ``k`` finishes by ``(upper - sum of the others' weight x bound) / weight_k``.
    """
    es = earliest_starts(problem)
    least: dict[str, int] = {}
    for t in problem.tasks:
        if t.job is not None:
            least[t.job] = max(least.get(t.job, 0), es[t.name] + t.min_duration)
    weight = {j.name: j.weight for j in problem.jobs}
    total = sum(weight[j] * c for j, c in least.items())
    return {
        j: math.floor((upper - total + weight[j] * c) / weight[j] + 1e-9) for j, c in least.items()
    }


@dataclass(frozen=True)
class SizeEstimate:
    """Size of the model before it is built."""

    variables: int
    nonzeros: int

    @property
    def memory_gb(self) -> float:
        """Estimated peak memory in GB while building and solving."""
        return (self.variables * BYTES_PER_VARIABLE + self.nonzeros * BYTES_PER_NONZERO) / 1e9


def estimate_size(problem: Problem, windows: Windows) -> SizeEstimate:
    """Count the start variables and bound the nonzeros of the model (without building it)."""
    a = problem.arrays
    width = np.array(
        [windows.width(m, int(a.mode_task[m])) for m in range(len(a.mode_task))], dtype=np.int64
    )
    variables = int(width.sum())
    per_task = np.add.reduceat(width, a.mode_start[:-1]) if len(width) else width
    # each start appears in the assignment row, in one resource row per demanded tick,
    # in the budget rows and once per objective row
    ticks = np.zeros(len(a.mode_task), dtype=np.int64)
    for m in range(len(a.mode_task)):
        segs = slice(a.seg_start[m], a.seg_start[m + 1])
        ticks[m] = int((a.seg_duration[segs] * (a.seg_demand[segs] > 0).sum(axis=1)).sum())
    nonzeros = int((width * (2 + ticks + a.mode_consumption.shape[1])).sum())
    for m in range(len(a.mode_task)):
        mode = mode_of(problem, m)
        if mode.nodes and width[m]:
            # per node: a step binary per start tick, in its gang, link and stay rows and
            # on and off in the rows of every tick and kind its segments demand
            busy = sum(2 * g.duration * len(g.demand) for g in node_segments(problem, mode))
            nodes = len(problem.holding_nodes(mode))
            variables += int(width[m]) * nodes
            nonzeros += int(width[m]) * nodes * (4 + busy)
    # a precedence row per start tick of ``after``, each with at most both tasks' starts
    for b, f in zip(a.prec_before, a.prec_after, strict=True):
        rows = int(per_task[f]) // max(1, int(a.mode_start[f + 1] - a.mode_start[f]))
        nonzeros += rows * int(per_task[f] + per_task[b])
    return SizeEstimate(variables=variables, nonzeros=nonzeros)


def mode_of(problem: Problem, m: int) -> Mode:
    """The mode of global number ``m``."""
    a = problem.arrays
    i = int(a.mode_task[m])
    return problem.tasks[i].modes[m - int(a.mode_start[i])]

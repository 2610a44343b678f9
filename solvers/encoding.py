"""Flat arrays of a problem for the compiled heuristics, and the way back to a Schedule.

A heuristic works on an *activity list* (a precedence-feasible order of the
task numbers) and a *mode list* (a global mode number per task, or -1 for "the
mode that finishes first"). :func:`compile_problem` turns a
:class:`~planner.model.Problem` into a :class:`Data` tuple of numpy arrays that
the numba kernels of :mod:`solvers.sgs_numba` read; :func:`to_schedule` turns
their start and mode arrays back into a :class:`~planner.schedule.Schedule`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from planner.arrays import FAIL_DEADLINE
from planner.bounds import horizon
from planner.errors import PlannerError
from planner.model import Problem
from planner.schedule import Schedule

MAKESPAN, WEIGHTED = 0, 1
"""Objective codes."""

EDGE_TASK, EDGE_KIND, EDGE_LAG = 0, 1, 2
"""Columns of the predecessor and successor tables: the other task, ``FS`` or ``SS``
(:mod:`planner.arrays`), the lag."""
TASK_RELEASE, TASK_DEADLINE, TASK_JOB, TASK_COLOCATED = 0, 1, 2, 3
"""Columns of the task table; the deadline is -1 where a task has none, the job -1 for
none, ``TASK_COLOCATED`` 1 where the task's job is colocated."""
MODE_DURATION, MODE_FITS, MODE_PLACEMENT, MODE_EXTRA = 0, 1, 2, 3
"""Columns of the mode table: duration; 1 where every segment fits the base capacity
(the capacity after all windows); placement key, -1 for none; from ``MODE_EXTRA`` on,
the use of each budget above the task's least use."""
SEG_DURATION, SEG_OFFSET, SEG_ACTIVE, SEG_DEMAND = 0, 1, 2, 3
"""Columns of the segment table: duration; offset from the mode's start; 1 where the
segment takes time and demands something; from ``SEG_DEMAND`` on, the demand per
renewable resource."""


class Data(NamedTuple):
    """The tables the kernels read (int64 unless noted), in the vocabulary of
    :class:`~planner.arrays.ProblemArrays`: the modes of task ``i`` are
    ``mode_start[i]:mode_start[i + 1]``, the segments of mode ``m`` are
    ``seg_start[m]:seg_start[m + 1]``, the predecessor edges of task ``i`` are
    ``pred_ptr[i]:pred_ptr[i + 1]``. Columns are named by the constants above."""

    n: int
    n_res: int
    objective: int
    horizon: int
    pred_ptr: np.ndarray
    pred: np.ndarray
    """Shape ``(E, 3)``."""
    succ_ptr: np.ndarray
    succ: np.ndarray
    """Shape ``(E, 3)``."""
    task: np.ndarray
    """Shape ``(n, 4)``."""
    mode_start: np.ndarray
    mode: np.ndarray
    """Shape ``(M, 3 + N)``."""
    seg_start: np.ndarray
    seg: np.ndarray
    """Shape ``(S, 3 + R)``."""
    capacity: np.ndarray
    """Base capacity per renewable resource."""
    profile: np.ndarray
    """Shape ``(R, W)``: capacity per tick up to the end ``W`` of the last window."""
    slack: np.ndarray
    """Budget left once every task uses its least: the room that mode choices share."""
    job_colocate: np.ndarray
    job_weight: np.ndarray
    """float64."""

    @property
    def mode_duration(self) -> np.ndarray:
        """Duration per mode."""
        return self.mode[:, MODE_DURATION]


def _csr(n: int, owner: np.ndarray, *cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge table grouped by ``owner``: the pointers and the columns, stacked."""
    order = np.argsort(owner, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, owner + 1, 1)
    table = np.stack([c[order] for c in cols], axis=1) if len(owner) else np.zeros((0, 3))
    return np.cumsum(ptr), np.ascontiguousarray(table, dtype=np.int64)


def compile_problem(problem: Problem) -> Data:
    """Tables of ``problem`` for the kernels.

    Raises
    ------
    PlannerError
        If a task has no mode that fits the base capacity.
    """
    a = problem.arrays
    n = a.n_tasks
    i64 = np.int64
    pred_ptr, pred = _csr(n, a.prec_after, a.prec_before, a.prec_kind, a.prec_lag)
    succ_ptr, succ = _csr(n, a.prec_before, a.prec_after, a.prec_kind, a.prec_lag)

    n_modes = len(a.mode_duration)
    active = (a.seg_duration > 0) & (a.seg_demand.sum(axis=1) > 0)
    too_big = ((a.seg_demand > a.capacity[None, :]).any(axis=1) & (a.seg_duration > 0)).astype(i64)
    seg_mode = np.repeat(np.arange(n_modes), np.diff(a.seg_start))
    bad = np.zeros(n_modes, dtype=i64)
    np.add.at(bad, seg_mode, too_big)
    fits = bad == 0
    n_budget = len(a.budget)
    cons = a.mode_consumption.astype(i64).reshape(n_modes, n_budget)
    least = np.zeros((n, n_budget), dtype=i64)
    for i in range(n):
        lo, hi = a.mode_start[i], a.mode_start[i + 1]
        ok = fits[lo:hi]
        if not ok.any():
            raise PlannerError(
                f"task {problem.tasks[i].name!r}: no mode fits the capacity left after all windows"
            )
        least[i] = cons[lo:hi][ok].min(axis=0)
    last_window = max((e for ws in a.windows for _, e, _ in ws), default=0)
    colocated = np.array([j >= 0 and bool(a.job_colocate[j]) for j in a.task_job], dtype=i64)
    mode = np.column_stack(
        [a.mode_duration, fits, a.mode_placement, cons - least[a.mode_task]]
    ).astype(i64)
    seg = np.column_stack(
        [a.seg_duration, a.seg_offset, active, a.seg_demand.reshape(len(a.seg_duration), -1)]
    ).astype(i64)
    return Data(
        n=n,
        n_res=a.n_resources,
        objective=WEIGHTED if problem.objective == "weighted_completion" else MAKESPAN,
        horizon=horizon(problem),
        pred_ptr=pred_ptr,
        pred=pred,
        succ_ptr=succ_ptr,
        succ=succ,
        task=np.ascontiguousarray(
            np.column_stack([a.release, a.deadline, a.task_job, colocated]), dtype=i64
        ),
        mode_start=a.mode_start.astype(i64),
        mode=np.ascontiguousarray(mode),
        seg_start=a.seg_start.astype(i64),
        seg=np.ascontiguousarray(seg),
        capacity=a.capacity.astype(i64),
        profile=np.ascontiguousarray(a.capacity_profile(max(last_window, 1)), dtype=i64),
        slack=(a.budget - least.sum(axis=0)).astype(i64),
        job_colocate=a.job_colocate.astype(i64),
        job_weight=a.job_weight.astype(np.float64),
    )


def to_schedule(problem: Problem, start: np.ndarray, mode: np.ndarray) -> Schedule:
    """The :class:`Schedule` of start ticks and global mode numbers per task."""
    first = problem.arrays.mode_start
    return Schedule(
        modes={t.name: t.modes[int(mode[i] - first[i])].name for i, t in enumerate(problem.tasks)},
        starts={t.name: int(start[i]) for i, t in enumerate(problem.tasks)},
    )


def failure_reason(problem: Problem, status: int, task: int) -> str:
    """A sentence for a pass that ended with ``status`` at task number ``task``."""
    name = problem.tasks[task].name
    if status == FAIL_DEADLINE:
        return f"task {name!r} would finish after its deadline {problem.tasks[task].deadline}"
    return f"no mode of task {name!r} keeps the budgets reachable and the placement consistent"


def check_activity_list(data: Data, order: np.ndarray) -> None:
    """Raise ``PlannerError`` unless ``order`` is a precedence-feasible permutation."""
    n = data.n
    if sorted(order.tolist()) != list(range(n)):
        raise PlannerError("an activity list must hold every task exactly once")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    after = np.repeat(np.arange(n), np.diff(data.pred_ptr))
    if (pos[data.pred[:, EDGE_TASK]] > pos[after]).any():
        raise PlannerError("the activity list puts a task before one of its predecessors")

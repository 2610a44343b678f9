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

from planner.arrays import FS
from planner.bounds import horizon
from planner.errors import PlannerError
from planner.model import Problem
from planner.schedule import Schedule

OK, FAIL_MODE, FAIL_DEADLINE = 0, 1, 2
"""Outcome codes of a schedule-generation pass."""

MAKESPAN, WEIGHTED = 0, 1
"""Objective codes."""


class Data(NamedTuple):
    """The arrays the kernels read (all int64 unless noted)."""

    n: int
    n_res: int
    objective: int
    horizon: int
    pred_ptr: np.ndarray
    """Predecessor edges of task ``i``: ``pred_ptr[i]:pred_ptr[i + 1]``."""
    pred_idx: np.ndarray
    pred_fs: np.ndarray
    """1 for a finish-to-start edge, 0 for start-to-start."""
    pred_lag: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    succ_fs: np.ndarray
    succ_lag: np.ndarray
    mode_start: np.ndarray
    mode_dur: np.ndarray
    mode_extra: np.ndarray
    """Shape ``(M, N)``: use of each budget above the task's least use."""
    mode_key: np.ndarray
    """Placement key per mode, -1 for none."""
    mode_ok: np.ndarray
    """1 where every segment fits the base capacity (the capacity after all windows)."""
    seg_start: np.ndarray
    seg_dur: np.ndarray
    seg_off: np.ndarray
    seg_dem: np.ndarray
    """Shape ``(S, R)``."""
    seg_any: np.ndarray
    """1 where the segment takes time and demands something."""
    cap: np.ndarray
    """Base capacity per renewable resource."""
    profile: np.ndarray
    """Shape ``(R, W)``: capacity per tick up to the end ``W`` of the last window."""
    slack: np.ndarray
    """Budget left once every task uses its least: the room that mode choices share."""
    release: np.ndarray
    deadline: np.ndarray
    """-1 where a task has no deadline."""
    task_job: np.ndarray
    job_colocate: np.ndarray
    task_colo: np.ndarray
    """1 where the task belongs to a colocated job."""
    job_weight: np.ndarray
    """float64."""


def _csr(n: int, owner: np.ndarray, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    order = np.argsort(owner, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, owner + 1, 1)
    return (np.cumsum(ptr), *(np.ascontiguousarray(c[order], dtype=np.int64) for c in cols))


def compile_problem(problem: Problem) -> Data:
    """Arrays of ``problem`` for the kernels.

    Raises
    ------
    PlannerError
        If a task has no mode that fits the base capacity.
    """
    a = problem.arrays
    n = a.n_tasks
    i64 = np.int64
    before = a.prec_before.astype(i64)
    after = a.prec_after.astype(i64)
    fs = (a.prec_kind == FS).astype(i64)
    lag = a.prec_lag.astype(i64)
    pred_ptr, pred_idx, pred_fs, pred_lag = _csr(n, after, before, fs, lag)
    succ_ptr, succ_idx, succ_fs, succ_lag = _csr(n, before, after, fs, lag)

    n_modes = len(a.mode_duration)
    seg_any = ((a.seg_duration > 0) & (a.seg_demand.sum(axis=1) > 0)).astype(i64)
    too_big = ((a.seg_demand > a.capacity[None, :]).any(axis=1) & (a.seg_duration > 0)).astype(i64)
    seg_mode = np.repeat(np.arange(n_modes), np.diff(a.seg_start))
    bad = np.zeros(n_modes, dtype=i64)
    np.add.at(bad, seg_mode, too_big)
    mode_ok = (bad == 0).astype(i64)
    n_budget = len(a.budget)
    cons = a.mode_consumption.astype(i64).reshape(n_modes, n_budget)
    least = np.zeros((n, n_budget), dtype=i64)
    for i in range(n):
        lo, hi = a.mode_start[i], a.mode_start[i + 1]
        ok = mode_ok[lo:hi] == 1
        if not ok.any():
            raise PlannerError(
                f"task {problem.tasks[i].name!r}: no mode fits the capacity left after all windows"
            )
        least[i] = cons[lo:hi][ok].min(axis=0)
    last_window = max((e for ws in a.windows for _, e, _ in ws), default=0)
    return Data(
        n=n,
        n_res=a.n_resources,
        objective=WEIGHTED if problem.objective == "weighted_completion" else MAKESPAN,
        horizon=horizon(problem),
        pred_ptr=pred_ptr,
        pred_idx=pred_idx,
        pred_fs=pred_fs,
        pred_lag=pred_lag,
        succ_ptr=succ_ptr,
        succ_idx=succ_idx,
        succ_fs=succ_fs,
        succ_lag=succ_lag,
        mode_start=a.mode_start.astype(i64),
        mode_dur=a.mode_duration.astype(i64),
        mode_extra=cons - least[a.mode_task],
        mode_key=a.mode_placement.astype(i64),
        mode_ok=mode_ok,
        seg_start=a.seg_start.astype(i64),
        seg_dur=a.seg_duration.astype(i64),
        seg_off=a.seg_offset.astype(i64),
        seg_dem=np.ascontiguousarray(a.seg_demand, dtype=i64).reshape(
            len(a.seg_duration), a.n_resources
        ),
        seg_any=seg_any,
        cap=a.capacity.astype(i64),
        profile=a.capacity_profile(max(last_window, 1)).astype(i64),
        slack=(a.budget - least.sum(axis=0)).astype(i64),
        release=a.release.astype(i64),
        deadline=a.deadline.astype(i64),
        task_job=a.task_job.astype(i64),
        job_colocate=a.job_colocate.astype(i64),
        task_colo=np.array([j >= 0 and bool(a.job_colocate[j]) for j in a.task_job], dtype=i64),
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
    if (pos[data.pred_idx] > pos[after]).any():
        raise PlannerError("the activity list puts a task before one of its predecessors")

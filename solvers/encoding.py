"""Flat arrays of a problem for the compiled heuristics, and the way back to a Schedule.

A heuristic works on an *activity list* (a precedence-feasible order of the
task numbers) and a *mode list* (a global mode number per task, or -1 for "the
mode that finishes first"). :func:`compile_problem` turns a
:class:`~planner.model.Problem` into a :class:`Data` tuple of numpy arrays that
the numba kernels of :mod:`solvers.sgs_numba` read; :func:`to_schedule` turns
their start and mode arrays back into a :class:`~planner.schedule.Schedule`.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np

from planner.arrays import FAIL_DEADLINE, ProblemArrays
from planner.bounds import horizon
from planner.errors import InputError, PlannerError
from planner.model import Problem
from planner.schedule import Schedule

MAKESPAN, WEIGHTED, ENERGY, COST = 0, 1, 2, 3
"""Objective codes."""

EDGE_TASK, EDGE_KIND, EDGE_LAG = 0, 1, 2
"""Columns of the predecessor and successor tables: the other task, ``FS`` or ``SS``
(:mod:`planner.arrays`), the lag."""
TASK_RELEASE, TASK_DEADLINE, TASK_JOB, TASK_COLOCATED = 0, 1, 2, 3
"""Columns of the task table; the deadline is -1 where a task has none, the job -1 for
none, ``TASK_COLOCATED`` 1 where the task's job is colocated."""
MODE_DURATION, MODE_FITS, MODE_PLACEMENT, MODE_GANG, MODE_NODE_TYPE, MODE_FOLLOW, MODE_EXTRA = (
    range(7)
)
"""Columns of the mode table: duration; 1 where every segment fits the base capacity
(and, for a mode on nodes, enough nodes of its type hold its demand per node);
placement key, -1 for none; the number of nodes it runs on (0: none); the type id
its nodes must have, -1 for any; the task whose node set it keeps, -1 for none; from
``MODE_EXTRA`` on, the use of each budget above the task's least use."""
SEG_DURATION, SEG_OFFSET, SEG_ACTIVE, SEG_DEMAND = 0, 1, 2, 3
"""Columns of the segment table: duration; offset from the mode's start; 1 where the
segment takes time and demands something; from ``SEG_DEMAND`` on, the demand per
cluster-wide renewable resource (``n_glob`` columns), then per node resource kind
(``n_kind`` columns, the demand on each node of the set)."""


class Data(NamedTuple):
    """The tables the kernels read (int64 unless noted), in the vocabulary of
    :class:`~planner.arrays.ProblemArrays`: the modes of task ``i`` are
    ``mode_start[i]:mode_start[i + 1]``, the segments of mode ``m`` are
    ``seg_start[m]:seg_start[m + 1]``, the predecessor edges of task ``i`` are
    ``pred_ptr[i]:pred_ptr[i + 1]``. Columns are named by the constants above.

    The capacity columns are the ``n_glob`` cluster-wide renewables, then, per node
    ``v``, its ``n_kind`` node resources at columns ``n_glob + v * n_kind + l``."""

    n: int
    n_res: int
    """Capacity columns: ``n_glob + n_node * n_kind``."""
    n_glob: int
    n_kind: int
    n_node: int
    gang_max: int
    """The most nodes any mode runs on (at least 1): the width of node-set arrays."""
    node_type: np.ndarray
    """Type id per node, -1 for none."""
    pin: np.ndarray
    """Shape ``(M, gang_max)``: the node numbers a mode is pinned to, padded with -1."""
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
    """Shape ``(M, MODE_EXTRA + budgets)``."""
    seg_start: np.ndarray
    seg: np.ndarray
    """Shape ``(S, 3 + n_glob + n_kind)``."""
    capacity: np.ndarray
    """Base capacity per capacity column."""
    profile: np.ndarray
    """Shape ``(n_res, W)``: capacity per tick up to the end ``W`` of the last window."""
    slack: np.ndarray
    """Budget left once every task uses its least: the room that mode choices share."""
    job_colocate: np.ndarray
    job_weight: np.ndarray
    """float64."""
    mode_energy: np.ndarray
    """float64, per mode: its draw above idle in kWh (objective ``energy``; else zeros)."""
    over: float
    """kWh per tick of makespan: the idle draw and ``makespan_watts`` (objectives
    ``energy`` and ``cost``, which prices it by the tariff; else 0)."""
    seg_watts: np.ndarray
    """float64, per segment: its draw above idle in kWh per tick (objective ``cost``; else
    zeros)."""
    tariff: np.ndarray
    """float64: the tariff's price and period (0: none) (objective ``cost``; else zeros)."""
    price_windows: np.ndarray
    """float64, shape ``(K, 3)``: the tariff's windows, start, end and price."""

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
    active = (a.seg_duration > 0) & (a.seg_demand.sum(axis=1) + a.seg_local.sum(axis=1) > 0)
    too_big = ((a.seg_demand > a.capacity[None, :]).any(axis=1) & (a.seg_duration > 0)).astype(i64)
    seg_mode = np.repeat(np.arange(n_modes), np.diff(a.seg_start))
    bad = np.zeros(n_modes, dtype=i64)
    np.add.at(bad, seg_mode, too_big)
    fits = (bad == 0) & _enough_nodes(a, seg_mode)
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
        [
            a.mode_duration,
            fits,
            a.mode_placement,
            a.mode_nodes,
            a.mode_node_type,
            a.mode_follow,
            cons - least[a.mode_task],
        ]
    ).astype(i64)
    n_seg = len(a.seg_duration)
    seg = np.column_stack(
        [
            a.seg_duration,
            a.seg_offset,
            active,
            a.seg_demand.reshape(n_seg, -1),
            a.seg_local.reshape(n_seg, -1),
        ]
    ).astype(i64)
    width = max(last_window, 1)
    gang_max = max(1, int(a.mode_nodes.max(initial=0)))
    pin = np.full((n_modes, gang_max), -1, dtype=i64)
    for m, nodes in enumerate(a.mode_pin):
        pin[m, : len(nodes)] = nodes
    node_caps = a.node_capacity.reshape(-1)
    capacity = np.concatenate([a.capacity, node_caps]).astype(i64)
    profile = np.concatenate(
        [a.capacity_profile(width), np.repeat(node_caps[:, None], width, axis=1)]
    )
    return Data(
        n=n,
        n_res=len(capacity),
        n_glob=a.n_resources,
        n_kind=len(a.node_kinds),
        n_node=len(a.node_names),
        gang_max=gang_max,
        pin=pin,
        node_type=a.node_type.astype(i64),
        objective=OBJECTIVES[problem.objective],
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
        capacity=capacity,
        profile=np.ascontiguousarray(profile, dtype=i64),
        slack=(a.budget - least.sum(axis=0)).astype(i64),
        job_colocate=a.job_colocate.astype(i64),
        job_weight=a.job_weight.astype(np.float64),
        **_energy(problem),
    )


def least_energy_modes(d: Data) -> np.ndarray:
    """Per task, its global mode of least draw (objectives energy and cost: the mode's
    draw above idle, its segments' draw times their durations); the first mode where all
    draw alike."""
    energy = d.mode_energy.copy()
    if d.objective == COST:
        seg_mode = np.repeat(np.arange(len(d.seg_start) - 1), np.diff(d.seg_start))
        np.add.at(energy, seg_mode, d.seg_watts * d.seg[:, SEG_DURATION])
    return np.array(
        [a + int(np.argmin(energy[a:b])) for a, b in itertools.pairwise(d.mode_start)],
        dtype=np.int64,
    )


OBJECTIVES = {
    "makespan": MAKESPAN,
    "weighted_completion": WEIGHTED,
    "energy": ENERGY,
    "cost": COST,
}


def _energy(problem: Problem) -> dict[str, Any]:
    """The kernels' energy figures: per mode its draw above idle, per tick of makespan the
    idle draw and ``makespan_watts``, in kWh (objective energy); per segment its draw and
    the tariff (objective cost); zeros for the others."""
    n_modes = sum(len(t.modes) for t in problem.tasks)
    n_segs = sum(len(m.segments) for t in problem.tasks for m in t.modes)
    out: dict[str, Any] = {
        "mode_energy": np.zeros(n_modes),
        "over": 0.0,
        "seg_watts": np.zeros(n_segs),
        "tariff": np.zeros(2),
        "price_windows": np.zeros((0, 3)),
    }
    if problem.objective == "energy":
        from planner.metrics import energy_terms

        per, over = energy_terms(problem)
        out.update(mode_energy=np.array([e for row in per for e in row]), over=over)
    elif problem.objective == "cost" and problem.tariff is not None:
        from planner.metrics import idle_watts, power_figures, segment_draw
        from planner.times import tick_seconds

        kwh = tick_seconds(problem.time_unit) / 3.6e6
        figures = power_figures(problem)
        watts = [
            segment_draw(problem, seg, [m.node_type] * m.nodes, figures) * kwh
            for t in problem.tasks
            for m in t.modes
            for seg in m.segments
        ]
        tariff = problem.tariff
        out.update(
            over=(idle_watts(problem, figures) + problem.makespan_watts) * kwh,
            seg_watts=np.array(watts),
            tariff=np.array([tariff.price, float(tariff.period or 0)]),
            price_windows=np.array(
                [[w.start, w.end, w.price] for w in tariff.windows], dtype=np.float64
            ).reshape(-1, 3),
        )
    return out


def _enough_nodes(a: ProblemArrays, seg_mode: np.ndarray) -> np.ndarray:
    """Per mode: whether enough nodes of its type hold its demand per node (True off nodes)."""
    out = np.ones(len(a.mode_duration), dtype=bool)
    if not len(a.node_names):
        return out
    peak = np.zeros((len(a.mode_duration), len(a.node_kinds)), dtype=np.int64)
    timed = a.seg_duration > 0
    np.maximum.at(peak, seg_mode[timed], a.seg_local[timed])
    for m in np.flatnonzero(a.mode_nodes):
        typed = (a.mode_node_type[m] < 0) | (a.node_type == a.mode_node_type[m])
        if a.mode_pin[m]:
            typed &= np.isin(np.arange(len(a.node_names)), a.mode_pin[m])
        hold = typed & (a.node_capacity >= peak[m]).all(axis=1)
        out[m] = hold.sum() >= a.mode_nodes[m]
    return out


def to_schedule(
    problem: Problem, start: np.ndarray, mode: np.ndarray, placed: np.ndarray | None = None
) -> Schedule:
    """The :class:`Schedule` of start ticks, global mode numbers and node sets per task.

    ``placed`` holds, per task, node numbers padded with -1 (shape ``(n, gang_max)``).
    """
    a = problem.arrays
    first = a.mode_start
    nodes: dict[str, tuple[str, ...]] = {}
    if placed is not None and a.node_names:
        for i, t in enumerate(problem.tasks):
            if a.mode_nodes[mode[i]]:
                nodes[t.name] = tuple(a.node_names[v] for v in placed[i] if v >= 0)
    return Schedule(
        modes={t.name: t.modes[int(mode[i] - first[i])].name for i, t in enumerate(problem.tasks)},
        starts={t.name: int(start[i]) for i, t in enumerate(problem.tasks)},
        nodes=nodes,
    )


def schedule_lists(problem: Problem, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """A schedule as decoder input: start keys per task (ties by task order: the order
    the serial SGS follows) and the global mode number of each task's mode.

    Raises
    ------
    InputError
        If the schedule misses a task of ``problem`` or names a mode it does not have.
    """
    first = problem.arrays.mode_start
    keys = np.empty(len(problem.tasks), dtype=np.float64)
    modes = np.empty(len(problem.tasks), dtype=np.int64)
    for i, t in enumerate(problem.tasks):
        if t.name not in schedule.starts or t.name not in schedule.modes:
            raise InputError(f"initial_solution: no start or mode for task {t.name!r}")
        names = [m.name for m in t.modes]
        if schedule.modes[t.name] not in names:
            raise InputError(
                f"initial_solution: task {t.name!r} has no mode {schedule.modes[t.name]!r}"
            )
        keys[i] = schedule.starts[t.name]
        modes[i] = first[i] + names.index(schedule.modes[t.name])
    return keys, modes


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

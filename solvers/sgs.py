"""Serial schedule generation with a priority rule, over the complete model.

Tasks are taken one at a time, the eligible task (all predecessors scheduled)
with the best priority first, and started at the earliest tick at which every
tick of every segment fits the capacity left, after its release and its
predecessors' finish or start plus lags. For a task with several modes, the
mode that finishes first is chosen among those that keep the non-renewable
budgets reachable and the job's placement consistent.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from planner.arrays import FS, ProblemArrays
from planner.bounds import latest_starts
from planner.model import Problem
from planner.result import Result, Status
from planner.schedule import Schedule

RULES = ("lft", "lst", "spt", "mts", "est")
"""Priority rules: latest finish, latest start, shortest processing time,
most total successors, earliest start (all with ties broken by task order)."""


def priorities(problem: Problem, rule: str) -> np.ndarray:
    """Priority value per task for ``rule``; smaller is scheduled first."""
    a = problem.arrays
    dmin = a.min_duration()
    if rule in ("lft", "lst"):
        horizon = int(a.release.max() + problem_sum_max_durations(a) + a.prec_lag.sum())
        ls = latest_starts(problem, horizon)
        lst = np.array([ls[t.name] for t in problem.tasks], dtype=float)
        return lst + dmin if rule == "lft" else lst
    if rule == "spt":
        return dmin.astype(float)
    if rule == "mts":
        import networkx as nx

        g = problem.graph()
        return -np.array([len(nx.descendants(g, t.name)) for t in problem.tasks], dtype=float)
    if rule == "est":
        from planner.bounds import earliest_starts

        es = earliest_starts(problem)
        return np.array([es[t.name] for t in problem.tasks], dtype=float)
    raise ValueError(f"unknown priority rule {rule!r}; choose one of {', '.join(RULES)}")


def problem_sum_max_durations(a: ProblemArrays) -> int:
    """Sum over tasks of the longest mode: a makespan no serial schedule needs to pass."""
    return int(np.maximum.reduceat(a.mode_duration, a.mode_start[:-1]).sum())


class _Availability:
    """Capacity left per renewable resource and tick, grown on demand."""

    def __init__(self, a: ProblemArrays, horizon: int) -> None:
        self.a = a
        self.left = a.capacity_profile(max(horizon, 1))
        self.last_window = max((e for ws in a.windows for _, e, _ in ws), default=0)

    def ensure(self, end: int) -> None:
        size = self.left.shape[1]
        if end > size:
            grown = self.a.capacity_profile(max(end, 2 * size))
            grown[:, :size] = self.left
            self.left = grown

    def earliest_fit(self, mode: int, est: int) -> int | None:
        """Earliest start >= ``est`` at which every segment of ``mode`` fits; None if never."""
        a = self.a
        segs = range(a.seg_start[mode], a.seg_start[mode + 1])
        t = est
        while True:
            moved = False
            for s in segs:
                dur = int(a.seg_duration[s])
                need = a.seg_demand[s]
                if dur == 0 or not need.any():
                    continue
                if (need > a.capacity).any() and t + a.seg_offset[s] >= self.last_window:
                    return None
                lo = t + int(a.seg_offset[s])
                self.ensure(lo + dur)
                bad = np.nonzero((self.left[:, lo : lo + dur] < need[:, None]).any(axis=0))[0]
                if bad.size:
                    t = lo + int(bad[-1]) + 1 - int(a.seg_offset[s])
                    moved = True
                    break
            if not moved:
                return t

    def book(self, mode: int, start: int) -> None:
        a = self.a
        for s in range(a.seg_start[mode], a.seg_start[mode + 1]):
            lo = start + int(a.seg_offset[s])
            self.left[:, lo : lo + int(a.seg_duration[s])] -= a.seg_demand[s][:, None]


def serial_sgs(problem: Problem, priority: np.ndarray) -> tuple[Schedule | None, str]:
    """Build a schedule taking eligible tasks by smallest ``priority``.

    Returns the schedule, or ``None`` with the reason when a deadline, a budget
    or a placement cannot be met by this pass.
    """
    a = problem.arrays
    n = a.n_tasks
    preds: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for b, f, k, lag in zip(a.prec_before, a.prec_after, a.prec_kind, a.prec_lag, strict=True):
        preds[f].append((int(b), int(k), int(lag)))
        succs[b].append(int(f))
    waiting = np.array([len(p) for p in preds])
    horizon = int(a.release.max()) + problem_sum_max_durations(a) + int(a.prec_lag.sum())
    avail = _Availability(a, horizon)
    min_use = np.array(
        [a.mode_consumption[a.mode_start[i] : a.mode_start[i + 1]].min(axis=0) for i in range(n)]
    ).reshape(n, len(a.budget))
    budget_left = a.budget - min_use.sum(axis=0)
    placement = {}
    start = np.zeros(n, dtype=np.int64)
    finish = np.zeros(n, dtype=np.int64)
    chosen = np.full(n, -1, dtype=np.int64)
    eligible = [i for i in range(n) if waiting[i] == 0]
    for _ in range(n):
        i = min(eligible, key=lambda t: (priority[t], t))
        eligible.remove(i)
        est = int(a.release[i])
        for b, k, lag in preds[i]:
            est = max(est, int((finish[b] if k == FS else start[b]) + lag))
        best: tuple[int, int, int] | None = None
        job = int(a.task_job[i])
        for m in range(a.mode_start[i], a.mode_start[i + 1]):
            extra = a.mode_consumption[m] - min_use[i]
            if (extra > budget_left).any():
                continue
            key = int(a.mode_placement[m])
            if job >= 0 and a.job_colocate[job] and key >= 0 and placement.get(job, key) != key:
                continue
            s = avail.earliest_fit(m, est)
            if s is not None and (best is None or s + a.mode_duration[m] < best[0]):
                best = (int(s + a.mode_duration[m]), int(s), m)
        name = problem.tasks[i].name
        if best is None:
            return None, f"no mode of task {name!r} fits the budgets, placement and capacity"
        end, s, m = best
        if a.deadline[i] >= 0 and end > a.deadline[i]:
            return None, f"task {name!r} would finish at {end}, after its deadline {a.deadline[i]}"
        avail.book(m, s)
        budget_left -= a.mode_consumption[m] - min_use[i]
        if job >= 0 and a.mode_placement[m] >= 0:
            placement.setdefault(job, int(a.mode_placement[m]))
        start[i], finish[i], chosen[i] = s, end, m
        for f in succs[i]:
            waiting[f] -= 1
            if waiting[f] == 0:
                eligible.append(f)
    modes = {
        t.name: t.modes[int(chosen[i] - a.mode_start[i])].name for i, t in enumerate(problem.tasks)
    }
    starts = {t.name: int(start[i]) for i, t in enumerate(problem.tasks)}
    return Schedule(modes=modes, starts=starts), ""


def solve_sgs(
    problem: Problem,
    rule: str = "lft",
    progress: Callable[[str], None] | None = None,
    **_: object,
) -> Result:
    """Solve with one serial SGS pass under priority ``rule``."""
    t0 = time.perf_counter()
    schedule, why = serial_sgs(problem, priorities(problem, rule))
    runtime = time.perf_counter() - t0
    if schedule is None:
        return Result("sgs", Status.UNKNOWN, runtime=runtime, stats={"reason": why, "rule": rule})
    value = schedule.objective(problem)
    return Result(
        "sgs", Status.FEASIBLE, schedule, objective=value, runtime=runtime, stats={"rule": rule}
    )

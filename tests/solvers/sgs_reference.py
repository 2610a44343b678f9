"""Plain-Python serial and parallel SGS: the oracle the compiled kernels are tested against.

Written for clarity, not speed: capacity is a dictionary of booked load per
resource and tick, and the earliest start is found by trying one tick after
another. It reads :class:`~planner.arrays.ProblemArrays` directly and follows
the mode-choice rule stated in :mod:`solvers.sgs_numba`.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from planner.arrays import FAIL_DEADLINE, FAIL_MODE, FS, OK
from planner.model import Problem


class _State:
    def __init__(self, problem: Problem) -> None:
        a = problem.arrays
        self.a = a
        self.load: defaultdict[tuple[int, int], int] = defaultdict(int)
        n = a.n_tasks
        fits = [
            all(
                a.seg_duration[s] == 0 or (a.seg_demand[s] <= a.capacity).all()
                for s in range(a.seg_start[m], a.seg_start[m + 1])
            )
            for m in range(len(a.mode_duration))
        ]
        self.fits = fits
        self.least = [
            np.min(
                [
                    a.mode_consumption[m]
                    for m in range(a.mode_start[i], a.mode_start[i + 1])
                    if fits[m]
                ],
                axis=0,
            )
            if len(a.budget)
            else np.zeros(0, dtype=np.int64)
            for i in range(n)
        ]
        self.left = a.budget - np.sum(self.least, axis=0) if len(a.budget) else a.budget.copy()
        self.job_key: dict[int, int] = {}
        self.start: dict[int, int] = {}
        self.mode: dict[int, int] = {}
        self.preds: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for b, f, k, lag in zip(a.prec_before, a.prec_after, a.prec_kind, a.prec_lag, strict=True):
            self.preds[int(f)].append((int(b), int(k), int(lag)))

    def capacity(self, r: int, t: int) -> int:
        for lo, hi, cap in self.a.windows[r]:
            if lo <= t < hi:
                return cap
        return int(self.a.capacity[r])

    def fits_at(self, m: int, t: int) -> bool:
        a = self.a
        for s in range(a.seg_start[m], a.seg_start[m + 1]):
            lo = t + int(a.seg_offset[s])
            for tick in range(lo, lo + int(a.seg_duration[s])):
                for r in range(a.n_resources):
                    q = int(a.seg_demand[s, r])
                    if q and self.load[r, tick] + q > self.capacity(r, tick):
                        return False
        return True

    def earliest(self, m: int, est: int) -> int:
        t = est
        while not self.fits_at(m, t):
            t += 1
        return t

    def allowed(self, i: int, m: int) -> bool:
        a = self.a
        if not self.fits[m]:
            return False
        if len(a.budget) and ((a.mode_consumption[m] - self.least[i]) > self.left).any():
            return False
        j = int(a.task_job[i])
        key = int(a.mode_placement[m])
        return not (j >= 0 and a.job_colocate[j] and key >= 0 and self.job_key.get(j, key) != key)

    def est(self, i: int) -> int:
        a = self.a
        est = int(a.release[i])
        for b, kind, lag in self.preds[i]:
            ref = self.start[b] + (int(a.mode_duration[self.mode[b]]) if kind == FS else 0)
            est = max(est, ref + lag)
        return est

    def choose(self, i: int, pref: int, est: int) -> tuple[int, int]:
        a = self.a
        modes = [m for m in range(a.mode_start[i], a.mode_start[i + 1]) if self.allowed(i, m)]
        if pref >= 0 and pref in modes:
            return pref, self.earliest(pref, est)
        if not modes:
            return -1, 0
        if pref >= 0:
            extra = [int((a.mode_consumption[m] - self.least[i]).sum()) for m in modes]
            m = min(modes, key=lambda m: (extra[modes.index(m)], a.mode_duration[m], m))
            return m, self.earliest(m, est)
        starts = {m: self.earliest(m, est) for m in modes}
        m = min(modes, key=lambda m: (starts[m] + a.mode_duration[m], m))
        return m, starts[m]

    def commit(self, i: int, m: int, t: int) -> None:
        a = self.a
        for s in range(a.seg_start[m], a.seg_start[m + 1]):
            lo = t + int(a.seg_offset[s])
            for tick in range(lo, lo + int(a.seg_duration[s])):
                for r in range(a.n_resources):
                    self.load[r, tick] += int(a.seg_demand[s, r])
        if len(a.budget):
            self.left = self.left - (a.mode_consumption[m] - self.least[i])
        j = int(a.task_job[i])
        if j >= 0 and a.mode_placement[m] >= 0:
            self.job_key.setdefault(j, int(a.mode_placement[m]))
        self.start[i] = t
        self.mode[i] = m

    def late(self, i: int, m: int, t: int) -> bool:
        a = self.a
        return bool(a.deadline[i] >= 0 and t + a.mode_duration[m] > a.deadline[i])

    def result(self) -> tuple[int, int, np.ndarray, np.ndarray]:
        n = self.a.n_tasks
        start = np.array([self.start[i] for i in range(n)], dtype=np.int64)
        mode = np.array([self.mode[i] for i in range(n)], dtype=np.int64)
        return OK, -1, start, mode


def serial_reference(
    problem: Problem, order: list[int], pref: list[int]
) -> tuple[int, int, np.ndarray | None, np.ndarray | None]:
    """Serial SGS over activity list ``order`` with preferred global modes ``pref`` (-1: any).

    Returns ``(status, failed task, start, mode)``.
    """
    st = _State(problem)
    for i in order:
        m, t = st.choose(i, pref[i], st.est(i))
        if m < 0:
            return FAIL_MODE, i, None, None
        if st.late(i, m, t):
            return FAIL_DEADLINE, i, None, None
        st.commit(i, m, t)
    return st.result()


def parallel_reference(
    problem: Problem, order: list[int], pref: list[int]
) -> tuple[int, int, np.ndarray | None, np.ndarray | None]:
    """Parallel SGS: repeatedly the eligible task that can start first, ties by list position."""
    st = _State(problem)
    pos = {i: k for k, i in enumerate(order)}
    n = problem.arrays.n_tasks
    now = 0
    while len(st.start) < n:
        eligible = [
            i
            for i in range(n)
            if i not in st.start and all(b in st.start for b, _, _ in st.preds[i])
        ]
        options = []
        for i in eligible:
            m, t = st.choose(i, pref[i], max(now, st.est(i)))
            if m < 0:
                return FAIL_MODE, i, None, None
            options.append((t, pos[i], i, m))
        t, _, i, m = min(options)
        if st.late(i, m, t):
            return FAIL_DEADLINE, i, None, None
        st.commit(i, m, t)
        now = t
    return st.result()

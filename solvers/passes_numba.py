"""Compiled objective, justification and random-key decoding over the passes of
:mod:`solvers.sgs_numba`: the objective of a schedule (makespan, weighted completion,
energy, cost), the backward-forward justification, the evaluation of an activity list
(pass, then justification) and the order of a key vector.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from planner.arrays import FS, OK
from planner.solvers.capacity_numba import INDEX_KIND, TICKS, _reset, _tick_book, _tick_place
from planner.solvers.encoding import (
    COST,
    EDGE_KIND,
    EDGE_LAG,
    EDGE_TASK,
    ENERGY,
    MODE_DURATION,
    MODE_GANG,
    SEG_DURATION,
    SEG_OFFSET,
    TASK_DEADLINE,
    TASK_JOB,
    TASK_RELEASE,
    WEIGHTED,
    Data,
)
from planner.solvers.sgs_numba import _book_mode, _dims, parallel_pass, place_mode, serial_pass


@njit(cache=True)
def objective(d: Data, start: np.ndarray, chosen: np.ndarray) -> float:
    """Makespan, the weighted sum of job completion times, the energy (kWh) or its cost."""
    mode, task = d.mode, d.task
    if d.objective == WEIGHTED:
        done = np.zeros(d.job_weight.shape[0], dtype=np.int64)
        for i in range(d.n):
            j = task[i, TASK_JOB]
            if j >= 0:
                done[j] = max(done[j], start[i] + mode[chosen[i], MODE_DURATION])
        total = 0.0
        for j in range(done.shape[0]):
            total += d.job_weight[j] * done[j]
        return total
    best = 0
    for i in range(d.n):
        best = max(best, start[i] + mode[chosen[i], MODE_DURATION])
    if d.objective == ENERGY:
        total = d.over * best
        for i in range(d.n):
            total += d.mode_energy[chosen[i]]
        return total
    if d.objective == COST:
        total = d.over * _paid_upto(d, best)
        for i in range(d.n):
            m = chosen[i]
            for s in range(d.seg_start[m], d.seg_start[m + 1]):
                w = d.seg_watts[s]
                if w > 0:
                    at = start[i] + d.seg[s, SEG_OFFSET]
                    total += w * (_paid_upto(d, at + d.seg[s, SEG_DURATION]) - _paid_upto(d, at))
        return total
    return float(best)


@njit(cache=True)
def _price_within(d: Data, x: float) -> float:
    """The tariff's price summed over ``[0, x)`` within one period."""
    price = d.tariff[0]
    total = price * x
    for k in range(d.price_windows.shape[0]):
        a, b, p = d.price_windows[k, 0], d.price_windows[k, 1], d.price_windows[k, 2]
        total += (p - price) * max(0.0, min(x, b) - a)
    return total


@njit(cache=True)
def _paid_upto(d: Data, t: int) -> float:
    """The tariff's price summed over the ticks ``[0, t)`` (as ``Tariff.upto``)."""
    period = d.tariff[1]
    if period <= 0:
        return _price_within(d, float(t))
    rounds = t // int(period)
    rest = t - rounds * int(period)
    return rounds * _price_within(d, period) + _price_within(d, float(rest))


@njit(cache=True)
def _backward_pass(d: Data, start, chosen, placed, out, nodes, index) -> bool:
    """Right-justify: tasks by decreasing finish, as late as possible before the makespan.

    Writes the new starts into ``out``; returns whether every task fitted.
    """
    n = d.n
    mode, task, seg_start, seg = d.mode, d.task, d.seg_start, d.seg
    succ_ptr, succ = d.succ_ptr, d.succ
    T = 0
    fin = np.empty(n, dtype=np.int64)
    for i in range(n):
        fin[i] = start[i] + mode[chosen[i], MODE_DURATION]
        T = max(T, fin[i])
    order = keys_to_order(d, -fin, True)
    _reset(d, nodes, index, True, T)
    rs = np.empty(n, dtype=np.int64)
    dims = _dims(d)
    on = np.empty(d.gang_max, dtype=np.int64)
    ticks = index[INDEX_KIND] == TICKS
    for k in range(n):
        i = order[k]
        m = chosen[i]
        di = mode[m, MODE_DURATION]
        est = 0
        if task[i, TASK_DEADLINE] >= 0:
            est = max(est, T - task[i, TASK_DEADLINE])
        for e in range(succ_ptr[i], succ_ptr[i + 1]):
            j = succ[e, EDGE_TASK]
            v = rs[j] + mode[chosen[j], MODE_DURATION] + succ[e, EDGE_LAG]
            if succ[e, EDGE_KIND] != FS:
                v -= di
            est = max(est, v)
        limit = T - task[i, TASK_RELEASE]
        if ticks and mode[m, MODE_GANG] == 0:
            # the common case (PSPLIB) without the node set's array view
            t = _tick_place(nodes, seg_start, seg, m, di, est, limit, True, dims[0], 0, -1, True)
            if t + di > limit:
                return False
            _tick_book(nodes, index, seg_start, seg, m, di, t, True, dims[0], 0, -1, True)
        else:
            t = place_mode(
                nodes, index, seg_start, seg, mode, d.node_type, d.pin, dims, m, est, limit,
                True, placed[i], on,
            )  # fmt: skip
            if t + di > limit:
                return False
            _book_mode(nodes, index, seg_start, seg, mode, dims, m, t, True, placed[i])
        rs[i] = t
    for i in range(n):
        out[i] = T - rs[i] - mode[chosen[i], MODE_DURATION]
    return True


@njit(cache=True)
def justify(d: Data, start, chosen, placed, nodes, index, allowance: int) -> int:
    """Forward-backward improvement of a schedule, in place when it is no worse.

    Runs a backward pass, then a forward pass in the order of the backward
    starts; each counts as one schedule, at most ``allowance`` passes run.
    Returns the number of passes run.
    """
    if allowance < 1:
        return 0
    back = np.empty(d.n, dtype=np.int64)
    if not _backward_pass(d, start, chosen, placed, back, nodes, index) or allowance < 2:
        return 1
    order = keys_to_order(d, back, False)
    new_start = np.empty(d.n, dtype=np.int64)
    new_mode = np.empty(d.n, dtype=np.int64)
    new_placed = np.empty_like(placed)
    status, _ = serial_pass(d, order, chosen, new_start, new_mode, new_placed, nodes, index)
    if status == OK and objective(d, new_start, new_mode) <= objective(d, start, chosen):
        start[:] = new_start
        chosen[:] = new_mode
        placed[:] = new_placed
    return 2


@njit(cache=True)
def evaluate(
    d: Data, order, pref, start, chosen, placed, nodes, index, allowance: int, parallel: bool
):
    """Decode an activity list and mode list, then justify; at most ``allowance`` passes.

    On success ``order`` is rewritten as the final start order (ties kept in
    list order) and ``pref`` as the modes index, so that the encoding learns from
    the justification. Returns ``(objective or inf, passes)``.
    """
    if allowance < 1:
        return np.inf, 0
    if parallel:
        status, _ = parallel_pass(d, order, pref, start, chosen, placed, nodes, index)
    else:
        status, _ = serial_pass(d, order, pref, start, chosen, placed, nodes, index)
    if status != OK:
        return np.inf, 1
    passes = 1 + justify(d, start, chosen, placed, nodes, index, allowance - 1)
    rank = np.empty(d.n, dtype=np.int64)
    for k in range(d.n):
        rank[order[k]] = k
    # Sorting by start, ties in list order, keeps every precedence: lags and durations
    # are >= 0, so a successor never starts before its predecessor.
    order[:] = np.argsort(start * (d.n + 1) + rank)
    pref[:] = chosen
    return objective(d, start, chosen), passes


@njit(cache=True)
def keys_to_order(d: Data, keys: np.ndarray, reverse: bool) -> np.ndarray:
    """Order that takes, at each step, the eligible task with the smallest key.

    Eligible means all predecessors taken (all successors when ``reverse``).
    Ties go to the smaller task number. When the stable sort of the keys already takes
    every task after its predecessors (the forward justification pass: its keys are the
    backward pass's starts), it is that order. Otherwise a binary heap over eligible
    tasks' ranks in that sort: comparing two ranks reads no key.
    """
    n = d.n
    fwd_ptr, fwd = (d.pred_ptr, d.pred) if reverse else (d.succ_ptr, d.succ)
    back_ptr = d.succ_ptr if reverse else d.pred_ptr
    by_key = np.argsort(keys, kind="mergesort")
    rank = np.empty(n, dtype=np.int64)
    for k in range(n):
        rank[by_key[k]] = k
    if _keeps_precedences(fwd_ptr, fwd, rank):
        return by_key
    waiting = np.empty(n, dtype=np.int64)
    heap = np.empty(n, dtype=np.int64)
    size = 0
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        waiting[i] = back_ptr[i + 1] - back_ptr[i]
        if waiting[i] == 0:
            size = _rank_push(heap, size, rank[i])
    for k in range(n):
        i = by_key[heap[0]]
        size -= 1
        _rank_sift(heap, size, heap[size])
        out[k] = i
        for e in range(fwd_ptr[i], fwd_ptr[i + 1]):
            f = fwd[e, EDGE_TASK]
            waiting[f] -= 1
            if waiting[f] == 0:
                size = _rank_push(heap, size, rank[f])
    return out


@njit(cache=True)
def _keeps_precedences(fwd_ptr, fwd, rank) -> bool:
    """Whether every task ranks before the tasks its edges ``fwd`` lead to."""
    for i in range(rank.shape[0]):
        for e in range(fwd_ptr[i], fwd_ptr[i + 1]):
            if rank[fwd[e, EDGE_TASK]] < rank[i]:
                return False
    return True


@njit(cache=True, inline="always")
def _rank_push(heap, size, x) -> int:
    """Push the value ``x`` on the min-heap ``heap[:size]``; returns the new size."""
    c = size
    while c > 0:
        p = (c - 1) // 2
        if heap[p] <= x:
            break
        heap[c] = heap[p]
        c = p
    heap[c] = x
    return size + 1


@njit(cache=True, inline="always")
def _rank_sift(heap, size, x) -> None:
    """Put ``x`` at the root of the min-heap ``heap[:size]`` and sift it down."""
    c = 0
    while True:
        child = 2 * c + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= x:
            break
        heap[c] = heap[child]
        c = child
    if size > 0:
        heap[c] = x

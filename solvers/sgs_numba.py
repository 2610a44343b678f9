"""Compiled schedule generation: serial and parallel SGS, justification, objective.

Every kernel reads a :class:`~solvers.encoding.Data` tuple of tables. Capacity is
kept in a per-tick availability array ``avail`` of shape ``(R, H + 1)``, ``H`` the
serial horizon, that holds the capacity profile (windows included) minus the
booked demands. ``used`` is a one-element array with the first tick no pass has
touched yet, so that the next pass resets only ``[0, used)``.

Mode choice (shared by every pass and by the plain-Python oracle of the tests): a
mode is *allowed* when it fits the base capacity, its extra use of every budget
fits what is left, and it agrees with the placement key its job already has (for a
colocated job). A preferred mode that is allowed is taken; a preferred mode that is
not is replaced by the allowed mode of least extra budget use (then shortest, then
first); with no preference (-1), the allowed mode that finishes first is taken.

The helpers called inside the passes' loops take the tables as arrays, not the
``Data`` tuple: reading tuple fields inside hot loops costs reference counting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from planner.arrays import FAIL_DEADLINE, FAIL_MODE, FS, OK
from planner.errors import PlannerError
from solvers.encoding import (
    EDGE_KIND,
    EDGE_LAG,
    EDGE_TASK,
    MODE_DURATION,
    MODE_EXTRA,
    MODE_FITS,
    MODE_PLACEMENT,
    SEG_ACTIVE,
    SEG_DEMAND,
    SEG_DURATION,
    SEG_OFFSET,
    TASK_COLOCATED,
    TASK_DEADLINE,
    TASK_JOB,
    TASK_RELEASE,
    WEIGHTED,
    Data,
)

BIG = np.int64(1) << np.int64(60)
MAX_CELLS = 1 << 27
"""Largest per-tick availability array (resources x ticks): 1 GiB of int64."""


@njit(cache=True)
def fill(d: Data, avail: np.ndarray, lo: int, hi: int, reverse: bool, T: int) -> None:
    """Write the capacity of ticks ``[lo, hi)`` into ``avail`` (mirrored at ``T`` if reverse)."""
    prof = d.profile
    width = prof.shape[1]
    for r in range(d.n_res):
        for t in range(lo, hi):
            f = T - 1 - t if reverse else t
            avail[r, t] = prof[r, f] if 0 <= f < width else d.capacity[r]


def new_avail(d: Data) -> tuple[np.ndarray, np.ndarray]:
    """A fresh availability array long enough for every pass, and its ``used`` marker.

    Raises
    ------
    PlannerError
        If the per-tick array would pass :data:`MAX_CELLS` cells.
    """
    size = max(d.profile.shape[1], d.horizon) + 2
    if size * max(d.n_res, 1) > MAX_CELLS:
        raise PlannerError(
            f"the horizon of {d.horizon} ticks is too long for the per-tick capacity array; "
            "use a coarser time unit"
        )
    avail = np.empty((d.n_res, size), dtype=np.int64)
    fill(d, avail, 0, size, False, 0)
    return avail, np.zeros(1, dtype=np.int64)


@njit(cache=True)
def _reset(d: Data, avail, used, reverse: bool, T: int) -> None:
    fill(d, avail, 0, min(max(used[0], T), avail.shape[1]), reverse, T)
    used[0] = max(used[0], T)


@njit(cache=True)
def place(avail, seg_start, seg, m, dur_m, est, limit, reverse):
    """Earliest start >= ``est`` at which every tick of every segment of mode ``m`` fits.

    The search gives up, returning a start that finishes after ``limit``, once
    the mode can no longer finish by ``limit``. Segments are mirrored within
    the mode when ``reverse``.
    """
    n_res = avail.shape[0]
    t = est
    while t + dur_m <= limit:
        moved = False
        for s in range(seg_start[m], seg_start[m + 1]):
            if seg[s, SEG_ACTIVE] == 0:
                continue
            dur = seg[s, SEG_DURATION]
            off = dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]
            lo = t + off
            for tau in range(lo + dur - 1, lo - 1, -1):
                clash = False
                for r in range(n_res):
                    if seg[s, SEG_DEMAND + r] > avail[r, tau]:
                        clash = True
                        break
                if clash:
                    t = tau + 1 - off
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return t
    return t


@njit(cache=True)
def book(avail, seg_start, seg, m, dur_m, start, reverse) -> None:
    """Take the demands of mode ``m`` started at ``start`` off ``avail``."""
    n_res = avail.shape[0]
    for s in range(seg_start[m], seg_start[m + 1]):
        if seg[s, SEG_ACTIVE] == 0:
            continue
        dur = seg[s, SEG_DURATION]
        off = dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]
        lo = start + off
        for r in range(n_res):
            q = seg[s, SEG_DEMAND + r]
            if q:
                for tau in range(lo, lo + dur):
                    avail[r, tau] -= q


@njit(cache=True, inline="always")
def _allowed(mode, m, left, key) -> bool:
    """Whether mode ``m`` is allowed, ``key`` being its job's placement key (-1: none yet,
    or a job that is not colocated)."""
    if mode[m, MODE_FITS] == 0:
        return False
    for k in range(left.shape[0]):
        if mode[m, MODE_EXTRA + k] > left[k]:
            return False
    return key < 0 or mode[m, MODE_PLACEMENT] < 0 or key == mode[m, MODE_PLACEMENT]


@njit(cache=True, inline="always")
def _candidate(avail, seg_start, seg, mode_start, mode, i, pref, est, limit, left, key, plain):
    """Mode and start for task ``i`` (see the module docstring); mode -1 if none is allowed.

    ``plain`` passes say that no budget is overdrawn and ``key`` < 0 that the task's
    job has no placement to keep: a single-mode task then needs no choice.
    """
    lo, hi = mode_start[i], mode_start[i + 1]
    if plain and hi - lo == 1 and key < 0:
        return lo, place(avail, seg_start, seg, lo, mode[lo, MODE_DURATION], est, limit, False)
    if pref >= 0 and _allowed(mode, pref, left, key):
        return pref, place(
            avail, seg_start, seg, pref, mode[pref, MODE_DURATION], est, limit, False
        )
    if pref >= 0:
        best, best_use, best_dur = -1, BIG, BIG
        for m in range(lo, hi):
            if not _allowed(mode, m, left, key):
                continue
            use = 0
            for k in range(left.shape[0]):
                use += mode[m, MODE_EXTRA + k]
            dur = mode[m, MODE_DURATION]
            if use < best_use or (use == best_use and dur < best_dur):
                best, best_use, best_dur = m, use, dur
        if best < 0:
            return -1, 0
        return best, place(avail, seg_start, seg, best, best_dur, est, limit, False)
    best, best_t, best_end = -1, 0, BIG
    for m in range(lo, hi):
        if not _allowed(mode, m, left, key):
            continue
        dur = mode[m, MODE_DURATION]
        t = place(avail, seg_start, seg, m, dur, est, limit, False)
        if t + dur < best_end:
            best, best_t, best_end = m, t, t + dur
    return best, best_t


@njit(cache=True, inline="always")
def _forward_est(pred_ptr, pred, mode, task, i, start, chosen) -> int:
    """Earliest start of task ``i`` from its release and its scheduled predecessors."""
    est = task[i, TASK_RELEASE]
    for e in range(pred_ptr[i], pred_ptr[i + 1]):
        b = pred[e, EDGE_TASK]
        v = start[b] + pred[e, EDGE_LAG]
        if pred[e, EDGE_KIND] == FS:
            v += mode[chosen[b], MODE_DURATION]
        est = max(est, v)
    return est


@njit(cache=True, inline="always")
def _job_key(task, i, job_key) -> int:
    """The placement key task ``i`` must keep: its colocated job's, or -1."""
    if task[i, TASK_COLOCATED] == 0:
        return -1
    return job_key[task[i, TASK_JOB]]


@njit(cache=True, inline="always")
def _commit(avail, seg_start, seg, mode, task, i, m, t, left, job_key, start, chosen, used):
    """Book mode ``m`` of task ``i`` at ``t``: capacity, budgets, placement, the schedule."""
    dur_m = mode[m, MODE_DURATION]
    book(avail, seg_start, seg, m, dur_m, t, False)
    for k in range(left.shape[0]):
        left[k] -= mode[m, MODE_EXTRA + k]
    job = task[i, TASK_JOB]
    key = mode[m, MODE_PLACEMENT]
    if job >= 0 and key >= 0 and job_key[job] < 0:
        job_key[job] = key
    start[i] = t
    chosen[i] = m
    used[0] = max(used[0], t + dur_m)


@njit(cache=True)
def _plain(left) -> bool:
    """Whether no budget is overdrawn (then single-mode tasks need no mode choice)."""
    for k in range(left.shape[0]):  # noqa: SIM110 (numba has no generators)
        if left[k] < 0:
            return False
    return True


@njit(cache=True)
def serial_pass(d: Data, order, pref, start, chosen, avail, used):
    """Serial SGS over the activity list ``order`` with preferred modes ``pref``.

    Fills ``start`` and ``chosen`` (the global mode per task); returns
    ``(status, task)``, ``task`` being the one at which a failed pass stopped.
    """
    _reset(d, avail, used, False, 0)
    left = d.slack.copy()
    job_key = np.full(d.job_colocate.shape[0], -1, dtype=np.int64)
    pred_ptr, pred, task = d.pred_ptr, d.pred, d.task
    mode_start, mode, seg_start, seg = d.mode_start, d.mode, d.seg_start, d.seg
    plain = _plain(left)
    for k in range(d.n):
        i = order[k]
        est = _forward_est(pred_ptr, pred, mode, task, i, start, chosen)
        deadline = task[i, TASK_DEADLINE]
        limit = deadline if deadline >= 0 else BIG
        m, t = _candidate(
            avail, seg_start, seg, mode_start, mode, i, pref[i], est, limit, left,
            _job_key(task, i, job_key), plain,
        )  # fmt: skip
        if m < 0:
            return FAIL_MODE, i
        if deadline >= 0 and t + mode[m, MODE_DURATION] > deadline:
            return FAIL_DEADLINE, i
        _commit(avail, seg_start, seg, mode, task, i, m, t, left, job_key, start, chosen, used)
    return OK, -1


@njit(cache=True)
def parallel_pass(d: Data, order, pref, start, chosen, avail, used):
    """Parallel (non-delay) SGS: at each step the eligible task that can start first.

    Among eligible tasks (all predecessors scheduled), the one whose earliest
    feasible start (not before the last decision time) is smallest is taken,
    ties going to the task earlier in ``order``. Same returns as :func:`serial_pass`.
    """
    _reset(d, avail, used, False, 0)
    n = d.n
    left = d.slack.copy()
    job_key = np.full(d.job_colocate.shape[0], -1, dtype=np.int64)
    pred_ptr, pred, succ_ptr, succ, task = d.pred_ptr, d.pred, d.succ_ptr, d.succ, d.task
    mode_start, mode, seg_start, seg = d.mode_start, d.mode, d.seg_start, d.seg
    pos = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos[order[k]] = k
    waiting = np.empty(n, dtype=np.int64)
    elig = np.empty(n, dtype=np.int64)
    n_elig = 0
    for i in range(n):
        waiting[i] = pred_ptr[i + 1] - pred_ptr[i]
        if waiting[i] == 0:
            elig[n_elig] = i
            n_elig += 1
    plain = _plain(left)
    now = 0
    for _ in range(n):
        best, best_k, best_m, best_t = -1, -1, -1, BIG
        for k in range(n_elig):
            i = elig[k]
            est = max(now, _forward_est(pred_ptr, pred, mode, task, i, start, chosen))
            deadline = task[i, TASK_DEADLINE]
            limit = deadline if deadline >= 0 else BIG
            m, t = _candidate(
                avail, seg_start, seg, mode_start, mode, i, pref[i], est, limit, left,
                _job_key(task, i, job_key), plain,
            )  # fmt: skip
            if m < 0:
                return FAIL_MODE, i
            if t < best_t or (t == best_t and pos[i] < pos[best]):
                best, best_k, best_m, best_t = i, k, m, t
        deadline = task[best, TASK_DEADLINE]
        if deadline >= 0 and best_t + mode[best_m, MODE_DURATION] > deadline:
            return FAIL_DEADLINE, best
        _commit(
            avail, seg_start, seg, mode, task, best, best_m, best_t, left, job_key, start,
            chosen, used,
        )  # fmt: skip
        now = best_t
        n_elig -= 1
        elig[best_k] = elig[n_elig]
        for e in range(succ_ptr[best], succ_ptr[best + 1]):
            f = succ[e, EDGE_TASK]
            waiting[f] -= 1
            if waiting[f] == 0:
                elig[n_elig] = f
                n_elig += 1
    return OK, -1


@njit(cache=True)
def objective(d: Data, start: np.ndarray, chosen: np.ndarray) -> float:
    """Makespan, or the weighted sum of job completion times."""
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
    return float(best)


@njit(cache=True)
def _backward_pass(d: Data, start, chosen, out, avail, used) -> bool:
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
    _reset(d, avail, used, True, T)
    rs = np.empty(n, dtype=np.int64)
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
        t = place(avail, seg_start, seg, m, di, est, limit, True)
        if t + di > limit:
            return False
        book(avail, seg_start, seg, m, di, t, True)
        rs[i] = t
    for i in range(n):
        out[i] = T - rs[i] - mode[chosen[i], MODE_DURATION]
    return True


@njit(cache=True)
def justify(d: Data, start, chosen, avail, used, allowance: int) -> int:
    """Forward-backward improvement of a schedule, in place when it is no worse.

    Runs a backward pass, then a forward pass in the order of the backward
    starts; each counts as one schedule, at most ``allowance`` passes run.
    Returns the number of passes run.
    """
    if allowance < 1:
        return 0
    back = np.empty(d.n, dtype=np.int64)
    if not _backward_pass(d, start, chosen, back, avail, used) or allowance < 2:
        return 1
    order = keys_to_order(d, back, False)
    new_start = np.empty(d.n, dtype=np.int64)
    new_mode = np.empty(d.n, dtype=np.int64)
    status, _ = serial_pass(d, order, chosen, new_start, new_mode, avail, used)
    if status == OK and objective(d, new_start, new_mode) <= objective(d, start, chosen):
        start[:] = new_start
        chosen[:] = new_mode
    return 2


@njit(cache=True)
def evaluate(d: Data, order, pref, start, chosen, avail, used, allowance: int, parallel: bool):
    """Decode an activity list and mode list, then justify; at most ``allowance`` passes.

    On success ``order`` is rewritten as the final start order (ties kept in
    list order) and ``pref`` as the modes used, so that the encoding learns from
    the justification. Returns ``(objective or inf, passes)``.
    """
    if allowance < 1:
        return np.inf, 0
    if parallel:
        status, _ = parallel_pass(d, order, pref, start, chosen, avail, used)
    else:
        status, _ = serial_pass(d, order, pref, start, chosen, avail, used)
    if status != OK:
        return np.inf, 1
    passes = 1 + justify(d, start, chosen, avail, used, allowance - 1)
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
    Ties go to the smaller task number. A binary heap over eligible tasks.
    """
    n = d.n
    fwd_ptr, fwd = (d.pred_ptr, d.pred) if reverse else (d.succ_ptr, d.succ)
    back_ptr = d.succ_ptr if reverse else d.pred_ptr
    waiting = np.empty(n, dtype=np.int64)
    heap = np.empty(n, dtype=np.int64)
    size = 0
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        waiting[i] = back_ptr[i + 1] - back_ptr[i]
    for i in range(n):
        if waiting[i] == 0:
            size = _push(heap, size, i, keys)
    for k in range(n):
        i = heap[0]
        size -= 1
        heap[0] = heap[size]
        _sift_down(heap, size, 0, keys)
        out[k] = i
        for e in range(fwd_ptr[i], fwd_ptr[i + 1]):
            f = fwd[e, EDGE_TASK]
            waiting[f] -= 1
            if waiting[f] == 0:
                size = _push(heap, size, f, keys)
    return out


@njit(cache=True)
def _less(a: int, b: int, keys: np.ndarray) -> bool:
    return keys[a] < keys[b] or (keys[a] == keys[b] and a < b)


@njit(cache=True)
def _push(heap, size, i, keys):
    heap[size] = i
    c = size
    while c > 0:
        p = (c - 1) // 2
        if _less(heap[c], heap[p], keys):
            heap[c], heap[p] = heap[p], heap[c]
            c = p
        else:
            break
    return size + 1


@njit(cache=True)
def _sift_down(heap, size, c, keys):
    while True:
        left = 2 * c + 1
        if left >= size:
            return
        best = left
        if left + 1 < size and _less(heap[left + 1], heap[left], keys):
            best = left + 1
        if _less(heap[best], heap[c], keys):
            heap[c], heap[best] = heap[best], heap[c]
            c = best
        else:
            return

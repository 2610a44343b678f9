"""Compiled schedule generation: the serial and parallel SGS passes, mode choice and
budget repair (the capacity profiles they book are :mod:`solvers.capacity_numba`'s;
objective, justification and decoding are :mod:`solvers.passes_numba`'s).

Every kernel reads a :class:`~solvers.encoding.Data` tuple of tables.

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

from typing import NamedTuple

import numpy as np
from numba import njit

from planner.arrays import FAIL_DEADLINE, FAIL_MODE, FS, OK
from planner.solvers.capacity_numba import (
    BIG,
    INDEX_KIND,
    INDEX_STRIDE,
    NODE_AVAIL,
    TICKS,
    _find,
    _reset,
    _tick_book,
    _tick_place,
    book,
    place,
)
from planner.solvers.encoding import (
    EDGE_KIND,
    EDGE_LAG,
    EDGE_TASK,
    MODE_DURATION,
    MODE_EXTRA,
    MODE_FITS,
    MODE_FOLLOW,
    MODE_GANG,
    MODE_NODE_TYPE,
    MODE_PLACEMENT,
    TASK_COLOCATED,
    TASK_DEADLINE,
    TASK_JOB,
    TASK_RELEASE,
    Data,
)


@njit(cache=True, inline="always")
def _count(fixed) -> int:
    """The nodes of a node set padded with -1 (0 when ``fixed[0]`` < 0: none)."""
    have = 0
    if fixed[0] >= 0:
        for j in range(fixed.shape[0]):
            if fixed[j] >= 0:
                have += 1
    return have


@njit(cache=True, inline="always")
def _allowed(mode, pin, node_type, m, left, key, fixed) -> bool:
    """Whether mode ``m`` is allowed, ``key`` being its job's placement key (-1: none yet,
    or a job that is not colocated) and ``fixed`` the node set it must keep (padded with
    -1; all -1: none); a pinned mode must be pinned to that set, a typed one find its type
    there."""
    have = _count(fixed)
    if mode[m, MODE_FITS] == 0:
        return False
    for k in range(left.shape[0]):
        if mode[m, MODE_EXTRA + k] > left[k]:
            return False
    gang = mode[m, MODE_GANG]
    if have > 0 and gang > 0 and gang != have:
        return False
    want = mode[m, MODE_NODE_TYPE]
    if have > 0 and gang > 0 and want >= 0:
        for q in range(have):
            if node_type[fixed[q]] != want:
                return False
    if have > 0 and gang > 0 and pin[m, 0] >= 0:
        for j in range(gang):
            found = False
            for q in range(have):
                if pin[m, j] == fixed[q]:
                    found = True
            if not found:
                return False
    return key < 0 or mode[m, MODE_PLACEMENT] < 0 or key == mode[m, MODE_PLACEMENT]


@njit(cache=True, inline="always")
def _left_at(table, index, n_glob, n_kind, node, r, t) -> int:
    """Capacity left of node resource kind ``r`` on node ``node`` at tick ``t``."""
    if index[INDEX_KIND] == TICKS:
        return table[n_glob + node * n_kind + r, t]
    base = (node + 1) * index[INDEX_STRIDE]
    return table[_find(table, index, base, t), NODE_AVAIL + r]


@njit(cache=True)
def place_mode(
    table, index, seg_start, seg, mode, node_type, pin, dims, m, est, limit, reverse, fixed, out
):
    """Earliest start >= ``est`` of mode ``m`` and, for a mode on nodes, its node set.

    ``dims`` is ``(n_glob, n_kind, n_node)``. A mode on no node is placed on the
    cluster-wide resources. A mode on ``k`` nodes with a node set ``fixed`` (the nodes
    it is pinned to in ``pin``, its colocated job's, or its own in a backward pass;
    ``fixed[0]`` < 0 for none) starts
    when the cluster-wide resources and each of those nodes hold it. Otherwise the
    nodes are chosen: the earliest start at which ``k`` nodes of the mode's type hold
    the whole mode (and the cluster-wide resources do), ties broken by best fit (the
    least node capacity left at that start, then the lower node number). The chosen
    nodes go to ``out[:k]``. A start past ``limit`` means no placement by ``limit``.
    """
    n_glob, n_kind, n_node = dims[0], dims[1], dims[2]
    k = mode[m, MODE_GANG]
    dur = mode[m, MODE_DURATION]
    if k == 0:
        return place(table, index, seg_start, seg, m, dur, est, limit, reverse, n_glob, 0, -1, True)
    if pin[m, 0] >= 0:
        fixed = pin[m]
    if fixed[0] >= 0:
        t = est
        while True:
            t0 = t
            t = place(
                table, index, seg_start, seg, m, dur, t, limit, reverse, n_glob, n_kind, -1, True
            )
            for j in range(k):
                t = place(
                    table, index, seg_start, seg, m, dur, t, limit, reverse, n_glob, n_kind,
                    fixed[j], False,
                )  # fmt: skip
            if t == t0 or t + dur > limit:
                break
        for j in range(k):
            out[j] = fixed[j]
        return t
    want = mode[m, MODE_NODE_TYPE]
    times = np.empty(n_node, dtype=np.int64)
    top = np.empty(k, dtype=np.int64)
    t0 = est
    while True:
        tg = place(
            table, index, seg_start, seg, m, dur, t0, limit, reverse, n_glob, n_kind, -1, True
        )
        if tg + dur > limit:
            return tg
        # The k earliest node starts; a node's search stops once it cannot beat the k-th
        # earliest so far (its time is then only known to be later).
        top[:] = BIG
        for v in range(n_node):
            if want >= 0 and node_type[v] != want:
                times[v] = BIG
                continue
            bound = min(limit, top[k - 1] + dur) if top[k - 1] < BIG else limit
            tv = place(
                table, index, seg_start, seg, m, dur, t0, bound, reverse, n_glob, n_kind, v,
                False,
            )  # fmt: skip
            times[v] = tv
            if tv < top[k - 1]:
                j = k - 1
                while j > 0 and top[j - 1] > tv:
                    top[j] = top[j - 1]
                    j -= 1
                top[j] = tv
        t = max(tg, top[k - 1])
        if t + dur > limit:
            return t
        if t == t0:
            break
        t0 = t
    # k nodes hold the mode at t0: the k of least capacity left there (best fit).
    for j in range(k):
        best, best_left = -1, BIG
        for v in range(n_node):
            if times[v] != t0:
                continue
            room = 0
            for r in range(n_kind):
                room += _left_at(table, index, n_glob, n_kind, v, r, t0)
            if room < best_left:
                best, best_left = v, room
        out[j] = best
        times[best] = BIG
    return t0


@njit(cache=True, inline="always")
def _start(table, index, seg_start, seg, mode, node_type, pin, dims, m, est, limit, reverse, fixed,
           out):  # fmt: skip
    """:func:`place_mode`, with its most common case inlined: a mode on no node on a per-tick
    profile (PSPLIB). A call of a compiled function costs reference counting on each array
    it is passed, which in the hot loop of a pass costs more than the search itself."""
    if mode[m, MODE_GANG] == 0 and index[INDEX_KIND] == TICKS:
        dur = mode[m, MODE_DURATION]
        return _tick_place(table, seg_start, seg, m, dur, est, limit, reverse, dims[0], 0, -1, True)
    return place_mode(
        table, index, seg_start, seg, mode, node_type, pin, dims, m, est, limit, reverse, fixed,
        out,
    )  # fmt: skip


@njit(cache=True, inline="always")
def _book_mode(table, index, seg_start, seg, mode, dims, m, t, reverse, on) -> None:
    """Book mode ``m`` at ``t``: its cluster-wide demands, and its per-node ones on ``on``."""
    dur = mode[m, MODE_DURATION]
    if index[INDEX_KIND] == TICKS:
        _tick_book(table, index, seg_start, seg, m, dur, t, reverse, dims[0], dims[1], -1, True)
    else:
        book(table, index, seg_start, seg, m, dur, t, reverse, dims[0], dims[1], -1, True)
    for j in range(mode[m, MODE_GANG]):
        book(table, index, seg_start, seg, m, dur, t, reverse, dims[0], dims[1], on[j], False)


@njit(cache=True, inline="always")
def _kept(mode, m, placed, fixed):
    """The node set mode ``m`` must keep: its ``same_nodes_as`` task's (placed before it),
    else ``fixed`` (its colocated job's, or none)."""
    ref = mode[m, MODE_FOLLOW]
    if ref >= 0:
        return placed[ref]
    return fixed


@njit(cache=True, inline="always")
def _candidate(
    table, index, seg_start, seg, mode_start, mode, node_type, pin, dims, i, pref, est, limit, left,
    key, fixed, plain, cand, out, placed,
):  # fmt: skip
    """Mode and start for task ``i`` (see the module docstring); mode -1 if none is allowed.

    The chosen mode's node set goes to ``out`` (``cand`` is scratch). ``plain`` passes
    say that no budget is overdrawn and ``key`` < 0 that the task's job has no
    placement to keep: a single-mode task then needs no choice. ``placed`` holds the
    node sets of the tasks placed so far (a mode may keep one, ``same_nodes_as``).
    """
    have = _count(fixed)
    lo, hi = mode_start[i], mode_start[i + 1]
    single = plain and hi - lo == 1 and key < 0 and have == 0 and mode[lo, MODE_FOLLOW] < 0
    if pref < 0 and not single:
        # No preference: the allowed mode that finishes first.
        best, best_t, best_end = -1, 0, BIG
        for m in range(lo, hi):
            kept = _kept(mode, m, placed, fixed)
            if not _allowed(mode, pin, node_type, m, left, key, kept):
                continue
            dur = mode[m, MODE_DURATION]
            t = _start(
                table, index, seg_start, seg, mode, node_type, pin, dims, m, est, limit, False,
                kept, cand,
            )  # fmt: skip
            if t + dur < best_end:
                best, best_t, best_end = m, t, t + dur
                for j in range(mode[m, MODE_GANG]):
                    out[j] = cand[j]
        return best, best_t
    best = lo if single else -1
    if not single:
        kept = _kept(mode, pref, placed, fixed)
        if _allowed(mode, pin, node_type, pref, left, key, kept):
            best = pref
    if best < 0:
        best_use, best_dur = BIG, BIG
        for m in range(lo, hi):
            kept = _kept(mode, m, placed, fixed)
            if not _allowed(mode, pin, node_type, m, left, key, kept):
                continue
            use = 0
            for k in range(left.shape[0]):
                use += mode[m, MODE_EXTRA + k]
            dur = mode[m, MODE_DURATION]
            if use < best_use or (use == best_use and dur < best_dur):
                best, best_use, best_dur = m, use, dur
        if best < 0:
            return -1, 0
    return best, _start(
        table, index, seg_start, seg, mode, node_type, pin, dims, best, est, limit, False,
        _kept(mode, best, placed, fixed), out,
    )  # fmt: skip


@njit(cache=True)
def _overdraft(use, slack) -> int:
    """Units by which ``use`` overdraws the budgets' ``slack``, summed over budgets."""
    total = 0
    for k in range(slack.shape[0]):
        total += max(0, use[k] - slack[k])
    return total


@njit(cache=True)
def repair_budgets(mode, mode_start, slack, modes, rng) -> bool:
    """Change modes of ``modes`` until the list meets every budget; returns whether it does.

    A mode list the serial SGS decodes is kept whole only when its modes' use of the
    budgets fits: otherwise the SGS replaces modes greedily along the list and, on tight
    budgets (MMLIB), often finds no mode left for a late task. Sweeps over the tasks from
    a random one: each task takes the mode that cuts the overdraft most (ties: the
    shorter). When a sweep cuts nothing (two budgets pull apart), the next one takes,
    without adding overdraft, modes that use less of the budgets in all (each budget's
    use over its slack); it ends when nothing is overdrawn or neither sweep moves.
    A list with a task without a preferred mode (-1) is left to the SGS.
    """
    budgets = slack.shape[0]
    n = modes.shape[0]
    if budgets == 0:
        return True
    use = np.zeros(budgets, dtype=np.int64)
    scale = np.empty(budgets)
    for k in range(budgets):
        scale[k] = 1.0 / max(1, slack[k])
    for t in range(n):
        if modes[t] < 0:
            return False
        for k in range(budgets):
            use[k] += mode[modes[t], MODE_EXTRA + k]
    over = _overdraft(use, slack)
    first = rng.integers(0, n)
    lighten = False
    while over > 0:
        moved = False
        for step in range(n):
            t = (first + step) % n
            cur = modes[t]
            best, best_over, best_less = cur, over, 0.0
            for m in range(mode_start[t], mode_start[t + 1]):
                if m == cur or mode[m, MODE_FITS] == 0:
                    continue
                less = 0.0
                for k in range(budgets):
                    change = mode[m, MODE_EXTRA + k] - mode[cur, MODE_EXTRA + k]
                    use[k] += change
                    less += change * scale[k]
                new = _overdraft(use, slack)
                for k in range(budgets):
                    use[k] -= mode[m, MODE_EXTRA + k] - mode[cur, MODE_EXTRA + k]
                if new < best_over:
                    better = True
                elif new > best_over:
                    better = False
                elif lighten:
                    better = less < best_less
                else:
                    better = best != cur and mode[m, MODE_DURATION] < mode[best, MODE_DURATION]
                if better:
                    best, best_over, best_less = m, new, less
            if best != cur:
                for k in range(budgets):
                    use[k] += mode[best, MODE_EXTRA + k] - mode[cur, MODE_EXTRA + k]
                modes[t] = best
                over = best_over
                moved = True
                if over == 0:
                    return True
        if not moved and lighten:
            return False
        lighten = not moved
    return True


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
def _job_nodes(task, i, job_nodes, none):
    """The node set task ``i`` must keep: its colocated job's, or ``none`` (all -1)."""
    if task[i, TASK_COLOCATED] == 0:
        return none
    return job_nodes[task[i, TASK_JOB]]


@njit(cache=True, inline="always")
def _commit(
    table, index, seg_start, seg, mode, task, dims, i, m, t, left, job_key, job_nodes, on,
    start, chosen, placed,
):  # fmt: skip
    """Book mode ``m`` of task ``i`` at ``t`` on nodes ``on``: capacity, budgets,
    placement, the schedule."""
    _book_mode(table, index, seg_start, seg, mode, dims, m, t, False, on)
    for k in range(left.shape[0]):
        left[k] -= mode[m, MODE_EXTRA + k]
    job = task[i, TASK_JOB]
    key = mode[m, MODE_PLACEMENT]
    if job >= 0 and key >= 0 and job_key[job] < 0:
        job_key[job] = key
    gang = mode[m, MODE_GANG]
    for j in range(placed.shape[1]):
        placed[i, j] = on[j] if j < gang else -1
    if gang > 0 and job >= 0 and task[i, TASK_COLOCATED] == 1 and job_nodes[job, 0] < 0:
        for j in range(gang):
            job_nodes[job, j] = on[j]
    start[i] = t
    chosen[i] = m


@njit(cache=True)
def _plain(left) -> bool:
    """Whether no budget is overdrawn (then single-mode tasks need no mode choice)."""
    for k in range(left.shape[0]):  # noqa: SIM110 (numba has no generators)
        if left[k] < 0:
            return False
    return True


@njit(cache=True)
def _dims(d: Data) -> np.ndarray:
    """``(n_glob, n_kind, n_node)`` of ``d``."""
    return np.array([d.n_glob, d.n_kind, d.n_node], dtype=np.int64)


@njit(cache=True)
def serial_pass(d: Data, order, pref, start, chosen, placed, table, index):
    """Serial SGS over the activity list ``order`` with preferred modes ``pref``.

    Fills ``start``, ``chosen`` (the global mode per task) and ``placed`` (the node
    numbers per task, padded with -1); returns ``(status, task)``, ``task`` being the
    one at which a failed pass stopped.
    """
    _reset(d, table, index, False, 0)
    left = d.slack.copy()
    job_key = np.full(d.job_colocate.shape[0], -1, dtype=np.int64)
    job_nodes = np.full((d.job_colocate.shape[0], d.gang_max), -1, dtype=np.int64)
    none = np.full(d.gang_max, -1, dtype=np.int64)
    cand = np.empty(d.gang_max, dtype=np.int64)
    on = np.empty(d.gang_max, dtype=np.int64)
    dims = _dims(d)
    pred_ptr, pred, task, node_type, pin = d.pred_ptr, d.pred, d.task, d.node_type, d.pin
    mode_start, mode, seg_start, seg = d.mode_start, d.mode, d.seg_start, d.seg
    plain = _plain(left)
    ticks = index[INDEX_KIND] == TICKS
    for k in range(d.n):
        i = order[k]
        est = _forward_est(pred_ptr, pred, mode, task, i, start, chosen)
        deadline = task[i, TASK_DEADLINE]
        limit = deadline if deadline >= 0 else BIG
        lo = mode_start[i]
        if (
            ticks
            and plain
            and mode_start[i + 1] - lo == 1
            and mode[lo, MODE_GANG] == 0
            and mode[lo, MODE_PLACEMENT] < 0
        ):
            # The common case (PSPLIB): one mode, on no node, no placement key, no choice.
            # Booked here rather than by _commit: an inlined helper still costs reference
            # counting on each array it is passed, three times the booking itself. (Sharing
            # the booking below with the other modes on no node costs this case 10%.)
            m, dur = lo, mode[lo, MODE_DURATION]
            t = _tick_place(table, seg_start, seg, m, dur, est, limit, False, dims[0], 0, -1, True)
            if deadline >= 0 and t + dur > deadline:
                return FAIL_DEADLINE, i
            _tick_book(table, index, seg_start, seg, m, dur, t, False, dims[0], 0, -1, True)
            for k2 in range(left.shape[0]):
                left[k2] -= mode[m, MODE_EXTRA + k2]
            for j in range(placed.shape[1]):
                placed[i, j] = -1
            start[i] = t
            chosen[i] = m
            continue
        m, t = _candidate(
            table, index, seg_start, seg, mode_start, mode, node_type, pin, dims, i, pref[i],
            est, limit, left, _job_key(task, i, job_key), _job_nodes(task, i, job_nodes, none),
            plain, cand, on, placed,
        )  # fmt: skip
        if m < 0:
            return FAIL_MODE, i
        dur = mode[m, MODE_DURATION]
        if deadline >= 0 and t + dur > deadline:
            return FAIL_DEADLINE, i
        if ticks and mode[m, MODE_GANG] == 0 and mode[m, MODE_PLACEMENT] < 0:
            # Any other mode on no node without a placement key (MMLIB): booked here too.
            _tick_book(table, index, seg_start, seg, m, dur, t, False, dims[0], 0, -1, True)
            for k2 in range(left.shape[0]):
                left[k2] -= mode[m, MODE_EXTRA + k2]
            for j in range(placed.shape[1]):
                placed[i, j] = -1
            start[i] = t
            chosen[i] = m
            continue
        _commit(
            table, index, seg_start, seg, mode, task, dims, i, m, t, left, job_key, job_nodes,
            on, start, chosen, placed,
        )  # fmt: skip
    return OK, -1


@njit(cache=True)
def parallel_pass(d: Data, order, pref, start, chosen, placed, table, index):
    """Parallel (non-delay) SGS: at each step the eligible task that can start first.

    Among eligible tasks (all predecessors scheduled), the one whose earliest
    feasible start (not before the last decision time) is smallest is taken,
    ties going to the task earlier in ``order``. Same returns as :func:`serial_pass`.

    Candidates are evaluated lazily: each eligible task keeps its last candidate (mode,
    start, nodes) in a heap keyed by (start, position in ``order``). Booking only takes
    capacity away and the decision time only grows, so a task's earliest start never
    decreases: the top candidate, if it still fits (and no budget use or job placement
    has changed since), is the one a scan of every eligible task would take (up to ties
    between nodes, which best fit breaks when the candidate is evaluated). Otherwise it
    is evaluated again and pushed back. A step then costs a few evaluations, not one per
    eligible task.
    """
    _reset(d, table, index, False, 0)
    n = d.n
    left = d.slack.copy()
    n_jobs = d.job_colocate.shape[0]
    job_key = np.full(n_jobs, -1, dtype=np.int64)
    job_nodes = np.full((n_jobs, d.gang_max), -1, dtype=np.int64)
    job_epoch = np.zeros(n_jobs, dtype=np.int64)
    epoch = np.zeros(1, dtype=np.int64)
    """How often a commit used budget: a candidate evaluated before may not be allowed."""
    none = np.full(d.gang_max, -1, dtype=np.int64)
    cand = np.empty(d.gang_max, dtype=np.int64)
    dims = _dims(d)
    task, mode, succ_ptr, succ = d.task, d.mode, d.succ_ptr, d.succ
    seg_start, seg, node_type, pin = d.seg_start, d.seg, d.node_type, d.pin
    pos = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos[order[k]] = k
    waiting = np.empty(n, dtype=np.int64)
    cache = Candidates(
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.full((n, d.gang_max), -1, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )
    plain = _plain(left)
    size, now = 0, 0
    for i in range(n):
        waiting[i] = d.pred_ptr[i + 1] - d.pred_ptr[i]
    for i in range(n):
        if waiting[i] == 0:
            size = _evaluate_push(
                d, table, index, i, now, pref, start, chosen, placed, left, job_key, job_nodes,
                job_epoch, epoch, plain, none, cand, dims, cache, size, pos,
            )  # fmt: skip
            if size < 0:
                return FAIL_MODE, i
    done = 0
    while done < n:
        j = cache.heap[0]
        job = task[j, TASK_JOB]
        m = cache.mode[j]
        dur = mode[m, MODE_DURATION]
        at = cache.start[j]
        valid = cache.epoch[j] == epoch[0] and (job < 0 or cache.job[j] == job_epoch[job])
        if valid:
            fixed = cache.nodes[j] if mode[m, MODE_GANG] else none
            t = _start(
                table, index, seg_start, seg, mode, node_type, pin, dims, m, at, at + dur, False,
                fixed, cand,
            )  # fmt: skip
            valid = t == at
        size -= 1
        cache.heap[0] = cache.heap[size]
        _sift_down(cache.heap, size, 0, cache.start, pos)
        if not valid:
            size = _evaluate_push(
                d, table, index, j, now, pref, start, chosen, placed, left, job_key, job_nodes,
                job_epoch, epoch, plain, none, cand, dims, cache, size, pos,
            )  # fmt: skip
            if size < 0:
                return FAIL_MODE, j
            continue
        deadline = task[j, TASK_DEADLINE]
        if deadline >= 0 and at + dur > deadline:
            return FAIL_DEADLINE, j
        key = job_key[job] if job >= 0 else -1
        first = job_nodes[job, 0] if job >= 0 else -1
        _commit(
            table, index, seg_start, seg, mode, task, dims, j, m, at, left, job_key, job_nodes,
            cache.nodes[j], start, chosen, placed,
        )  # fmt: skip
        for k in range(left.shape[0]):
            if mode[m, MODE_EXTRA + k]:
                epoch[0] += 1
                break
        if job >= 0 and (job_key[job] != key or job_nodes[job, 0] != first):
            job_epoch[job] += 1
        now = at
        done += 1
        for e in range(succ_ptr[j], succ_ptr[j + 1]):
            f = succ[e, EDGE_TASK]
            waiting[f] -= 1
            if waiting[f] == 0:
                size = _evaluate_push(
                    d, table, index, f, now, pref, start, chosen, placed, left, job_key, job_nodes,
                    job_epoch, epoch, plain, none, cand, dims, cache, size, pos,
                )  # fmt: skip
                if size < 0:
                    return FAIL_MODE, f
    return OK, -1


class Candidates(NamedTuple):
    """The parallel pass's last candidate per eligible task, and its heap of tasks."""

    start: np.ndarray
    mode: np.ndarray
    nodes: np.ndarray
    epoch: np.ndarray
    """The budget epoch the candidate was evaluated in."""
    job: np.ndarray
    """Its job's placement epoch then."""
    heap: np.ndarray


@njit(cache=True)
def _evaluate_push(
    d, table, index, i, now, pref, start, chosen, placed, left, job_key, job_nodes, job_epoch,
    epoch, plain, none, cand, dims, cache, size, pos,
):  # fmt: skip
    """Evaluate eligible task ``i``'s candidate, remember it and push ``i``; returns the
    heap's new size, or -1 when no mode of ``i`` is allowed."""
    task, mode = d.task, d.mode
    est = max(now, _forward_est(d.pred_ptr, d.pred, mode, task, i, start, chosen))
    deadline = task[i, TASK_DEADLINE]
    limit = deadline if deadline >= 0 else BIG
    m, t = _candidate(
        table, index, d.seg_start, d.seg, d.mode_start, mode, d.node_type, d.pin, dims, i, pref[i],
        est, limit, left, _job_key(task, i, job_key), _job_nodes(task, i, job_nodes, none),
        plain, cand, cache.nodes[i], placed,
    )  # fmt: skip
    if m < 0:
        return -1
    job = task[i, TASK_JOB]
    cache.start[i] = t
    cache.mode[i] = m
    cache.epoch[i] = epoch[0]
    cache.job[i] = job_epoch[job] if job >= 0 else 0
    return _push(cache.heap, size, i, cache.start, pos)


@njit(cache=True, inline="always")
def _less(a, b, first, second) -> bool:
    return first[a] < first[b] or (first[a] == first[b] and second[a] < second[b])


@njit(cache=True, inline="always")
def _push(heap, size, i, first, second) -> int:
    """Push ``i`` on a heap ordered by ``(first, second)``; returns the new size."""
    heap[size] = i
    c = size
    while c > 0:
        p = (c - 1) // 2
        if _less(heap[c], heap[p], first, second):
            heap[c], heap[p] = heap[p], heap[c]
            c = p
        else:
            break
    return size + 1


@njit(cache=True, inline="always")
def _sift_down(heap, size, c, first, second) -> None:
    while True:
        left = 2 * c + 1
        if left >= size:
            return
        best = left
        if left + 1 < size and _less(heap[left + 1], heap[left], first, second):
            best = left + 1
        if _less(heap[best], heap[c], first, second):
            heap[c], heap[best] = heap[best], heap[c]
            c = best
        else:
            return

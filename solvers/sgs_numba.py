"""Compiled schedule generation: serial and parallel SGS, justification, objective.

Every kernel reads a :class:`~solvers.encoding.Data` tuple of tables. The capacity
left is a per-tick array for short horizons and an event-based profile (a skyline)
otherwise, so that a pass costs what its segments cost, not what its horizon is (see
:func:`new_capacity`).

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
from planner.errors import PlannerError
from planner.solvers.encoding import (
    COST,
    EDGE_KIND,
    EDGE_LAG,
    EDGE_TASK,
    ENERGY,
    MODE_DURATION,
    MODE_EXTRA,
    MODE_FITS,
    MODE_FOLLOW,
    MODE_GANG,
    MODE_NODE_TYPE,
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
MAX_BUCKETS = 1 << 22
"""Most buckets of the index over the capacity profile (32 MiB of int64)."""

NODE_TIME, NODE_NEXT, NODE_AVAIL = 0, 1, 2
"""Columns of the profile's node table: the tick the node starts at, the next node (-1
after the last), from ``NODE_AVAIL`` on the capacity left per resource until the next
node."""
TICKS, SKYLINE = 0, 1
"""The two forms of the capacity left (slot ``INDEX_KIND`` of the index says which)."""
INDEX_KIND, INDEX_USED = 0, 1
"""Slots of a per-tick profile's index: its form; the first tick no pass has touched
yet, so that the next pass resets only the ticks before it."""
INDEX_COUNT, INDEX_WIDTH, INDEX_TOUCHED, INDEX_ROWS, INDEX_STRIDE, INDEX_ANCHOR = range(1, 7)
"""Slots of each skyline part's index after ``INDEX_KIND``: nodes in use, ticks per
bucket, the last bucket a pass touched, the part's first row in the node table, the
length of a part's index; from ``INDEX_ANCHOR`` on, per bucket, a node that starts at or
before the bucket's first tick (the nearest one seen so far)."""
MAX_CELLS = 1 << 24
"""Largest per-tick profile (resources x ticks): 128 MiB of int64."""
TICKS_PER_SEGMENT = 16
"""Up to this mean segment duration the per-tick profile is faster than the skyline
(J120, durations 1-10: twice as fast); above it, or above :data:`MAX_CELLS`, the
skyline is used."""


def new_capacity(d: Data, kind: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The capacity profile every pass of ``d`` reuses: its table and its index.

    Two forms share one interface (:func:`place`, :func:`book`, :func:`_reset`):

    - ``TICKS``: an array of the capacity left per resource and tick, shape
      ``(R, H + 2)``, ``H`` the serial horizon. Checking a segment costs its ticks.
    - ``SKYLINE``: linked lists of nodes, each the capacity left per resource from
      its tick to the next node's. Booking a segment splits at most two nodes, so the
      table holds two nodes per segment a pass books, plus the capacity windows; the
      index maps buckets of ticks to nearby nodes, so that finding the node of a tick
      costs a few steps whatever the horizon. A pass costs what its segments cost.
      There is one list (a *part*) for the cluster-wide resources and one per node of
      the problem, with its own index, so that a search on a node walks that node's
      changes only.

    ``kind`` chooses the form; by default ``TICKS`` for short segments and horizons
    (:data:`TICKS_PER_SEGMENT`, :data:`MAX_CELLS`), ``SKYLINE`` otherwise.
    """
    active = d.seg[:, SEG_ACTIVE] == 1
    cells = (max(d.profile.shape[1], d.horizon) + 2) * max(d.n_res, 1)
    if kind is None:
        mean = d.seg[active, SEG_DURATION].mean() if active.any() else 0.0
        kind = TICKS if cells <= MAX_CELLS and mean <= TICKS_PER_SEGMENT else SKYLINE
    if kind == TICKS:
        if cells > MAX_CELLS:
            raise PlannerError(
                f"the horizon of {d.horizon} ticks is too long for a per-tick capacity array"
            )
        avail = np.empty((d.n_res, cells // max(d.n_res, 1)), dtype=np.int64)
        _fill(d, avail, 0, avail.shape[1], False, 0)
        return avail, np.array([TICKS, 0], dtype=np.int64)
    # Each part gets room for every segment a pass could book on it (two new nodes per
    # booking), plus its capacity windows: the cluster-wide part for the modes with
    # cluster-wide demands, each node's part for the modes on nodes.
    n_glob = d.n_glob
    dem = d.seg[:, SEG_DEMAND:]
    timed = d.seg[:, SEG_ACTIVE] == 1
    parts = []
    for cols in (slice(0, n_glob), slice(n_glob, dem.shape[1])):
        used = (timed & (dem[:, cols] > 0).any(axis=1)).astype(np.int64)
        per_mode = np.add.reduceat(used, d.seg_start[:-1]) if len(used) else used
        per_task = np.maximum.reduceat(per_mode, d.mode_start[:-1]) if len(per_mode) else per_mode
        parts.append(4 + 2 * d.profile.shape[1] + 2 * int(per_task.sum()))
    sizes = [parts[0]] + [parts[1]] * d.n_node
    buckets = min(MAX_BUCKETS, max(64, 2 * max(sizes)))
    stride = INDEX_ANCHOR + buckets
    width = max(n_glob, d.n_kind, 1)
    nodes = np.zeros((sum(sizes), NODE_AVAIL + width), dtype=np.int64)
    index = np.zeros(stride * len(sizes), dtype=np.int64)
    index[INDEX_KIND] = SKYLINE
    rows = 0
    for part, size in enumerate(sizes):
        base = part * stride
        index[base + INDEX_ROWS] = rows
        index[base + INDEX_STRIDE] = stride
        index[base + INDEX_WIDTH] = max(1, -(-(d.horizon + d.profile.shape[1] + 1) // buckets))
        index[base + INDEX_TOUCHED] = buckets - 1
        rows += size
    return nodes, index


@njit(cache=True)
def _fill(d: Data, avail: np.ndarray, lo: int, hi: int, reverse: bool, T: int) -> None:
    """Write the capacity of ticks ``[lo, hi)`` into ``avail`` (mirrored at ``T`` if reverse)."""
    prof = d.profile
    width = prof.shape[1]
    for r in range(d.n_res):
        for t in range(lo, hi):
            f = T - 1 - t if reverse else t
            avail[r, t] = prof[r, f] if 0 <= f < width else d.capacity[r]


@njit(cache=True)
def _reset(d: Data, table, index, reverse: bool, T: int) -> None:
    """The capacity profile with nothing booked: windows included, mirrored at ``T`` when
    ``reverse`` (tick ``t`` then has the capacity of tick ``T - 1 - t``)."""
    if index[INDEX_KIND] == TICKS:
        _fill(d, table, 0, min(max(index[INDEX_USED], T), table.shape[1]), reverse, T)
        index[INDEX_USED] = max(index[INDEX_USED], T)
    else:
        _sky_reset(d, table, index, reverse, T)


@njit(cache=True, inline="always")
def _span(n_glob, n_kind, node, glob):
    """Demand columns a placement covers: the cluster-wide ones when ``glob``, the node
    kinds when ``node`` >= 0. Demand column ``r`` is capacity column ``_col(r, ...)``."""
    return (0 if glob else n_glob), (n_glob + n_kind if node >= 0 else n_glob)


@njit(cache=True, inline="always")
def _col(r, n_glob, n_kind, node):
    """The capacity column of demand column ``r`` (node kinds: on node ``node``)."""
    return r if r < n_glob else r + node * n_kind


@njit(cache=True, inline="always")
def _demands(seg, s, lo, hi) -> bool:
    """Whether segment ``s`` demands something in demand columns ``[lo, hi)``."""
    for r in range(lo, hi):  # noqa: SIM110 (numba has no generators)
        if seg[s, SEG_DEMAND + r] > 0:
            return True
    return False


@njit(cache=True)
def place(table, index, seg_start, seg, m, dur_m, est, limit, reverse, n_glob, n_kind, node, glob):
    """Earliest start >= ``est`` at which every segment of mode ``m`` fits the capacity left.

    The demands checked are the cluster-wide ones when ``glob`` and the per-node ones
    on node ``node`` when ``node`` >= 0. The search gives up, returning a start that
    finishes after ``limit``, once the mode can no longer finish by ``limit``.
    Segments are mirrored within the mode when ``reverse``.
    """
    if index[INDEX_KIND] == TICKS:
        return _tick_place(
            table, seg_start, seg, m, dur_m, est, limit, reverse, n_glob, n_kind, node, glob
        )
    return _sky_place(
        table, index, seg_start, seg, m, dur_m, est, limit, reverse, n_glob, n_kind, node, glob
    )


@njit(cache=True)
def book(table, index, seg_start, seg, m, dur_m, start, reverse, n_glob, n_kind, node, glob):
    """Take the demands of mode ``m`` started at ``start`` off the capacity left (the
    same demands as :func:`place` checks)."""
    if index[INDEX_KIND] == TICKS:
        _tick_book(
            table, index, seg_start, seg, m, dur_m, start, reverse, n_glob, n_kind, node, glob
        )
    else:
        _sky_book(
            table, index, seg_start, seg, m, dur_m, start, reverse, n_glob, n_kind, node, glob
        )


@njit(cache=True, inline="always")
def _tick_place(avail, seg_start, seg, m, dur_m, est, limit, reverse, n_glob, n_kind, node, glob):
    """:func:`place` on a per-tick profile: a clash moves the start past the clashing tick."""
    r_lo, r_hi = _span(n_glob, n_kind, node, glob)
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
                for r in range(r_lo, r_hi):
                    if seg[s, SEG_DEMAND + r] > avail[_col(r, n_glob, n_kind, node), tau]:
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


@njit(cache=True, inline="always")
def _tick_book(
    avail, index, seg_start, seg, m, dur_m, start, reverse, n_glob, n_kind, node, glob
) -> None:
    """:func:`book` on a per-tick profile."""
    r_lo, r_hi = _span(n_glob, n_kind, node, glob)
    for s in range(seg_start[m], seg_start[m + 1]):
        if seg[s, SEG_ACTIVE] == 0:
            continue
        dur = seg[s, SEG_DURATION]
        off = dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]
        lo = start + off
        for r in range(r_lo, r_hi):
            q = seg[s, SEG_DEMAND + r]
            if q:
                c = _col(r, n_glob, n_kind, node)
                for tau in range(lo, lo + dur):
                    avail[c, tau] -= q
    index[INDEX_USED] = max(index[INDEX_USED], start + dur_m)


@njit(cache=True, inline="always")
def _part(n_glob, n_kind, node):
    """The skyline part of a placement (0: cluster-wide, ``v + 1``: node ``v``), the first
    profile column of its resources and their number."""
    if node < 0:
        return 0, 0, n_glob
    return node + 1, n_glob + node * n_kind, n_kind


@njit(cache=True)
def _append(nodes, index, base, t, prof, col, capacity, c0, nc) -> int:
    """Append a node at tick ``t`` to the part at index ``base``, with the capacity of
    profile column ``col`` for resources ``c0 : c0 + nc`` (base capacity when ``col`` is
    outside the profile); returns its row."""
    k = index[base + INDEX_ROWS] + index[base + INDEX_COUNT]
    index[base + INDEX_COUNT] += 1
    nodes[k, NODE_TIME] = t
    nodes[k, NODE_NEXT] = -1
    for r in range(nc):
        c = c0 + r
        nodes[k, NODE_AVAIL + r] = prof[c, col] if 0 <= col < prof.shape[1] else capacity[c]
    if index[base + INDEX_COUNT] > 1:
        nodes[k - 1, NODE_NEXT] = k
    return k


@njit(cache=True)
def _same_column(prof, a, b, capacity, c0, nc) -> bool:
    for r in range(c0, c0 + nc):
        x = prof[r, a] if 0 <= a < prof.shape[1] else capacity[r]
        y = prof[r, b] if 0 <= b < prof.shape[1] else capacity[r]
        if x != y:
            return False
    return True


@njit(cache=True)
def _sky_reset(d: Data, nodes, index, reverse: bool, T: int) -> None:
    """:func:`_reset` of a skyline: every part, its windows (mirrored when ``reverse``)."""
    prof, capacity = d.profile, d.capacity
    width = prof.shape[1]
    stride = index[INDEX_STRIDE]
    for part in range(d.n_node + 1):
        base = part * stride
        _, c0, nc = _part(d.n_glob, d.n_kind, part - 1)
        index[base + INDEX_COUNT] = 0
        if reverse:
            # Mirrored, the windows lie in (T - width, T]; before and after, the base capacity.
            lo = max(0, T - width)
            _append(nodes, index, base, 0, prof, T - 1, capacity, c0, nc)
            for t in range(max(1, lo), T + 1):
                if not _same_column(prof, T - 1 - t, T - t, capacity, c0, nc):
                    _append(nodes, index, base, t, prof, T - 1 - t, capacity, c0, nc)
        else:
            _append(nodes, index, base, 0, prof, 0, capacity, c0, nc)
            for t in range(1, width + 1):
                if not _same_column(prof, t, t - 1, capacity, c0, nc):
                    _append(nodes, index, base, t, prof, t, capacity, c0, nc)
        head = index[base + INDEX_ROWS]
        for b in range(index[base + INDEX_TOUCHED] + 1):
            index[base + INDEX_ANCHOR + b] = head
        index[base + INDEX_TOUCHED] = 0


@njit(cache=True, inline="always")
def _find(nodes, index, base, x) -> int:
    """The node of the part at index ``base`` whose span holds tick ``x``; the bucket's
    anchor moves to the nearest node at or before the bucket's first tick that the walk
    passes."""
    width = index[base + INDEX_WIDTH]
    buckets = index[INDEX_STRIDE] - INDEX_ANCHOR
    b = min(x // width, buckets - 1)
    first = b * width
    k = index[base + INDEX_ANCHOR + b]
    while True:
        nxt = nodes[k, NODE_NEXT]
        if nxt < 0 or nodes[nxt, NODE_TIME] > x:
            return k
        k = nxt
        if nodes[k, NODE_TIME] <= first:
            index[base + INDEX_ANCHOR + b] = k
            # The next reset must clear this anchor: node numbers are reused.
            index[base + INDEX_TOUCHED] = max(index[base + INDEX_TOUCHED], b)


@njit(cache=True, inline="always")
def _sky_place(
    nodes, index, seg_start, seg, m, dur_m, est, limit, reverse, n_glob, n_kind, node, glob
):
    """:func:`place` on a skyline: a clash moves the start past the node that clashes. The
    placement reads one part (``glob`` goes with ``node`` < 0)."""
    r_lo, r_hi = _span(n_glob, n_kind, node, glob)
    part, _, _ = _part(n_glob, n_kind, node)
    base = part * index[INDEX_STRIDE]
    shift = n_glob if node >= 0 else 0
    t = est
    while t + dur_m <= limit:
        moved = False
        for s in range(seg_start[m], seg_start[m + 1]):
            if seg[s, SEG_ACTIVE] == 0 or not _demands(seg, s, r_lo, r_hi):
                continue
            dur = seg[s, SEG_DURATION]
            off = dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]
            lo = t + off
            k = _find(nodes, index, base, lo)
            while k >= 0 and nodes[k, NODE_TIME] < lo + dur:
                nxt = nodes[k, NODE_NEXT]
                clash = False
                for r in range(r_lo, r_hi):
                    if seg[s, SEG_DEMAND + r] > nodes[k, NODE_AVAIL + r - shift]:
                        clash = True
                        break
                if clash:
                    # Past this node: its capacity stays short until the next node.
                    t = (nodes[nxt, NODE_TIME] if nxt >= 0 else BIG) - off
                    moved = True
                    break
                k = nxt
            if moved:
                break
        if not moved:
            return t
    return t


@njit(cache=True, inline="always")
def _split(nodes, index, base, k, t) -> int:
    """A new node at tick ``t`` inside node ``k``'s span, with its capacity; returns it."""
    j = index[base + INDEX_ROWS] + index[base + INDEX_COUNT]
    index[base + INDEX_COUNT] += 1
    nodes[j, NODE_TIME] = t
    nodes[j, NODE_NEXT] = nodes[k, NODE_NEXT]
    nodes[j, NODE_AVAIL:] = nodes[k, NODE_AVAIL:]
    nodes[k, NODE_NEXT] = j
    return j


@njit(cache=True, inline="always")
def _sky_book(
    nodes, index, seg_start, seg, m, dur_m, start, reverse, n_glob, n_kind, node, glob
) -> None:
    """:func:`book` on a skyline (a segment with nothing to take splits no node)."""
    r_lo, r_hi = _span(n_glob, n_kind, node, glob)
    part, _, _ = _part(n_glob, n_kind, node)
    base = part * index[INDEX_STRIDE]
    shift = n_glob if node >= 0 else 0
    buckets = index[INDEX_STRIDE] - INDEX_ANCHOR
    for s in range(seg_start[m], seg_start[m + 1]):
        if seg[s, SEG_ACTIVE] == 0 or not _demands(seg, s, r_lo, r_hi):
            continue
        dur = seg[s, SEG_DURATION]
        off = dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]
        lo = start + off
        hi = lo + dur
        k = _find(nodes, index, base, lo)
        if nodes[k, NODE_TIME] < lo:
            k = _split(nodes, index, base, k, lo)
        while k >= 0 and nodes[k, NODE_TIME] < hi:
            nxt = nodes[k, NODE_NEXT]
            if nxt < 0 or nodes[nxt, NODE_TIME] > hi:
                nxt = _split(nodes, index, base, k, hi)
            for r in range(r_lo, r_hi):
                nodes[k, NODE_AVAIL + r - shift] -= seg[s, SEG_DEMAND + r]
            k = nxt
        index[base + INDEX_TOUCHED] = max(
            index[base + INDEX_TOUCHED], min(hi // index[base + INDEX_WIDTH], buckets - 1)
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

"""Compiled capacity profiles of the schedule-generation passes: the capacity left per
resource, as a per-tick array for short horizons or as an event-based profile (a
skyline) otherwise, so that a pass costs what its segments cost, not what its horizon
is (:func:`new_capacity`); and the two operations every pass makes on it, finding the
earliest start where a mode's segments fit (:func:`place`) and booking them
(:func:`book`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from planner.errors import PlannerError
from planner.solvers.encoding import (
    SEG_ACTIVE,
    SEG_DEMAND,
    SEG_DURATION,
    SEG_OFFSET,
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
def _window(seg, s, dur_m, reverse):
    """Segment ``s``'s offset from its mode's start and its length (the mode of ``dur_m``
    ticks; ``reverse``: it runs backwards from its end)."""
    dur = seg[s, SEG_DURATION]
    return (dur_m - seg[s, SEG_OFFSET] - dur if reverse else seg[s, SEG_OFFSET]), dur


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
            off, dur = _window(seg, s, dur_m, reverse)
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
        off, dur = _window(seg, s, dur_m, reverse)
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
            off, dur = _window(seg, s, dur_m, reverse)
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
        off, dur = _window(seg, s, dur_m, reverse)
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

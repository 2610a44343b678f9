"""Lower bounds on the makespan and the time windows they imply.

``critical_path_bound`` follows the precedences with their lags, the release
times and each task's shortest mode; ``energy_bound`` divides each renewable
resource's least total work by its capacity over time. Both are valid for every
mode choice, so they bound every solver's makespan from below.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import networkx as nx

from planner.errors import InputError
from planner.graph import task_graph
from planner.model import MAX_INT

if TYPE_CHECKING:
    from planner.model import Problem


def earliest_starts(problem: Problem) -> dict[str, int]:
    """Earliest start of every task from releases, precedences, lags and shortest modes.

    The task graph must be acyclic.
    """
    es = {t.name: t.release for t in problem.tasks}
    dmin = {t.name: t.min_duration for t in problem.tasks}
    g = task_graph(problem)
    for u in nx.topological_sort(g):
        for _, v, data in g.out_edges(u, data=True):
            for kind, lag in data["constraints"]:
                gap = lag + (dmin[u] if kind == "FS" else 0)
                es[v] = max(es[v], es[u] + gap)
    return es


def latest_starts(problem: Problem, horizon: int | None = None) -> dict[str, int | None]:
    """Latest start of every task allowed by deadlines (and ``horizon``, if given).

    ``None`` marks a task whose start nothing bounds from above. The task graph
    must be acyclic.
    """
    dmin = {t.name: t.min_duration for t in problem.tasks}
    ls: dict[str, int | None] = {}
    for t in problem.tasks:
        ends = [e for e in (t.deadline, horizon) if e is not None]
        ls[t.name] = min(ends) - dmin[t.name] if ends else None
    g = task_graph(problem)
    for v in reversed(list(nx.topological_sort(g))):
        if ls[v] is None:
            continue
        for u, _, data in g.in_edges(v, data=True):
            for kind, lag in data["constraints"]:
                bound = ls[v] - lag - (dmin[u] if kind == "FS" else 0)
                ls[u] = bound if ls[u] is None else min(ls[u], bound)
    return ls


def critical_path_bound(problem: Problem) -> int:
    """Length of the longest path: max over tasks of earliest start plus shortest duration."""
    es = earliest_starts(problem)
    return max(es[t.name] + t.min_duration for t in problem.tasks)


def energy_bound(problem: Problem) -> int:
    """Per-resource energy bound: the first tick by which the capacity could hold all work.

    For each renewable resource, the least work any mode choice puts on it is
    compared with the capacity summed over ticks (capacity windows included); each
    node resource kind is compared with its capacity summed over the nodes.
    """
    best = 0
    for res in problem.renewables:
        work = sum(min(m.energy(res.name) for m in t.modes) for t in problem.tasks)
        if work == 0:
            continue
        best = max(best, _ticks_to_supply(work, res.capacity, res.windows))
    for kind in problem.node_kinds:
        # A node resource pooled over the nodes: a mode on k nodes puts k times its
        # per-node work on the pool.
        work = sum(min(m.energy(kind) * m.nodes for m in t.modes) for t in problem.tasks)
        if work:
            capacity = sum(n.capacity.get(kind, 0) for n in problem.nodes)
            best = max(best, _ticks_to_supply(work, capacity, []))
    return best


def _ticks_to_supply(work: int, base: int, windows: list) -> int:
    """Smallest T such that the capacity summed over [0, T) reaches ``work``."""
    t, supplied = 0, 0
    for w in sorted(windows, key=lambda w: w.start):
        if supplied + base * (w.start - t) >= work:
            break
        supplied += base * (w.start - t)
        t = w.start
        span = w.end - w.start
        if w.capacity and supplied + w.capacity * span >= work:
            return t + math.ceil((work - supplied) / w.capacity)
        supplied += w.capacity * span
        t = w.end
    if base == 0:
        return t  # no capacity after the windows; the feasibility check reports this case
    return t + math.ceil((work - supplied) / base)


def lower_bound(problem: Problem) -> int:
    """The best of the critical-path and energy bounds."""
    return max(critical_path_bound(problem), energy_bound(problem))


def horizon_error(ticks: int, time_unit: str, cluster: bool) -> InputError:
    """The error for a horizon of ``ticks`` above ``MAX_INT``; the advice fits the form
    the problem came from (the cluster form's ``time_unit`` sets the ticks)."""
    if cluster:
        advice = f"use a coarser time_unit than {time_unit!r}"
    else:
        advice = (
            "divide every duration, lag, release, deadline and window bound by a common "
            "factor (fewer, longer ticks)"
        )
    return InputError(
        f"the horizon (every task back to back, with the latest release and all lags) is "
        f"{ticks} ticks, above the limit of 2**40 = {MAX_INT}; {advice}",
        place="time_unit" if cluster else None,
    )


def horizon(problem: Problem) -> int:
    """A makespan every serial schedule stays within: all tasks back to back, longest modes.

    It adds the latest release and the end of the last capacity window, and all
    lags, so that it also holds when windows reduce capacity early on.
    """
    longest = sum(max(m.duration for m in t.modes) for t in problem.tasks)
    lags = sum(p.lag for p in problem.precedences)
    last_window = max((w.end for r in problem.renewables for w in r.windows), default=0)
    latest_release = max(t.release for t in problem.tasks)
    return max(latest_release, last_window) + longest + lags

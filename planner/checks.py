"""Proofs of infeasibility found before any solver runs.

Each check raises :class:`~planner.errors.InfeasibleError` naming the cause and
the place: a precedence cycle, a task none of whose modes fits the capacity (or enough nodes), a
task window too short for the task, a budget below the least possible use, a
colocated job with no common placement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.bounds import earliest_starts, latest_starts
from planner.errors import InfeasibleError
from planner.graph import find_cycle

if TYPE_CHECKING:
    from planner.model import Mode, Problem


def check_feasibility(problem: Problem) -> None:
    """Raise :class:`InfeasibleError` if ``problem`` provably has no feasible schedule."""
    cycle = find_cycle(problem)
    if cycle:
        raise InfeasibleError("precedence cycle " + " -> ".join(cycle), place="precedences")
    _capacity(problem)
    _budgets(problem)
    _windows(problem)
    _colocation(problem)


def _fits(mode: Mode, caps: dict[str, int], problem: Problem) -> str | None:
    """What the mode demands above what the problem offers, or ``None``.

    Cluster-wide resources are compared with their largest capacity; a mode on ``k``
    nodes needs ``k`` nodes (of its type) each of which holds its demand per node.
    """
    for seg in mode.segments:
        if seg.duration == 0:
            continue
        for res, q in seg.demand.items():
            if res in caps and q > caps[res]:
                return f"{res} (demand {q}, capacity {caps[res]})"
    if mode.nodes:
        hold = len(problem.holding_nodes(mode))
        if hold < mode.nodes:
            peaks = ((k, mode.peak(k)) for k in problem.node_kinds)
            need = ", ".join(f"{k}: {q}" for k, q in peaks if q)
            kind = "nodes" if mode.node_type is None else f"nodes of type {mode.node_type!r}"
            return f"{mode.nodes} {kind} with {need} each (only {hold} hold it)"
    return None


def _capacity(problem: Problem) -> None:
    caps = {r.name: r.max_capacity for r in problem.renewables}
    for i, task in enumerate(problem.tasks):
        over = [_fits(m, caps, problem) for m in task.modes]
        if all(over):
            which = "its mode demands" if len(over) == 1 else "every mode demands"
            raise InfeasibleError(
                f"task {task.name!r}: {which} more than a resource ever offers: {over[0]}",
                place=f"tasks[{i}]",
            )


def _budgets(problem: Problem) -> None:
    for res in problem.nonrenewables:
        least = sum(min(m.consumes.get(res.name, 0) for m in t.modes) for t in problem.tasks)
        if least > res.capacity:
            raise InfeasibleError(
                f"non-renewable resource {res.name!r}: the least use of any mode choice is "
                f"{least}, above its budget {res.capacity}",
                place="resources",
            )


def _windows(problem: Problem) -> None:
    es = earliest_starts(problem)
    ls = latest_starts(problem)
    for i, task in enumerate(problem.tasks):
        latest = ls[task.name]
        if latest is not None and es[task.name] > latest:
            raise InfeasibleError(
                f"task {task.name!r}: empty time window: it cannot start before tick "
                f"{es[task.name]} but must start by tick {latest} to meet the deadlines",
                place=f"tasks[{i}]",
            )


def _colocation(problem: Problem) -> None:
    for job in problem.jobs:
        if not job.colocate:
            continue
        common: set[str] | None = None
        for task in problem.tasks:
            if task.job != job.name or any(m.placement is None for m in task.modes):
                continue
            keys = {m.placement for m in task.modes if m.placement is not None}
            common = keys if common is None else common & keys
        if common is not None and not common:
            raise InfeasibleError(
                f"job {job.name!r} must be colocated but its tasks share no placement key",
                place="jobs",
            )

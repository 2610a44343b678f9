"""Node placement facts the exact models share, read from the problem entities.

A mode with ``nodes`` = ``k`` > 0 runs on ``k`` whole nodes at one start; its
demands on node resource kinds hold on every node of the set. These helpers say
what a mode demands on each node, which colocated jobs tie their tasks' node sets
together, and which nodes are interchangeable (the symmetry both models break);
the nodes a mode can use are :meth:`planner.model.Problem.holding_nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from planner.model import Mode, Problem
from planner.schedule import Schedule


@dataclass(frozen=True)
class NodeSegment:
    """A segment of a placed mode that takes time and demands node resources."""

    offset: int
    """Ticks from the mode's start."""
    duration: int
    demand: dict[str, int]
    """Demand per node resource kind, on every node of the set."""


def node_segments(problem: Problem, mode: Mode) -> list[NodeSegment]:
    """The segments of ``mode`` that take time and demand a node resource, with offsets."""
    kinds = set(problem.node_kinds)
    out, at = [], 0
    for seg in mode.segments:
        demand = {k: q for k, q in seg.demand.items() if q and k in kinds}
        if seg.duration and demand:
            out.append(NodeSegment(at, seg.duration, demand))
        at += seg.duration
    return out


def colocated_placements(problem: Problem) -> dict[int, list[tuple[int, int]]]:
    """Per colocated job number, its ``(task, mode)`` pairs whose mode runs on nodes.

    Only jobs with at least one such pair appear.
    """
    jobs = {j.name: k for k, j in enumerate(problem.jobs) if j.colocate}
    out: dict[int, list[tuple[int, int]]] = {}
    for i, task in enumerate(problem.tasks):
        if task.job in jobs:
            for k, mode in enumerate(task.modes):
                if mode.nodes:
                    out.setdefault(jobs[task.job], []).append((i, k))
    return out


def identical_node_classes(problem: Problem) -> list[list[int]]:
    """Classes of two or more nodes with the same type and capacity, each in node order.

    Nothing in the model names a node other than through its type and capacity (nodes
    a pinned mode names, ``Mode.on``, are left out), so permuting the nodes of a class
    maps every schedule to one with the same objective.
    """
    pinned = {v for t in problem.tasks for m in t.modes for v in m.on or ()}
    classes: dict[tuple, list[int]] = {}
    for n, node in enumerate(problem.nodes):
        if node.name in pinned:
            continue  # a pinned mode names it: not interchangeable
        key = (node.type, tuple(sorted((k, q) for k, q in node.capacity.items() if q)))
        classes.setdefault(key, []).append(n)
    return [c for c in classes.values() if len(c) > 1]


def symmetry_task(problem: Problem) -> int | None:
    """The first task in instance order with a mode that runs on nodes, if any.

    Within each class of identical nodes, the exact models let this task use only a
    prefix of the class (its lowest-numbered nodes): the permutation of the class that
    moves the task's nodes there keeps every schedule feasible with the same objective.
    """
    return next((i for i, t in enumerate(problem.tasks) if any(m.nodes for m in t.modes)), None)


def canonical_nodes(problem: Problem, schedule: Schedule) -> dict[str, tuple[str, ...]]:
    """The node sets of ``schedule`` with identical nodes permuted so that the
    :func:`symmetry_task` uses a prefix of every class (the form the models accept)."""
    first = symmetry_task(problem)
    if first is None:
        return dict(schedule.nodes)
    names = [n.name for n in problem.nodes]
    used = set(schedule.nodes.get(problem.tasks[first].name, ()))
    rename: dict[str, str] = {}
    for members in identical_node_classes(problem):
        order = [names[n] for n in members]
        moved = [n for n in order if n in used] + [n for n in order if n not in used]
        rename.update(zip(moved, order, strict=True))
    return {task: tuple(rename.get(n, n) for n in nodes) for task, nodes in schedule.nodes.items()}


def job_node_sets(
    problem: Problem,
    nodes: dict[str, tuple[str, ...]],
    domain: Mapping[int, Iterable[int]],
    sizes: dict[int, int],
) -> dict[int, set[int]]:
    """Per job number of ``domain``, the indices of the nodes its tasks run on in a
    schedule's ``nodes``.

    ``domain`` maps each colocated job of a model to the nodes its node set ranges over.
    A job whose set always exists with size ``sizes[job]`` but none of whose tasks runs
    on nodes gets the first nodes of its domain.
    """
    index = {n.name: k for k, n in enumerate(problem.nodes)}
    jobs = {j.name: k for k, j in enumerate(problem.jobs)}
    out: dict[int, set[int]] = {j: set() for j in domain}
    for task in problem.tasks:
        if task.job is not None and jobs[task.job] in out and task.name in nodes:
            out[jobs[task.job]].update(index[n] for n in nodes[task.name] if n in index)
    for j, size in sizes.items():
        if not out[j]:
            out[j] = set(sorted(domain[j])[:size])
    return out

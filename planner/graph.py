"""A networkx view of the task graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from planner.model import Problem


def task_graph(problem: Problem) -> nx.DiGraph:
    """Build the task graph of ``problem``.

    Nodes are task names (attribute ``task``: the :class:`~planner.model.Task`);
    edges are precedences with attributes ``kind`` (``"FS"`` or ``"SS"``) and
    ``lag``. Parallel precedences between the same pair keep the strongest one
    per kind in the attribute ``constraints``.
    """
    g = nx.DiGraph()
    for task in problem.tasks:
        g.add_node(task.name, task=task)
    for p in problem.precedences:
        if g.has_edge(p.before, p.after):
            g.edges[p.before, p.after]["constraints"].append((p.kind, p.lag))
        else:
            g.add_edge(p.before, p.after, kind=p.kind, lag=p.lag, constraints=[(p.kind, p.lag)])
    return g


def find_cycle(problem: Problem) -> list[str] | None:
    """Return the task names along one precedence cycle, or ``None`` if there is none."""
    try:
        edges = nx.find_cycle(task_graph(problem))
    except nx.NetworkXNoCycle:
        return None
    return [u for u, _ in edges] + [edges[0][0]]

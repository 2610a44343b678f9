"""The independent schedule validator.

It shares no code with any solver: it reads the :class:`~planner.model.Problem`
entities directly and checks every rule of the model, reporting every violation
rather than the first. Capacity is checked with an event sweep over segment
boundaries and capacity-window edges, so long horizons cost nothing extra.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.model import Mode, Problem
    from planner.schedule import Schedule


@dataclass(frozen=True)
class Violation:
    """One broken rule: its kind and a sentence that names the objects involved."""

    kind: str
    """``unknown``, ``missing``, ``precedence``, ``capacity``, ``window``, ``budget``,
    ``node`` (a task's node set: its size, its nodes' type, unknown nodes) or ``colocation``."""
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class Report:
    """The validator's verdict."""

    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the schedule is feasible."""
        return not self.violations

    def __str__(self) -> str:
        if self.ok:
            return "valid"
        return f"invalid ({len(self.violations)} violations)"


def validate(problem: Problem, schedule: Schedule) -> Report:
    """Check ``schedule`` against every rule of ``problem``."""
    report = Report()
    add = report.violations.append
    tasks = {t.name: t for t in problem.tasks}
    chosen: dict[str, Mode] = {}
    for name, mode_name in schedule.modes.items():
        if name not in tasks:
            add(Violation("unknown", f"task {name!r} is not in the instance"))
            continue
        modes = {m.name: m for m in tasks[name].modes}
        if mode_name not in modes:
            add(Violation("unknown", f"task {name!r} has no mode {mode_name!r}"))
            continue
        chosen[name] = modes[mode_name]
    for name in tasks:
        if name not in schedule.modes:
            add(Violation("missing", f"task {name!r} is not scheduled"))
    start = {n: schedule.starts[n] for n in chosen}
    finish = {n: start[n] + chosen[n].duration for n in chosen}

    for p in problem.precedences:
        if p.before not in chosen or p.after not in chosen:
            continue
        ref = finish[p.before] if p.kind == "FS" else start[p.before]
        if start[p.after] < ref + p.lag:
            add(
                Violation(
                    "precedence",
                    f"{p.kind} {p.before!r} -> {p.after!r} lag {p.lag}: {p.after!r} starts at "
                    f"{start[p.after]}, earliest allowed {ref + p.lag}",
                )
            )
    for name in chosen:
        t = tasks[name]
        if start[name] < t.release:
            add(
                Violation(
                    "window",
                    f"task {name!r} starts at {start[name]} before its release {t.release}",
                )
            )
        if t.deadline is not None and finish[name] > t.deadline:
            add(
                Violation(
                    "window",
                    f"task {name!r} finishes at {finish[name]} after its deadline {t.deadline}",
                )
            )
    for res in problem.nonrenewables:
        used = sum(m.consumes.get(res.name, 0) for m in chosen.values())
        if used > res.capacity:
            add(Violation("budget", f"{res.name!r}: modes use {used}, budget {res.capacity}"))
    on = _node_sets(problem, schedule, chosen, add)
    _colocation(problem, chosen, on, add)
    _capacity(problem, chosen, start, add)
    _node_capacity(problem, chosen, start, on, add)
    return report


def _node_sets(
    problem: Problem, schedule: Schedule, chosen: dict[str, Mode], add
) -> dict[str, tuple[str, ...]]:
    """The node set of every task that runs on nodes, once its size and type are checked."""
    nodes = {n.name: n for n in problem.nodes}
    out: dict[str, tuple[str, ...]] = {}
    for name in schedule.nodes:
        if name in chosen and not chosen[name].nodes:
            add(Violation("node", f"task {name!r} runs on no node but the schedule names nodes"))
    for name, mode in chosen.items():
        if not mode.nodes:
            continue
        got = schedule.nodes.get(name, ())
        unknown = [n for n in got if n not in nodes]
        if unknown:
            add(Violation("node", f"task {name!r}: unknown nodes {unknown}"))
            continue
        if len(set(got)) != mode.nodes or len(got) != mode.nodes:
            add(
                Violation(
                    "node",
                    f"task {name!r} needs {mode.nodes} distinct nodes, the schedule names "
                    f"{list(got)}",
                )
            )
            continue
        if mode.on is not None and set(got) != set(mode.on):
            add(Violation("node", f"task {name!r} is pinned to {mode.on}, runs on {list(got)}"))
            continue
        wrong = [n for n in got if mode.node_type is not None and nodes[n].type != mode.node_type]
        if wrong:
            add(Violation("node", f"task {name!r} needs nodes of type {mode.node_type!r}: {wrong}"))
            continue
        out[name] = got
    return out


def _colocation(
    problem: Problem, chosen: dict[str, Mode], on: dict[str, tuple[str, ...]], add
) -> None:
    keys: dict[str, set[str]] = defaultdict(set)
    sets: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for t in problem.tasks:
        if t.name in chosen and t.job is not None and chosen[t.name].placement is not None:
            keys[t.job].add(chosen[t.name].placement)  # type: ignore[arg-type]
        if t.name in on and t.job is not None:
            sets[t.job].add(tuple(sorted(on[t.name])))
    for job in problem.jobs:
        if job.colocate and len(keys[job.name]) > 1:
            add(Violation("colocation", f"job {job.name!r} is placed on {sorted(keys[job.name])}"))
        if job.colocate and len(sets[job.name]) > 1:
            where = " and ".join("+".join(s) for s in sorted(sets[job.name]))
            add(Violation("colocation", f"job {job.name!r} runs on nodes {where}"))
    for name, mode in chosen.items():
        ref = mode.same_nodes_as
        if ref is not None and name in on and set(on[name]) != set(on.get(ref, ())):
            add(
                Violation(
                    "node",
                    f"task {name!r} in mode {mode.name!r} keeps the nodes of {ref!r} "
                    f"({'+'.join(on.get(ref, ())) or 'none'}), runs on {'+'.join(on[name])}",
                )
            )


def _node_capacity(
    problem: Problem,
    chosen: dict[str, Mode],
    start: dict[str, int],
    on: dict[str, tuple[str, ...]],
    add,
) -> None:
    """Every node's capacity of every node resource, by an event sweep per (node, kind)."""
    delta: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    local = set(problem.node_kinds)
    for name, nodes in on.items():
        at = start[name]
        for seg in chosen[name].segments:
            if seg.duration:
                for kind, q in seg.demand.items():
                    if q and kind in local:
                        for node in nodes:
                            delta[node, kind][at] += q
                            delta[node, kind][at + seg.duration] -= q
            at += seg.duration
    caps = {n.name: n.capacity for n in problem.nodes}
    for (node, kind), events in sorted(delta.items()):
        cap = caps[node].get(kind, 0)
        load, over = 0, False
        for tick in sorted(events):
            load += events[tick]
            if load > cap and not over:
                add(
                    Violation(
                        "capacity",
                        f"node {node!r} resource {kind!r} at tick {tick}: load {load} > "
                        f"capacity {cap}",
                    )
                )
            over = load > cap


def _capacity(problem: Problem, chosen: dict[str, Mode], start: dict[str, int], add) -> None:
    """Every cluster-wide renewable resource, by an event sweep."""
    for res in problem.renewables:
        delta: dict[int, int] = defaultdict(int)
        for name, mode in chosen.items():
            at = start[name]
            for seg in mode.segments:
                q = seg.demand.get(res.name, 0)
                if q and seg.duration:
                    delta[at] += q
                    delta[at + seg.duration] -= q
                at += seg.duration
        if not delta:
            continue
        edges = set(delta)
        for w in res.windows:
            edges.update((w.start, w.end))
        load = 0
        over_since: int | None = None
        for tick in sorted(edges):
            load += delta.get(tick, 0)
            cap = res.capacity_at(tick)
            if load > cap and over_since is None:
                over_since = tick
                add(
                    Violation(
                        "capacity",
                        f"resource {res.name!r} at tick {tick}: load {load} > capacity {cap}",
                    )
                )
            elif load <= cap:
                over_since = None

"""Chains of a job's tasks merged into one task: a coarser problem whose schedules are
schedules of the problem.

A deep-learning job compiled into several training blocks is a chain of tasks with the
same modes, each block choosing its mode and, on nodes, its node set as it is scheduled.
A decoder that places the first block sees only that block: it picks nodes free for a
block's length, where the job's later blocks (which keep its nodes) then wait. The
coarse problem merges every such chain into one task whose modes are the blocks' modes
of one name back to back, so that a decoder places the whole chain at once.
:func:`refine` turns a schedule of the coarse problem into one of the problem: the
chain's tasks back to back from its start, each in the mode of that name, on the same
nodes. It demands what the merged task demands, tick by tick, so it is feasible
whenever the coarse schedule is.

Two tasks ``a`` then ``b`` merge when ``b`` is ``a``'s only successor and ``a`` is
``b``'s only predecessor, by a finish-to-start precedence without lag; both belong to
the same job; they have the same mode names, and the modes of one name run on as many
nodes of the same type with the same placement key, pinned nowhere and keeping no
other task's nodes; ``b`` has no release and ``a`` no deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model import Mode, Problem, Task, validated
from planner.schedule import Schedule


@dataclass(frozen=True)
class Coarse:
    """A coarse problem and, per merged task, the chain of tasks it stands for."""

    problem: Problem
    chains: dict[str, list[str]]
    """Per task of the coarse problem that merges several, their names in chain order."""


def coarsen(problem: Problem) -> Coarse | None:
    """The problem with its chains merged (see the module docstring); ``None`` if no two
    tasks merge."""
    succ: dict[str, list[tuple[str, bool]]] = {}
    pred: dict[str, list[str]] = {}
    for p in problem.precedences:
        plain = p.kind == "FS" and p.lag == 0
        succ.setdefault(p.before, []).append((p.after, plain))
        pred.setdefault(p.after, []).append(p.before)
    tasks = {t.name: t for t in problem.tasks}

    def merges(a: Task) -> Task | None:
        after = succ.get(a.name, [])
        if len(after) != 1 or not after[0][1]:
            return None
        b = tasks[after[0][0]]
        if pred.get(b.name) != [a.name] or a.job is None or a.job != b.job:
            return None
        if b.release or a.deadline is not None or not _alike(a, b):
            return None
        return b

    following = {a.name: b.name for a in problem.tasks if (b := merges(a)) is not None}
    if not following:
        return None
    inner = set(following.values())
    chains: dict[str, list[str]] = {}
    for t in problem.tasks:
        if t.name in following and t.name not in inner:
            chain = [t.name]
            while chain[-1] in following:
                chain.append(following[chain[-1]])
            chains[t.name] = chain
    merged = [
        _merged([tasks[n] for n in chains[t.name]]) if t.name in chains else t
        for t in problem.tasks
        if t.name not in inner
    ]
    last = {chain[-1]: head for head, chain in chains.items()}
    precedences = [
        p.model_copy(update={"before": last.get(p.before, p.before)})
        for p in problem.precedences
        if p.after not in inner
    ]
    data = problem.model_dump()
    data["tasks"] = [t.model_dump() for t in merged]
    data["precedences"] = [p.model_dump() for p in precedences]
    return Coarse(validated(Problem, data), chains)


def refine(coarse: Coarse, problem: Problem, schedule: Schedule) -> Schedule:
    """The schedule of ``problem`` that a schedule of ``coarse.problem`` stands for."""
    tasks = {t.name: t for t in problem.tasks}
    starts, modes, nodes = {}, {}, {}
    for name, start in schedule.starts.items():
        mode = schedule.modes[name]
        at = start
        for member in coarse.chains.get(name, [name]):
            starts[member], modes[member] = at, mode
            if name in schedule.nodes:
                nodes[member] = schedule.nodes[name]
            at += tasks[member].mode(mode).duration
    return Schedule(starts=starts, modes=modes, nodes=nodes)


def _alike(a: Task, b: Task) -> bool:
    """Whether ``a`` and ``b`` have the same mode names, each on as many nodes of one type
    and placement key, none pinned or keeping another task's nodes."""
    if [m.name for m in a.modes] != [m.name for m in b.modes]:
        return False
    for x, y in zip(a.modes, b.modes, strict=True):
        if (x.nodes, x.node_type, x.placement) != (y.nodes, y.node_type, y.placement):
            return False
        if x.on is not None or y.on is not None or x.same_nodes_as or y.same_nodes_as:
            return False
    return True


def _merged(chain: list[Task]) -> Task:
    """One task for ``chain``: per mode name, the chain's modes back to back."""
    modes = []
    for k, mode in enumerate(chain[0].modes):
        members = [t.modes[k] for t in chain]
        consumes: dict[str, int] = {}
        for m in members:
            for r, q in m.consumes.items():
                consumes[r] = consumes.get(r, 0) + q
        modes.append(
            Mode(
                name=mode.name,
                segments=[s for m in members for s in m.segments],
                consumes=consumes,
                placement=mode.placement,
                nodes=mode.nodes,
                node_type=mode.node_type,
            )
        )
    return Task(
        name=chain[0].name,
        job=chain[0].job,
        modes=modes,
        release=chain[0].release,
        deadline=chain[-1].deadline,
    )

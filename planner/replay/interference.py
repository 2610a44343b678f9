"""Interference in the task-level replay (:mod:`planner.replay.loop`): which tasks
time-share GPUs, and how much that slows them (see the replay's docstring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.model import GPU_KIND

if TYPE_CHECKING:
    from planner.replay.replay_state import ReplayState


class Interference:
    """Which tasks time-share GPUs, and how much that slows them (see the module
    docstring): interference groups (a node, a placement key, or ``None``: the pool),
    their GPUs, the tasks with GPUs running on each, and each group's slowdown."""

    def __init__(self, replay: ReplayState) -> None:
        problem = replay.problem
        self.slow = replay.slow
        nodes = {nd.name: nd for nd in problem.nodes}
        self.groups: list[tuple[str | None, ...]] = [on or (None,) for on in replay.on]
        self.gpus = replay.gpus
        used: dict[str | None, set[int]] = {}
        for i, groups in enumerate(self.groups):
            for g in groups:
                used.setdefault(g, set()).update(
                    s for d in replay.dem[i] for s, _ in d if s < len(problem.renewables)
                )
        self.gpu_cap: dict[str | None, float] = {}
        unit = problem.unit
        for g, slots in used.items():
            if g in nodes:
                caps = nodes[g].capacity.items()
                self.gpu_cap[g] = sum(c / unit(kind) for kind, c in caps if GPU_KIND.match(kind))
            else:
                names, cap = replay.names, replay.cap
                self.gpu_cap[g] = sum(
                    cap[s] / unit(names[s]) for s in slots if GPU_KIND.match(names[s])
                )
        self.members: dict[str | None, set[int]] = {g: set() for g in used}
        self.gpu_sum: dict[str | None, float] = dict.fromkeys(used, 0.0)
        self.factor = dict.fromkeys(used, 1.0)
        self.fixed = replay.fixed

    def speed(self, i: int) -> float:
        """Task ``i``'s slowdown: its worst group's (none for a task fixed in time)."""
        if self.fixed[i]:
            return 1.0
        return max(self.factor[g] for g in self.groups[i])

    def join(self, i: int) -> set[int]:
        """Task ``i`` (with GPUs) starts running: the tasks whose slowdown changed."""
        for g in self.groups[i]:
            self.members[g].add(i)
            self.gpu_sum[g] += self.gpus[i]
        return self._refactor(self.groups[i])

    def leave(self, i: int) -> set[int]:
        """Task ``i`` (with GPUs) stops running: the tasks whose slowdown changed."""
        for g in self.groups[i]:
            self.members[g].discard(i)
            self.gpu_sum[g] -= self.gpus[i]
        return self._refactor(self.groups[i])

    def _refactor(self, groups: tuple[str | None, ...]) -> set[int]:
        """Set the slowdown of ``groups`` after a task joined or left them: ``k`` tasks
        time-sharing a group's GPUs (they ask more than it has) take ``s(k)``."""
        changed: set[int] = set()
        if self.slow is None:
            return changed
        for g in groups:
            members = self.members[g]
            k = len(members) if self.gpu_sum[g] > self.gpu_cap[g] else 1
            s = self.slow.factor(k)
            if s != self.factor[g]:
                self.factor[g] = s
                changed |= members
        return changed

"""``lp-groups``: the mix of co-located groups from a linear program
(:class:`planner.executor.model.grouping.GroupMix`), for the makespan.

The policy solves the program on what is left, again whenever the jobs at hand have changed by
:data:`RESOLVE`, and at every event rounds its rates ``x_c / C`` (concurrent GPU sets
of each column) to whole groups. First, every critical job (its
remaining time alone at least :data:`CRITICAL` x ``C``, longest first) joins the
column of highest rate that holds its type (else runs alone): the program spreads a
type's work over its jobs, and only this keeps the longest job from being the tail.
Then columns by rate, largest first, each taken as often as its rate rounds to (at
least once while it has a rate), its members the not yet grouped jobs of its types
with the longest remaining time, placed first-fit. The GPUs left go to the waiting
jobs, longest first, alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner.executor.model.grouping import Column, GroupMix
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy

RESOLVE = 0.01
"""The program is solved again once the jobs at hand have changed by more than this
share since it was last solved (and whenever a type runs out or appears, or GPUs
fail or come back); in between its rates are rounded anew on the jobs at hand."""

CRITICAL = 0.9
"""A job whose remaining time alone is at least this share of the program's makespan
is critical: it is grouped first."""


class LpGroups(Policy):
    """Groups rounded from the program at every event (see the module docstring)."""

    needs_stages = True

    name = "lp-groups"

    def __init__(
        self,
        boost: Sequence[float] | None = None,
        critical: float = CRITICAL,
        resolve: float = RESOLVE,
    ) -> None:
        self.critical, self.resolve = critical, resolve
        """The policy's :data:`CRITICAL` and :data:`RESOLVE` (a search tunes them)."""
        self.boost = boost
        """Per job (index), a factor on its remaining time alone where jobs are ordered
        and found critical (``None``: 1 for all): a search's priorities
        (:mod:`planner.solvers.dispatch_search`)."""

    def urgency(self, s: JobState) -> float:
        """How soon ``s`` runs: its remaining time alone, times its boost."""
        value = s.remaining * s.alone
        return value if self.boost is None else value * self.boost[s.idx]

    def start(self, context: Context) -> None:
        """The program over the whole workload."""
        super().start(context)
        # no power row, even under a cap: on trace3' at 60% of peak it gave 4,473,795 s
        # against 4,454,288 s without (the cap, not the mix, sets the pace there)
        self.mix = GroupMix(context.jobs, context.model)
        self.last: tuple[float, np.ndarray] | None = None
        self.present: tuple[bool, ...] = ()
        self.gpus_up = 0
        self.jobs_then = 0

    def schedule(self, t: float, runnable: list[JobState], cluster: Cluster) -> Chosen:
        """Job index -> (its group, its period, the group's overhead, its GPU set)."""
        mix = self.mix
        count = len(mix.gpus)
        left, jobs = [0.0] * count, [0] * count
        pools: list[list[JobState]] = [[] for _ in range(count)]
        for s in runnable:
            t = mix.type_of[s.idx]
            left[t] += s.remaining
            jobs[t] += 1
            pools[t].append(s)
        for pool in pools:
            pool.sort(key=lambda s: -self.urgency(s))
        cluster.empty()
        gpus = sum(cluster.free)
        for k, size in enumerate(mix.gpus):
            if size > gpus:  # a higher class holds the GPUs it needs: it waits
                left[k], jobs[k], pools[k] = 0.0, 0, []
        if not any(jobs):
            return {}
        present = tuple(n > 0 for n in jobs)
        if (
            self.last is None
            or present != self.present
            or gpus != self.gpus_up
            or abs(len(runnable) - self.jobs_then) > self.resolve * self.jobs_then
        ):
            self.last = mix.solve(left, jobs, gpus)
            self.present, self.gpus_up, self.jobs_then = present, gpus, len(runnable)
        makespan, rates = self.last
        ranked = np.argsort(-rates, kind="stable")
        order = ranked[rates[ranked] > 1e-9].tolist()
        used: set[int] = set()
        chosen: Chosen = {}

        def take(col: Column, first: JobState | None = None) -> bool:
            members = [first] if first is not None else []
            skip = {first.idx} if first is not None else set()
            need = list(col.types)
            if first is not None:
                need.remove(mix.type_of[first.idx])
            for t in need:
                s = next((s for s in pools[t] if s.idx not in used and s.idx not in skip), None)
                if s is None:
                    return False
                members.append(s)
                skip.add(s.idx)
            where = cluster.place(col.gpus)
            if where is None:
                return False
            used.update(skip)
            chosen.update(self.group(members, where))
            return True

        # a job whose own remaining time nears the program's makespan runs first, in the
        # column of highest rate that holds its type
        critical = [s for s in runnable if self.urgency(s) >= self.critical * makespan]
        for s in sorted(critical, key=lambda s: -self.urgency(s)):
            t = mix.type_of[s.idx]
            if s.idx in used:
                continue
            if not any(t in mix.columns[c].types and take(mix.columns[c], s) for c in order):
                where = cluster.place(s.job.gpus)
                if where is not None:
                    used.add(s.idx)
                    chosen.update(self.group([s], where))
        for c in order:
            for _ in range(max(1, round(float(rates[c])))):
                if not take(mix.columns[c]):
                    break
        waiting = [s for s in runnable if s.idx not in used]
        waiting.sort(key=lambda s: -self.urgency(s))
        for s in waiting:
            if not any(cluster.free):
                break
            where = cluster.place(s.job.gpus)
            if where is not None:
                chosen.update(self.group([s], where))
        return chosen

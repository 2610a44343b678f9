"""Synergy's policies (Mohan et al., OSDI 2022; its simulator's ``*_synergy_new.py``
schedulers and ``resources/cluster.py``): an order of the jobs and an allocation of CPU
cores and host memory to each, decided anew in rounds of 300 s.

Every round the jobs at hand are sorted (``fifo``: by arrival; ``srtf``: by remaining
time; ``las``: by attained GPU time; a job that has not run for 1,000 hours goes first
under the last two) and, in that order while GPUs are free, given GPUs and a vector
of CPU and memory per GPU:

- ``fair``: the GPU-proportional share (the job runs at its speed there);
- ``greedy``: its best vector (the least CPU and memory at its profile's greatest
  speed-up), or nothing this round where no free GPU's node has it;
- ``tune``: its best vector; else the fair share; else the fair share after taking back
  the surplus over the fair share of jobs on the node with the fewest free GPUs, which
  then run at the fair share.

A job's GPUs are the first free ones (in node order) whose node has its vector left.
Between rounds nothing changes: a job that finishes leaves its GPUs idle to the round's
end, and arrivals wait for the next round. A job without a profile holds what it asks.
"""

from __future__ import annotations

import math

from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy
from planner.executor.model.resources import default_alloc

ROUND = 300.0
"""Synergy's round (s)."""

STARVED = 1000 * 3600.0
"""Seconds without running after which a job goes first (Synergy's priority bump)."""


class Room:
    """The free GPUs, CPU cores and host memory per node in a round, and what each job
    placed holds."""

    def __init__(self, context: Context, down: frozenset[int]) -> None:
        g = context.gpus_per_node
        self.free = [[] if k in down else list(range(g)) for k in range(context.nodes)]
        self.cpu = list(context.cpus) or [math.inf] * context.nodes
        self.mem = list(context.mems) or [math.inf] * context.nodes
        self.held: dict[int, tuple[Where, tuple[float, float]]] = {}
        self.per_node = context.gpus_per_node

    def place(
        self, job: JobState, vector: tuple[float, float], whole: bool = False
    ) -> Where | None:
        """Take the first free GPUs whose node has ``vector`` (per GPU) left for each, for
        ``job`` (``whole``: a job that fits one node on one node only); ``None`` (nothing
        taken) where there are too few."""
        cpu, mem = vector
        take: list[tuple[int, tuple[int, ...]]] = []
        need = job.job.gpus
        one = whole and need <= self.per_node
        for k, gpus in enumerate(self.free):
            if not gpus or (one and len(gpus) < need):
                continue
            n = min(need, len(gpus))
            if cpu > 0:
                n = min(n, int((self.cpu[k] + 1e-9) // cpu))
            if mem > 0:
                n = min(n, int((self.mem[k] + 1e-9) // mem))
            if one and n < need:
                continue
            if n > 0:
                take.append((k, tuple(gpus[:n])))
                need -= n
                if not need:
                    break
        if need:
            return None
        where = tuple(take)
        self.hold(job, where, vector)
        return where

    def hold(self, job: JobState, where: Where, vector: tuple[float, float]) -> None:
        """``job`` holds ``where`` and ``vector`` per GPU there."""
        for k, ids in where:
            self.free[k] = [i for i in self.free[k] if i not in ids]
            self.cpu[k] -= vector[0] * len(ids)
            self.mem[k] -= vector[1] * len(ids)
        self.held[job.idx] = (where, vector)

    def release(self, job: JobState) -> None:
        """``job`` gives back its CPU and memory (it keeps its GPUs)."""
        where, vector = self.held[job.idx]
        for k, ids in where:
            self.cpu[k] += vector[0] * len(ids)
            self.mem[k] += vector[1] * len(ids)


class Synergy(Policy):
    """Synergy's order and allocation (see the module docstring); subclasses set
    :attr:`order` and :attr:`allocation`."""

    needs_stages = True
    round = ROUND
    """Seconds between decisions (0: at every arrival and completion)."""
    order = "fifo"
    """``fifo``, ``srtf`` or ``las``."""
    allocation = "tune"
    """``fair``, ``greedy`` or ``tune``."""

    def start(self, context: Context) -> None:
        """A run starts: no round yet."""
        super().start(context)
        self.next_round = 0.0
        self.entries: Chosen = {}
        self.attained: dict[int, float] = {}
        self.last_ran: dict[int, float] = {}
        self.waiting = False

    def arrive(self, job: JobState) -> None:
        """A job arrives: it waits for the next round."""
        self.last_ran[job.idx] = job.job.release
        self.waiting = True
        if self.round and self.next_round < job.job.release - 1e-6:  # the round after it
            self.next_round = math.ceil(job.job.release / self.round - 1e-9) * self.round

    def finish(self, job: JobState, t: float) -> None:
        """A job ends: its GPUs idle to the round's end."""
        self.entries.pop(job.idx, None)

    def next_event(self) -> float:
        """The next round, while there are jobs."""
        if not self.round:
            return math.inf
        return self.next_round if self.waiting or self.entries else math.inf

    def best(self, job: JobState) -> tuple[float, float, float]:
        """``job``'s best vector (CPU, memory per GPU) and its speed-up there; its fair
        share without a profile."""
        fair = self.context.fair
        profile = job.job.profile
        if profile is None or fair is None:
            return job.job.cpu, job.job.mem, 1.0
        return profile.best

    def fair(self, job: JobState) -> tuple[float, float]:
        """``job``'s GPU-proportional vector (what it asks, without a profile)."""
        return default_alloc(job.job, self.context.fair, 1)

    def key(self, t: float, job: JobState) -> tuple[float, ...]:
        """The round's order of the jobs, smallest first."""
        if self.order == "fifo":
            return (job.job.release,)
        starved = 0.0 if t - self.last_ran[job.idx] > STARVED else 1.0
        if self.order == "las":
            return starved, self.attained.get(job.idx, 0.0) * job.job.gpus, job.job.release
        speedup = 1.0 if self.allocation == "fair" else self.best(job)[2]
        return starved, job.remaining_time / speedup, job.job.release

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """At a round, sort and allocate anew; between rounds, keep the round's answer."""
        if self.round and t < self.next_round - 1e-6:
            return dict(self.entries)
        if self.round:
            self.next_round = (math.floor(t / self.round + 1e-9) + 1) * self.round
        self.waiting = False
        jobs.sort(key=lambda s: self.key(t, s))
        self.nodes = nodes = Room(self.context, cluster.down)
        free = sum(len(f) for f in nodes.free)
        for s in jobs:
            s.alloc = None
            if s.job.gpus > free:
                continue
            where = self.allocate(s, nodes)
            if where is not None:
                free -= s.job.gpus
        for s in jobs:
            if s.idx in nodes.held:
                self.attained[s.idx] = self.attained.get(s.idx, 0.0) + self.round
                self.last_ran[s.idx] = t
            else:
                self.waiting = True
        self.entries = self.answer(t, jobs)
        return dict(self.entries)

    def answer(self, t: float, jobs: list[JobState]) -> Chosen:
        """The round's answer: every job placed (:attr:`nodes`) alone on its GPUs, at its
        vector."""
        entries: Chosen = {}
        held = self.nodes.held
        for s in jobs:
            if s.idx in held:
                where, s.alloc = held[s.idx]
                entries.update(self.alone(s, where))
        return entries

    def allocate(self, job: JobState, nodes: Room) -> Where | None:
        """Place ``job`` with its vector (see the module docstring)."""
        fair = self.fair(job)
        if self.allocation == "fair":
            return nodes.place(job, fair)
        best = self.best(job)[:2]
        where = nodes.place(job, best)
        if where is not None or self.allocation == "greedy":
            return where
        over = best[0] > fair[0] + 1e-9 or best[1] > fair[1] + 1e-9
        vector = fair if over else best
        if over:
            where = nodes.place(job, vector)
            if where is not None:
                return where
        self._take_back(job, vector, nodes)
        return nodes.place(job, vector)

    def _take_back(self, job: JobState, vector: tuple[float, float], nodes: Room) -> None:
        """Synergy's peer adjustment: on the node with the fewest free GPUs (for a job of
        several GPUs, the first with enough), jobs holding more than their fair share go
        back to it, those holding the most CPU per GPU first, until ``job``'s ``vector``
        fits there (as Synergy's, a job holding no more than its fair share may be
        picked and keeps what it holds)."""
        gpus = job.job.gpus
        with_free = [k for k, f in enumerate(nodes.free) if f]
        if not with_free:
            return
        if gpus > 1:
            enough = [k for k in with_free if len(nodes.free[k]) >= gpus]
            targets = {enough[0]: gpus} if enough else {}
        else:
            targets = {min(with_free, key=lambda k: (len(nodes.free[k]), k)): 1}
        if not targets:  # spread over nodes, fewest free GPUs first
            left = gpus
            for k in sorted(with_free, key=lambda k: (len(nodes.free[k]), k)):
                targets[k] = min(left, len(nodes.free[k]))
                left -= targets[k]
                if not left:
                    break
        states = self.context.state
        for k, count in targets.items():
            need = [max(0.0, vector[0] * count - nodes.cpu[k]),
                    max(0.0, vector[1] * count - nodes.mem[k])]  # fmt: skip
            if not any(need):
                continue
            on = [i for i, (where, _) in nodes.held.items() if any(n == k for n, _ in where)]
            on.sort(key=lambda i: (len(nodes.held[i][0]), -nodes.held[i][1][0],
                                   -nodes.held[i][1][1]))  # fmt: skip
            for i in on:
                peer = states[i]
                where, held = nodes.held[i]
                here = sum(len(ids) for n, ids in where if n == k)
                peer_fair = self.fair(peer)
                excess = [max(0.0, (held[0] - peer_fair[0]) * here),
                          max(0.0, (held[1] - peer_fair[1]) * here)]  # fmt: skip
                diff = [max(0.0, n - e) for n, e in zip(need, excess, strict=True)]
                if all(d > 0 for d in diff):
                    continue
                over = held[0] > peer_fair[0] + 1e-9 or held[1] > peer_fair[1] + 1e-9
                nodes.release(peer)  # over its fair share: back to it; else as it was
                nodes.hold(peer, where, peer_fair if over else held)
                if not any(diff):
                    break
                need = diff


def _synergy(order: str, allocation: str) -> type[Synergy]:
    """The policy class of ``order`` and ``allocation``."""
    name = f"synergy-{order}-{allocation}"
    doc = f"Synergy's {order.upper()} with its {allocation} allocation, in rounds of 300 s."
    return type(name, (Synergy,), {"name": name, "order": order, "allocation": allocation,
                                   "__doc__": doc})  # fmt: skip


SYNERGY_CLASSES: dict[str, type[Policy]] = {
    f"synergy-{o}-{a}": _synergy(o, a)
    for o in ("fifo", "srtf", "las")
    for a in ("fair", "greedy", "tune")
}
"""Synergy's policies by name: ``synergy-ORDER-ALLOCATION``."""

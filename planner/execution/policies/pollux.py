"""Pollux's simulator's baselines in 60-second rounds, on elastic jobs
(:mod:`planner.execution.elastic`): ``pollux-tiresias`` and ``pollux-optimus``.

As Pollux's simulator runs them (its artifact's ``simulator/simulator.py`` and
``tiresias.py``): the policy decides at every round (every 60 s from 0); a job that
arrives waits for the next round, and GPUs a job leaves stay idle until then. A job
placed anew (its first start too) spends its application's rescale time (30 s) without
progress, holding its GPUs; a job left where it is pays nothing. Every other event of
the run (an arrival, an end, an epoch's start) keeps the round's allocation.

``pollux-optimus`` is Optimus (Peng et al., EuroSys 2018) as Pollux's simulator gives it:
every job keeps its trace's batch size and gets one GPU, then the GPUs left go one by
one to the job whose steps left (at its batch size, by its validation record) times the
step time one more GPU saves is greatest (up to its batch size over its least local
batch); a job whose GPU count changes is placed anew, in ascending GPU count, on the
nodes with the most free GPUs.

``pollux-tiresias`` is Tiresias' two queues (Gu et al., NSDI 2019) in the form Pollux's
simulator gives them: a job of its trace's GPUs and batch size starts in the first
queue and moves to the second once its executed time times its GPUs reaches 16
GPU-hours; at each round the jobs of the first queue, then of the second, each in
arrival order, run while their GPUs are left (a job that does not fit waits and loses
its GPUs), and a job started anew takes GPUs from the nodes with the most free GPUs.
"""

from __future__ import annotations

import math
from functools import cache

from planner.dl.pollux import Application
from planner.execution.jobs import Where
from planner.execution.policies.base import Chosen, Cluster, Context, JobState, Policy

ROUND = 60.0
"""Seconds between two of the policy's decisions (Pollux's simulator's interval)."""

QUEUE_THRESHOLD = 16 * 3600.0
"""GPU-seconds of executed time after which a job moves to the second queue."""


class PolluxRounds(Policy):
    """A policy of Pollux's simulator: decides every :data:`ROUND` seconds, charges a job's
    rescale time where it is placed anew (see the module docstring)."""

    name = "pollux-rounds"
    needs_stages = True
    needs_elastic = True

    def start(self, context: Context) -> None:
        """A run starts: no job placed."""
        super().start(context)
        self.placed: dict[int, Where] = {}
        self.until: dict[int, float] = {}
        """Per job placed anew, when its rescale ends."""
        self.next_round = 0.0

    def next_event(self) -> float:
        """The next round."""
        return self.next_round

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """At a round, decide anew (:meth:`decide`); between rounds, keep the jobs placed."""
        here = {s.idx: s for s in jobs}
        for idx in [i for i in self.placed if i not in here]:
            del self.placed[idx]
        arrived = [s for s in jobs if s.job.release <= t + 1e-9]
        fresh = self.due(arrived)
        if t >= self.next_round - 1e-9 or fresh:
            self.next_round = (math.floor(t / ROUND + 1e-9) + 1) * ROUND
            new = self.decide(t, arrived, cluster)
            for idx, where in new.items():
                if self.placed.get(idx) != where:
                    self.until[idx] = t + here[idx].job.restart if here[idx].job.restart else t
            self.placed = new
        chosen: Chosen = {}
        for idx, where in self.placed.items():
            s = here[idx]
            self.configure(s, where)
            entry = self.group([s], where)[idx]
            chosen[idx] = (entry[0], entry[1], max(self.until.get(idx, t) - t, 0.0), where)
        return chosen

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """The round's allocation: per job that runs, its GPU set."""
        raise NotImplementedError

    def due(self, arrived: list[JobState]) -> bool:
        """Whether to decide anew between rounds (Pollux's simulator: never)."""
        return False

    def configure(self, job: JobState, where: Where) -> None:
        """Set ``job``'s configuration on ``where`` before it runs an interval there (by
        default its fixed one: :meth:`~planner.execution.elastic.Elastic.default_config`)."""

    def place(
        self, kept: dict[int, Where], wanted: list[tuple[int, int]], cluster: Cluster
    ) -> dict[int, Where]:
        """``kept`` where they are, then each of ``wanted`` (job, GPUs) not kept, in order,
        on GPUs of the nodes with the most free GPUs (the first of a tie), in the order
        taken (Pollux's placement)."""
        per_node = self.context.gpus_per_node
        free = {k: set(range(per_node)) for k in range(self.context.nodes)
                if k not in cluster.down}  # fmt: skip
        for where in kept.values():
            for k, ids in where:
                free[k].difference_update(ids)
        out = dict(kept)
        for idx, need in wanted:
            if idx in out:
                continue
            parts = []
            while need:
                node = max(free, key=lambda k: (len(free[k]), -k))
                ids = sorted(free[node])[:need]
                parts.append((node, tuple(ids)))
                free[node].difference_update(ids)
                need -= len(ids)
            out[idx] = tuple(parts)
        return out


class PolluxTiresias(PolluxRounds):
    """Tiresias' two queues as Pollux's simulator runs them (see the module docstring)."""

    name = "pollux-tiresias"

    def start(self, context: Context) -> None:
        """A run starts: both queues empty."""
        super().start(context)
        self.queues: tuple[list[int], list[int]] = ([], [])
        self.executed: dict[int, float] = {}
        self.checked: dict[int, float] = {}

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """Update the queues, then run the jobs in queue order while their GPUs fit."""
        here = {s.idx: s for s in jobs}
        q0, q1 = (list(filter(here.__contains__, q)) for q in self.queues)
        for s in sorted(jobs, key=lambda s: (s.job.release, s.idx)):
            if s.idx not in self.executed:
                self.executed[s.idx] = 0.0
                q0.append(s.idx)
            elif s.idx in self.placed:  # ran since the last round
                self.executed[s.idx] += t - self.checked[s.idx]
                if s.idx in q0 and self.executed[s.idx] * s.job.gpus >= QUEUE_THRESHOLD:
                    q0.remove(s.idx)
                    q1.append(s.idx)
            self.checked[s.idx] = t
        self.queues = (q0, q1)
        left = self.context.gpus - len(cluster.down) * self.context.gpus_per_node
        running = []
        for idx in (*q0, *q1):
            if here[idx].job.gpus <= left:
                running.append(idx)
                left -= here[idx].job.gpus
        kept = {i: w for i, w in self.placed.items() if i in running}
        return self.place(kept, [(i, here[i].job.gpus) for i in running], cluster)


class PolluxOptimus(PolluxRounds):
    """Optimus as Pollux's simulator runs it (see the module docstring)."""

    name = "pollux-optimus"

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """One GPU each in arrival order, then the GPUs left by greatest marginal gain."""
        jobs = sorted(jobs, key=lambda s: (s.job.release, s.idx))
        left = self.context.gpus - len(cluster.down) * self.context.gpus_per_node
        count: dict[int, int] = {}
        gain: dict[int, float] = {}
        for s in jobs:
            if left < 1:
                count[s.idx], gain[s.idx] = 0, 0.0
                continue
            count[s.idx] = 1
            left -= 1
            gain[s.idx] = self._gain(s, 1, left)
        while left > 0 and gain and max(gain.values()) > 0:
            idx = max(gain, key=lambda i: gain[i])  # the first of a tie
            count[idx] += 1
            left -= 1
            gain[idx] = self._gain(self._state[idx], count[idx], left)
        kept = {i: w for i, w in self.placed.items()
                if sum(len(ids) for _, ids in w) == count.get(i)}  # fmt: skip
        order = sorted((s.idx for s in jobs if count[s.idx] > 0), key=lambda i: count[i])
        return self.place(kept, [(i, count[i]) for i in order], cluster)

    def start(self, context: Context) -> None:
        """A run starts."""
        super().start(context)
        self._state = {s.idx: s for s in context.state}

    def _gain(self, s: JobState, n: int, left: int) -> float:
        """What one more GPU saves ``s`` over its steps left (0 where it may not grow)."""
        spec = s.job.elastic
        if spec is None or left < 1:
            return 0.0
        app, batch = spec.app, spec.batch_size or spec.app.init_batch_size
        if n + 1 > batch // app.min_local_bsz or (app.name == "ncf"):
            return 0.0
        epoch = spec.epoch(s.progress)
        last = app.max_epochs - 1
        remaining = 1.0 if last <= epoch else (app.iterations_at(batch, last)
                                                - app.iterations_at(batch, epoch))  # fmt: skip
        return (_predicted_step(app, batch, n) - _predicted_step(app, batch, n + 1)) * remaining


@cache
def _predicted_step(app: Application, batch: int, replicas: int) -> float:
    """Optimus' step time of ``batch`` on ``replicas`` GPUs packed on nodes of 4, as Pollux's
    simulator predicts it (one GPU: at least one accumulation step)."""
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / app.max_local_bsz - 1e-8) - 1
    if replicas == 1:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = min(atomic, int(app.max_batch_size / (replicas * (accum + 1))))
    packed = [4] * (replicas // 4) + ([replicas % 4] if replicas % 4 else [])
    step, sync = app.step_times(packed, atomic)
    return step + (step - sync) * accum

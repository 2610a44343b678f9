"""Pollux's simulator's baselines in 60-second rounds, on elastic jobs
(:mod:`planner.executor.model.elastic`): ``pollux-tiresias`` and ``pollux-optimus``.

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

import numpy as np

from planner.dl.pollux import (
    PROFILED_GPUS,
    Application,
    GoodputModel,
    fit_perf_params,
    packed,
)
from planner.executor.model.elastic import placement
from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy

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
        sets: dict[Where, list[JobState]] = {}
        for idx, where in self.placed.items():
            self.configure(here[idx], where)
            sets.setdefault(where, []).append(here[idx])
        chosen: Chosen = {}
        for where, members in sets.items():  # a set waits for its last member's rescale
            cost = max(max(self.until.get(m.idx, t) - t, 0.0) for m in members)
            for idx, entry in self.group(members, where).items():
                chosen[idx] = (entry[0], entry[1], cost, where)
        return chosen

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """The round's allocation: per job that runs, its GPU set."""
        raise NotImplementedError

    def due(self, arrived: list[JobState]) -> bool:
        """Whether to decide anew between rounds (Pollux's simulator: never)."""
        return False

    def configure(self, job: JobState, where: Where) -> None:
        """Set ``job``'s configuration on ``where`` before it runs an interval there (by
        default its fixed one: :meth:`~planner.executor.model.elastic.Elastic.default_config`)."""

    def place(
        self, kept: dict[int, Where], wanted: list[tuple[int, int]], cluster: Cluster
    ) -> dict[int, Where]:
        """``kept`` where they are, then each of ``wanted`` (job, GPUs) not kept, in order,
        where its GPUs are free, on the nodes :meth:`node_for` picks one after the other,
        in the order taken (Pollux's placement)."""
        per_node = self.context.gpus_per_node
        free = {k: set(range(per_node)) for k in range(self.context.nodes)
                if k not in cluster.down}  # fmt: skip
        for where in kept.values():
            for k, ids in where:
                free[k].difference_update(ids)
        out = dict(kept)
        for idx, need in wanted:
            if idx in out or sum(map(len, free.values())) < need:
                continue
            parts = []
            while need:
                node = self.node_for(free, need)
                ids = sorted(free[node])[:need]
                parts.append((node, tuple(ids)))
                free[node].difference_update(ids)
                need -= len(ids)
            out[idx] = tuple(parts)
        return out

    def node_for(self, free: dict[int, set[int]], need: int) -> int:
        """The node a job that needs ``need`` more GPUs takes free GPUs of: the one with
        the most (the first of a tie), as Pollux's simulator takes them."""
        return max(free, key=lambda k: (len(free[k]), -k))


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
    atomic, accum = app.config(replicas, batch, alone_accumulates=True)
    return app.seconds_per_step(packed(replicas, PROFILED_GPUS), atomic, accum)


FAIR_NODES = 1
"""Nodes of the fair share that Pollux's speed-ups are relative to (its ``ceil(nodes x
dominant share)``: 1 for a GPU of 64)."""

NCF_BATCH = 32768
"""The batch size Pollux's simulator fixes for ncf."""

GENERATIONS, POPULATION = 100, 100
"""Pollux's genetic search: generations and population per round."""


class Pollux(PolluxRounds):
    """Pollux (Qiao et al., OSDI 2021) as its simulator runs it: every round a genetic
    search over GPUs per job per node for the greatest power mean (p = -1) of the jobs'
    speed-ups (goodput by a model each job fits to the points it has run at, over its
    goodput on a fair share), a job placed anew discounted by its restarts; every job at
    the batch size and accumulation steps of best goodput by its model, chosen anew at
    every epoch. Its search is ours: a single-objective genetic search with Pollux's
    mutation, crossover and repair (at most one job across nodes on a node, at most twice
    the most GPUs a job has run on), seeded with the last round's population; it draws
    from a generator seeded per run (``seed``), so a run is repeatable."""

    name = "pollux"
    seed = 0

    def start(self, context: Context) -> None:
        """A run starts: no job has run anywhere."""
        super().start(context)
        self.points: dict[int, dict[tuple[int, int, int], tuple[float, float]]] = {}
        self.params: dict[int, tuple[float, ...]] = {}
        self.grad: dict[int, tuple[float, float]] = {}
        """Per job, the gradient's statistics where it last ran (Pollux's observed ones)."""
        self.restarts: dict[int, int] = {}
        self.service: dict[int, float] = {}
        self.last = 0.0
        self.previous: tuple[list[int], np.ndarray] | None = None
        self.rng = np.random.default_rng(self.seed)

    def configure(self, job: JobState, where: Where) -> None:
        """The batch of best goodput by the job's own model (Pollux's first where it has
        none; ncf at 32,768), noting the point it runs at. The trace's batch sizes are the
        baselines': Pollux ignores them."""
        spec = job.job.elastic
        assert spec is not None
        app, shape = spec.app, placement(where)
        replicas = sum(shape)
        if app.name == "ncf":  # Pollux's simulator holds ncf at its batch of 32,768
            job.config = app.config(replicas, NCF_BATCH)
        elif job.idx not in self.params:  # Pollux's first batch, its trace's ignored
            job.config = app.config(replicas, app.least_batch(replicas))
        else:
            sqr, var = self.grad[job.idx]
            model = GoodputModel(self.params[job.idx], sqr, var, app.init_batch_size)
            _, atomic, accum = model.optimize(np.array([len(shape)]), np.array([replicas]),
                                              app.max_batch_size,
                                              (app.min_local_bsz, app.max_local_bsz))  # fmt: skip
            a, s = int(atomic[0]), int(accum[0])
            job.config = (min(a, int(app.max_batch_size / (replicas * (s + 1)))), s)
        atomic, accum = job.config
        self.grad[job.idx] = app.grad_stats(replicas * atomic * (accum + 1),
                                            spec.epoch(job.progress))  # fmt: skip
        key = (len(shape), replicas, job.config[0])
        points = self.points.setdefault(job.idx, {})
        if key not in points:
            points[key] = app.step_times(shape, job.config[0])
            self.params[job.idx] = fit_perf_params(points)

    def decide(self, t: float, jobs: list[JobState], cluster: Cluster) -> dict[int, Where]:
        """Pollux's round: the genetic search, then each job on its nodes' GPUs."""
        for idx, where in self.placed.items():
            self.service[idx] = self.service.get(idx, 0.0) + (t - self.last) * sum(
                len(ids) for _, ids in where
            )
        self.last = t
        order = sorted(jobs, key=lambda s: (self.service.get(s.idx, 0.0), s.job.release, s.idx))
        if not order:
            return {}
        nodes = [k for k in range(self.context.nodes) if k not in cluster.down]
        per_node = self.context.gpus_per_node
        base = np.zeros((len(order), len(nodes)), dtype=int)
        column = {k: c for c, k in enumerate(nodes)}
        for r, s in enumerate(order):
            for k, ids in self.placed.get(s.idx, ()):
                if k in column:
                    base[r, column[k]] = len(ids)
        search = _Search(self, order, len(nodes), per_node, base, t)
        best = search.run(self._seed_states(order, base))
        self.previous = ([s.idx for s in order], search.population)
        out: dict[int, Where] = {}
        free = {k: set(range(per_node)) for k in nodes}
        changed = []
        for r, s in enumerate(order):
            if not best[r].any():
                continue
            old = self.placed.get(s.idx)
            held = sum(len(ids) for _, ids in old) if old is not None else 0
            if old is not None and np.array_equal(best[r], base[r]) and base[r].sum() == held:
                out[s.idx] = old  # where it is: no node of it down
                for k, ids in old:
                    free[k].difference_update(ids)
            else:
                changed.append(r)
        for r in changed:
            parts = []
            for c, k in enumerate(nodes):
                if best[r, c]:
                    ids = sorted(free[k])[: best[r, c]]
                    free[k].difference_update(ids)
                    parts.append((k, tuple(ids)))
            idx = order[r].idx
            out[idx] = tuple(parts)
            self.restarts[idx] = self.restarts.get(idx, -1) + 1
        return out

    def _seed_states(self, order: list[JobState], base: np.ndarray) -> np.ndarray:
        """The first population: the last round's, its rows moved to this round's jobs
        (new jobs on no GPUs); the current allocation alone at the first round."""
        if self.previous is None:
            return base[None]
        idxs, population = self.previous
        where = {idx: r for r, idx in enumerate(idxs)}
        states = np.zeros((len(population), *base.shape), dtype=int)
        for r, s in enumerate(order):
            if s.idx in where:
                states[:, r, : population.shape[2]] = population[:, where[s.idx], : base.shape[1]]
        return states


class _Search:
    """One round's genetic search of :class:`Pollux` (its ``Problem``)."""

    def __init__(self, policy: Pollux, order: list[JobState], nodes: int, per_node: int,
                 base: np.ndarray, t: float) -> None:  # fmt: skip
        self.policy, self.order, self.base = policy, order, base
        self.nodes, self.per_node = nodes, per_node
        self.rng = policy.rng
        jobs = len(order)
        share = 1.0 / (nodes * per_node)
        self.fair = math.ceil(1.0 / share / jobs)
        self.scale = share * nodes
        self.most = np.array([[self._most(s)] for s in order])
        restarts = np.array([policy.restarts.get(s.idx, 0) for s in order], dtype=float)
        age = np.array([t - s.job.release for s in order])
        self.factor = np.maximum(age - restarts * 30, 0.0) / (age + 30)
        self.tables = [self._table(s) for s in order]
        self.population = base[None]

    def _most(self, s: JobState) -> int:
        """Pollux's replica limit: twice the most it has run on (at least 1), at most 64
        and its largest batch over its least local batch; ncf 1."""
        app = s.job.elastic.app  # type: ignore[union-attr]
        if app.name == "ncf":
            return 1
        seen = max((r for _, r, _ in self.policy.points.get(s.idx, {})), default=0)
        return min(max(2 * seen, 1), 64, app.max_batch_size // app.min_local_bsz)

    def _table(self, s: JobState) -> np.ndarray:
        """``s``'s speed-up by (nodes, replicas) up to its limit."""
        most = int(self._most(s))
        table = np.zeros((self.nodes + 1, most + 1))
        params = self.policy.params.get(s.idx)
        if params is None:
            for r in range(1, most + 1):
                table[1:, r] = r / self.fair
            return table
        app = s.job.elastic.app  # type: ignore[union-attr]
        sqr, var = self.policy.grad[s.idx]
        model = GoodputModel(params, sqr, var, app.init_batch_size)
        local = (app.min_local_bsz, app.max_local_bsz)
        fair = model.optimize(np.array([FAIR_NODES]), np.array([self.fair]),
                              app.max_batch_size, local)[0][0]  # fmt: skip
        pairs = [(n, r) for r in range(1, most + 1) for n in range(1, min(r, self.nodes) + 1)]
        ns, rs = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        good = model.optimize(ns, rs, app.max_batch_size, local)[0]
        table[ns, rs] = good / fair if fair > 0 else 0.0
        return table

    def value(self, states: np.ndarray) -> np.ndarray:
        """Each state's power mean (p = -1) of the jobs' scaled speed-ups."""
        nodes = np.count_nonzero(states, axis=2)
        replicas = states.sum(axis=2)
        speed = np.zeros(nodes.shape)
        for j, table in enumerate(self.tables):
            r = np.minimum(replicas[:, j], table.shape[1] - 1)
            speed[:, j] = table[np.minimum(nodes[:, j], table.shape[0] - 1), r]
        speed *= self.scale
        restart = np.any(states != self.base, axis=2)
        speed *= np.where(restart, self.factor, 1.0)
        return (np.mean((speed + 1e-3) ** -1.0, axis=1)) ** -1.0

    def repair(self, states: np.ndarray) -> np.ndarray:
        """Pollux's repair: one job across nodes per node, the replica limits, at most 16
        nodes a job, the nodes' GPUs."""
        states = states.copy()
        distributed = np.count_nonzero(states, axis=2) > 1
        mask = (states * distributed[..., None] > 0).cumsum(axis=1) > 1
        states[mask] = 0
        shuffle = np.argsort(self.rng.random(states.shape), axis=2)
        states = np.take_along_axis(states, shuffle, axis=2)
        states = np.diff(np.minimum(np.cumsum(states, axis=2), self.most), axis=2, prepend=0)
        spread = np.diff(np.minimum(np.cumsum(states > 0, axis=2), 16), axis=2, prepend=0)
        states[spread == 0] = 0
        states = np.take_along_axis(states, np.argsort(shuffle, axis=2), axis=2)
        states = np.diff(np.minimum(np.cumsum(states, axis=1), self.per_node), axis=1, prepend=0)
        return states

    def mutate(self, states: np.ndarray) -> np.ndarray:
        """Pollux's mutation: back to the current allocation, zeroed rows, GPUs added."""
        states = states.copy()
        reset = self.rng.random(states.shape[:2]) < 0.1
        states = np.where(reset[..., None], self.base, states)
        prob = np.where(self.rng.random(states.shape[:2]) < 0.1, 0.1, 0.0)
        states[self.rng.random(states.shape) < prob[..., None]] = 0
        free = self.per_node - states.sum(axis=1, keepdims=True)
        mask1 = np.broadcast_to(free >= 1, states.shape)
        p1 = mask1 / np.maximum(mask1.sum(axis=1, keepdims=True), 1.0)
        mask2 = np.logical_and(states, mask1)
        p2 = mask2 / np.maximum(mask2.sum(axis=1, keepdims=True), 1.0)
        grow = self.rng.random(states.shape) < p1 + p2 - p1 * p2
        draw = self.rng.integers(states, np.maximum(self.per_node, states) + 1)
        states[grow] = draw[grow]
        return states

    def run(self, seeds: np.ndarray) -> np.ndarray:
        """The search; the best state found."""
        population = self.repair(np.concatenate([seeds, self.base[None]]))
        values = self.value(population)
        for _ in range(GENERATIONS):
            a = self.rng.integers(len(population), size=POPULATION)
            b = self.rng.integers(len(population), size=POPULATION)
            parents = np.where((values[a] >= values[b])[:, None, None], population[a],
                               population[b])  # fmt: skip
            mates = parents[self.rng.permutation(POPULATION)]
            point = self.rng.integers(len(self.order) + 1, size=(POPULATION, 1))
            take = (np.arange(len(self.order))[None] < point)[..., None]
            children = self.repair(self.mutate(np.where(take, parents, mates)))
            merged = np.concatenate([population, children])
            merged_values = np.concatenate([values, self.value(children)])
            keep = np.argsort(-merged_values, kind="stable")[:POPULATION]
            population, values = merged[keep], merged_values[keep]
        self.population = population
        return population[int(np.argmax(values))]

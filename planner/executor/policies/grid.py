"""``grid-srtf``: ours. Synergy's rounds and SRTF order, with CPU cores and host memory
allocated over each job's whole throughput grid rather than its best point or the fair
share.

Every round of 300 s the jobs at hand are sorted by remaining time at their best speed,
and while GPUs are free each is placed as Synergy's Tune places it, with its *floor*
(the least CPU and memory at which it runs as fast as on the GPU-proportional share)
for the fair share. Then each node's CPU and memory are allocated anew to its jobs:
the grid point of each job, none below its floor's speed, that together give the
greatest sum of speed-ups within the node (exact, by dynamic programming). A node's
allocation depends only on its jobs' profiles and GPUs there, and is kept for the next
node with the same ones.
"""

from __future__ import annotations

from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Context, JobState
from planner.executor.policies.synergy import Room, Synergy

PAIR_GAIN = 1.25
"""The least sum of two jobs' speeds together (each over its speed alone) at which a
waiting job joins a running one on its GPU."""


class GridSrtf(Synergy):
    """Shortest remaining time first in Synergy's rounds, CPU and memory allocated over
    the whole grid (see the module docstring)."""

    name = "grid-srtf"
    order = "srtf"
    allocation = "grid"

    def start(self, context: Context) -> None:
        """A run starts: no node's allocation known yet."""
        super().start(context)
        self.known: dict[tuple, tuple[tuple[float, float], ...]] = {}
        self.gains: dict[tuple, float] = {}
        self.floors: dict[int, tuple[float, float]] = {}
        """Per profile, its floor."""
        self.partner: dict[int, int] = {}
        """The round's pairs on one GPU, both ways."""

    def floor(self, job: JobState) -> tuple[float, float]:
        """The least CPU and memory (per GPU) at which ``job`` runs as fast as on the fair
        share (what it asks, without a profile)."""
        fair = self.fair(job)
        profile = job.job.profile
        if profile is None:
            return fair
        found = self.floors.get(id(profile))
        if found is None:
            target = profile.at(*fair) - 1e-9
            found = next(
                ((c, m) for c, m, x in sorted(profile.frontier)
                 if c <= fair[0] + 1e-9 and m <= fair[1] + 1e-9 and x >= target),
                fair,
            )  # fmt: skip
            self.floors[id(profile)] = found
        return found

    def allocate(self, job: JobState, nodes: Room) -> Where | None:
        """Place ``job`` as Synergy's Tune does, with its floor for the fair share: at its
        best vector on the first free GPUs whose node has it, else at its floor, else
        at its floor after taking back others' surplus (:meth:`Synergy._take_back`). The
        node's allocation is made anew after (:meth:`_spread`)."""
        where = nodes.place(job, self.best(job)[:2])
        if where is not None:
            return where
        floor = self.floor(job)
        where = nodes.place(job, floor)
        if where is None:
            self._take_back(job, floor, nodes)
            where = nodes.place(job, floor)
        return where

    def finish(self, job: JobState, t: float) -> None:
        """A job ends: a job that shared its GPU runs on alone to the round's end."""
        super().finish(job, t)
        partner = self.partner.pop(job.idx, None)
        if partner is not None and partner in self.entries:
            self.partner.pop(partner, None)
            s = self.context.state[partner]
            self.entries.update(self.alone(s, self._held[partner][0]))

    def answer(self, t: float, jobs: list[JobState]) -> Chosen:
        """Synergy's placement, then jobs that wait join running ones where interleaving
        pays, then each node's CPU and memory allocated anew."""
        states = self.context.state
        self.partner = {}
        for idx, (where, _) in list(self._held.items()):
            job = states[idx].job
            if job.profile is not None and len(where) == 1:
                self._held[idx] = (where, self.floor(states[idx]))
        if self.context.model.max_colocated > 1:
            self._pair([s for s in jobs if s.idx not in self._held])
        by_node: dict[int, list[int]] = {}
        used: dict[int, list[float]] = {}
        for idx, (where, vector) in self._held.items():
            if len(where) == 1 and states[idx].job.profile is not None:
                by_node.setdefault(where[0][0], []).append(idx)
                continue
            for k, ids in where:  # held as placed: a job of several nodes, or no profile
                held = used.setdefault(k, [0.0, 0.0])
                held[0] += vector[0] * len(ids)
                held[1] += vector[1] * len(ids)
        for k, members in by_node.items():
            self._spread(k, members, tuple(used.get(k, (0.0, 0.0))))
        for s in jobs:
            if s.idx in self._held:
                s.alloc = self._held[s.idx][1]
        entries: Chosen = {}
        for idx in sorted(self._held):
            if idx in entries:
                continue
            s, where = states[idx], self._held[idx][0]
            other = self.partner.get(idx)
            if other is None:
                entries.update(self.alone(s, where))
            else:
                entries.update(self.group([s, states[other]], where))
        for idx in self.partner:
            self.last_ran[idx] = t
        return entries

    def _pair(self, waiting: list[JobState]) -> None:
        """Each waiting job of one GPU, in order, joins the job alone on one GPU with
        whom the two run fastest together (their speeds over their speeds alone, at
        their floors, summed), where that sum is at least :data:`PAIR_GAIN` and the
        node has the CPU, host memory and GPU memory for it."""
        states, model = self.context.state, self.context.model
        nodes = self.nodes
        hosts = [
            i
            for i, (where, _) in self._held.items()
            if len(where) == 1 and len(where[0][1]) == 1 and states[i].job.gpus == 1
        ]
        for w in waiting:
            if w.job.gpus != 1 or not hosts:
                continue
            floor = self.floor(w) if w.job.profile is not None else self.fair(w)
            best, pick = PAIR_GAIN, None
            for i in hosts:
                where, _ = self._held[i]
                k = where[0][0]
                if nodes.cpu[k] < floor[0] - 1e-9 or nodes.mem[k] < floor[1] - 1e-9:
                    continue
                host = states[i]
                if not model.room([host.job.gpu_mem, w.job.gpu_mem]):
                    continue
                gain = self._gain(host, w)
                if gain > best:
                    best, pick = gain, i
            if pick is not None:
                where = self._held[pick][0]
                nodes.hold(w, where, floor)
                self.partner[pick], self.partner[w.idx] = w.idx, pick
                hosts.remove(pick)

    def _gain(self, host: JobState, guest: JobState) -> float:
        """The two jobs' speeds together over their speeds alone, summed, at their floors
        (kept per pair of models)."""
        key = (host.job.model, host.job.stages, guest.job.model, guest.job.stages)
        found = self.gains.get(key)
        if found is None:
            allocs = {s.idx: self.floor(s) for s in (host, guest) if s.job.profile is not None}
            periods = self.context.periods([host.idx, guest.idx], "", allocs)
            alone = [self.context.periods([s.idx], "", allocs)[s.idx] for s in (host, guest)]
            found = alone[0] / periods[host.idx] + alone[1] / periods[guest.idx]
            self.gains[key] = found
        return found

    def _spread(self, k: int, members: list[int], used: tuple[float, ...]) -> None:
        """Allocate node ``k``'s CPU and memory to its jobs ``members`` (each on GPUs of
        this node only) anew (:meth:`_steps`); ``used``: what the node's other jobs hold.
        Kept per node size, jobs' profiles and GPUs, and ``used``."""
        states = self.context.state
        held = self._held
        # by model (its profile's name), so that ties break alike from one run to the next
        shape = sorted((states[i].job.model, len(held[i][0][0][1]), i) for i in members)
        members = [i for *_, i in shape]
        caps = (self.context.cpus[k], self.context.mems[k])
        key = (caps, used, tuple(s[:2] for s in shape))
        found = self.known.get(key)
        if found is None:
            found = self._steps(caps, members, used)
            self.known[key] = found
        for i, vector in zip(members, found, strict=True):
            held[i] = (held[i][0], vector)

    def _steps(
        self, caps: tuple[float, float], members: list[int], used: tuple[float, ...]
    ) -> tuple[tuple[float, float], ...]:
        """The allocation of a node's CPU cores and memory (``caps``) to its jobs
        ``members`` (one GPU set each on it) that gives the greatest sum of speed-ups
        (times GPUs), no job below its floor's speed: exact, by dynamic programming over
        the jobs, each over the points of its grid no other point beats, keeping the
        states (CPU and memory used) that no other state beats; ``used``: what the
        node's other jobs hold."""
        states = self.context.state
        cpus, mems = caps
        frontier: list[tuple[float, float, float, tuple[tuple[float, float], ...]]] = [
            (used[0], used[1], 0.0, ())
        ]
        for i in members:
            job = states[i].job
            profile = job.profile
            assert profile is not None
            gpus = len(self._held[i][0][0][1])
            least = profile.at(*self.floor(states[i])) - 1e-9
            options = [(c, m, x * gpus) for c, m, x in profile.frontier if x >= least]
            grown = [
                (cpu + c * gpus, mem + m * gpus, value + v, (*chosen, (c, m)))
                for cpu, mem, value, chosen in frontier
                for c, m, v in options
                if cpu + c * gpus <= cpus + 1e-9 and mem + m * gpus <= mems + 1e-9
            ]
            frontier = _pareto(grown)
        return max(frontier, key=lambda s: (s[2], -s[0], -s[1]))[3]

    @property
    def _held(self) -> dict[int, tuple[Where, tuple[float, float]]]:
        """The round's jobs placed: their GPUs and CPU and memory per GPU."""
        return self.nodes.held


def _pareto(
    states: list[tuple[float, float, float, tuple[tuple[float, float], ...]]],
) -> list[tuple[float, float, float, tuple[tuple[float, float], ...]]]:
    """The states (CPU used, memory used, value, choices) no other beats: none with no
    more CPU, no more memory and a greater value (ties: the first in CPU order)."""
    states.sort(key=lambda s: (s[0], s[1], -s[2]))
    kept: list[tuple[float, float, float, tuple[tuple[float, float], ...]]] = []
    for s in states:
        if not any(k[1] <= s[1] + 1e-9 and k[2] >= s[2] - 1e-9 for k in kept):
            kept.append(s)
    return kept


class GridSrtfEvents(GridSrtf):
    """:class:`GridSrtf` deciding at every arrival and completion, not in rounds: no GPU
    idles to a round's end, no arrival waits for one."""

    name = "grid-srtf-events"
    round = 0.0

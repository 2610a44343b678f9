"""``batch-lpt``, ``batch-srtf`` and ``batch-fifo``: what a batch cluster without
checkpoints runs. Every job runs once, from its start to its end, on one GPU set: a job
placed is never moved nor stopped (but where a node fails: it starts again).

At every event the waiting jobs, in order (``lpt``: longest remaining time first, for
the makespan; ``srtf``: shortest first, for the mean JCT; ``fifo``: by arrival), take the
first free GPUs whose nodes have their CPU and memory left (on one node, for a job that
fits one); later jobs that fit go
before those that do not (backfilling). Where the model lets jobs share a GPU
(``max_colocated`` > 1), a job of one GPU that finds no free GPU joins the GPU of jobs
of one GPU where they together gain the most speed, each over its speed alone, if that
gain is at least :data:`JOIN_GAIN` (a job that waits on data leaves its GPU idle while
it loads, and another fills it); it stays there to its end too. Jobs of several GPUs
hold them whole, as in Slurm, which shares a GPU among jobs by its shards and takes all
of a job's shards from one GPU.
"""

from __future__ import annotations

from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy
from planner.executor.model.resources import default_alloc
from planner.executor.policies.synergy import Room

JOIN_GAIN = 0.25
"""The least gain of speed (summed over the set's jobs, each over its speed alone) at which
a waiting job joins a running set."""


class Batch(Policy):
    """A job runs once, start to end, on one GPU set (see the module docstring)."""

    name = "batch-lpt"
    needs_stages = True
    order = "lpt"
    """``lpt``, ``srtf`` or ``fifo``."""

    def start(self, context: Context) -> None:
        """A run starts: no set yet."""
        super().start(context)
        self.sets: dict[Where, list[JobState]] = {}
        self.where: dict[int, Where] = {}

    def key(self, job: JobState) -> tuple[float, ...]:
        """The order of the waiting jobs, smallest first."""
        if self.order == "fifo":
            return (job.job.release,)
        sign = -1.0 if self.order == "lpt" else 1.0
        return sign * job.remaining_time / job.job.weight, job.job.release

    def vector(self, job: JobState) -> tuple[float, float]:
        """The CPU cores and memory per GPU ``job`` is counted to hold (its fair share
        whole where it has a profile: the most its default can be)."""
        return default_alloc(job.job, self.context.fair, 1)

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Keep every set as it is (less the jobs that ended, or whose node failed), then
        place the waiting jobs in order."""
        here = {s.idx for s in jobs}
        for idx, where in list(self.where.items()):
            if idx not in here or cluster.down.intersection(k for k, _ in where):
                members = self.sets[where]
                members[:] = [m for m in members if m.idx != idx]
                if not members:
                    del self.sets[where]
                del self.where[idx]
        nodes = Room(self.context, cluster.down)
        for where, members in self.sets.items():
            for m in members:
                nodes.hold(m, where, self.vector(m))
        for s in sorted((s for s in jobs if s.idx not in self.where), key=self.key):
            where = nodes.place(s, self.vector(s), whole=True)
            if where is None and s.job.gpus == 1 and self.context.model.max_colocated > 1:
                where = self._join(s, nodes)
            if where is not None:
                self.sets.setdefault(where, []).append(s)
                self.where[s.idx] = where
        chosen: Chosen = {}
        for where, members in self.sets.items():
            chosen.update(self.group(members, where) if len(members) > 1
                          else self.alone(members[0], where))  # fmt: skip
        return chosen

    def _join(self, job: JobState, nodes: Room) -> Where | None:
        """The running set ``job`` joins (see the module docstring), held in ``nodes``."""
        model, cpu_mem = self.context.model, self.vector(job)
        best, pick = JOIN_GAIN, None
        for where, members in self.sets.items():
            if sum(len(ids) for _, ids in where) != job.job.gpus:
                continue
            if not model.room([m.job.gpu_mem for m in (*members, job)]):
                continue
            if any(nodes.cpu[k] < cpu_mem[0] * len(ids) - 1e-9
                   or nodes.mem[k] < cpu_mem[1] * len(ids) - 1e-9 for k, ids in where):  # fmt: skip
                continue
            gain = self._speed([*members, job], where) - self._speed(members, where)
            if gain > best:
                best, pick = gain, where
        if pick is not None:
            nodes.hold(job, pick, cpu_mem)
        return pick

    def _speed(self, members: list[JobState], where: Where) -> float:
        """The speed of ``members`` together on ``where``, each over its speed alone."""
        periods = self.context.periods([m.idx for m in members], self.gpu_type(where))
        return sum(m.alone / periods[m.idx] for m in members)


class BatchSrtf(Batch):
    """Shortest remaining time first, each job once to its end."""

    name = "batch-srtf"
    order = "srtf"


class BatchFifo(Batch):
    """By arrival, each job once to its end."""

    name = "batch-fifo"
    order = "fifo"

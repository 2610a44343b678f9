"""``srtf``, ``srsf`` and ``fifo``: each job alone on its GPUs, shortest remaining time
(or smallest remaining service: time x GPUs; or the earliest arrival) first, placed
first-fit (Muri's ``yarn``); the jobs that do not fit wait, and later jobs that fit run
before them (backfilling, as Synergy's FIFO does)."""

from __future__ import annotations

from planner.executor.model.policy import Chosen, Cluster, JobState, Policy


class Srtf(Policy):
    """Shortest remaining time first, each job alone."""

    name = "srtf"

    def key(self, job: JobState) -> float:
        """The order of the jobs, smallest first: remaining time over the job's weight."""
        return job.remaining_time / job.job.weight

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """The jobs in order, each alone on the first GPUs that fit it."""
        jobs.sort(key=self.key)
        cluster.empty()
        chosen: Chosen = {}
        for s in jobs:
            where = cluster.place(s.job.gpus)
            if where is not None:
                chosen.update(self.alone(s, where))
        return chosen


class Srsf(Srtf):
    """Smallest remaining service (remaining time x GPUs) first, each job alone."""

    name = "srsf"

    def key(self, job: JobState) -> float:
        """Remaining time x GPUs over the job's weight."""
        return job.remaining_time * job.job.gpus / job.job.weight


class Fifo(Srtf):
    """First come, first served, each job alone; later jobs that fit fill the GPUs left."""

    name = "fifo"

    def key(self, job: JobState) -> float:
        """The job's arrival (ties: the order the executor holds the jobs in)."""
        return job.job.release

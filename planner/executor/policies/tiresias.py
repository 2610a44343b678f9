"""``tiresias``: discretised two-dimensional least attained service, as Muri's simulator
runs it (``dlas-gpu``): three queues split at 3,250 and 7,200 GPU-seconds of attained
service; a job enters the first queue and moves down as it crosses a limit (a demotion
is an event of its own); jobs run queue by queue, in queue order, while GPUs are free
(GPUs counted, not placed on nodes), and the jobs left waiting go to the end of their
queue."""

from __future__ import annotations

import math

from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy


class Tiresias(Policy):
    """Tiresias' priority queues (see the module docstring)."""

    needs_stages = True
    places_gpus = False

    name = "tiresias"
    LIMITS = (3250.0, 7200.0)
    """Attained GPU-seconds at which a job leaves the first and the second queue."""

    def start(self, context: Context) -> None:
        """Empty queues."""
        super().start(context)
        self.queues: list[list[JobState]] = [[] for _ in range(len(self.LIMITS) + 1)]
        self.level: dict[int, int] = {}
        self.jump = math.inf
        """The next demotion of a running job."""
        self.at = -math.inf
        """The time of the event :attr:`jump` was found at (a class at a time)."""

    def arrive(self, job: JobState) -> None:
        """Into the first queue."""
        self.level[job.idx] = 0
        self.queues[0].append(job)

    def finish(self, job: JobState, t: float) -> None:
        """Out of its queue."""
        self.queues[self.level.pop(job.idx)].remove(job)

    def next_event(self) -> float:
        """The next demotion."""
        return self.jump

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """Demote the jobs past their queue's limit, then run queue by queue while GPUs
        are free (less those of the nodes down); the jobs left waiting go to the end of
        their queue."""
        for s in jobs:
            q = self.level[s.idx]
            # a demotion event lands on the limit itself, up to rounding
            reached = (
                s.executed * s.job.gpus >= self.LIMITS[q] - 1e-6 if q < len(self.LIMITS) else False
            )
            if s.running and reached:
                self.queues[q].remove(s)
                self.queues[q + 1].append(s)
                self.level[s.idx] = q + 1
        cluster.empty()
        free = sum(cluster.free)
        chosen: Chosen = {}
        here = {s.idx for s in jobs}
        for queue in self.queues:
            for s in queue:
                if s.idx in here and free >= s.job.gpus:
                    free -= s.job.gpus
                    chosen.update(self.alone(s, ()))
            queue.sort(key=lambda s: s.idx in here and s.idx not in chosen)
        if t != self.at:
            self.at, self.jump = t, math.inf
        self.jump = min(
            [
                self.jump,
                *(
                    math.ceil(self.LIMITS[q] / s.job.gpus) - s.executed + t
                    for s in jobs
                    if s.idx in chosen and (q := self.level[s.idx]) < len(self.LIMITS)
                ),
            ]
        )
        return chosen

"""How busy a job-level run keeps each resource, interval by interval.

Within an interval of a run's trace a GPU set's jobs run at their periods in their group
(the interleaving model's); each job spends its data stage loading data, its GPU stage
computing and its synchronisation stage on the network, once per period. So the share
of the time a GPU set computes is ``sum over its jobs of gpu stage / period`` (at most
all of it; :func:`~planner.executor.model.power.compute_share`), and the same of its data
loading (over the set's data slots per GPU under ``fluid``, one under ``muri``) and of
its network. A set computes nothing while its restart overhead runs (a job's last
interval pays none), and under a power cap it computes at the run's throttle. Over the
cluster, each share is weighted by the set's GPUs over all GPUs; the GPUs draw their
idle watts and, while they compute, their busy watts (:mod:`planner.executor.model.power`).

Stages are each job's at the CPU and memory it was given (a job with a resource profile:
:func:`~planner.executor.model.resources.at_speed`); an elastic job's are its step's at its
configuration there. Under the ``table`` model (measured rates, no stages) a held GPU
computes all along and no data or network share is known; on GPUs that single jobs
share (a plan under ``fluid``) only the compute share is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.executor.energy import working_seconds
from planner.executor.model.power import compute_share
from planner.executor.model.resources import at_speed, speed_of
from planner.executor.model.sharing import shared_periods

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun
    from planner.executor.model.jobs import ExecutorJob
    from planner.interleave import Interleave, Stages

RESOURCES = ("GPU compute", "data loading", "network")
"""The resources whose use a run's utilisation gives, in its order."""


@dataclass(frozen=True)
class Utilisation:
    """Per interval of a run (from ``times[k]`` to the next, the last to the makespan),
    the share of the cluster's GPU compute, data loading and network in use
    (:data:`RESOURCES`; ``None``: not known in the run's model) and the watts its GPUs
    draw."""

    times: tuple[float, ...]
    shares: dict[str, tuple[float | None, ...]]
    watts: tuple[float, ...]

    def as_data(self) -> dict[str, object]:
        """As a run file holds it."""
        return {"times": list(self.times), **{k: list(v) for k, v in self.shares.items()},
                "watts": list(self.watts)}  # fmt: skip


def run_utilisation(run: ExecutorRun, jobs: Sequence[ExecutorJob], total: int) -> Utilisation:
    """The :class:`Utilisation` of ``run`` (of ``jobs`` on ``total`` GPUs), as the module
    docstring says."""
    by_name = {j.name: j for j in jobs}
    model = run.interleave
    slots = model.data_slots if model.kind == "fluid" else 1.0
    busy_w, idle_w = run.watts
    done = dict.fromkeys(by_name, 0.0)
    times: list[float] = []
    shares: dict[str, list[float | None]] = {r: [] for r in RESOURCES}
    watts: list[float] = []
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else max(run.makespan, t)
        span = end - t
        speed = run.throttle[k] if run.throttle else 1.0
        allocs = run.allocation[k] if k < len(run.allocation) else {}
        configs = run.configs[k] if k < len(run.configs) else {}
        shared = (shared_periods(groups, by_name, model, done, None, run.fair)[0]
                  if run.shared else None)  # fmt: skip
        use = [0.0, 0.0, 0.0]
        for names, overhead, where in groups:
            working = working_seconds(run, names, overhead, span, end) / span if span > 0 else 1.0
            gpus = sum(len(ids) for _, ids in where)
            if shared is not None:
                job = by_name[names[0]]
                stage = [compute_share([job.stages.gpu], [shared[names[0]]]), 0.0, 0.0]
                done[names[0]] += working * span * speed / shared[names[0]]
            elif model.table is not None:
                stage = [1.0, 0.0, 0.0]
            else:
                stage = _stage_shares([by_name[n] for n in names], where, allocs, configs,
                                      run.fair, model)  # fmt: skip
                stage[1] /= slots
            for r in range(3):
                use[r] += gpus * min(1.0, stage[r]) * working * (speed if r == 0 else 1.0)
        times.append(t)
        known = model.table is None and not run.shared
        for r, name in enumerate(RESOURCES):
            shares[name].append(use[r] / total if known or r == 0 else None)
        watts.append(total * idle_w + use[0] * (busy_w - idle_w))
    return Utilisation(tuple(times), {r: tuple(v) for r, v in shares.items()}, tuple(watts))


def _stage_shares(
    members: Sequence[ExecutorJob],
    where: Sequence[tuple[int, Sequence[int]]],
    allocs: dict[str, tuple[float, float]],
    configs: dict[str, tuple[int, int]],
    fair: tuple[float, float] | None,
    model: Interleave,
) -> list[float]:
    """A group's GPU, data and network shares of its set's time (:data:`RESOURCES`' order;
    each summed over its members' stages over their periods in the group)."""
    stages: list[Stages] = []
    alone: list[float] = []
    n = len(members)
    for job in members:
        if job.elastic is not None:
            config = configs.get(job.name)
            if config is None:
                config = job.elastic.default_config(sum(len(ids) for _, ids in where))
            step = job.elastic.step(where, config)
            stages.append(step)
            alone.append(step.total)
        else:
            paced = at_speed(job.stages, job.iteration_time,
                             speed_of(job, fair, n, allocs.get(job.name)))  # fmt: skip
            stages.append(paced[0])
            alone.append(paced[1])
    periods = model.periods(stages, alone=alone)
    return [
        sum(s.gpu / p for s, p in zip(stages, periods, strict=True)),
        sum(s.data / p for s, p in zip(stages, periods, strict=True)),
        sum(s.sync / p for s, p in zip(stages, periods, strict=True)),
    ]

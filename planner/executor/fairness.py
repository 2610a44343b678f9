"""What a run delivers to each job: completion times, waits, and fairness.

For every finished job ``j`` of a run (:class:`~planner.executor.loop.ExecutorRun`):

- ``JCT_j`` = finish - release; ``wait_j`` = first start - release.
- ``alone_j``: its iterations at its period alone under the run's model (the time it
  takes on a cluster of its own).
- ``n_j``: the mean number of jobs in the system (released, not finished) over its
  stay, as Themis counts contention (Mahajan et al., NSDI 2020).
- Finish-time fairness ``rho_j = JCT_j / ideal_j``, with ``ideal_j`` its JCT alone on
  ``1/n_j`` of the cluster's ``G`` GPUs: ``alone_j x max(1, n_j x gpus_j / G)`` (a
  gang of ``gpus_j`` GPUs cannot run faster on more). ``rho_j <= 1``: the job did at
  least as well as on its fair share.
- Jain's index of the attained service: over ``x_j = 1 / rho_j`` (the service each job
  attained, as a share of its fair share), ``(sum x)^2 / (n sum x^2)``; 1 when every
  job got the same share.

Per class (the jobs' ``priority``) the same figures again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from planner.interleave import Interleave

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun
    from planner.executor.model.jobs import ExecutorJob


@dataclass(frozen=True)
class Figures:
    """The figures of a set of jobs (seconds)."""

    jobs: int
    mean_jct: float
    p99_jct: float
    weighted_jct: float
    """The mean JCT weighted by the jobs' ``weight``."""
    longest_wait: float
    """The longest time a job waited from its release to its first start."""
    ftf_max: float
    """The worst finish-time fairness (Themis' rho)."""
    ftf_over: float
    """The share of jobs with a finish-time fairness above 1."""
    jain: float
    """Jain's index of the attained service (1: every job got the same share)."""


@dataclass(frozen=True)
class Fairness:
    """A run's figures over all its finished jobs, and per class (see the module
    docstring)."""

    overall: Figures
    classes: dict[int, Figures]
    """Per class (``priority``), highest first; one entry when every job has one class."""
    ftf: dict[str, float]
    """Every finished job's finish-time fairness."""


def alone_seconds(job: ExecutorJob, model: Interleave) -> float:
    """``job``'s iterations at its period alone under ``model`` (under ``table``: on its
    fastest GPU type)."""
    if model.table is not None:
        from planner.rates import alone_seconds as on_fastest

        return on_fastest((job.model, job.gpus), job.iterations, model.table)
    return job.iterations * model.periods([job.stages], alone=[job.iteration_time])[0]


def fairness(run: ExecutorRun, jobs: Sequence[ExecutorJob], gpus: int) -> Fairness:
    """The figures of ``run``'s finished jobs (``jobs``: the run's jobs; ``gpus``: the
    cluster's GPUs); see the module docstring."""
    done = [j for j in jobs if j.name in run.finish]
    if not done:
        empty = Figures(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
        return Fairness(empty, {}, {})
    release = np.array([j.release for j in done])
    finish = np.array([run.finish[j.name] for j in done])
    jct = finish - release
    started = np.array([run.started.get(j.name, run.finish[j.name]) for j in done])
    alone = np.array([alone_seconds(j, run.interleave) for j in done])
    size = np.array([j.gpus for j in done], dtype=float)
    # the number of jobs in the system, integrated over time (piecewise linear)
    times = np.concatenate([release, finish])
    steps = np.concatenate([np.ones(len(done)), -np.ones(len(done))])
    order = np.lexsort((steps, times))
    times, steps = times[order], steps[order]
    count = np.cumsum(steps)
    area = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(times))])
    within = np.interp(finish, times, area) - np.interp(release, times, area)
    crowd = np.where(jct > 0, within / np.maximum(jct, 1e-12), 1.0)
    ideal = alone * np.maximum(1.0, crowd * size / gpus)
    rho = jct / np.maximum(ideal, 1e-12)
    weight = np.array([j.weight for j in done])
    level = np.array([j.priority for j in done])

    def figures(mask: np.ndarray) -> Figures:
        x = 1.0 / np.maximum(rho[mask], 1e-12)
        return Figures(
            jobs=int(mask.sum()),
            mean_jct=float(jct[mask].mean()),
            p99_jct=float(np.percentile(jct[mask], 99)),
            weighted_jct=float((weight[mask] * jct[mask]).sum() / weight[mask].sum()),
            longest_wait=float((started[mask] - release[mask]).max()),
            ftf_max=float(rho[mask].max()),
            ftf_over=float((rho[mask] > 1 + 1e-9).mean()),
            jain=float(x.sum() ** 2 / (len(x) * (x**2).sum())),
        )

    every = np.ones(len(done), dtype=bool)
    classes = {int(c): figures(level == c) for c in sorted(set(level.tolist()), reverse=True)}
    ftf = {j.name: float(r) for j, r in zip(done, rho, strict=True)}
    return Fairness(figures(every), classes, ftf)


def fairness_rows(fair: Fairness) -> list[tuple[str, str]]:
    """The run's report lines of ``fair``: the longest wait, fairness, and one line per
    class when there are several."""
    o = fair.overall
    rows = [
        ("longest wait", f"{o.longest_wait:,.0f} s"),
        (
            "fairness",
            f"finish-time fairness max {o.ftf_max:.2f}, {100 * o.ftf_over:.1f}% of jobs above 1; "
            f"Jain's index {o.jain:.3f}",
        ),
    ]
    if len(fair.classes) > 1:
        for level, f in fair.classes.items():
            rows.append(
                (
                    f"class {level}",
                    f"{f.jobs} jobs, mean JCT {f.mean_jct:,.0f} s, p99 {f.p99_jct:,.0f} s, "
                    f"longest wait {f.longest_wait:,.0f} s, finish-time fairness max "
                    f"{f.ftf_max:.2f}",
                )
            )
    return rows


def completion_bound(
    jobs: Sequence[ExecutorJob], model: Interleave, weights: Mapping[str, float]
) -> float:
    """A lower bound on the weighted mean JCT: every job at its least period from its
    release (:func:`~planner.executor.model.grouping.longest_job` of the job alone)."""
    from planner.executor.model.grouping import longest_job

    total = sum(weights.get(j.name, 1.0) for j in jobs) or 1.0
    if model.table is not None:
        return sum(weights.get(j.name, 1.0) * alone_seconds(j, model) for j in jobs) / total
    return sum(weights.get(j.name, 1.0) * longest_job([j], model) for j in jobs) / total

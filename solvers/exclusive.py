"""Exclusive baselines: what a cluster does without interleaving.

Each task holds the peak demand of its mode, on every resource, for its whole
duration; jobs are list-scheduled in the order of a policy (the serial SGS
starts each task at the earliest tick its peak demands fit, so later jobs
backfill gaps):

- ``exclusive-fifo``: by release time, then file order;
- ``exclusive-srtf``: shortest job first (total processing time of its tasks);
- ``exclusive-srsf``: smallest service first (processing time times the share
  of the cluster the job holds).

A share of a resource the problem counts in ``units`` (a fluid training block's
GPU share) is held as whole units, and a training block holds every GPU it is on
whole (as many as its ``resident`` demand counts). Holding the peak is never less
than the real demand, so the schedule is
feasible for the original instance too: it is returned for that instance and
validated like any other. On a placed instance a job holds its peak on its nodes
(all its GPUs among them) for its whole run: its tasks come one after the other
in the list, on the nodes its first task took (a colocated job).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from planner.model import Problem
from planner.result import Progress, Result, Status
from planner.solvers.sgs import serial_sgs

POLICIES = ("fifo", "srtf", "srsf")


def exclusive_problem(problem: Problem) -> Problem:
    """The instance in which every mode is one segment holding its peak demand throughout."""
    tasks = []
    for t in problem.tasks:
        modes = []
        for m in t.modes:
            names = [r.name for r in problem.renewables] + problem.node_kinds
            peak = {r: whole(m.peak(r), problem.unit(r)) for r in names if m.peak(r)}
            for r in [r for r in peak if r == "gpu" or r.startswith("gpu.")]:
                # a training block's GPUs, whole: its residency counts them
                peak[r] = max(peak[r], m.peak("resident" + r[3:]) * problem.unit(r))
            segment = m.segments[0].model_copy(update={"duration": m.duration, "demand": peak})
            modes.append(m.model_copy(update={"segments": [segment]}))
        tasks.append(t.model_copy(update={"modes": modes}))
    return problem.model_copy(update={"tasks": tasks})


def whole(quantity: int, units: int) -> int:
    """``quantity`` rounded up to whole physical units of ``units`` each (a fluid block's
    share of a GPU held as the whole GPU)."""
    return -(-quantity // units) * units


def job_ranks(problem: Problem, policy: str) -> np.ndarray:
    """Per task, the rank of its job under ``policy`` (a task without a job is a job alone)."""
    caps = {r.name: max(r.max_capacity, 1) for r in problem.renewables}
    pooled = {k: sum(n.capacity.get(k, 0) for n in problem.nodes) for k in problem.node_kinds}
    keys: dict[str, list[float]] = {}
    for i, t in enumerate(problem.tasks):
        job = t.job if t.job is not None else f"\0{t.name}"
        run = min(m.duration for m in t.modes)
        share = min(
            sum(m.peak(r) / c for r, c in caps.items())
            + sum(m.peak(k) * m.nodes / max(c, 1) for k, c in pooled.items())
            for m in t.modes
        )
        key = keys.setdefault(job, [float(t.release), float(i), 0.0, 0.0])
        key[0] = min(key[0], t.release)
        key[2] += run
        key[3] += run * share
    if policy == "fifo":
        order = sorted(keys, key=lambda j: (keys[j][0], keys[j][1]))
    elif policy == "srtf":
        order = sorted(keys, key=lambda j: (keys[j][2], keys[j][1]))
    elif policy == "srsf":
        order = sorted(keys, key=lambda j: (keys[j][3], keys[j][1]))
    else:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    rank = {j: k for k, j in enumerate(order)}
    return np.array(
        [rank[t.job if t.job is not None else f"\0{t.name}"] for t in problem.tasks], dtype=float
    )


def solve_exclusive(
    problem: Problem, policy: str, progress: Callable[[Progress], None] | None = None
) -> Result:
    """List-schedule the jobs exclusively (peak demand held) in ``policy`` order."""
    t0 = time.perf_counter()
    schedule, why = serial_sgs(exclusive_problem(problem), job_ranks(problem, policy))
    runtime = time.perf_counter() - t0
    name = f"exclusive-{policy}"
    if schedule is None:
        return Result(name, Status.UNKNOWN, runtime=runtime, reason=why)
    objective = schedule.objective(problem)
    if progress is not None:
        progress(Progress(runtime, objective=objective, message=name))
    return Result(name, Status.FEASIBLE, schedule, objective=objective, runtime=runtime)


def solve_fifo(problem: Problem, *, progress: Callable[[Progress], None] | None = None) -> Result:
    """``exclusive-fifo``: jobs by release, then file order.

    Parameters
    ----------
    progress
        Called once with the schedule's objective.
    """
    return solve_exclusive(problem, "fifo", progress)


def solve_srtf(problem: Problem, *, progress: Callable[[Progress], None] | None = None) -> Result:
    """``exclusive-srtf``: shortest job (total processing time) first.

    Parameters
    ----------
    progress
        Called once with the schedule's objective.
    """
    return solve_exclusive(problem, "srtf", progress)


def solve_srsf(problem: Problem, *, progress: Callable[[Progress], None] | None = None) -> Result:
    """``exclusive-srsf``: smallest service (processing time x cluster share) first.

    Parameters
    ----------
    progress
        Called once with the schedule's objective.
    """
    return solve_exclusive(problem, "srsf", progress)


def interleaving_gain(problem: Problem, makespan: float) -> tuple[str, float] | None:
    """(the exclusive baseline of the shortest makespan, its makespan / ``makespan``), a
    ratio of makespans whatever the problem's objective; ``None`` if no baseline has a
    schedule."""
    from planner.solvers.registry import solve

    spans = []
    for policy in POLICIES:
        result = solve(problem, f"exclusive-{policy}")
        if result.schedule is not None:
            spans.append((result.schedule.makespan(problem), result.solver))
    if not spans or not makespan:
        return None
    shortest, solver = min(spans)
    return solver, shortest / makespan

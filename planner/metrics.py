"""What a platform engineer reads off a schedule: completion times, utilisation, energy.

Energy is an estimate from per-resource busy and idle power. The defaults
(``DEFAULT_POWER``, watts per unit of capacity) are round figures for a
V100-class cluster: a GPU draws 300 W busy (its board power) and 60 W idle; a
CPU core 10 W and 3 W; a data-loading slot (storage I/O) 15 W and 5 W; a
network slot 20 W and 8 W; memory is counted in the GPUs and CPUs. A resource
is matched by its kind, the part of its name after the last dot (``node3.gpu``
is a ``gpu``), its work and capacity in the problem's ``units`` of it (a fluid
block's shares). Pass ``power`` to use figures of your own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping

    from planner.model import Problem, Resource
    from planner.schedule import Schedule

DEFAULT_POWER: dict[str, tuple[float, float]] = {
    "gpu": (300.0, 60.0),
    "cpu": (10.0, 3.0),
    "io": (15.0, 5.0),
    "net": (20.0, 8.0),
}
"""Resource kind -> (busy watts, idle watts) per unit of capacity."""


@dataclass
class Metrics:
    """Figures of one schedule; times in ticks."""

    makespan: int
    mean_jct: float | None = None
    """Mean job completion time (finish of the job's last task minus its release)."""
    p99_jct: float | None = None
    utilisation: dict[str, float] = field(default_factory=dict)
    """Per renewable resource, and per node resource kind over all nodes: work done /
    capacity offered over the makespan."""
    node_utilisation: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per node, per resource kind it has: work done / capacity offered over the makespan."""
    energy_kwh: float | None = None
    """Estimated energy; ``None`` when no resource has a power figure or a tick has no length."""


def schedule_metrics(
    problem: Problem,
    schedule: Schedule,
    power: dict[str, tuple[float, float]] | None = None,
) -> Metrics:
    """Compute the metrics of ``schedule`` (which the validator has accepted)."""
    power = DEFAULT_POWER if power is None else power
    makespan = schedule.makespan(problem)
    work: dict[str, int] = {r.name: 0 for r in problem.renewables}
    per_node: dict[str, dict[str, int]] = {
        n.name: dict.fromkeys(n.capacity, 0) for n in problem.nodes
    }
    for t in problem.tasks:
        mode = t.mode(schedule.modes[t.name])
        on = schedule.nodes.get(t.name, ())
        for seg in mode.segments:
            for r, q in seg.demand.items():
                if r in work:
                    work[r] += q * seg.duration
                for node in on:
                    per_node[node][r] = per_node[node].get(r, 0) + q * seg.duration
    finish = {t.name: schedule.finish(problem, t.name) for t in problem.tasks}
    mean, p99 = job_completion(problem, finish)
    metrics = Metrics(makespan=makespan, mean_jct=mean, p99_jct=p99)
    offered = {r.name: offered_capacity(r, makespan) for r in problem.renewables}
    for kind in problem.node_kinds:
        work[kind] = sum(used.get(kind, 0) for used in per_node.values())
        offered[kind] = sum(n.capacity.get(kind, 0) for n in problem.nodes) * makespan
    metrics.utilisation = {r: work[r] / offered[r] for r in work if offered[r]}
    for n in problem.nodes:
        metrics.node_utilisation[n.name] = {
            k: per_node[n.name].get(k, 0) / (c * makespan)
            for k, c in n.capacity.items()
            if c and makespan
        }
    tick = _tick_seconds(problem.time_unit)
    joules = 0.0
    known = False
    for name in [r.name for r in problem.renewables] + problem.node_kinds:
        kind = name.rsplit(".", 1)[-1]
        if kind not in power or tick is None:
            continue
        known = True
        busy, idle = power[kind]
        units = problem.unit(name)
        joules += (busy * work[name] + idle * (offered[name] - work[name])) * tick / units
    if known:
        metrics.energy_kwh = joules / 3.6e6
    return metrics


def job_completion(
    problem: Problem, finish: Mapping[str, int]
) -> tuple[float | None, float | None]:
    """Mean and 99th percentile of the job completion times (the finish of a job's last
    task minus its first release), from the finish tick of every task; ``None`` without
    jobs."""
    done: dict[str, int] = {}
    released: dict[str, int] = {}
    for t in problem.tasks:
        if t.job is not None:
            done[t.job] = max(done.get(t.job, 0), finish[t.name])
            released[t.job] = min(released.get(t.job, t.release), t.release)
    if not done:
        return None, None
    jct = np.array([done[j] - released[j] for j in done], dtype=float)
    return float(jct.mean()), float(np.percentile(jct, 99))


def offered_capacity(resource: Resource, until: int) -> int:
    """Capacity of ``resource`` summed over ticks ``[0, until)``, windows included."""
    total = resource.capacity * until
    for w in resource.windows:
        total += (w.capacity - resource.capacity) * max(0, min(w.end, until) - w.start)
    return total


def _tick_seconds(time_unit: str) -> float | None:
    from planner.times import tick_seconds

    try:
        return tick_seconds(time_unit)
    except ValueError:
        return None

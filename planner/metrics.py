"""What a platform engineer reads off a schedule: completion times, utilisation, energy.

Energy is an estimate from per-resource busy and idle power. The defaults
(``DEFAULT_POWER``, watts per unit of capacity) are round figures for a
V100-class cluster: a GPU draws 300 W busy (its board power) and 60 W idle; a
CPU core 10 W and 3 W; a data-loading slot (storage I/O) 15 W and 5 W; a
network slot 20 W and 8 W; memory is counted in the GPUs and CPUs. A resource
is matched by its kind, the part of its name after the last dot (``node3.gpu``
is a ``gpu``) or before the first (``gpu.v100``), its work and capacity in the
problem's ``units`` of it (a fluid block's shares). The problem's ``watts`` (the
cluster form's ``power``) override the defaults; pass ``power`` to override both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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
    mean_kw: float | None = None
    """The energy over the makespan (kW), with the energy."""
    peak_kw: float | None = None
    """The most the resources draw at once (kW), with the energy."""
    kwh_per_job: float | None = None
    """The energy per job, with the energy and jobs."""
    cost: float | None = None
    """The energy's cost under the problem's tariff (its prices per kWh over time)."""
    cap_kw: tuple[float, float] | None = None
    """With a ``power`` resource (a cap, watts above the idle draw): the most the plan asks
    of it and its capacity, in kW; the idle draw comes on top of both."""


def schedule_metrics(
    problem: Problem,
    schedule: Schedule,
    power: dict[str, tuple[float, float]] | None = None,
) -> Metrics:
    """Compute the metrics of ``schedule`` (which the validator has accepted); ``power``
    overrides the problem's ``watts`` and :data:`DEFAULT_POWER`."""
    power = power_figures(problem, power)
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
        figure = power_figure(power, name)
        if figure is None or tick is None:
            continue
        known = True
        busy, idle = figure
        units = problem.unit(name)
        joules += (busy * work[name] + idle * (offered[name] - work[name])) * tick / units
    if known:
        metrics.energy_kwh = joules / 3.6e6
        edges, watts = power_profile(problem, schedule, power)
        metrics.peak_kw = max(watts, default=0.0) / 1000
        if problem.tariff is not None:
            ends = [*edges[1:], max(makespan, edges[-1])]
            metrics.cost = sum(
                w * tick / 3.6e6 * problem.tariff.paid(a, b)
                for a, b, w in zip(edges, ends, watts, strict=True)
            )
        metrics.mean_kw = joules / (makespan * tick) / 1000 if makespan and tick else 0.0
        jobs = {t.job for t in problem.tasks if t.job is not None}
        if jobs:
            metrics.kwh_per_job = metrics.energy_kwh / len(jobs)
    cap = next((r for r in problem.renewables if r.name == "power"), None)
    if cap is not None:
        _, used = _profile(problem, schedule, lambda r, q: q if r == "power" else 0.0)
        metrics.cap_kw = (max(used, default=0.0) / 1000, cap.capacity / 1000)
    return metrics


def power_profile(
    problem: Problem,
    schedule: Schedule,
    power: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[int], list[float]]:
    """The watts the resources draw over time: every resource (and node kind, over all
    nodes) with a power figure draws its idle watts per unit of capacity, and its busy
    watts instead for the units in use (the problem's ``units`` of it). ``edges[k]`` is
    the tick from which ``watts[k]`` holds, to the next edge (the last: the makespan)."""
    power = power_figures(problem, power)

    def figure(name: str) -> tuple[float, float] | None:
        return power_figure(power, name)

    base = 0.0
    for r in problem.renewables:
        f = figure(r.name)
        base += f[1] * r.capacity / problem.unit(r.name) if f else 0.0
    for kind in problem.node_kinds:
        f = figure(kind)
        cap = sum(n.capacity.get(kind, 0) for n in problem.nodes)
        base += f[1] * cap / problem.unit(kind) if f else 0.0

    def extra(name: str, q: int) -> float:
        f = figure(name)
        return (f[0] - f[1]) * q / problem.unit(name) if f else 0.0

    edges, watts = _profile(problem, schedule, extra)
    return edges, [base + w for w in watts]


def power_figures(
    problem: Problem, power: Mapping[str, tuple[float, float]] | None = None
) -> dict[str, tuple[float, float]]:
    """(busy, idle) watts per resource kind: :data:`DEFAULT_POWER`, overridden by the
    problem's ``watts``, overridden by ``power``."""
    return {**DEFAULT_POWER, **problem.watts, **(power or {})}


def power_figure(power: Mapping[str, tuple[float, float]], name: str) -> tuple[float, float] | None:
    """The (busy, idle) watts of resource ``name``: its kind's, the part after the last dot
    (``node3.gpu``) or before the first (``gpu.v100``); ``None`` without one."""
    return power.get(name.rsplit(".", 1)[-1]) or power.get(name.split(".")[0])


def _profile(
    problem: Problem, schedule: Schedule, value: Callable[[str, int], float]
) -> tuple[list[int], list[float]]:
    """The sum over running segments of ``value(resource, demand)`` (on a node kind, once
    per node the task runs on), as a step function: edges and values (see
    :func:`power_profile`)."""
    local = set(problem.node_kinds)
    delta: dict[int, float] = {}
    for t in problem.tasks:
        mode = t.mode(schedule.modes[t.name])
        copies = max(1, len(schedule.nodes.get(t.name, ())))
        at = schedule.starts[t.name]
        for seg in mode.segments:
            w = sum(value(r, q) * (copies if r in local else 1) for r, q in seg.demand.items())
            if w and seg.duration:
                delta[at] = delta.get(at, 0.0) + w
                delta[at + seg.duration] = delta.get(at + seg.duration, 0.0) - w
            at += seg.duration
    edges, values, level = [0], [0.0], 0.0
    for tick in sorted(delta):
        level += delta[tick]
        if tick == edges[-1]:
            values[-1] = level
        else:
            edges.append(tick)
            values.append(level)
    return edges, values


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

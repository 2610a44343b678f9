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
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from planner.model import Mode, Problem, Resource, Segment, Tariff


class Plan(Protocol):
    """What the metrics read of a schedule (a :class:`planner.schedule.Schedule`, which
    asks the metrics for its energy objective: this protocol keeps the two modules from
    importing each other)."""

    modes: dict[str, str]
    starts: dict[str, int]
    nodes: dict[str, tuple[str, ...]]

    def finish(self, problem: Problem, task: str) -> int:
        """Finish tick of ``task``."""
        ...

    def makespan(self, problem: Problem) -> int:
        """Latest finish over all tasks."""
        ...


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
    schedule: Plan,
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
    if tick is not None and _has_figures(problem, power):
        metrics.energy_kwh = _energy_kwh(problem, schedule, power, makespan, tick)
        edges, watts = power_profile(problem, schedule, power)
        metrics.peak_kw = max(watts, default=0.0) / 1000
        if problem.tariff is not None:
            metrics.cost = _priced(problem.tariff, edges, watts, makespan, tick)
        metrics.mean_kw = metrics.energy_kwh * 3600 / (makespan * tick) if makespan else 0.0
        jobs = {t.job for t in problem.tasks if t.job is not None}
        if jobs:
            metrics.kwh_per_job = metrics.energy_kwh / len(jobs)
    cap = next((r for r in problem.renewables if r.name == "power"), None)
    if cap is not None:
        _, used = _profile(problem, schedule, lambda seg, _: seg.demand.get("power", 0))
        metrics.cap_kw = (max(used, default=0.0) / 1000, cap.capacity / 1000)
    return metrics


def power_profile(
    problem: Problem,
    schedule: Plan,
    power: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[int], list[float]]:
    """The watts the resources draw over time: every resource (and node kind, over all
    nodes) with a power figure draws its idle watts per unit of capacity (none with the
    problem's ``idle_off``), and its busy watts instead for the units in use (the problem's
    ``units`` of it; a segment's ``watts`` for its GPUs). ``edges[k]`` is the tick from
    which ``watts[k]`` holds, to the next edge (the last: the makespan)."""
    power = power_figures(problem, power)
    base = idle_watts(problem, power)
    edges, watts = _profile(problem, schedule, lambda s, on: segment_draw(problem, s, on, power))
    return edges, [base + w for w in watts]


def power_figures(
    problem: Problem, power: Mapping[str, tuple[float, float]] | None = None
) -> dict[str, tuple[float, float]]:
    """(busy, idle) watts per resource kind: :data:`DEFAULT_POWER`, overridden by the
    problem's ``watts``, overridden by ``power``."""
    return {**DEFAULT_POWER, **problem.watts, **(power or {})}


def power_figure(power: Mapping[str, tuple[float, float]], name: str) -> tuple[float, float] | None:
    """The (busy, idle) watts of resource ``name``: its own (``gpu.v100``), else its
    kind's: the part after the last dot (``node3.gpu``) or before the first (``gpu.v100``);
    ``None`` without one."""
    return power.get(name) or power.get(name.rsplit(".", 1)[-1]) or power.get(name.split(".")[0])


def _is_gpu(name: str) -> bool:
    return name.split(".")[0] == "gpu" or name.rsplit(".", 1)[-1] == "gpu"


def segment_draw(
    problem: Problem,
    seg: Segment,
    types: Sequence[str | None],
    power: Mapping[str, tuple[float, float]],
) -> float:
    """Watts ``seg`` draws above idle while it runs (all it draws, with the problem's
    ``idle_off``) on nodes of ``types`` (one per node of its set; none off nodes): per unit
    of every demand with a power figure, its busy watts less its idle ones, the GPUs'
    busy part the segment's ``watts`` where it has them. A node kind's figure is the one
    of its nodes' type where the problem has one (``gpu.v100``)."""
    local = set(problem.node_kinds)
    total = 0.0
    for r, q in seg.demand.items():
        names = [f"{r}.{t}" if t else r for t in types] if r in local else [r]
        for name in names:
            f = power_figure(power, name)
            if f is None:
                continue
            busy, idle = f
            if seg.watts is not None and _is_gpu(r):
                busy = idle  # the segment's watts stand for its GPUs' draw above idle
            total += (busy if problem.idle_off else busy - idle) * q / problem.unit(r)
    if seg.watts is not None:
        total += seg.watts
    return total


def mode_energy(
    problem: Problem, mode: Mode, power: Mapping[str, tuple[float, float]] | None = None
) -> float:
    """Watt-ticks ``mode`` draws above idle (all it draws, with ``idle_off``): its
    segments' :func:`segment_draw` times their durations, its nodes of its ``node_type``."""
    power = power_figures(problem, power)
    types = [mode.node_type] * mode.nodes
    return sum(segment_draw(problem, seg, types, power) * seg.duration for seg in mode.segments)


def idle_watts(problem: Problem, power: Mapping[str, tuple[float, float]] | None = None) -> float:
    """Watts the resources and nodes draw at rest, every unit of capacity idle (0 with
    ``idle_off``); capacity windows aside."""
    if problem.idle_off:
        return 0.0
    power = power_figures(problem, power)
    return _renewable_draw(problem, power, 1) + _node_draw(problem, power, 1)


def full_watts(problem: Problem, power: Mapping[str, tuple[float, float]] | None = None) -> float:
    """Watts the resources and nodes with a power figure draw with every unit busy."""
    power = power_figures(problem, power)
    return _renewable_draw(problem, power, 0) + _node_draw(problem, power, 0)


def energy_terms(problem: Problem) -> tuple[list[list[float]], float]:
    """The ``energy`` objective's terms in kWh: per task, per mode, its draw above idle
    (:func:`mode_energy`); per tick of makespan, the idle draw and ``makespan_watts``
    (capacity windows aside). A plan's objective is the sum of its modes' terms and the
    second term times its makespan."""
    from planner.times import tick_seconds

    kwh = tick_seconds(problem.time_unit) / 3.6e6
    figures = power_figures(problem)
    per = [[mode_energy(problem, m, figures) * kwh for m in t.modes] for t in problem.tasks]
    return per, (idle_watts(problem, figures) + problem.makespan_watts) * kwh


def cost_terms(problem: Problem) -> tuple[list[list[list[tuple[int, int, float]]]], float]:
    """The ``cost`` objective's terms: per task, per mode, per segment that draws above idle
    (all it draws, with ``idle_off``), its offset, duration and watts
    (:func:`segment_draw`); the watts over the makespan, the idle draw and
    ``makespan_watts``. A plan's cost is the tariff's price over each segment's ticks times
    its watts, and over ``[0, makespan)`` times the second term, in kWh
    (tick / 3.6e6 per watt-tick)."""
    figures = power_figures(problem)
    per = []
    for t in problem.tasks:
        modes = []
        for m in t.modes:
            types = [m.node_type] * m.nodes
            segs, offset = [], 0
            for seg in m.segments:
                w = segment_draw(problem, seg, types, figures)
                if w > 0 and seg.duration:
                    segs.append((offset, seg.duration, w))
                offset += seg.duration
            modes.append(segs)
        per.append(modes)
    return per, idle_watts(problem, figures) + problem.makespan_watts


def power_objective(problem: Problem, schedule: Plan) -> float:
    """The ``energy`` objective of ``schedule`` in kWh (the estimated energy of
    :func:`schedule_metrics` and ``makespan_watts`` over the makespan), or the ``cost``
    objective (its cost, and ``makespan_watts`` priced over the makespan).

    Raises
    ------
    InputError
        If a tick of the problem has no length or no resource has a power figure.
    """
    from planner.errors import InputError

    tick = _tick_seconds(problem.time_unit)
    if tick is None or not _has_figures(problem, power_figures(problem)):
        raise InputError(
            f"objective {problem.objective} needs a time_unit and a resource with power figures"
        )
    power = power_figures(problem)
    makespan = schedule.makespan(problem)
    extra = problem.makespan_watts * tick / 3.6e6
    if problem.objective == "cost" and problem.tariff is not None:
        edges, watts = power_profile(problem, schedule, power)
        cost = _priced(problem.tariff, edges, watts, makespan, tick)
        return cost + extra * problem.tariff.upto(makespan)
    return _energy_kwh(problem, schedule, power, makespan, tick) + extra * makespan


def _energy_kwh(
    problem: Problem,
    schedule: Plan,
    power: Mapping[str, tuple[float, float]],
    makespan: int,
    tick: float,
) -> float:
    """The estimated energy of ``schedule`` (kWh): the idle draw of every resource and node
    over the makespan (capacity windows included; none with ``idle_off``), and every
    segment's draw above it on the nodes it runs on."""
    idle = 0.0
    if not problem.idle_off:
        for r in problem.renewables:
            f = power_figure(power, r.name)
            idle += f[1] * offered_capacity(r, makespan) / problem.unit(r.name) if f else 0.0
        idle += _node_draw(problem, power, 1) * makespan
    types = {n.name: n.type for n in problem.nodes}
    busy = sum(
        segment_draw(problem, seg, [types[n] for n in schedule.nodes.get(t.name, ())], power)
        * seg.duration
        for t in problem.tasks
        for seg in t.mode(schedule.modes[t.name]).segments
    )
    return (idle + busy) * tick / 3.6e6


def _priced(
    tariff: Tariff, edges: list[int], watts: list[float], makespan: int, tick: float
) -> float:
    """The cost of a draw (:func:`power_profile`'s ``edges`` and ``watts``) under ``tariff``."""
    ends = [*edges[1:], max(makespan, edges[-1])]
    return sum(
        w * tick / 3.6e6 * tariff.paid(a, b) for a, b, w in zip(edges, ends, watts, strict=True)
    )


def _has_figures(problem: Problem, power: Mapping[str, tuple[float, float]]) -> bool:
    names = [r.name for r in problem.renewables] + [
        f"{k}.{n.type}" if n.type else k for n in problem.nodes for k in n.capacity
    ]
    return any(power_figure(power, n) for n in names)


def _renewable_draw(
    problem: Problem, power: Mapping[str, tuple[float, float]], which: int
) -> float:
    """Watts every renewable resource draws at its base capacity: busy (``which`` 0) or
    idle (1)."""
    total = 0.0
    for r in problem.renewables:
        f = power_figure(power, r.name)
        total += f[which] * r.capacity / problem.unit(r.name) if f else 0.0
    return total


def _node_draw(problem: Problem, power: Mapping[str, tuple[float, float]], which: int) -> float:
    """Watts every node draws with all its units busy (``which`` 0) or idle (1), each kind at
    the figure of the node's type where it has one."""
    total = 0.0
    for n in problem.nodes:
        for k, c in n.capacity.items():
            f = power_figure(power, f"{k}.{n.type}" if n.type else k)
            total += f[which] * c / problem.unit(k) if f else 0.0
    return total


def _profile(
    problem: Problem, schedule: Plan, value: Callable[[Segment, list[str | None]], float]
) -> tuple[list[int], list[float]]:
    """The sum over running segments of ``value(segment, its nodes' types)`` as a step
    function: edges and values (see :func:`power_profile`)."""
    types = {n.name: n.type for n in problem.nodes}
    delta: dict[int, float] = {}
    for t in problem.tasks:
        mode = t.mode(schedule.modes[t.name])
        on = [types[n] for n in schedule.nodes.get(t.name, ())]
        at = schedule.starts[t.name]
        for seg in mode.segments:
            w = value(seg, on)
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

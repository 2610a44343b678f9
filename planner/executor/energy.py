"""The energy of a job-level run, and its cost under a tariff.

Every GPU of the cluster draws its idle power all the run long, and while it computes
its busy power (:data:`planner.executor.model.power.WATTS`). A GPU set computes the share
``sum over its jobs of gpu stage / period`` of the time (at most all of it); see
:mod:`planner.executor.model.power`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.executor.model.power import compute_share
from planner.executor.model.sharing import shared_periods

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun
    from planner.executor.model.jobs import ExecutorJob, Where
    from planner.model import Tariff


@dataclass(frozen=True)
class Energy:
    """What a run drew: its energy and its mean and peak power, and the energy's cost
    under a tariff (``None`` without one)."""

    kwh: float
    mean_kw: float
    peak_kw: float
    cost: float | None = None


def run_energy(
    run: ExecutorRun,
    jobs: Sequence[ExecutorJob],
    gpus: int,
    tariff: Tariff | None = None,
    switch_off: bool = False,
) -> Energy:
    """The energy of ``run`` (of ``jobs`` on ``gpus`` GPUs) over its makespan, each GPU
    drawing the run's watts (busy, idle) as the module docstring says, slowed by the
    run's power cap where it had one (:func:`throttle`); with a ``tariff`` (in ticks of one
    second) also its cost: the draw of every interval times the prices over it.
    ``switch_off``: a GPU no job holds draws nothing (``power.switch_off``). On GPU types
    (the run's ``type_watts``), each GPU draws its type's watts."""
    if run.type_watts and run.types:
        return _typed_energy(run, tariff, switch_off)
    busy, idle = run.watts
    by_name = {j.name: j for j in jobs}
    model = run.interleave
    joules = peak = cost = 0.0
    done = dict.fromkeys(by_name, 0.0)
    memo: dict[tuple[tuple[str, ...], tuple[float, ...]], dict[str, float]] = {}
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else t
        span = end - t
        before = joules
        held = _held(groups, by_name) if switch_off else gpus
        joules += held * idle * span
        draw = held * idle
        shared = (
            shared_periods(groups, by_name, model, done, memo, run.fair)[0] if run.shared else None
        )
        for names, overhead, _ in groups:
            members = [by_name[n] for n in names]
            if shared is not None:  # a job on GPUs it shares: its own compute
                members = members[:1]
                share = compute_share([members[0].stages.gpu], [shared[names[0]]])
            elif model.table is not None:  # measured rates: the GPUs compute all along
                share = 1.0
            else:
                periods = model.periods(
                    [m.stages for m in members], alone=[m.iteration_time for m in members]
                )
                share = compute_share([m.stages.gpu for m in members], periods)
            speed = run.throttle[k] if run.throttle else 1.0
            extra = members[0].gpus * share * speed * (busy - idle)
            draw += extra
            working = working_seconds(run, names, overhead, span, end)
            joules += extra * working
            if shared is not None:  # its progress: the block of its plan it is in
                done[names[0]] += working * speed / shared[names[0]]
        peak = max(peak, draw)
        if tariff is not None and span > 0:  # the interval's energy at its mean price
            cost += (joules - before) / 3.6e6 * tariff.paid(t, end) / span
    return _energy(joules, peak, cost if tariff is not None else None, run.makespan)


def working_seconds(
    run: ExecutorRun, names: Sequence[str], overhead: float, span: float, end: float
) -> float:
    """The seconds of an interval of ``span`` seconds, ending at ``end``, that the group
    ``names`` of ``run`` works: its restart ``overhead`` computes nothing, except in the
    interval where one of them ends (a job's last interval pays none)."""
    last = any(abs(run.finish.get(n, -1.0) - end) < 1e-4 for n in names)
    return span if last else max(span - overhead, 0.0)


def _typed_energy(run: ExecutorRun, tariff: Tariff | None, switch_off: bool) -> Energy:
    """:func:`run_energy` on GPU types (the ``table`` model): a GPU of type ``t`` draws
    ``type_watts[t]``, busy while a job runs on it (measured rates: it computes all
    along), idle otherwise (nothing if ``switch_off`` and no job holds it)."""
    per_node = run.gpus_per_node
    watts = run.type_watts
    everyone = sum(watts[t][1] * per_node for t in run.types)
    joules = peak = cost = 0.0
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else t
        span = end - t
        held = {(n, i) for _, _, where in groups for n, ids in where for i in ids}
        idle = sum(watts[run.types[n]][1] for n, _ in held) if switch_off else everyone
        extra = sum(watts[run.types[n]][0] - watts[run.types[n]][1] for n, _ in held)
        draw = idle + extra
        peak = max(peak, draw)
        joules += draw * span
        if tariff is not None and span > 0:
            cost += draw * span / 3.6e6 * tariff.paid(t, end) / span
    return _energy(joules, peak, cost if tariff is not None else None, run.makespan)


def _energy(joules: float, peak: float, cost: float | None, makespan: float) -> Energy:
    """The figures of ``joules`` drawn over ``makespan`` seconds, at ``peak`` watts at most."""
    return Energy(
        kwh=joules / 3.6e6,
        mean_kw=joules / makespan / 1000 if makespan else 0.0,
        peak_kw=peak / 1000,
        cost=cost,
    )


def _held(
    groups: Sequence[tuple[tuple[str, ...], float, Where]], by_name: Mapping[str, ExecutorJob]
) -> int:
    """The GPUs the ``groups`` of an event hold: their GPU sets (counted once each), or
    where a policy counts GPUs without placing them, each group's count."""
    placed = {(k, i) for _, _, where in groups for k, ids in where for i in ids}
    counted = sum(by_name[names[0]].gpus for names, _, where in groups if not where)
    return len(placed) + counted

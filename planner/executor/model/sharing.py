"""Jobs on single GPUs they share (a plan's dispatch under ``fluid``): every job's
period from the residents of its GPUs, as the executor's dispatch and the audit
figure it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.executor.model.jobs import ExecutorJob, Where
from planner.executor.model.resources import at_speed, most_residents, speed_of
from planner.interleave import Interleave, fluid_rates


def shared_periods(
    groups: Sequence[tuple[tuple[str, ...], float, Where]],
    by_name: Mapping[str, ExecutorJob],
    model: Interleave,
    done: Mapping[str, float],
    memo: dict[tuple[tuple[str, ...], tuple[float, ...]], dict[str, float]] | None = None,
    fair: tuple[float, float] | None = None,
) -> tuple[dict[str, float], dict[tuple[int, int], list[str]]]:
    """Every job's period where jobs share single GPUs (a plan under ``fluid``), from the
    GPUs of the trace's entries alone: its stage sum over its speed on the slowest of its
    GPUs (:func:`~planner.interleave.fluid_rates` of that GPU's residents, by their
    weights in the blocks the iterations ``done`` so far put them in), slowed by ``s(k)``,
    ``k`` the most residents on one of its GPUs; and the residents per GPU. ``memo`` keeps
    the rates of residents and weights met before (from one event of a run to the next).
    A job with a resource profile runs at its speed on the ``fair`` share split among its
    entry's jobs (:func:`~planner.executor.model.resources.at_speed`)."""
    residents: dict[tuple[int, int], list[str]] = {}
    for names, _, where in groups:
        for node, ids in where:
            for i in ids:
                residents.setdefault((node, i), []).append(names[0])
    memo = {} if memo is None else memo
    stages = {}
    for names, _, where in groups:
        job = by_name[names[0]]
        if job.profile is None:  # one speed: its stages as they are
            stages[job.name] = job.stages
            continue
        speed = speed_of(job, fair, most_residents(where, residents))
        stages[job.name] = at_speed(job.stages, 1.0, speed)[0]
    rates: dict[tuple[int, int], dict[str, float]] = {}
    for gpu, names in residents.items():
        members = [by_name[n] for n in names]
        weights = tuple(m.share_at(m.iterations - done[m.name]) for m in members)
        key = (tuple(names), weights)
        if key not in memo or any(m.profile is not None for m in members):
            speeds = fluid_rates([stages[n] for n in names], weights, model.data_slots)
            memo[key] = dict(zip(names, speeds, strict=True))
        rates[gpu] = memo[key]
    out = {}
    for names, _, where in groups:
        job = by_name[names[0]]
        gpus = [(node, i) for node, ids in where for i in ids]
        rate = min((rates[g][job.name] for g in gpus), default=1.0)
        k = max((len(residents[g]) for g in gpus), default=1)
        out[job.name] = stages[job.name].total / rate * model.factor(k)
    return out, residents

"""The audit of a job-level run: what is wrong with it, from its trace alone."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from planner.executor.model.elastic import EPSILON, Hybrid, step_periods
from planner.executor.model.jobs import ExecutorJob, Where
from planner.executor.model.power import compute_share, throttle
from planner.executor.model.resources import at_speed, holdings, speed_of
from planner.executor.model.sharing import shared_periods
from planner.executor.policies import where_label
from planner.interleave import Interleave

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun


def audit(run: ExecutorRun, jobs: Sequence[ExecutorJob], gpus: int) -> list[str]:
    """What is wrong with ``run`` (empty: nothing), checked from its trace alone.

    Replays the trace's intervals with the interleaving model's periods, independently
    of the executor's bookkeeping: at every event the groups' GPUs fit the cluster's
    ``gpus`` less those of the nodes down, a placed group holds as many GPUs as its jobs
    ask, on nodes up, none of them shared with another group, no group has more than
    ``max_colocated`` members nor needs more GPU memory than a GPU has, a ``muri`` group
    has one GPU count, no job runs before
    its release or after its finish; and every finished
    job was credited exactly its iterations: ``(interval - overhead) / period`` per
    interval (at least 0), its last interval, and an interval that ends a block of its
    plan after which the plan pauses it, not charged the overhead.
    """
    model = run.interleave
    by_name = {j.name: j for j in jobs}
    done = dict.fromkeys(by_name, 0.0)
    memo: dict[tuple[tuple[str, ...], tuple[float, ...]], dict[str, float]] = {}
    wrong: list[str] = []
    nodes = gpus // run.gpus_per_node if run.gpus_per_node else 0
    fair = run.fair
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else t
        down = {n for n, a, b in run.outages if a <= t < b}
        allocs = run.allocation[k] if run.allocation else {}
        shared = shared_periods(groups, by_name, model, done, memo, fair) if run.shared else None
        if run.cpus or run.mems:
            wrong += _audit_nodes(t, holdings(groups, by_name, allocs, fair, run.shared), run)
        speed = _audit_speed(
            groups,
            by_name,
            model,
            gpus,
            run.power_cap,
            run.watts,
            None if shared is None else shared[0],
            (allocs, fair),
        )
        used = 0
        held: set[tuple[int, int]] = set()
        if shared is not None:
            periods, residents = shared
            wrong += _audit_shared(
                t, groups, residents, by_name, model, down, (nodes, run.gpus_per_node)
            )
            for names, overhead, _ in groups:
                m = by_name[names[0]]
                if m.release > t + 1e-9 or run.finish.get(m.name, math.inf) < end - 1e-6:
                    wrong.append(f"job {m.name!r} runs at {t:g} s, outside its release and finish")
                done[m.name] = _credit(
                    run, m, done[m.name], end - t, overhead, periods[m.name] / speed, end
                )
            continue
        for names, overhead, where in groups:
            members = [by_name[n] for n in names]
            gpus_held = {(n, i) for n, ids in where for i in ids}
            elastic = any(m.elastic is not None for m in members)
            used += len(gpus_held) if elastic else members[0].gpus
            if elastic and not where:
                wrong.append(f"at {t:g} s: elastic jobs {list(names)} run on no GPU set")
                continue
            if where and (
                (len(gpus_held) != members[0].gpus and not elastic)
                or gpus_held & held
                or down.intersection(n for n, _ in where)
                or any(not 0 <= i < run.gpus_per_node for _, i in gpus_held)
                or any(not 0 <= n < nodes for n, _ in gpus_held)
            ):
                label = where_label(where)
                wrong.append(
                    f"at {t:g} s: {list(names)} on GPUs {label}, taken, down or outside the cluster"
                )
            held |= gpus_held
            if len(members) > model.max_colocated:
                wrong.append(f"at {t:g} s: {len(members)} jobs share one GPU set")
                continue
            hybrid = any(isinstance(m.elastic, Hybrid) for m in members)
            if not hybrid and not model.room([m.gpu_mem for m in members]):
                need = sum(m.gpu_mem for m in members)
                wrong.append(
                    f"at {t:g} s: {list(names)} hold {need:g} GB of each GPU's memory; a GPU "
                    f"has {model.gpu_memory:g} GB"
                )
            if model.kind != "fluid" and len({m.gpus for m in members}) > 1 and not elastic:
                wrong.append(f"at {t:g} s: a group of several GPU counts {list(names)}")
            if elastic:
                configs = run.configs[k] if k < len(run.configs) else {}
                if hybrid:  # the plans' memory in place of the members' own
                    wrong += _audit_plans(t, members, configs, len(gpus_held), model)
                for m in members:
                    if m.release > t + 1e-9 or run.finish.get(m.name, math.inf) < end - 1e-6:
                        wrong.append(f"job {m.name!r} runs at {t:g} s, outside its release "
                                     "and finish")  # fmt: skip
                done.update(_elastic_credit(run, members, configs, done, (t, end), overhead,
                                            where, speed))  # fmt: skip
                continue
            if model.table is not None:
                kinds = {run.types[n] for n, _ in where}
                if len(kinds) != 1:
                    wrong.append(f"at {t:g} s: {list(names)} on GPUs of types {sorted(kinds)}")
                    continue
                keys = [(m.model, m.gpus) for m in members]
                periods = model.table.periods(keys, kinds.pop())
            else:
                found = _paced_periods(members, model, allocs, fair)
                if found is None:
                    wrong.append(f"at {t:g} s: {list(names)}: a job with a profile has no CPU")
                    continue
                periods = found
            periods = [period / speed for period in periods]
            for m, period in zip(members, periods, strict=True):
                if m.release > t + 1e-9 or run.finish.get(m.name, math.inf) < end - 1e-6:
                    wrong.append(f"job {m.name!r} runs at {t:g} s, outside its release and finish")
                done[m.name] = _credit(run, m, done[m.name], end - t, overhead, period, end)
        if used > gpus - len(down) * run.gpus_per_node:
            wrong.append(f"at {t:g} s: groups hold {used} GPUs of {gpus}, {len(down)} nodes down")
    for name, finish in run.finish.items():
        need = by_name[name].iterations
        if not math.isclose(done[name], need, rel_tol=1e-6):
            wrong.append(
                f"job {name!r} finished at {finish:g} s after {done[name]:g} of {need} iterations"
            )
    return wrong


def _audit_plans(
    t: float,
    members: Sequence[ExecutorJob],
    configs: Mapping[str, tuple[int, int]],
    gpus: int,
    model: Interleave,
) -> list[str]:
    """What is wrong at ``t`` with the parallel plans of hybrid-parallel members on a set
    of ``gpus`` GPUs: a plan of another GPU count, or one that needs more memory than a
    GPU has (with its co-residents' memory)."""
    wrong = []
    need = 0.0
    for m in members:
        spec = m.elastic
        if not isinstance(spec, Hybrid):
            need += m.gpu_mem
            continue
        k = configs.get(m.name)
        if k is None or not 0 <= k[0] < len(spec.plans):
            wrong.append(f"at {t:g} s: job {m.name!r} runs on {gpus} GPUs with no parallel plan")
            continue
        plan = spec.plans[k[0]]
        if plan.gpus != gpus:
            wrong.append(
                f"at {t:g} s: job {m.name!r} runs plan {plan.label} ({plan.gpus} GPUs) on "
                f"{gpus} GPUs"
            )
        need += plan.gpu_mem
    if model.gpu_memory is not None and need > model.gpu_memory + 1e-9:
        names = [m.name for m in members]
        wrong.append(
            f"at {t:g} s: {names} need {need:g} GB of each GPU's memory with their plans; a "
            f"GPU has {model.gpu_memory:g} GB"
        )
    return wrong


def _elastic_credit(
    run: ExecutorRun,
    members: Sequence[ExecutorJob],
    configs: Mapping[str, tuple[int, int]],
    done: Mapping[str, float],
    span: tuple[float, float],
    overhead: float,
    where: Where,
    speed: float,
) -> dict[str, float]:
    """The progress of a group with elastic jobs after the interval ``span``: each member
    at its seconds per step in the group (:func:`~planner.executor.model.elastic.step_periods`,
    at its configuration in ``configs``) over its gain, anew at every epoch's start within
    the interval; the overhead charged as :func:`_credit` does, and on an
    elastic job's last interval too."""
    t, end = span
    replicas = sum(len(ids) for _, ids in where)
    steps = step_periods([(m.elastic, m.stages, m.iteration_time, configs.get(m.name))
                          for m in members], where, run.interleave)  # fmt: skip
    out = {}
    for m, (step, cfg) in zip(members, steps, strict=True):
        progress, left = done[m.name], end - t
        if m.elastic is not None or not math.isclose(run.finish.get(m.name, -1.0), end,
                                                     abs_tol=1e-4):  # fmt: skip
            left = max(left - overhead, 0.0)
        while left > 0:
            if m.elastic is None or cfg is None:
                progress += left * speed / step
                break
            period = step / m.elastic.gain(replicas, cfg, progress) / speed
            boundary = m.elastic.next_epoch(progress)
            piece = (boundary - progress) * period
            if boundary >= m.iterations - EPSILON or piece >= left:
                progress += left / period
                break
            progress, left = boundary, left - piece
        out[m.name] = progress
    return out


def _audit_nodes(
    t: float,
    held_now: Iterable[
        tuple[ExecutorJob, Sequence[tuple[int, Sequence[int]]], tuple[float, float]]
    ],
    run: ExecutorRun,
) -> list[str]:
    """What is wrong at ``t`` with the nodes' CPU cores and host memory: the jobs on a
    node hold more than it has, each what it holds per GPU (``held_now``:
    :func:`~planner.executor.model.resources.holdings`) times its GPUs there."""
    used: dict[int, list[float]] = {}
    for _, where, (cpu, mem) in held_now:
        for node, ids in where:
            held = used.setdefault(node, [0.0, 0.0])
            held[0] += cpu * len(ids)
            held[1] += mem * len(ids)
    wrong = []
    for node, (cpu, mem) in sorted(used.items()):
        checks = (("CPU cores", cpu, run.cpus, ""), ("memory", mem, run.mems, " GB"))
        for what, have, caps, unit in checks:
            if caps and node < len(caps) and have > caps[node] + 1e-6:
                wrong.append(
                    f"at {t:g} s: the jobs on node {node} hold {have:g}{unit} of {what}; it has "
                    f"{caps[node]:g}{unit}"
                )
    return wrong


PAUSE_TOLERANCE = 1e-3
"""Iterations within which an interval's end meets the end of a block of a job's plan."""


def _credit(
    run: ExecutorRun,
    job: ExecutorJob,
    done: float,
    span: float,
    overhead: float,
    period: float,
    end: float,
) -> float:
    """``job``'s iterations done after an interval of ``span`` seconds at ``period`` that
    ends at ``end``: the overhead is charged unless the interval ends the job (its
    finish) or a block of its plan after which the plan pauses it (the executor ends
    both at the block's last iteration, as it reaches it, and charges them no overhead)."""
    if math.isclose(run.finish.get(job.name, -1.0), end, abs_tol=1e-4):
        return done + span / period
    bare = done + span / period
    for left, _ in job.holds:
        boundary = job.iterations - left
        if done < boundary - PAUSE_TOLERANCE and abs(bare - boundary) <= PAUSE_TOLERANCE:
            return float(boundary)
    return done + max(span - overhead, 0.0) / period


def _audit_shared(
    t: float,
    groups: Sequence[tuple[tuple[str, ...], float, Where]],
    residents: Mapping[tuple[int, int], list[str]],
    by_name: Mapping[str, ExecutorJob],
    model: Interleave,
    down: set[int],
    size: tuple[int, int],
) -> list[str]:
    """What is wrong at ``t`` in a shared run: a job on another number of GPUs than it
    asks, on a node down or a GPU that does not exist, a GPU with more than
    ``max_colocated`` residents, or a job's co-residents not those of its GPUs. ``size``:
    the cluster's nodes and GPUs per node."""
    nodes, per_node = size
    wrong = []
    for names, _, where in groups:
        job = by_name[names[0]]
        held = {(n, i) for n, ids in where for i in ids}
        if (
            len(held) != job.gpus
            or down.intersection(n for n, _ in where)
            or any(not 0 <= i < per_node for _, i in held)
            or any(not 0 <= n < nodes for n, _ in held)
        ):
            label = where_label(where)
            wrong.append(
                f"at {t:g} s: {job.name!r} on GPUs {label}, taken, down or outside the cluster"
            )
        partners = {x for g in held for x in residents.get(g, ())} - {job.name}
        if set(names[1:]) != partners:
            wrong.append(f"at {t:g} s: {job.name!r} is not with the jobs on its GPUs")
    for (node, i), names in residents.items():
        if len(names) > model.max_colocated:
            wrong.append(f"at {t:g} s: {len(names)} jobs share GPU {i} of node {node}")
        elif not model.room([by_name[n].gpu_mem for n in names]):
            need = sum(by_name[n].gpu_mem for n in names)
            wrong.append(
                f"at {t:g} s: the jobs on GPU {i} of node {node} hold {need:g} GB of its "
                f"memory; it has {model.gpu_memory:g} GB"
            )
    return wrong


def _audit_speed(
    groups: Sequence[tuple[tuple[str, ...], float, Where]],
    by_name: Mapping[str, ExecutorJob],
    model: Interleave,
    gpus: int,
    cap: float | None,
    watts: tuple[float, float],
    periods: Mapping[str, float] | None = None,
    given: tuple[Mapping[str, tuple[float, float]], tuple[float, float] | None] = ({}, None),
) -> float:
    """The power cap's speed at an event, from the trace's groups and the model alone
    (groups too large for the model are left out: the audit reports them); ``periods``:
    every job's period on GPUs it shares (a shared run), before the cap; ``given``: the
    event's allocations and the fair share."""
    if cap is None:
        return 1.0
    sets = []
    for names, _, _ in groups:
        if periods is not None:
            job = by_name[names[0]]
            sets.append((job.gpus, compute_share([job.stages.gpu], [periods[job.name]])))
            continue
        if len(names) > model.max_colocated:
            continue
        members = [by_name[n] for n in names]
        periods_ = _paced_periods(members, model, *given)
        if periods_ is None:
            continue
        sets.append((members[0].gpus, compute_share([m.stages.gpu for m in members], periods_)))
    return throttle(sets, gpus, cap, watts)


def _paced_periods(
    members: Sequence[ExecutorJob],
    model: Interleave,
    allocs: Mapping[str, tuple[float, float]],
    fair: tuple[float, float] | None,
) -> list[float] | None:
    """The periods of ``members`` sharing a GPU set, each at its allocation (``allocs``,
    else its default: :func:`~planner.executor.model.resources.at_speed`); ``None`` where a
    job with a profile was given no CPU."""
    paced = []
    for m in members:
        alloc = allocs.get(m.name)
        if m.profile is not None and alloc is not None and not alloc[0] > 0:
            return None
        paced.append(at_speed(m.stages, m.iteration_time, speed_of(m, fair, len(members), alloc)))
    return model.periods([p[0] for p in paced], alone=[p[1] for p in paced])

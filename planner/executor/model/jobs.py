"""The jobs of a job-level run: read from a Muri trace or a cluster-form instance, with
the interleaving model the file names, node outages, noise, and a placed plan as a
dispatch (:mod:`planner.executor.loop` runs them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError
from planner.executor.model.elastic import Elastic, Hybrid, Plan, hybrid_of
from planner.executor.model.power import file_tariff, type_watts
from planner.executor.model.resources import (
    ResourceProfile,
    check_memory,
    check_resources,
    gpu_memory_of,
    node_resources,
)
from planner.files import check_input_file
from planner.interleave import MURI_GROUP_FACTORS, TABLE, Interleave, Stages
from planner.model import Tariff

if TYPE_CHECKING:
    from planner.disturbances import Failure, Noise, Slowdown
    from planner.dl.specs import ClusterInstance
    from planner.model import Problem
    from planner.rates import Throughputs
    from planner.schedule import Schedule


Outage = tuple[int, float, float]
"""A node (index) down from a time to a time (seconds)."""


Where = tuple[tuple[int, tuple[int, ...]], ...]
"""A GPU set: per node (index), the indices of its GPUs there; empty where a policy
counts GPUs without placing them (``tiresias``)."""


@dataclass(frozen=True)
class ExecutorJob:
    """A training job as a trace gives it (seconds)."""

    name: str
    gpus: int
    iterations: int
    stages: Stages
    iteration_time: float
    """Seconds per iteration alone, as measured."""
    duration: float
    """The trace's duration (s): what Muri-S takes as a new job's remaining time."""
    model: str = ""
    release: float = 0.0
    share: float = 1.0
    """Its weight where it shares GPUs under ``fluid`` (a plan's speed for it:
    :func:`plan_of`); 1 for all: every co-resident slows alike."""
    holds: tuple[tuple[float, float], ...] = ()
    """Where a plan pauses it (:func:`plan_of`): per block but the last, the iterations
    left when the block ends and the next block's planned start (s)."""
    on: Where = ()
    """The GPUs a plan on single GPUs puts it on (:func:`plan_of`); empty where the plan
    names nodes only."""
    weight: float = 1.0
    """The weight of its completion time (the instance's ``weight``): the JCT policies
    order by remaining service over it (Smith's rule)."""
    priority: int = 0
    """Its class: the executor serves higher classes first (strict classes)."""
    reweights: tuple[tuple[float, float], ...] = ()
    """Where a plan changes its speed (:func:`plan_of`): per later block of another speed,
    the iterations left when the block starts and its weight (``share`` before)."""
    restart: float | None = None
    """Its restart overhead (s); ``None``: the catalog's for its model and GPUs."""
    gpu_mem: float = 0.0
    """GB of each of its GPUs' memory it holds (``gpu_mem_per_gpu``), shared on a GPU."""
    cpu: float = 0.0
    """CPU cores it holds per GPU (``cpu_per_gpu``) where it has no ``profile``."""
    mem: float = 0.0
    """GB of host memory it holds per GPU (``mem_per_gpu``) where it has no ``profile``."""
    profile: ResourceProfile | None = None
    """Its speed by the CPU and memory it is given (:mod:`planner.executor.model.resources`);
    ``None``: one speed, holding ``cpu`` and ``mem``."""
    elastic: Elastic | Hybrid | None = None
    """What makes it elastic (:mod:`planner.executor.model.elastic`): a Pollux application (its
    iterations are progress) or parallel plans; a policy runs it on any number of GPUs."""

    def share_at(self, left: float) -> float:
        """Its weight with ``left`` iterations left: the weight of the block it is in."""
        weight = self.share
        for start, w in self.reweights:
            if left > start + 1e-6:
                break
            weight = w
        return weight


def any_elastic(jobs: Sequence[ExecutorJob]) -> bool:
    """Whether any of ``jobs`` is elastic (a Pollux job or a hybrid-parallel one)."""
    return any(j.elastic is not None for j in jobs)


def read_trace(path: str | Path, elastic: int = 0) -> list[ExecutorJob]:
    """The jobs of a Muri trace CSV (:func:`planner.dl.workloads.read_muri_trace`). A job
    alone runs at the trace's ``iteration_time`` (else its stages back to back); a trace
    without ``duration`` gives its iterations at that period. With ``elastic`` (the most
    GPUs a job may run on) every job is made elastic: hybrid-parallel, with the
    data-parallel plans of its model's catalog profile
    (:func:`~planner.dl.catalog.scaling_plans`).

    Raises
    ------
    InputError
        As :func:`~planner.dl.workloads.read_muri_trace`; with ``elastic``, for a model
        the catalog has no stage profile of.
    """
    from planner.dl.catalog import scaling_plans
    from planner.dl.workloads import read_muri_trace

    out = []
    for row in read_muri_trace(path):
        stages = Stages(*row.stages)
        alone = row.iteration_time or stages.total
        hybrid = None
        if elastic:
            plans = scaling_plans(row.model, row.gpus, row.batch_size, row.stages, alone, elastic)
            hybrid = Hybrid(
                tuple(Plan(f"{p['data']}x1x1", p["data"], Stages(**p["stages"])) for p in plans),
                row.gpus,
            )
        out.append(
            ExecutorJob(
                name=row.name,
                gpus=row.gpus,
                iterations=row.iterations,
                stages=stages,
                iteration_time=alone,
                duration=row.duration or row.iterations * alone,
                model=row.model,
                release=row.release,
                weight=row.weight,
                priority=row.priority,
                elastic=hybrid,
            )
        )
    return out


@dataclass(frozen=True)
class Workload:
    """The jobs of a workload file, with what the file says of the cluster and the model."""

    jobs: list[ExecutorJob]
    nodes: int | None = None
    gpus_per_node: int | None = None
    interleave: str | None = None
    """The file's interleaving model (``None``: a trace, which names none)."""
    data_slots: float = 1.0
    node_names: tuple[str, ...] = ()
    """The nodes' names, in index order (empty: a trace, whose nodes are ``node1`` ..)."""
    time_unit: str = "1s"
    """The file's tick (failure times without a unit are ticks of it)."""
    power_cap: float | None = None
    """The file's power cap (watts; ``power.cap``), if it has one."""
    watts: tuple[float, float] = (300.0, 60.0)
    """A GPU's (busy, idle) watts (the file's ``power``, its machine's base spread over
    its GPUs)."""
    tariff: Tariff | None = None
    """The file's prices of energy (``power.tariff``) in whole seconds, if it has them."""
    switch_off: bool = False
    """Whether a GPU no job holds draws nothing (``power.switch_off``)."""
    types: tuple[str, ...] = ()
    """Each node's GPU type under the ``table`` model (empty: one type)."""
    table: Throughputs | None = None
    """The ``table`` model's measured rates (``None``: a stage model)."""
    type_watts: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Under the ``table`` model: a GPU's (busy, idle) watts per type (the instance's
    ``power``, else the catalog's)."""
    objective: str = "makespan"
    """The file's objective (a trace's: the makespan)."""
    max_colocated: int = 4
    """The most jobs on one GPU set (the file's ``max_colocated``)."""
    gpu_memory: float | None = None
    """GB of one GPU's memory (:func:`gpu_memory_of`; ``None``: the file gives none)."""
    cpus: tuple[float, ...] = ()
    """Each node's CPU cores (empty: the file gives none, not held)."""
    mems: tuple[float, ...] = ()
    """Each node's GB of host memory (empty: the file gives none, not held)."""

    def names(self, nodes: int) -> tuple[str, ...]:
        """The names of ``nodes`` nodes: the file's, else ``node1`` .. ``nodeN``."""
        return self.node_names or tuple(f"node{k + 1}" for k in range(nodes))


def jobs_from_instance(path: str | Path, data: Mapping[str, Any] | None = None) -> Workload:
    """The jobs of a workload file, its cluster's nodes and GPUs per node, and its model.

    A ``.csv`` file is a Muri trace (:func:`read_trace`; no cluster, no model); another
    is a cluster-form instance (JSON or YAML) whose nodes all have the same number of
    GPUs (``data``: the file already parsed). A job's stages are its own or the
    catalog's for its model, its period alone its ``iteration_time`` (else its stages
    back to back), its duration its iterations at that period.

    Raises
    ------
    InputError
        For another kind of file, a problem-form instance, or nodes of several sizes.
    """
    from planner.dl.cluster import JobProfiles
    from planner.dl.specs import ClusterInstance, gpu_watts
    from planner.io.instance import parse_native_text, read_text
    from planner.model import validated

    path = Path(path)
    if path.suffix.lower() == ".csv":
        return Workload(read_trace(path))
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        raise InputError(
            "peer policies and plans under a model run training jobs: give a Muri trace (.csv) "
            "or a cluster-form instance (.json, .yaml)",
            str(path),
        )
    check_input_file(path)
    try:
        if data is None:
            data = parse_native_text(read_text(path), path.suffix.lower() == ".json")
        if "cluster" not in data:
            raise InputError(
                "peer policies run training jobs: give a Muri trace (.csv) or a cluster-form "
                "instance (with 'cluster' and 'jobs')"
            )
        inst = validated(ClusterInstance, data)
    except InputError as exc:
        raise exc.at(str(path)) from None
    sizes = {n.gpu for n in inst.cluster.nodes}
    if len(sizes) != 1:
        raise InputError("peer policies need nodes with one GPU count", str(path), "cluster")
    if inst.interleave == "table":
        return _table_workload(inst, path)
    profiles = JobProfiles(inst)
    grids = {
        model: ResourceProfile(tuple(g.cpu), tuple(g.mem), tuple(tuple(row) for row in g.speedup))
        for model, g in inst.resource_profiles.items()
    }
    jobs = []
    for i, job in enumerate(inst.jobs):
        _, _, _, times, factor = profiles.configs(i, job)[0]
        stages = Stages(times.data, times.gpu * factor, times.sync)
        iterations = profiles.iterations(job, times.on(factor))
        elastic: Elastic | Hybrid | None = None
        gpu_mem = float(job.gpu_mem_per_gpu)
        if job.elastic is not None:  # its progress to its end, not whole
            elastic = Elastic(job.elastic.application, job.elastic.batch_size)
            iterations = elastic.app.target_progress  # type: ignore[assignment]
        elif job.parallel_plans:
            elastic = hybrid_of(job, gpu_memory_of(inst), str(path), f"jobs[{i}].parallel_plans")
            gpu_mem = elastic.gpu_mem
        alone = job.iteration_time or stages.total
        jobs.append(
            ExecutorJob(
                name=job.name,
                gpus=job.gpus,
                iterations=iterations,
                stages=stages,
                iteration_time=alone,
                duration=iterations * alone,
                model=job.model or "",
                release=job.release,
                weight=job.weight,
                priority=job.priority,
                restart=job.restart,
                gpu_mem=gpu_mem,
                cpu=float(job.cpu_per_gpu),
                mem=float(job.mem_per_gpu),
                profile=grids.get(job.model or ""),
                elastic=elastic,
            )
        )
    names = tuple(name for name, _ in inst.cluster.node_names())
    check_memory(jobs, memory := gpu_memory_of(inst), str(path))
    cpus, mems = node_resources(inst)
    check_resources(jobs, cpus, mems, sizes.copy().pop(), str(path))
    power = inst.power
    if power is not None and power.windows:
        raise InputError(
            "job-level runs take a constant power cap: plan with the windows, or drop them",
            str(path),
            "power.windows",
        )
    cap = power.cap if power is not None else None
    watts = (300.0, 60.0)
    if power is not None:
        figures = {gpu_watts(inst, t) for t in inst.cluster.gpu_types()}
        if len(figures) > 1:
            raise InputError(
                "job-level runs take one power figure for every GPU: give the GPU types the "
                "same watts (power.gpu_busy, power.gpu_idle), or plan",
                str(path),
                "power",
            )
        watts = figures.pop()
    return Workload(
        jobs,
        nodes=len(names),
        gpus_per_node=sizes.pop(),
        interleave="fluid" if inst.interleave == "phases" else inst.interleave,
        data_slots=inst.data_slots,
        node_names=names,
        time_unit=inst.time_unit,
        power_cap=cap,
        watts=watts,
        tariff=file_tariff(power.tariff) if power is not None and power.tariff else None,
        switch_off=power is not None and power.switch_off,
        max_colocated=inst.max_colocated,
        gpu_memory=memory,
        cpus=cpus,
        mems=mems,
    )


def _table_workload(inst: ClusterInstance, path: Path) -> Workload:
    """The workload of a cluster-form instance under the ``table`` model: every node's GPU
    type, every job's rates from the throughputs file (its key: its model, its GPUs).

    Raises
    ------
    InputError
        For a throughputs file that cannot be read, a node without a GPU type, or a job
        without a model or iterations, or one no GPU type measures.
    """
    from planner.dl.gavel import read_throughputs

    table = read_throughputs(path.parent / str(inst.throughputs))
    names, types = [], []
    for name, node in inst.cluster.node_names():
        if node.gpu_type is None:
            raise InputError("the table model needs every node's gpu_type", str(path), name)
        names.append(name)
        types.append(node.gpu_type)
    table = table.only(types)
    jobs = []
    for i, job in enumerate(inst.jobs):
        if job.model is None:
            raise InputError("the table model needs the job's model", str(path), f"jobs[{i}]")
        rate = table.best((job.model, job.gpus))[1]
        if rate <= 0:
            raise InputError(unrunnable(job.name, job.model, job.gpus), str(path))
        steps = job.iterations or max(1, round((job.duration or 0.0) * rate))
        period = 1.0 / rate
        jobs.append(
            ExecutorJob(
                name=job.name,
                gpus=job.gpus,
                iterations=steps,
                stages=Stages(0.0, period, 0.0),
                iteration_time=period,
                duration=steps * period,
                model=job.model,
                release=job.release,
                weight=job.weight,
                priority=job.priority,
                restart=job.restart,
            )
        )
    sizes = {n.gpu for n in inst.cluster.nodes}
    per_node = sizes.pop()
    try:
        check_types(jobs, len(names), per_node, Interleave(TABLE, table=table), tuple(types))
    except InputError as exc:
        raise exc.at(str(path)) from None
    return Workload(
        jobs,
        nodes=len(names),
        gpus_per_node=per_node,
        interleave="table",
        node_names=tuple(names),
        time_unit=inst.time_unit,
        types=tuple(types),
        table=table,
        type_watts={t: type_watts(inst, t) for t in dict.fromkeys(types)},
        objective=inst.objective,
        tariff=file_tariff(inst.power.tariff) if inst.power and inst.power.tariff else None,
        switch_off=inst.power is not None and inst.power.switch_off,
    )


def model_of(
    workload: Workload,
    interleave: str | None = None,
    slowdown: Slowdown | None = None,
    data_slots: float | None = None,
) -> Interleave:
    """The interleaving model a job-level run of ``workload`` uses: ``interleave`` or the
    file's (``muri`` for a trace), its ``data_slots`` or the file's, and ``slowdown``'s
    factors on groups (Muri's table is its simulator's, which slows a job alone by 1.015
    too: :data:`~planner.interleave.MURI_GROUP_FACTORS`; ``None``: no slowdown)."""
    if slowdown is None:
        factors = None
    elif slowdown.source == "muri":
        factors = MURI_GROUP_FACTORS
    else:
        factors = slowdown.factors
    kind = interleave or workload.interleave or "muri"
    if kind == TABLE or workload.table is not None:
        if kind != TABLE:
            raise InputError(f"interleave {kind!r}: the file's jobs have measured rates only")
        if data_slots is not None:
            raise InputError("--data-slots: the table model has no stages to load data for")
        if slowdown is None or slowdown.source != "muri":
            raise InputError("--slowdown: the table model's pairs run at their measured rates")
        return Interleave(TABLE, table=workload.table)
    slots = data_slots or workload.data_slots
    most, memory = workload.max_colocated, workload.gpu_memory
    return Interleave(kind, slots, most, factors, gpu_memory=memory)  # type: ignore[arg-type]


def outages_of(failures: Sequence[Failure], names: Sequence[str], time_unit: str) -> list[Outage]:
    """Node failures (ticks of ``time_unit``) as outages of node indices (seconds);
    ``names`` name the nodes by index.

    Raises
    ------
    InputError
        For a node that is not one of ``names``, or two overlapping outages of a node.
    """
    from planner.disturbances import check_overlaps
    from planner.times import tick_seconds

    check_overlaps(failures)
    index = {name: k for k, name in enumerate(names)}
    tick = tick_seconds(time_unit)
    out = []
    for f in failures:
        if f.node not in index:
            raise InputError(
                f"failure {f}: no node {f.node!r}; the nodes are {names[0]} .. {names[-1]}"
            )
        out.append((index[f.node], f.time * tick, (f.time + f.down) * tick))
    return out


def plan_of(
    problem: Problem, schedule: Schedule, jobs: Sequence[ExecutorJob], work_conserving: bool = False
) -> tuple[list[ExecutorJob], dict[str, tuple[int, ...]]]:
    """A plan of ``problem`` as a job-level dispatch: every job released at its first
    task's planned start (seconds of the problem's ticks; ``work_conserving``: at its own
    release, the plan giving the order), on that task's nodes (indices into ``problem.nodes``;
    where the nodes are single GPUs of machines, their ``host``, the machines' indices, and the
    GPUs as the job's ``on``; none in a pooled plan: the executor places it), weighted by
    the plan's speed for it in each of its blocks: the
    block's least duration over its planned one (a fluid block at speed 1/2 has weight 1/2;
    ``weight`` the first block's, ``reweights`` where a later block's differs; a job without
    blocks on GPUs, its tasks' least durations over their planned ones), so that where it
    shares GPUs under ``fluid`` the executor divides them as the plan does; unless
    ``work_conserving``, with the pauses its plan leaves between its blocks (``holds``).

    Raises
    ------
    InputError
        If a job has no task in the schedule, or it runs a task under a GPU power limit.
    """
    from planner.times import seconds_per_tick

    limited = next(
        (
            f"{t.name} in mode {name!r}"
            for t in problem.tasks
            if (name := schedule.modes.get(t.name)) is not None
            and any(seg.watts is not None for seg in t.mode(name).segments)
        ),
        None,
    )
    if limited is not None:
        raise InputError(
            f"the executor runs GPUs without power limits; the plan runs {limited}: plan "
            "without power.limits to execute it"
        )
    tick = seconds_per_tick(problem.time_unit)
    index, gpus = machines_of(problem)
    first: dict[str, tuple[int, str]] = {}
    for t in problem.tasks:
        if t.job is not None and t.name in schedule.starts:
            start = schedule.starts[t.name]
            if t.job not in first or start < first[t.job][0]:
                first[t.job] = (start, t.name)
    fastest: dict[str, int] = {}
    planned: dict[str, int] = {}
    for t in problem.tasks:
        if t.job is not None and t.name in schedule.modes:
            fastest[t.job] = fastest.get(t.job, 0) + t.min_duration
            planned[t.job] = planned.get(t.job, 0) + t.mode(schedule.modes[t.name]).duration
    blocks = _blocks(problem, schedule)
    out, nodes = [], {}
    for j in jobs:
        if j.name not in first:
            raise InputError(f"job {j.name!r} has no task in the plan")
        start, task = first[j.name]
        on = schedule.nodes.get(task, ())
        nodes[j.name] = tuple(dict.fromkeys(index[n] for n in on))
        release = j.release if work_conserving else max(j.release, start * tick)
        weight = fastest[j.name] / planned[j.name] if planned[j.name] else 1.0
        chain = blocks.get(j.name, [])
        holds = () if work_conserving else _holds(chain, j.iterations, tick)
        reweights = _reweights(chain, j.iterations)
        if chain:
            weight = chain[0][2]
        where: Where = ()
        if gpus:
            by_node: dict[int, list[int]] = {}
            for n in on:
                by_node.setdefault(index[n], []).append(gpus[n])
            where = tuple((k, tuple(sorted(ids))) for k, ids in by_node.items())
        out.append(
            replace(j, release=release, share=weight, holds=holds, on=where, reweights=reweights)
        )
    return out, nodes


def machines_of(problem: Problem) -> tuple[dict[str, int], dict[str, int]]:
    """The machine (index) of every node of ``problem``, and where its nodes are single
    GPUs (they name their ``host``), the GPU's index on its machine; else no GPUs."""
    if not any(n.host for n in problem.nodes):
        return {n.name: k for k, n in enumerate(problem.nodes)}, {}
    hosts: dict[str, int] = {}
    count: dict[str, int] = {}
    index, gpus = {}, {}
    for n in problem.nodes:
        host = n.host or n.name
        index[n.name] = hosts.setdefault(host, len(hosts))
        gpus[n.name] = count.get(host, 0)
        count[host] = gpus[n.name] + 1
    return index, gpus


_Block = tuple[int, int, float]
"""A training block of a plan: its planned start, its least duration (its share of the
job's iterations), its speed (the least duration over the planned one, restart left out)."""


def _blocks(problem: Problem, schedule: Schedule) -> dict[str, list[_Block]]:
    """Per job, its training blocks (its tasks on GPUs) in planned order."""
    out: dict[str, list[_Block]] = {}
    for t in problem.tasks:
        if t.job is not None and t.name in schedule.starts:
            mode = t.mode(schedule.modes[t.name])
            if problem.gpus(mode):
                runs = sum(s.duration for s in mode.segments if s.name != "restart")
                speed = t.min_duration / runs if runs else 1.0
                out.setdefault(t.job, []).append((schedule.starts[t.name], t.min_duration, speed))
    for chain in out.values():
        chain.sort()
    return out


def _lefts(blocks: Sequence[_Block], iterations: int) -> list[float]:
    """The iterations left at the end of each block but the last (the blocks' shares of
    ``iterations`` by their least durations)."""
    work = sum(b[1] for b in blocks)
    if not work:
        return []
    out, done = [], 0
    for b in blocks[:-1]:
        done += b[1]
        out.append(iterations * (1 - done / work))
    return out


def _holds(
    blocks: Sequence[_Block], iterations: int, tick: float
) -> tuple[tuple[float, float], ...]:
    """A job's pauses between its ``blocks``: the iterations left at each block's end and
    the next block's planned start in seconds."""
    lefts = _lefts(blocks, iterations)
    return tuple((left, b[0] * tick) for left, b in zip(lefts, blocks[1:], strict=False))


def _reweights(blocks: Sequence[_Block], iterations: int) -> tuple[tuple[float, float], ...]:
    """Where a job's plan changes its speed: per block of another speed than the one
    before, the iterations left when it starts and its speed."""
    lefts = _lefts(blocks, iterations)
    return tuple(
        (left, b[2]) for left, a, b in zip(lefts, blocks, blocks[1:], strict=False) if b[2] != a[2]
    )


def with_noise(jobs: Sequence[ExecutorJob], noise: Noise, seed: int) -> list[ExecutorJob]:
    """``jobs`` with every job's stages and iteration time multiplied by one factor of
    ``noise`` (mean 1), drawn per job in trace order from ``seed``: the same seed gives
    the same factors."""
    factors = noise.factors(np.random.default_rng(seed), len(jobs))
    out = []
    for j, f in zip(jobs, factors, strict=True):
        s = j.stages
        stages = Stages(s.data * f, s.gpu * f, s.sync * f)
        out.append(replace(j, stages=stages, iteration_time=j.iteration_time * f))
    return out


def check_jobs(
    jobs: Sequence[ExecutorJob],
    nodes: int,
    gpus_per_node: int,
    plan: Mapping[str, Sequence[int]] | None = None,
) -> None:
    """Refuse jobs that cannot run on the cluster, and a plan that puts a job on nodes
    that cannot hold it (:func:`run_policy` checks this before it starts); a job a plan
    puts on no nodes (a pooled plan) is placed by the executor.

    Raises
    ------
    InputError
        Naming the first such job.
    """
    total = nodes * gpus_per_node
    for j in jobs:
        if not 1 <= j.gpus <= total:
            raise InputError(f"job {j.name!r} needs {j.gpus} GPUs; the cluster has {total}")
        if plan is None:
            continue
        on = tuple(plan.get(j.name, ()))
        need = max(1, -(-j.gpus // gpus_per_node))
        if j.on:
            gpus = [(k, i) for k, ids in j.on for i in ids]
            if len(set(gpus)) != j.gpus or any(
                not (0 <= k < nodes and 0 <= i < gpus_per_node) for k, i in gpus
            ):
                raise InputError(
                    f"job {j.name!r}: the plan puts it on GPUs {gpus}; it needs {j.gpus} of "
                    f"the cluster's {nodes} x {gpus_per_node}"
                )
            continue
        if on and (len(on) != need or any(not 0 <= k < nodes for k in on)):
            raise InputError(
                f"job {j.name!r}: the plan puts it on nodes {list(on)}; it needs {need} of "
                f"the cluster's {nodes}"
            )


def type_gpus(types: Sequence[str], per_node: int) -> dict[str, int]:
    """The GPUs of each type of a cluster of nodes of ``types`` with ``per_node`` GPUs."""
    return {t: types.count(t) * per_node for t in dict.fromkeys(types)}


def typed_bound(
    jobs: Sequence[ExecutorJob], types: Sequence[str], per_node: int, table: Throughputs
) -> tuple[dict[str, float], str]:
    """The ``table`` model's makespan bounds of ``jobs`` on nodes of ``types``
    (:func:`planner.rates.table_bound`) and which part binds: ``longest job from its
    release`` or ``relaxation``."""
    from planner.rates import table_bound

    work = [((j.model, j.gpus), float(j.iterations), j.release) for j in jobs]
    bound = table_bound(work, type_gpus(types, per_node), table)
    longest = bound["longest"] >= bound["lp"]
    return bound, "longest job from its release" if longest else "relaxation"


def unrunnable(name: str, model: str, gpus: int) -> str:
    """Why a job runs on no GPU type of a cluster under the ``table`` model."""
    return (
        f"job {name!r} ({model}, {gpus} GPUs): no GPU type of the cluster has a measured "
        "rate for it and as many GPUs"
    )


def check_types(
    jobs: Sequence[ExecutorJob],
    nodes: int,
    gpus_per_node: int,
    model: Interleave,
    types: tuple[str, ...],
    power_cap: float | None = None,
) -> None:
    """Refuse GPU types that do not fit the run: a type per node, only under the
    ``table`` model, and every job runnable on GPUs of one type of the cluster.

    Raises
    ------
    InputError
        Naming what does not fit.
    """
    table = model.table
    if table is None:
        if types and len(set(types)) > 1:
            raise InputError("a cluster of several GPU types runs under the table model only")
        return
    if power_cap is not None:
        raise InputError("a power cap needs a stage model (fluid or muri), not the table")
    if len(types) != nodes:
        raise InputError(f"the table model needs a GPU type for each of the {nodes} nodes")
    count = type_gpus(types, gpus_per_node)
    for j in jobs:
        if not any(n >= j.gpus and table.alone.get(t, {}).get((j.model, j.gpus), 0) > 0
                   for t, n in count.items()):  # fmt: skip
            raise InputError(unrunnable(j.name, j.model, j.gpus))

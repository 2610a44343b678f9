"""The resources of a node beside its GPUs, as the job-level executor holds them.

- A GPU's memory, which the jobs on it share (:meth:`planner.interleave.Interleave.room`
  is the rule every placement and the audit follow).
- A node's CPU cores and host memory, which the jobs on it hold: each job its
  allocation per GPU times its GPUs there. A job with a throughput profile
  (:class:`ResourceProfile`) runs at the profile's speed-up at its allocation
  (:func:`at_speed`); its allocation is its policy's decision, by default the
  GPU-proportional share of its node (split evenly among the jobs of a GPU set). A job
  without one holds what it asks (``cpu_per_gpu``, ``mem_per_gpu``) at its one speed.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from planner.errors import InputError
from planner.interleave import Stages

if TYPE_CHECKING:
    from planner.dl.specs import ClusterInstance


class _Holder(Protocol):
    """A job as the memory check reads it."""

    name: str
    gpu_mem: float


_J = TypeVar("_J", bound=Any)


class _Taker(Protocol):
    """A job as the check of CPU and host memory reads it."""

    name: str
    gpus: int
    cpu: float
    mem: float
    profile: ResourceProfile | None


def gpu_memory_of(inst: ClusterInstance) -> float | None:
    """GB of one GPU of ``inst``'s cluster: the least of the GPU nodes' ``gpu_mem`` over
    their GPUs (``None`` if a GPU node gives none)."""
    gpu_nodes = [n for n in inst.cluster.nodes if n.gpu]
    if any(n.gpu_mem is None for n in gpu_nodes):
        return None
    return min(n.gpu_mem / n.gpu for n in gpu_nodes)  # type: ignore[operator]


def node_resources(inst: ClusterInstance) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each node's CPU cores and GB of host memory, in node order (either empty where a
    node gives none: that resource is then not held)."""
    nodes = [node for _, node in inst.cluster.node_names()]
    cpus = tuple(float(n.cpu) for n in nodes if n.cpu is not None)
    mems = tuple(float(n.mem) for n in nodes if n.mem is not None)
    return (cpus if len(cpus) == len(nodes) else ()), (mems if len(mems) == len(nodes) else ())


def check_resources(
    jobs: Sequence[_Taker],
    cpus: Sequence[float],
    mems: Sequence[float],
    per_node: int,
    file: str | None = None,
) -> None:
    """Refuse a job without a profile whose CPU cores or host memory fit no node: what
    it holds per GPU times its GPUs on one node (at most ``per_node``) against the
    largest node's.

    Raises
    ------
    InputError
        Naming the first such job.
    """
    for j in jobs:
        if j.profile is not None:
            continue
        on_node = min(j.gpus, per_node)
        for kind, each, have, unit in (("cpu", j.cpu, cpus, " cores"), ("mem", j.mem, mems, " GB")):
            if have and each * on_node > max(have) + 1e-9:
                raise InputError(
                    f"job {j.name!r} holds {each * on_node:g}{unit} of {kind} on a node "
                    f"({each:g} per GPU); the largest node has {max(have):g}",
                    file,
                )


def check_memory(jobs: Sequence[_Holder], memory: float | None, file: str | None = None) -> None:
    """Refuse a job that needs more memory per GPU than one GPU has (``memory`` GB).

    Raises
    ------
    InputError
        Naming the first such job.
    """
    if memory is None:
        return
    for j in jobs:
        if j.gpu_mem > memory + 1e-9:
            raise InputError(
                f"job {j.name!r} needs {j.gpu_mem:g} GB per GPU; a GPU of the cluster has "
                f"{memory:g} GB",
                file,
            )


@dataclass(frozen=True)
class ResourceProfile:
    """A job's throughput by the CPU cores and host memory it is given per GPU: its
    speed-up over its stage times (which are its speed at speed-up 1) on a grid, as
    Synergy profiles its models (``cpu`` cores and ``mem`` GB per GPU, ascending;
    ``speedup[i][j]`` at ``cpu[i]``, ``mem[j]``)."""

    cpu: tuple[float, ...]
    mem: tuple[float, ...]
    speedup: tuple[tuple[float, ...], ...]

    def at(self, cpu: float, mem: float) -> float:
        """The speed-up at ``cpu`` cores and ``mem`` GB per GPU: that of the greatest grid
        point at or below them (a grid point is what was measured); below the least CPU
        figure, in proportion to the cores (a data pipeline's rate is its cores'); below
        the least memory figure, the least column's."""
        i = bisect.bisect_right(self.cpu, cpu + 1e-9) - 1
        j = max(bisect.bisect_right(self.mem, mem + 1e-9) - 1, 0)
        if i < 0:
            return self.speedup[0][j] * max(cpu, 0.0) / self.cpu[0]
        return self.speedup[i][j]

    @cached_property
    def frontier(self) -> tuple[tuple[float, float, float], ...]:
        """The grid's points (CPU, memory, speed-up) that no other beats: none with no more
        CPU, no more memory and as much speed (where more buys nothing, the point is
        left out)."""
        points = [
            (c, m, self.speedup[i][j])
            for i, c in enumerate(self.cpu)
            for j, m in enumerate(self.mem)
        ]
        return tuple(
            p for p in points
            if not any(q != p and q[0] <= p[0] and q[1] <= p[1] and q[2] >= p[2] for q in points)
        )  # fmt: skip

    @cached_property
    def best(self) -> tuple[float, float, float]:
        """The least (CPU, memory) per GPU at the grid's greatest speed-up, and that
        speed-up (Synergy's demand vector of the job)."""
        top = max(max(row) for row in self.speedup)
        for i, row in enumerate(self.speedup):
            for j, x in enumerate(row):
                if x >= top - 1e-12:
                    return self.cpu[i], self.mem[j], top
        raise AssertionError  # pragma: no cover


def at_speed(stages: Stages, alone: float, speed: float) -> tuple[Stages, float]:
    """A job's stages and period alone at ``speed`` times its speed (its profile's
    speed-up at the CPU and memory it is given): the CPU and memory feed its data
    stage, so the change of its period is taken from the data stage first (a job
    starved of them waits longer on data), and only beyond it from the GPU and
    synchronisation stages, in proportion."""
    if speed == 1.0:
        return stages, alone
    if not speed > 0:
        raise InputError("a job with a resource profile was given no CPU: it cannot run")
    total = stages.total
    change = total / speed - total
    data = stages.data + change
    if data >= 0:
        return Stages(data, stages.gpu, stages.sync), alone / speed
    rest = stages.gpu + stages.sync
    scale = (rest + data) / rest
    return Stages(0.0, stages.gpu * scale, stages.sync * scale), alone / speed


def fair_share(
    cpus: Sequence[float], mems: Sequence[float], per_node: int
) -> tuple[float, float] | None:
    """The GPU-proportional share of CPU cores and GB of host memory per GPU: the least
    node's cores and memory over its ``per_node`` GPUs, so that it fits on every node
    (``None`` where the nodes give either none)."""
    if not cpus or not mems or per_node <= 0:
        return None
    return min(cpus) / per_node, min(mems) / per_node


def default_alloc(
    job: _Taker, fair: tuple[float, float] | None, members: int
) -> tuple[float, float]:
    """What ``job`` holds per GPU where its policy decides nothing: with a profile, the
    ``fair`` share split evenly among the ``members`` jobs of its GPU set; without, what
    it asks (``cpu``, ``mem``)."""
    if job.profile is None or fair is None:
        return job.cpu, job.mem
    return fair[0] / members, fair[1] / members


def most_residents(
    where: Sequence[tuple[int, Sequence[int]]],
    residents: Mapping[tuple[int, int], Sequence[object]],
) -> int:
    """The most jobs on one GPU of ``where`` (``residents`` per GPU; at least 1)."""
    return max((len(residents.get((k, i), ())) for k, ids in where for i in ids), default=1) or 1


def holdings(
    groups: Sequence[tuple[Sequence[str], float, Sequence[tuple[int, Sequence[int]]]]],
    by_name: Mapping[str, _J],
    allocs: Mapping[str, tuple[float, float]],
    fair: tuple[float, float] | None,
    shared: bool,
) -> Iterator[tuple[_J, Sequence[tuple[int, Sequence[int]]], tuple[float, float]]]:
    """Every running job of an event of a run's trace (its ``groups``; ``shared``: each
    entry one job on GPUs others may share), its GPU set and what it holds per GPU: its
    allocation in ``allocs``, else :func:`default_alloc` among the jobs of its GPU set (on
    shared GPUs, the most on one of its GPUs)."""
    residents: dict[tuple[int, int], list[str]] | None = None
    if shared:
        residents = {}
        for names, _, where in groups:
            for node, ids in where:
                for i in ids:
                    residents.setdefault((node, i), []).append(names[0])
    for names, _, where in groups:
        count = len(names) if residents is None else most_residents(where, residents)
        for name in names[:1] if shared else names:
            job = by_name[name]
            yield job, where, allocs.get(name) or default_alloc(job, fair, count)


def speed_of(
    job: _Taker,
    fair: tuple[float, float] | None,
    members: int,
    alloc: tuple[float, float] | None = None,
) -> float:
    """``job``'s speed-up at ``alloc`` (CPU cores, GB per GPU), by default at
    :func:`default_alloc`: its profile's (1 without a profile or shares to give)."""
    if job.profile is None or (alloc is None and fair is None):
        return 1.0
    cpu, mem = alloc if alloc is not None else default_alloc(job, fair, members)
    return job.profile.at(cpu, mem)


class Holdings:
    """What the jobs placed hold of each node's CPU cores and host memory, for a
    dispatch that places jobs on shared GPUs: a job without a profile what it asks per
    GPU, a job with one the ``fair`` share per GPU (the most its default can be)."""

    def __init__(
        self, cpus: Sequence[float], mems: Sequence[float], fair: tuple[float, float] | None
    ) -> None:
        self.caps = (tuple(cpus), tuple(mems))
        self.fair = fair
        n = max(len(cpus), len(mems))
        self.used = ([0.0] * n, [0.0] * n)

    def vector(self, job: _Taker) -> tuple[float, float]:
        """What ``job`` is counted to hold per GPU: its default alone on its GPUs."""
        return default_alloc(job, self.fair, 1)

    def fits(self, job: _Taker, where: Sequence[tuple[int, Sequence[int]]]) -> bool:
        """Whether ``job`` on ``where`` fits beside the jobs placed."""
        vector = self.vector(job)
        return all(
            not caps or used[k] + v * len(ids) <= caps[k] + 1e-9
            for caps, used, v in zip(self.caps, self.used, vector, strict=True)
            for k, ids in where
        )

    def take(self, job: _Taker, where: Sequence[tuple[int, Sequence[int]]], sign: int = 1) -> None:
        """``job`` holds its vector on ``where`` (``sign=-1``: gives it back)."""
        vector = self.vector(job)
        for used, v in zip(self.used, vector, strict=True):
            if used:
                for k, ids in where:
                    used[k] += sign * v * len(ids)


def fastest(jobs: Sequence[_J]) -> list[_J]:
    """``jobs`` as fast as their profiles let them run: each with a profile at its best
    speed-up (:func:`at_speed`), so that what is figured of them (the bounds) holds for
    any allocation. Every stage only shrinks as the speed-up grows."""
    out = []
    for j in jobs:
        if j.profile is None:
            out.append(j)
            continue
        stages, alone = at_speed(j.stages, j.iteration_time, j.profile.best[2])
        out.append(replace(j, stages=stages, iteration_time=alone, profile=None))
    return out


@dataclass(frozen=True)
class Held:
    """What a run's jobs held of the nodes' CPU cores and host memory, over its span."""

    cpu: float
    """The mean share of the nodes' CPU cores held (0 where the nodes give none)."""
    mem: float
    """The mean share of the nodes' host memory held (as ``cpu``)."""
    speed: float
    """The mean speed-up of the jobs with profiles while they ran (1 where none has one)."""
    decided: bool
    """Whether the policy decided allocations (else every job held its default)."""


def held(run: Any, jobs: Sequence[_Taker]) -> Held | None:
    """What ``run`` (a :class:`~planner.executor.loop.ExecutorRun` of ``jobs``) held of
    the nodes' CPU cores and memory, time-weighted over its events (``None``: its nodes
    hold neither)."""
    if not (run.cpus or run.mems) or len(run.trace) < 2:
        return None
    by_name = {j.name: j for j in jobs}
    fair = run.fair
    caps = (sum(run.cpus), sum(run.mems))
    area = [0.0, 0.0]
    speed, running = 0.0, 0.0
    for k in range(len(run.trace) - 1):
        t, groups = run.trace[k]
        span = run.trace[k + 1][0] - t
        allocs = run.allocation[k] if run.allocation else {}
        for job, where, (cpu, mem) in holdings(groups, by_name, allocs, fair, run.shared):
            gpus = sum(len(ids) for _, ids in where)
            area[0] += cpu * gpus * span
            area[1] += mem * gpus * span
            if job.profile is not None:
                speed += job.profile.at(cpu, mem) * span
                running += span
    total = run.trace[-1][0] - run.trace[0][0] or 1.0
    return Held(
        area[0] / total / caps[0] if caps[0] else 0.0,
        area[1] / total / caps[1] if caps[1] else 0.0,
        speed / running if running else 1.0,
        any(run.allocation),
    )


def resource_rows(workload: Any) -> list[tuple[str, str]]:
    """What ``planner info`` says of a workload's (:class:`~planner.executor.model.jobs.Workload`)
    CPU cores and host memory: the nodes' and what the jobs ask of them."""
    gpus = workload.gpus_per_node or 0
    cpus, mems = workload.cpus, workload.mems
    if not cpus and not mems:
        return []
    nodes = len(cpus or mems)
    have = [
        f"{sum(cpus):g} CPU cores" if cpus else "CPU cores not given",
        f"{sum(mems):g} GB of host memory" if mems else "host memory not given",
    ]
    rows = [("node resources", f"{nodes} nodes of {gpus} GPUs; in all {', '.join(have)}")]
    jobs = workload.jobs
    profiled = sorted({j.model or j.name for j in jobs if j.profile is not None})
    fixed = [j for j in jobs if j.profile is None]
    asks = []
    for what, total, unit in (("cpu", sum(cpus), "cores"), ("mem", sum(mems), "GB")):
        need = sum(getattr(j, what) * j.gpus for j in fixed)
        if need and total:
            asks.append(f"{need:g} {unit} ({need / total:.2f} x the cluster's)")
    if asks:
        rows.append(("jobs hold", f"all at once, {' and '.join(asks)}"))
    fair = fair_share(cpus, mems, gpus)
    if profiled and fair is not None:
        rows.append(
            (
                "resource profiles",
                f"{len(profiled)} models: the policy gives their jobs CPU and memory (fair "
                f"share {fair[0]:g} cores and {fair[1]:g} GB per GPU)",
            )
        )
    return rows

"""The cluster form of an instance and the job compiler.

A cluster form file describes a cluster (nodes and their capacities) and a
batch of training jobs. The compiler turns it into the problem form: the
cluster's resources are pooled (one renewable resource per kind, capacities
summed over nodes), and each training job becomes a chain of tasks:

- an optional ``stage-in`` task (storage I/O only),
- ``blocks`` training blocks, each a block of iterations whose mode is the
  segment profile ``[data, gpu, sync]`` scaled by the block's size,
- an optional ``checkpoint`` task (storage I/O only).

A job with ``g`` GPUs demands, per stage: data ``io: g, cpu: g * cpu_per_gpu``;
gpu ``gpu: g``; sync ``net: g``; and ``gpu_mem: g * gpu_mem_per_gpu`` through
every segment of a block. Demands on resource kinds the cluster does not
declare are left out. Stage times are per iteration, in seconds; durations are
rounded up to whole ticks of ``time_unit``.
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.model import Problem

KINDS = ("gpu", "cpu", "mem", "io", "net", "gpu_mem")
_UNITS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}
_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h)\s*$")

PosInt = Annotated[int, Field(ge=1, strict=True)]
NonNegInt = Annotated[int, Field(ge=0, strict=True)]
Seconds = Annotated[float, Field(ge=0)]


def tick_seconds(time_unit: str) -> float:
    """Seconds in one tick of ``time_unit`` (``'100ms'``, ``'1s'``, ``'5min'``, ``'1h'``)."""
    m = _UNIT.match(time_unit)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(
            f"time_unit: {time_unit!r} is not a time unit like '100ms', '1s', '1min' or '1h'"
        )
    return float(m.group(1)) * _UNITS[m.group(2)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Node(_Spec):
    """A node type of the cluster, ``count`` times."""

    name: Annotated[str, Field(min_length=1)]
    count: PosInt = 1
    gpu_type: str | None = None
    gpu: NonNegInt = 0
    cpu: NonNegInt | None = None
    mem: NonNegInt | None = None
    io: NonNegInt | None = None
    net: NonNegInt | None = None
    gpu_mem: NonNegInt | None = None


class Cluster(_Spec):
    """The cluster: its nodes. Resources are pooled across nodes."""

    nodes: list[Node] = Field(min_length=1)

    def capacities(self) -> dict[str, int]:
        """Pooled capacity per declared resource kind."""
        caps: dict[str, int] = {}
        for kind in KINDS:
            values = [getattr(n, kind) for n in self.nodes]
            if any(v is not None for v in values):
                caps[kind] = sum(
                    (v or 0) * n.count for v, n in zip(values, self.nodes, strict=True)
                )
        return caps


class Stages(_Spec):
    """Seconds per iteration of each stage of a training iteration."""

    data: Seconds
    gpu: Seconds
    sync: Seconds = 0.0


class TrainingJob(_Spec):
    """A training job: ``iterations`` repetitions of the stage profile on ``gpus`` GPUs."""

    name: Annotated[str, Field(min_length=1)]
    gpus: PosInt
    iterations: PosInt
    stages: Stages
    blocks: PosInt = Field(default=1, description="Training blocks: the fidelity knob.")
    cpu_per_gpu: NonNegInt = 0
    gpu_mem_per_gpu: NonNegInt = 0
    stage_in: Seconds = Field(default=0.0, description="Seconds of storage I/O before training.")
    checkpoint: Seconds = Field(default=0.0, description="Seconds of storage I/O after training.")
    weight: Annotated[float, Field(gt=0)] = 1.0
    release: NonNegInt = 0
    deadline: NonNegInt | None = None

    @model_validator(mode="after")
    def _blocks(self) -> TrainingJob:
        if self.blocks > self.iterations:
            raise ValueError(f"blocks: {self.blocks} blocks but only {self.iterations} iterations")
        return self


class ClusterInstance(_Spec):
    """The cluster form: a cluster and a batch of training jobs."""

    name: str = "cluster"
    time_unit: str = "1s"
    objective: Literal["makespan", "weighted_completion"] = "makespan"
    cluster: Cluster
    jobs: list[TrainingJob] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ClusterInstance:
        tick_seconds(self.time_unit)
        seen: set[str] = set()
        for i, job in enumerate(self.jobs):
            if job.name in seen:
                raise ValueError(f"jobs[{i}].name: duplicate job name {job.name!r}")
            seen.add(job.name)
        if "gpu" not in self.cluster.capacities():
            raise ValueError("cluster.nodes: no node declares 'gpu'")
        return self

    def compile(self) -> Problem:
        """Compile into the problem form."""
        caps = self.cluster.capacities()
        tick = tick_seconds(self.time_unit)

        def ticks(seconds: float) -> int:
            return math.ceil(round(seconds / tick, 9))

        resources = [{"name": k, "capacity": v} for k, v in caps.items()]
        tasks: list[dict] = []
        precs: list[dict] = []
        for job in self.jobs:
            g = job.gpus
            held = {"gpu_mem": g * job.gpu_mem_per_gpu}
            per_stage = {
                "data": {"io": g, "cpu": g * job.cpu_per_gpu, **held},
                "gpu": {"gpu": g, **held},
                "sync": {"net": g, **held},
            }
            chain: list[dict] = []
            if job.stage_in:
                chain.append(_io_task(f"{job.name}/stage-in", ticks(job.stage_in), g, caps))
            base, extra = divmod(job.iterations, job.blocks)
            for b in range(job.blocks):
                iters = base + (b < extra)
                segments = [
                    {
                        "name": stage,
                        "duration": ticks(iters * getattr(job.stages, stage)),
                        "demand": _declared(per_stage[stage], caps),
                    }
                    for stage in ("data", "gpu", "sync")
                ]
                chain.append(
                    {"name": f"{job.name}/block{b + 1}", "modes": [{"segments": segments}]}
                )
            if job.checkpoint:
                chain.append(_io_task(f"{job.name}/checkpoint", ticks(job.checkpoint), g, caps))
            for k, task in enumerate(chain):
                task["job"] = job.name
                if k == 0 and job.release:
                    task["release"] = job.release
                if k == len(chain) - 1 and job.deadline is not None:
                    task["deadline"] = job.deadline
            tasks.extend(chain)
            precs.extend({"before": a["name"], "after": b["name"]} for a, b in pairwise(chain))
        data = {
            "name": self.name,
            "time_unit": self.time_unit,
            "objective": self.objective,
            "resources": resources,
            "tasks": tasks,
            "precedences": precs,
            "jobs": [{"name": j.name, "weight": j.weight} for j in self.jobs],
        }
        from planner.instance import validated

        return validated(Problem, data)


def _declared(demand: dict[str, int], caps: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in demand.items() if k in caps and v}


def _io_task(name: str, duration: int, gpus: int, caps: dict[str, int]) -> dict:
    segment = {
        "name": name.rsplit("/", 1)[1],
        "duration": duration,
        "demand": _declared({"io": gpus}, caps),
    }
    return {"name": name, "modes": [{"segments": [segment]}]}

"""The job compiler: a cluster-form instance (:mod:`planner.dl.specs`) into the problem
form (:func:`compile_cluster`).

A cluster form file describes a cluster (nodes and their capacities) and a
batch of training jobs; the compiler turns it into the problem form.

Resources. With ``placement: pooled`` (the default) there is one renewable
resource per kind (``gpu``, ``cpu``, ``mem``, ``io``, ``net``, ``gpu_mem``),
capacities summed over the nodes; a cluster with several GPU types gets one GPU
pool per type (``gpu.v100``, ``gpu.k80``, ...). With ``placement: node`` every
node is a node of the problem with its own capacities (``gpu``, ``cpu``, ...; its
GPU type as the node's type on a heterogeneous cluster) and the solvers choose
the nodes of every task: a job of ``g`` GPUs on nodes of ``G`` GPUs runs on one
node when ``g <= G``, otherwise on ``ceil(g / G)`` whole nodes (a gang) with its
demands split evenly over them (rounded up). With ``placement: gpu`` every GPU is a
node of the problem (``name/gpuK``, numbered from 0 as CUDA numbers them, its
machine as the node's ``host``) with its machine's capacities divided evenly among
its GPUs (rounded down; machines without GPUs are left out), and a job of ``g`` GPUs
runs on ``g`` of them: the plan names the GPUs every job shares, and holds the
shares on each GPU within what the GPU offers, as a co-locating runtime must
(``node`` sums them over a machine). Its GPUs may lie on several machines; neither
model charges for that. Each job is colocated: all its tasks run on the same nodes.
Kinds no node declares are not modelled.

Jobs. A training job is ``iterations`` repetitions (or ``duration`` seconds) of
a per-iteration stage profile: data loading (storage I/O and CPU), GPU
compute, gradient synchronisation (network). The profile comes from the job's
``stages`` (seconds per iteration, on the GPU type it runs on) or from its
``model`` and ``batch_size``, looked up in the instance's ``profiles`` and then
in the model catalog (:mod:`planner.dl.catalog`; catalog times are V100 times,
scaled for other GPU types by Gavel's measured speed factors). The compiler
turns a job into a chain of tasks:

- an optional ``stage-in`` task (storage I/O),
- ``blocks`` training blocks, each a block of iterations,
- an optional ``checkpoint`` task (storage I/O).

How a block is modelled is the instance's ``interleave``:

- ``fluid`` or ``muri`` (the default): one segment ``train`` of concurrent per-GPU
  shares, as a co-locating runtime runs it iteration by iteration. With ``T`` the
  period alone (the stages summed), a job on ``g`` GPUs asks ``g * data / T`` of the
  data slots (``cpu_per_gpu`` cores per GPU at the same share), ``g * gpu / T`` of the
  GPUs, ``g * sync / T`` of the network slots, its GPU memory whole, and a residency
  ``resident: g`` (``max_colocated`` per GPU on offer). Its modes are the speeds 1,
  1/2, .. 1/``max_colocated``: shares divided, duration multiplied. Shares are in
  thousandths (:data:`SHARE_UNITS`): the capacities of ``gpu``, ``cpu``, ``io`` (also
  times ``data_slots``) and ``net`` are scaled alike and the problem's ``units`` say so.
- ``phases``: the segments ``[data, gpu, sync]`` back to back, scaled by the block's
  size, demanding per stage: data ``io: g`` and ``cpu: g * cpu_per_gpu``; gpu
  ``gpu: g``; sync ``net: g``; and ``gpu_mem: g * gpu_mem_per_gpu`` throughout.

Each GPU thus brings one data-loading slot and one network slot, as in Muri's
model. With a ``power`` cap (:class:`Power`) the GPU stage of a block also asks for
its GPUs' draw above idle of a cluster-wide ``power`` resource (a fluid block: at its
GPU share and speed).
``alternatives`` (other GPU counts, GPU types, or stage profiles such as a
pipeline-parallel split) become further modes of every block; each block may
choose its own (elastic training). Durations are rounded up to whole ticks of
``time_unit``; releases and deadlines are given in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NoReturn

from planner.bounds import horizon_error
from planner.dl.catalog import (
    GAVEL_FAMILY,
    StageTimes,
    restart_seconds,
    speed_factor,
    stage_profiles,
)
from planner.dl.specs import (
    KINDS,
    SHARE_UNITS,
    SHARED,
    Alternative,
    ClusterInstance,
    Profile,
    TrainingJob,
    _sizes,
    gpu_watts,
)
from planner.errors import InputError
from planner.model import MAX_INT, Problem
from planner.times import tick_seconds


def compile_cluster(inst: ClusterInstance) -> Problem:
    """Compile the cluster-form ``inst`` into the problem form.

    Raises
    ------
    InputError
        For an instance under the ``table`` model: its jobs have measured rates, no
        stages, and run in the job-level executor only.
    """
    if inst.interleave == "table":
        raise InputError(
            "interleave table: the jobs have measured rates per GPU type, not stages; "
            "run them in the executor (planner solve, policy, study, online)"
        )
    return _Compiler(inst).problem()


class JobProfiles:
    """How each job of a cluster instance can run: its stage times per GPU count and GPU
    type (its own, the instance's ``profiles``, else the catalog's, scaled by Gavel's
    speed factors) and its iterations."""

    def __init__(self, inst: ClusterInstance) -> None:
        self.types = inst.cluster.gpu_types()
        self.hetero = len(self.types) > 1
        self.user = {(p.model, p.batch_size, p.gpus): p for p in inst.profiles}

    def profile(self, i: int, job: TrainingJob, gpus: int) -> tuple[StageTimes, str | None, bool]:
        """Stage times for ``gpus`` GPUs, the Gavel family, and whether they are catalog times."""
        for table, catalog in ((self.user, False), (stage_profiles(), True)):
            hits = [k for k in table if k[0] == job.model and k[2] == gpus]
            if job.batch_size is not None:
                hits = [k for k in hits if k[1] == job.batch_size]
            if hits:
                if len(hits) > 1:
                    sizes = _sizes(hits)
                    raise InputError(
                        f"model {job.model!r} has batch sizes {sizes}; give 'batch_size'",
                        place=f"jobs[{i}]",
                    )
                entry = table[hits[0]]
                if catalog:
                    return entry, GAVEL_FAMILY.get(job.model or ""), True  # type: ignore[return-value]
                p: Profile = entry  # type: ignore[assignment]
                return StageTimes(p.data, p.gpu, p.sync), p.gavel_job_type, True
        self.no_profile(i, job, gpus)

    def no_profile(self, i: int, job: TrainingJob, gpus: int) -> NoReturn:
        """Raise the error that names why no profile fits: the model, the batch size or the GPUs."""
        keys = [k for k in [*self.user, *stage_profiles()] if k[0] == job.model]
        if not keys:
            raise InputError(
                f"unknown model {job.model!r} (not in the catalog or 'profiles')",
                place=f"jobs[{i}].model",
            )
        size = job.batch_size
        if size is not None:
            here = _sizes(k for k in keys if k[2] == gpus)
            sized = sorted({k[2] for k in keys if k[1] == size})
            if here or not sized:
                known = here or _sizes(keys)
                on = f" on {gpus} GPUs" if here else ""
                raise InputError(
                    f"no profile of {job.model!r} with batch size {size}{on}; "
                    f"known batch sizes{on}: {known}",
                    place=f"jobs[{i}].batch_size",
                )
            raise InputError(
                f"no profile of {job.model!r} with batch size {size} on {gpus} GPUs; "
                f"known GPU counts with batch size {size}: {sized}",
                place=f"jobs[{i}]",
            )
        known = sorted({k[2] for k in keys})
        raise InputError(
            f"no profile of {job.model!r} on {gpus} GPUs; known GPU counts: {known}",
            place=f"jobs[{i}]",
        )

    def configs(
        self, i: int, job: TrainingJob
    ) -> list[tuple[str, int, str | None, StageTimes, float]]:
        """(name, gpus, gpu type, stage times, speed factor per type) for every way to run."""
        out = []
        base = Alternative(gpus=job.gpus, gpu_type=job.gpu_type, stages=job.stages)
        for k, alt in enumerate([base, *job.alternatives]):
            gpus = alt.gpus or job.gpus
            stages = (
                alt.stages if alt.stages is not None else (job.stages if alt.gpus is None else None)
            )
            if stages is not None:
                times, family, scaled = stages.times(), None, False
            elif job.model is None:
                raise InputError(
                    f"give 'stages' for {gpus} GPUs: the job has no catalog model",
                    place=f"jobs[{i}].alternatives[{k - 1}]",
                )
            else:
                times, family, scaled = self.profile(i, job, gpus)
            types = [alt.gpu_type or job.gpu_type] if (alt.gpu_type or job.gpu_type) else self.types
            for t in types:
                if t not in self.types:
                    raise InputError(f"no node has GPU type {t!r}", place=f"jobs[{i}]")
                try:
                    factor = speed_factor(t, family) if scaled and t is not None else 1.0
                except ValueError as exc:
                    raise InputError(str(exc), place=f"jobs[{i}]") from None
                label = alt.name or (f"{gpus}gpu" if k else "base")
                out.append((label + (f"-{t}" if self.hetero else ""), gpus, t, times, factor))
        return out

    def iterations(self, job: TrainingJob, first: StageTimes) -> int:
        """The job's iterations: as given, else its duration at ``first``'s iteration
        time, rounded up (at least one per block)."""
        if job.iterations is not None:
            return job.iterations
        return max(job.blocks, math.ceil(round(job.duration / first.iteration, 9)))  # type: ignore[operator]


class _Compiler:
    """Builds the problem form of a cluster instance as plain data, then validates it."""

    def __init__(self, inst: ClusterInstance) -> None:
        self.inst = inst
        self.tick = tick_seconds(inst.time_unit)
        self.types = inst.cluster.gpu_types()
        self.hetero = len(self.types) > 1
        self.profiles = JobProfiles(inst)
        self.watts = {t: gpu_watts(inst, t) for t in self.types}
        """(busy, idle) watts of one GPU per GPU type, its share of its machine's base in."""
        self.fluid = inst.interleave != "phases"
        """Training blocks as one segment of per-GPU shares (else their phases)."""

    def above_idle(self, gpu_type: str | None) -> float:
        """Watts one GPU of ``gpu_type`` draws above idle while it computes."""
        busy, idle = self.watts[gpu_type]
        return busy - idle

    def scaled(self, kind: str, value: int) -> int:
        """A capacity of ``value`` of ``kind`` in demand units: shares for a fluid block
        (a data slot offers ``data_slots`` of loading)."""
        if not self.fluid or kind not in SHARED:
            return value
        slots = self.inst.data_slots if kind == "io" else 1.0
        return round(value * SHARE_UNITS * slots)

    def residency(self, gpus: int) -> int:
        """Resident jobs' GPUs a set of ``gpus`` GPUs may hold (fluid blocks)."""
        return gpus * self.inst.max_colocated

    def ticks(self, seconds: float) -> int:
        return math.ceil(round(seconds / self.tick, 9))

    def gpu_kind(self, gpu_type: str | None) -> str:
        return self.resource("gpu", False, gpu_type)

    def pooled(self) -> dict[str, int]:
        """Capacity per pooled resource: each kind summed over the nodes (GPUs per type)."""
        caps: dict[str, int] = {}
        for node in self.inst.cluster.nodes:
            for kind in KINDS:
                value = getattr(node, kind)
                if value is None or (kind == "gpu" and not value):
                    continue
                key = self.gpu_kind(node.gpu_type) if kind == "gpu" else kind
                caps[key] = caps.get(key, 0) + self.scaled(kind, value * node.count)
            if self.fluid and node.gpu:
                key = self.resource("resident", False, node.gpu_type)
                caps[key] = caps.get(key, 0) + self.residency(node.gpu * node.count)
        return caps

    def units(self, kinds: Iterable[str]) -> dict[str, int]:
        """Demand units per physical unit of every shared resource among ``kinds``."""
        if not self.fluid:
            return {}
        return {k: SHARE_UNITS for k in kinds if k.split(".")[0] in SHARED}

    def nodes(self) -> list[dict[str, Any]]:
        """The problem's nodes (placed form): capacity per kind, the GPU type as the type;
        under ``placement: gpu`` one per GPU, its machine's capacities divided among them."""
        per_gpu = self.inst.placement == "gpu"
        out = []
        for name, node in self.inst.cluster.node_names():
            caps = {
                k: self.scaled(k, getattr(node, k)) for k in KINDS if getattr(node, k) is not None
            }
            if self.fluid and node.gpu:
                caps["resident"] = self.residency(node.gpu)
            entry: dict[str, Any] = {"name": name, "capacity": caps}
            if self.hetero:
                entry["type"] = node.gpu_type
            if not per_gpu:
                out.append(entry)
                continue
            share = {k: v // node.gpu for k, v in caps.items()} if node.gpu else {}
            out.extend(
                {**entry, "name": f"{name}/gpu{i}", "capacity": share, "host": name}
                for i in range(node.gpu)
            )
        return out

    def gang(self, i: int, job: TrainingJob, gpus: int, gpu_type: str | None) -> int | None:
        """Nodes a run on ``gpus`` GPUs of ``gpu_type`` takes (placed form; under
        ``placement: gpu`` its GPUs); None if too few."""
        if self.inst.placement == "gpu":
            return gpus if gpus <= self.gpus_of(gpu_type) else None
        sizes = [
            n.gpu
            for _, n in self.inst.cluster.node_names()
            if n.gpu and (gpu_type is None or n.gpu_type == gpu_type)
        ]
        per_node = max(sizes, default=0)
        if not per_node:
            return None
        k = 1 if gpus <= per_node else -(-gpus // per_node)
        return k if k <= len(sizes) else None

    def problem(self) -> Problem:
        placed = self.inst.placement != "pooled"
        resources = {} if placed else self.pooled()
        kinds = {k for n in self.nodes() for k in n["capacity"]} if placed else set(resources)
        power = self.power_resource()
        if power is not None:
            kinds.add("power")
        tasks: list[dict[str, Any]] = []
        precs: list[dict[str, Any]] = []
        for i, job in enumerate(self.inst.jobs):
            configs = self.profiles.configs(i, job)
            iters = self.profiles.iterations(job, configs[0][3].on(configs[0][4]))
            chain = self.job_chain(i, job, configs, iters, kinds)
            for k, task in enumerate(chain):
                task["job"] = job.name
                if k == 0 and job.release:
                    task["release"] = int(job.release // self.tick)
                if k == len(chain) - 1 and job.deadline is not None:
                    task["deadline"] = int(job.deadline // self.tick)
            tasks.extend(chain)
            precs.extend({"before": a["name"], "after": b["name"]} for a, b in pairwise(chain))
        data = {
            "name": self.inst.name,
            "time_unit": self.inst.time_unit,
            "objective": self.inst.objective,
            "makespan_watts": self.inst.makespan_watts,
            "resources": [
                *({"name": k, "capacity": v} for k, v in resources.items()),
                *([power] if power is not None else []),
            ],
            **({"nodes": self.nodes()} if placed else {}),
            "units": self.units(kinds),
            **({"watts": self.problem_watts(placed)} if self.inst.power is not None else {}),
            **({"idle_off": True} if self.inst.power and self.inst.power.switch_off else {}),
            **({"tariff": self.tariff()} if self.inst.power and self.inst.power.tariff else {}),
            "tasks": tasks,
            "precedences": precs,
            "jobs": [
                {
                    "name": j.name,
                    "weight": j.weight,
                    "colocate": placed and not j.migrate,
                    "restart": self.restart(j),
                }
                for j in self.inst.jobs
            ],
        }
        longest = sum(
            max(sum(s["duration"] for s in m["segments"]) for m in t["modes"]) for t in tasks
        )
        ticks = max((t.get("release", 0) for t in tasks), default=0) + longest
        if ticks > MAX_INT:
            raise horizon_error(ticks, self.inst.time_unit, cluster=True)
        from planner.model import validated

        return validated(Problem, data)

    def power_resource(self) -> dict[str, Any] | None:
        """The cluster-wide ``power`` resource of a cap (watts above every GPU's idle
        draw), its windows in ticks; ``None`` without a cap.

        Raises
        ------
        InputError
            If a cap is below the idle draw of the cluster's GPUs.
        """
        power = self.inst.power
        if power is None or power.cap is None:
            return None
        idle = sum(self.watts[t][1] * self.gpus_of(t) for t in self.types)

        def above(cap: float, where: str) -> int:
            if cap < idle:
                raise InputError(
                    f"{cap:g} W is below the idle draw of the cluster's GPUs, {idle:g} W",
                    place=where,
                )
            return int(cap - idle)

        windows = [
            {
                "start": int(w.start // self.tick),
                "end": self.ticks(w.end),
                "capacity": above(w.cap, f"power.windows[{k}].cap"),
            }
            for k, w in enumerate(power.windows)
        ]
        return {"name": "power", "capacity": above(power.cap, "power.cap"), "windows": windows}

    def problem_watts(self, placed: bool) -> dict[str, tuple[float, float]]:
        """The problem's (busy, idle) watts: of kind ``gpu``, and per type where the cluster
        has several (``gpu.v100``: a pooled resource, or kind ``gpu`` on nodes of that
        type)."""
        if not self.hetero:
            return {"gpu": self.watts[self.types[0]]}
        return {f"gpu.{t}": self.watts[t] for t in self.types}

    def tariff(self) -> dict[str, Any]:
        """The power's tariff in ticks (a window's bounds rounded down, its end at least a
        tick later; the period rounded to whole ticks)."""
        tariff = self.inst.power.tariff  # type: ignore[union-attr]
        period = None if tariff.period is None else max(1, round(tariff.period / self.tick))
        return {
            "price": tariff.price,
            "windows": [
                {
                    "start": int(w.start // self.tick),
                    "end": max(int(w.start // self.tick) + 1, int(w.end // self.tick)),
                    "price": w.price,
                }
                for w in tariff.windows
            ],
            "period": period,
        }

    def gpus_of(self, gpu_type: str | None) -> int:
        """The cluster's GPUs (of ``gpu_type``, if given)."""
        return sum(
            n.gpu * n.count
            for n in self.inst.cluster.nodes
            if gpu_type is None or n.gpu_type == gpu_type
        )

    def job_chain(
        self,
        i: int,
        job: TrainingJob,
        configs: list[tuple[str, int, str | None, StageTimes, float]],
        iters: int,
        kinds: set[str],
    ) -> list[dict[str, Any]]:
        placed = self.inst.placement != "pooled"
        chain: list[dict[str, Any]] = []
        base, extra = divmod(iters, job.blocks)
        modes_of: list[list[_BlockMode]] = []
        for b in range(job.blocks):
            n = base + (b < extra)
            modes = []
            for label, g, gpu_type, times, factor in configs:
                k = self.gang(i, job, g, gpu_type) if placed else 0
                if k is None or (not placed and g > self.gpus_of(gpu_type)):
                    continue
                build = self.fluid_modes if self.fluid else self.phase_modes
                share = -(-g // k) if k else g
                runs = self.runs(g, share, gpu_type, times.on(factor), job.power_limits)
                built = [
                    item for run, suffix in runs for item in build(job, run, n, label + suffix)
                ]
                for name, segments, hold in built:
                    named = [
                        {
                            "name": seg,
                            "duration": ticks,
                            "demand": self.named(demand, placed, gpu_type, kinds),
                            **({"watts": watts} if watts is not None else {}),
                        }
                        for seg, ticks, demand, watts in segments
                    ]
                    mode: dict[str, Any] = {"name": name, "segments": named}
                    if k:
                        mode["nodes"] = k
                        if self.hetero:
                            mode["node_type"] = gpu_type
                    io = {"io": share * (SHARE_UNITS if self.fluid else 1)}
                    modes.append(
                        _BlockMode(
                            mode,
                            self.named(hold, placed, gpu_type, kinds),
                            self.named(io, placed, gpu_type, kinds),
                        )
                    )
            if not modes:
                where = " on whole nodes" if self.inst.placement == "node" else ""
                raise InputError(
                    f"job {job.name!r} needs {job.gpus} GPUs{where}; the cluster has "
                    f"{self.gpus_of(None)} GPUs",
                    place=f"jobs[{i}].gpus",
                )
            modes_of.append(modes)
        first = modes_of[0][0]
        if job.stage_in:
            chain.append(self.io_task(f"{job.name}/stage-in", job.stage_in, [first]))
        restart = self.restart(job) if job.migrate else None
        for b, modes in enumerate(modes_of):
            block = [m.mode for m in modes]
            if restart is not None and chain:
                block = migrating(modes, chain[-1], restart)
            chain.append({"name": f"{job.name}/block{b + 1}", "modes": block})
        if job.checkpoint:
            # a migrating job writes its checkpoint from the last block's nodes
            written = modes_of[-1] if restart is not None else [first]
            task = self.io_task(f"{job.name}/checkpoint", job.checkpoint, written)
            if restart is not None:
                last = chain[-1]["name"]
                for mode in task["modes"]:
                    mode.pop("node_type", None)  # it keeps the last block's nodes
                    mode["same_nodes_as"] = last
            chain.append(task)
        return chain

    def runs(
        self, gpus: int, share: int, gpu_type: str | None, times: StageTimes, limited: bool
    ) -> list[tuple[_Run, str]]:
        """The ways to run on ``gpus`` GPUs of ``gpu_type``, ``share`` per node of the gang,
        at ``times``: unlimited, then, if ``limited``, under every power limit (its mode
        names' suffix ``@75%``), the GPU stage slower, the GPUs drawing the limit.

        Raises
        ------
        InputError
            If a limit is below a GPU's idle draw.
        """
        run = _Run(gpus, share, times.data, times.gpu, times.sync, self.above_idle(gpu_type))
        out = [(run, "")]
        power = self.inst.power
        if power is None or not limited or not power.limits:
            return out
        busy, idle = power.gpu_watts(gpu_type)
        for j, limit in enumerate(power.limits):
            if limit.share * busy < idle:
                raise InputError(
                    f"{limit.share * busy:g} W is below a GPU's idle draw, {idle:g} W",
                    place=f"power.limits[{j}].share",
                )
            slower = times.gpu / limit.speed
            watts = limit.share * busy - idle
            under = _Run(gpus, share, times.data, slower, times.sync, watts, limited=True)
            out.append((under, f"@{limit.share * 100:g}%"))
        return out

    def named(
        self, demand: dict[str, float], placed: bool, gpu_type: str | None, kinds: set[str]
    ) -> dict[str, int]:
        """``demand`` per kind as the problem's resources, those it has, zeros dropped."""
        named = {
            (k if k == "power" else self.resource(k, placed, gpu_type)): q
            for k, q in demand.items()
        }
        return {r: q for r, q in named.items() if r in kinds and q}

    def phase_modes(self, job: TrainingJob, run: _Run, n: int, label: str) -> list[_Built]:
        """A block of ``n`` iterations as its stages back to back: one mode, its segments
        and what it holds while it restarts (its GPU stage's demand)."""
        held = run.share * job.gpu_mem_per_gpu
        gpu = {"gpu": run.share, "gpu_mem": held, "power": math.ceil(run.gpus * run.watts)}
        segments = [
            (
                "data",
                self.ticks(n * run.data),
                {"io": run.share, "cpu": run.share * job.cpu_per_gpu, "gpu_mem": held},
                None,
            ),
            ("gpu", self.ticks(n * run.gpu), gpu, run.gpus * run.watts if run.limited else None),
            ("sync", self.ticks(n * run.sync), {"net": run.share, "gpu_mem": held}, None),
        ]
        return [(label, segments, {k: q for k, q in gpu.items() if k != "power"})]

    def fluid_modes(self, job: TrainingJob, run: _Run, n: int, label: str) -> list[_Built]:
        """A block of ``n`` iterations as one segment of per-GPU shares, at speeds 1, 1/2,
        .. 1/``max_colocated``: the shares scaled down, the duration up. Each mode holds a
        residency of one per GPU; it restarts holding its GPUs whole."""
        period = run.data + run.gpu + run.sync
        held = run.share * job.gpu_mem_per_gpu
        hold = {"gpu": run.share * SHARE_UNITS, "gpu_mem": held, "resident": run.share}
        out: list[_Built] = []
        for k in range(1, self.inst.max_colocated + 1):
            per_second = 1 / (period * k) if period else 0.0  # of a stage, its share
            gpus = run.share * SHARE_UNITS * per_second
            demand = {
                "gpu": _whole(gpus * run.gpu),
                "io": _whole(gpus * run.data),
                "cpu": _whole(gpus * run.data * job.cpu_per_gpu),
                "net": _whole(gpus * run.sync),
                "gpu_mem": held,
                "resident": run.share,
                "power": _whole(run.gpus * run.watts * run.gpu * per_second),
            }
            watts = run.gpus * run.watts * run.gpu * per_second if run.limited else None
            name = label if k == 1 else f"{label}@1/{k}"
            out.append((name, [("train", self.ticks(n * period * k), demand, watts)], hold))
        return out

    def restart(self, job: TrainingJob) -> int:
        """The job's restart cost in ticks (given, else the catalog's, else 0)."""
        seconds = job.restart
        if seconds is None and job.model is not None:
            seconds = restart_seconds(job.model, job.gpus)
        return self.ticks(seconds or 0.0)

    def resource(self, kind: str, placed: bool, gpu_type: str | None) -> str:
        """The name of ``kind`` for a run on ``gpu_type``: per GPU type in a pooled
        heterogeneous cluster for GPUs and their residency."""
        if placed or kind not in ("gpu", "resident") or not self.hetero:
            return kind
        return f"{kind}.{gpu_type}"

    def io_task(self, name: str, seconds: float, blocks: list[_BlockMode]) -> dict[str, Any]:
        """A storage task on the nodes of a block mode, one data slot per GPU: one mode per
        gang size among ``blocks``."""
        modes: dict[int, dict[str, Any]] = {}
        for block in blocks:
            segment = {
                "name": name.rsplit("/", 1)[1],
                "duration": self.ticks(seconds),
                "demand": block.io,
            }
            mode: dict[str, Any] = {"segments": [segment]}
            for key in ("nodes", "node_type"):
                if key in block.mode:
                    mode[key] = block.mode[key]
            modes.setdefault(block.mode.get("nodes", 0), mode)
        if len(modes) > 1:
            for k, mode in modes.items():
                mode["name"] = f"{k}nodes"
                mode.pop("node_type", None)  # it keeps nodes of the block's type
        return {"name": name, "modes": list(modes.values())}


def migrating(modes: list[_BlockMode], before: dict[str, Any], restart: int) -> list[dict]:
    """The modes of a block of a migrating job that follows task ``before``.

    Per mode, one that keeps ``before``'s nodes (when ``before`` has a mode on as many
    nodes) and one, named ``...-moved``, that may run elsewhere: it first restarts for
    ``restart`` ticks, holding what the mode holds while it restarts (its GPUs).
    """
    gangs = {m.get("nodes", 0) for m in before["modes"]}
    out: list[dict[str, Any]] = []
    for block in modes:
        mode = block.mode
        if mode.get("nodes", 0) in gangs:
            out.append({**mode, "same_nodes_as": before["name"]})
        moved = {**mode, "name": f"{mode['name']}-moved"}
        if restart:
            step = {"name": "restart", "duration": restart, "demand": dict(block.hold)}
            moved["segments"] = [step, *mode["segments"]]
        out.append(moved)
    return out


def _whole(quantity: float) -> int:
    """``quantity`` rounded up to a whole unit (float noise below 1e-9 dropped)."""
    return math.ceil(quantity - 1e-9)


_Built = tuple[str, list[tuple[str, int, dict[str, float], float | None]], dict[str, float]]
"""A block mode as built: its name, its segments (name, ticks, demand, its GPUs' draw above
idle under a power limit, else ``None``), what it holds while it restarts."""


@dataclass(frozen=True)
class _Run:
    """A way to run a job: its GPUs, its GPUs per node of its gang, its stage seconds
    per iteration (the GPU stage at its GPU type's speed)."""

    gpus: int
    share: int
    data: float
    gpu: float
    sync: float
    watts: float
    """Watts one of its GPUs draws above idle while it computes."""
    limited: bool = False
    """Under a GPU power limit: its segments carry their GPUs' draw (``watts``)."""


@dataclass(frozen=True)
class _BlockMode:
    """A mode of a training block, what it holds while it restarts, and the demand of a
    storage task on its nodes."""

    mode: dict[str, Any]
    hold: dict[str, int]
    io: dict[str, int]

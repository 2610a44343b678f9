"""The cluster form of an instance: a cluster (nodes and their capacities), its power,
and a batch of training jobs, as a file gives them (validated by pydantic; the JSON
Schema of native files is written from these classes). :mod:`planner.dl.cluster`
compiles them into the problem form.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.dl.catalog import (
    GPU_TYPES,
    REFERENCE_GPU,
    StageTimes,
    gpu_power,
    models,
)
from planner.errors import InputError
from planner.model import MAX_INT
from planner.times import tick_seconds

KINDS = ("gpu", "cpu", "mem", "io", "net", "gpu_mem")

SHARE_UNITS = 1000
"""Units of demand per GPU, CPU core, data slot or network slot in a fluid block."""

SHARED = ("gpu", "cpu", "io", "net")
"""The kinds a fluid block asks for in shares (the others it holds whole)."""

PosInt = Annotated[int, Field(ge=1, le=MAX_INT, strict=True)]
NonNegInt = Annotated[int, Field(ge=0, le=MAX_INT, strict=True)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


def _sizes(keys: Iterable[tuple[str | None, int | None, int]]) -> list[int]:
    """The batch sizes of profile keys ``(model, batch size, gpus)``, those stated, sorted."""
    return sorted({k[1] for k in keys if k[1] is not None})


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Node(_Spec):
    """A node type of the cluster, ``count`` times."""

    name: Name
    count: PosInt = 1
    gpu_type: str | None = Field(default=None, description="k80, p100 or v100 for speed factors.")
    gpu: NonNegInt = 0
    cpu: NonNegInt | None = None
    mem: NonNegInt | None = None
    io: NonNegInt | None = Field(default=None, description="Data-loading slots.")
    net: NonNegInt | None = Field(default=None, description="Network slots.")
    gpu_mem: NonNegInt | None = None


class Cluster(_Spec):
    """The cluster: its nodes."""

    nodes: list[Node] = Field(min_length=1)

    def node_names(self) -> list[tuple[str, Node]]:
        """Every node by name; a node type with ``count`` k gives names ``name1`` .. ``namek``."""
        out = []
        for n in self.nodes:
            if n.count == 1:
                out.append((n.name, n))
            else:
                out.extend((f"{n.name}{k + 1}", n) for k in range(n.count))
        return out

    def gpu_types(self) -> list[str | None]:
        """The GPU types of the nodes that have GPUs, in order of first appearance."""
        return list(dict.fromkeys(n.gpu_type for n in self.nodes if n.gpu))


class Stages(_Spec):
    """Seconds per iteration of each stage of a training iteration."""

    data: Seconds
    gpu: Seconds
    sync: Seconds = 0.0

    @model_validator(mode="after")
    def _takes_time(self) -> Stages:
        if self.data + self.gpu + self.sync <= 0:
            raise ValueError("stage times are all 0: an iteration takes some time")
        return self

    def times(self) -> StageTimes:
        """As catalog stage times."""
        return StageTimes(self.data, self.gpu, self.sync)


class Profile(_Spec):
    """A stage profile of the user's own, used like a catalog entry."""

    model: Name
    batch_size: PosInt | None = None
    gpus: PosInt
    data: Seconds
    gpu: Seconds
    sync: Seconds = 0.0
    gavel_job_type: str | None = None

    @model_validator(mode="after")
    def _takes_time(self) -> Profile:
        if self.data + self.gpu + self.sync <= 0:
            raise ValueError("stage times are all 0: an iteration takes some time")
        return self


class _Span(_Spec):
    """A window ``[start, end)`` of seconds."""

    start: Seconds
    end: Seconds

    @model_validator(mode="after")
    def _ordered(self) -> _Span:
        if self.end <= self.start:
            raise ValueError(f"end: {self.end:g} s is not after the start, {self.start:g} s")
        return self


class PowerWindow(_Span):
    """A window ``[start, end)`` (seconds) with another power cap."""

    cap: Seconds = Field(description="Watts the cluster may draw in the window.")


class PriceSpan(_Span):
    """A window ``[start, end)`` (seconds) of another price of energy."""

    price: Seconds = Field(description="Per kWh in the window.")


class Tariff(_Spec):
    """The price of energy (per kWh, in the user's currency), another in ``windows``; with
    a ``period`` (seconds; 86400: a day) the windows repeat."""

    price: Seconds = Field(description="Per kWh outside the windows.")
    windows: list[PriceSpan] = Field(default_factory=list)
    period: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None


class GpuWatts(_Spec):
    """One GPU type's draw (watts): while it computes and at rest."""

    busy: Seconds
    idle: Seconds

    @model_validator(mode="after")
    def _check(self) -> GpuWatts:
        if self.busy < self.idle:
            raise ValueError(f"busy: {self.busy:g} W is below idle, {self.idle:g} W")
        return self


class PowerLimit(_Spec):
    """A GPU power limit a job may run under (a point of a throughput-against-power-limit
    curve such as Zeus measures): its GPUs draw at most ``share`` of their busy watts and
    compute at ``speed`` times their unlimited speed."""

    share: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="The limit, a share of a GPU's busy watts (0.75: 225 W of 300 W)."
    )
    speed: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        description="The GPU stage's speed under the limit, a share of its unlimited one."
    )


class Power(_Spec):
    """The cluster's power and its cap (watts). A GPU draws its idle watts all the time
    and its busy watts while it computes: per GPU type, the catalog's figures
    (``catalog/gpu_power.csv``), ``gpu_busy`` and ``gpu_idle`` for every type, ``gpus``
    per type. A machine also draws ``node_base`` (its CPUs, memory, fans), which the
    compiler spreads over its GPUs. With a ``cap`` the plan keeps the cluster's draw under
    it: the GPU stage of every block asks for its GPUs' busy less idle watts of a
    cluster-wide ``power`` resource of ``cap`` less the idle draw of every machine."""

    gpu_busy: Seconds | None = Field(
        default=None, description="Watts per GPU while it computes (default: the catalog's)."
    )
    gpu_idle: Seconds | None = Field(
        default=None, description="Watts per GPU at rest (default: the catalog's)."
    )
    gpus: dict[str, GpuWatts] = Field(
        default_factory=dict, description="Watts per GPU type, over gpu_busy and gpu_idle."
    )
    node_base: Seconds = Field(
        default=0.0, description="Watts per machine besides its GPUs (CPUs, memory, fans)."
    )
    switch_off: bool = Field(
        default=False,
        description="Idle GPUs (and their share of a machine's base) draw nothing: switched "
        "off, an idealisation at the grain of one GPU.",
    )
    cap: Seconds | None = Field(default=None, description="Watts the cluster may draw.")
    windows: list[PowerWindow] = Field(
        default_factory=list, description="Windows of another cap (a tariff, a night)."
    )
    tariff: Tariff | None = Field(default=None, description="Prices of energy, for its cost.")
    limits: list[PowerLimit] = Field(
        default_factory=list,
        description="GPU power limits every training block may also run under, each a "
        "mode of it: the user's measured curve (the catalog publishes none).",
    )

    @model_validator(mode="after")
    def _check(self) -> Power:
        shares = [limit.share for limit in self.limits]
        if len(set(shares)) < len(shares):
            raise ValueError("limits: two limits have the same share")
        busy = self.gpu_busy if self.gpu_busy is not None else math.inf
        if self.gpu_idle is not None and busy < self.gpu_idle:
            raise ValueError(
                f"gpu_busy: {self.gpu_busy:g} W is below gpu_idle, {self.gpu_idle:g} W"
            )
        if self.windows and self.cap is None:
            raise ValueError("windows: a window changes the cap; give 'cap'")
        if self.switch_off and self.cap is not None:
            raise ValueError("switch_off: a cap counts every GPU's idle draw; drop one of them")
        return self

    def gpu_watts(self, gpu_type: str | None) -> tuple[float, float]:
        """(busy, idle) watts of one GPU of ``gpu_type`` (``None``: the reference type):
        ``gpus``, else ``gpu_busy``/``gpu_idle``, else the catalog's.

        Raises
        ------
        InputError
            For a type the catalog has no figures of and the instance gives none.
        """
        key = (gpu_type or REFERENCE_GPU).lower()
        given = {k.lower(): v for k, v in self.gpus.items()}
        if key in given:
            return given[key].busy, given[key].idle
        known = gpu_power().get(key)
        busy = self.gpu_busy if self.gpu_busy is not None else known and known.busy
        idle = self.gpu_idle if self.gpu_idle is not None else known and known.idle
        if busy is None or idle is None:
            raise InputError(
                f"no power figures for GPU type {key!r}: give power.gpus.{key} (busy, idle)",
                place="power",
            )
        if busy < idle:
            raise InputError(
                f"GPU type {key!r}: {busy:g} W busy is below {idle:g} W idle", place="power"
            )
        return busy, idle


class Alternative(_Spec):
    """Another way to run a job: other GPUs, another GPU type, or another stage profile."""

    name: str | None = None
    gpus: PosInt | None = None
    gpu_type: str | None = None
    stages: Stages | None = Field(default=None, description="e.g. a pipeline-parallel split.")


class ResourceGrid(_Spec):
    """A model's throughput by CPU cores and host memory per GPU (Synergy's profiles): the
    speed-up over its stage times at each point of a grid."""

    cpu: list[Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(
        min_length=1, description="CPU cores per GPU, ascending."
    )
    mem: list[Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(
        min_length=1, description="GB of host memory per GPU, ascending."
    )
    speedup: list[list[Annotated[float, Field(gt=0, allow_inf_nan=False)]]] = Field(
        description="One row per cpu figure, one value per mem figure: the speed-up over "
        "the job's stage times there (1 where its stage times were measured)."
    )

    @model_validator(mode="after")
    def _check(self) -> ResourceGrid:
        for axis in ("cpu", "mem"):
            values = getattr(self, axis)
            if any(b <= a for a, b in itertools.pairwise(values)):
                raise ValueError(f"{axis}: figures must be ascending, got {values}")
        if len(self.speedup) != len(self.cpu) or any(
            len(row) != len(self.mem) for row in self.speedup
        ):
            raise ValueError(
                f"speedup: give {len(self.cpu)} rows (one per cpu figure) of "
                f"{len(self.mem)} values (one per mem figure)"
            )
        return self


class ElasticSpec(_Spec):
    """What makes a training job elastic: a Pollux application whose profiles (in the
    catalog) give its speed on any GPUs and batch size; its policy chooses its GPUs."""

    application: Literal["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
    batch_size: PosInt | None = Field(
        default=None,
        description="Its total batch size, fixed (the baselines' configuration); default: "
        "its policy chooses one.",
    )


class ParallelPlan(_Spec):
    """One way to run a job on several GPUs: ``data`` x ``pipeline`` x ``tensor`` GPUs,
    with its seconds per iteration and the GPU memory each of its GPUs needs."""

    data: PosInt = Field(description="Data-parallel replicas.")
    pipeline: PosInt = Field(default=1, description="Pipeline stages per replica.")
    tensor: PosInt = Field(default=1, description="Tensor-parallel degree per stage.")
    stages: Stages = Field(description="Seconds per iteration on this plan's GPUs.")
    gpu_mem_per_gpu: NonNegInt = Field(
        default=0, description="GB of memory each of its GPUs needs (weights, activations)."
    )

    @property
    def gpus(self) -> int:
        """Its GPUs: data x pipeline x tensor."""
        return self.data * self.pipeline * self.tensor

    @property
    def label(self) -> str:
        """``DxPxT``."""
        return f"{self.data}x{self.pipeline}x{self.tensor}"


class TrainingJob(_Spec):
    """A training job: ``iterations`` repetitions of its stage profile on ``gpus`` GPUs."""

    name: Name
    gpus: PosInt
    model: str | None = None
    batch_size: PosInt | None = None
    stages: Stages | None = None
    iteration_time: Seconds | None = Field(
        default=None,
        description="Measured seconds of one iteration alone (a trace's): the muri "
        "interleaving model runs a job alone at it (default: its stages back to back).",
    )
    iterations: PosInt | None = None
    duration: Seconds | None = Field(
        default=None, description="Seconds of training on the first configuration."
    )
    gpu_type: str | None = None
    alternatives: list[Alternative] = Field(default_factory=list)
    blocks: PosInt = Field(default=1, description="Training blocks: the fidelity knob.")
    cpu_per_gpu: NonNegInt = Field(
        default=0,
        description="CPU cores it holds per GPU on its nodes (a job whose model has a "
        "resource profile is given its cores by the policy instead).",
    )
    mem_per_gpu: NonNegInt = Field(
        default=0,
        description="GB of host memory it holds per GPU on its nodes (as cpu_per_gpu).",
    )
    gpu_mem_per_gpu: NonNegInt = 0
    stage_in: Seconds = Field(default=0.0, description="Seconds of storage I/O before training.")
    checkpoint: Seconds = Field(default=0.0, description="Seconds of storage I/O after training.")
    weight: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        default=1.0,
        description="The weight of its completion time: in the weighted_completion objective, "
        "and where the executor's JCT policies order jobs (Smith's rule).",
    )
    priority: NonNegInt = Field(
        default=0,
        description="Its class: the executor schedules the jobs of a higher class first, on "
        "the whole cluster, and the lower classes on the GPUs left (strict classes).",
    )
    release: Seconds = 0.0
    deadline: Seconds | None = None
    power_limits: bool = Field(
        default=True,
        description="The job's blocks may also run under the power's GPU limits (false: at "
        "full power only).",
    )
    migrate: bool = Field(
        default=False,
        description="Each block may run on other nodes than the previous one, paying the "
        "restart cost (placement: node).",
    )
    restart: Seconds | None = Field(
        default=None,
        description="Seconds the job takes to restart elsewhere or after a failure; default: "
        "the catalog's measured cost for its model and GPU count (a model the catalog and the "
        "profiles lack needs it), else 0.",
    )
    elastic: ElasticSpec | None = Field(
        default=None,
        description="An elastic job (Pollux's model): its work is its application's epochs, "
        "its 'gpus' the GPUs it starts on; give no iterations, duration, stages nor model.",
    )

    parallel_plans: list[ParallelPlan] = Field(
        default_factory=list,
        description="Hybrid-parallel plans (data x pipeline x tensor): the executor's "
        "elastic policies choose the plan and its GPUs together; a plan must fit the GPUs' "
        "memory. One plan has the job's 'gpus': where a policy does not choose, the job runs "
        "on them at the fastest such plan that fits.",
    )

    @model_validator(mode="after")
    def _check(self) -> TrainingJob:
        if self.parallel_plans:
            self._check_plans()
        if self.elastic is not None:
            self._check_elastic()
            return self
        if (self.iterations is None) == (self.duration is None):
            raise ValueError("give exactly one of 'iterations' and 'duration'")
        if self.stages is None and self.model is None:
            raise ValueError("give 'stages' or a catalog 'model'")
        if self.iterations is not None and self.blocks > self.iterations:
            raise ValueError(f"blocks: {self.blocks} blocks but only {self.iterations} iterations")
        return self

    def _check_plans(self) -> None:
        """A job with parallel plans is not a Pollux job, and one plan has its GPUs."""
        if self.elastic is not None:
            raise ValueError("give 'elastic' or 'parallel_plans', not both")
        if not any(p.gpus == self.gpus for p in self.parallel_plans):
            have = ", ".join(f"{p.label} ({p.gpus})" for p in self.parallel_plans)
            raise ValueError(
                f"parallel_plans: none has the job's {self.gpus} GPUs (data x pipeline x "
                f"tensor: {have})"
            )
        labels = [p.label for p in self.parallel_plans]
        if len(set(labels)) != len(labels):
            raise ValueError(f"parallel_plans: a plan is given twice ({', '.join(labels)})")

    def _check_elastic(self) -> None:
        """An elastic job gives its stages (what models without elasticity see: per unit
        of progress, :func:`elastic_stages`) and its iterations: its progress to its end,
        in steps at its application's initial batch size."""
        from planner.dl.pollux import application

        assert self.elastic is not None
        app = application(self.elastic.application)
        batch = self.elastic.batch_size
        if batch is not None and not app.batch_sizes[0] <= batch <= app.batch_sizes[-1]:
            raise ValueError(
                f"elastic.batch_size {batch}: {app.name} runs at {app.batch_sizes[0]} to "
                f"{app.batch_sizes[-1]}"
            )
        need = math.ceil(app.target_progress)
        if self.iterations != need or self.duration is not None or self.stages is None:
            raise ValueError(
                f"an elastic {app.name} job gives 'stages' and 'iterations: {need}' (its "
                "progress to its end; planner import pollux writes both)"
            )


class ClusterInstance(_Spec):
    """The cluster form: a cluster and a batch of training jobs."""

    name: str = "cluster"
    time_unit: str = "1s"
    objective: Literal["makespan", "weighted_completion", "energy", "cost"] = Field(
        default="makespan",
        description="makespan, weighted_completion, energy (kWh over the plan: the GPUs' "
        "busy draw over their modes, the idle draw over the makespan, and makespan_watts), "
        "or cost (that draw priced by power.tariff at every tick).",
    )
    makespan_watts: Seconds = Field(
        default=0.0,
        description="objectives energy and cost: watts charged over the makespan, a price on time.",
    )
    placement: Literal["pooled", "node", "gpu"] = "pooled"
    interleave: Literal["fluid", "muri", "phases", "table"] = Field(
        default="fluid",
        description="How co-located jobs share GPUs. fluid or muri: the interleaving model "
        "of the job-level executor and the peer policies (planner.interleave), and a "
        "training block compiles to one segment of per-GPU shares at speeds 1 to 1/4. "
        "phases: a block compiles to its stages back to back (the executor runs fluid). "
        "table: measured rates per GPU type, alone and in pairs (the 'throughputs' file); "
        "its jobs run in the job-level executor only.",
    )
    throughputs: str | None = Field(
        default=None,
        description="interleave table: a throughputs file in Gavel's format (per GPU type, "
        "per job key, steps per second alone and beside each partner), relative to the "
        "instance's folder. A job's key is its model (Gavel's job type) and its GPUs.",
    )
    data_slots: Annotated[float, Field(gt=0, le=64, allow_inf_nan=False)] = Field(
        default=1.0, description="fluid: data-loading slots per GPU (Muri's overlap is 2)."
    )
    max_colocated: Annotated[int, Field(ge=1, le=4, strict=True)] = Field(
        default=4, description="The most jobs on one GPU (fluid and muri blocks)."
    )
    cluster: Cluster
    power: Power | None = Field(default=None, description="GPU power and a power cap.")
    profiles: list[Profile] = Field(default_factory=list)
    resource_profiles: dict[str, ResourceGrid] = Field(
        default_factory=dict,
        description="Per model: its throughput by the CPU cores and host memory given per "
        "GPU. The executor's policies then decide each such job's CPU and memory, and its "
        "speed follows (planner import synergy writes Synergy's).",
    )
    jobs: list[TrainingJob] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ClusterInstance:
        tick_seconds(self.time_unit)
        seen: set[str] = set()
        known = set(models()) | {p.model for p in self.profiles}
        for i, job in enumerate(self.jobs):
            unknown = job.model is not None and job.model not in known and job.stages is not None
            if unknown and job.restart is None and self.interleave != "table":
                raise ValueError(
                    f"jobs[{i}].model: unknown model {job.model!r} (not in the catalog or "
                    "'profiles'): with stages of its own, give its restart (seconds)"
                )
            if job.name in seen:
                raise ValueError(f"jobs[{i}].name: duplicate job name {job.name!r}")
            seen.add(job.name)
            if job.migrate and self.placement == "pooled":
                raise ValueError(
                    f"jobs[{i}].migrate: migration moves a job between nodes; it needs "
                    "'placement: node' or 'placement: gpu'"
                )
        if not any(n.gpu for n in self.cluster.nodes):
            raise ValueError("cluster.nodes: no node has GPUs")
        job_models = {job.model for job in self.jobs}
        for model in self.resource_profiles:
            if model not in job_models:
                raise ValueError(f"resource_profiles.{model}: no job has model {model!r}")
        if self.resource_profiles and any(
            n.gpu and (n.cpu is None or n.mem is None) for n in self.cluster.nodes
        ):
            raise ValueError(
                "resource_profiles: the policies give jobs CPU cores and host memory of their "
                "nodes; give every GPU node its cpu and mem"
            )
        for i, node in enumerate(self.cluster.nodes):
            known = node.gpu_type is None or node.gpu_type.lower() in GPU_TYPES
            if not known and self.interleave != "table":
                raise ValueError(
                    f"cluster.nodes[{i}].gpu_type: unknown GPU type {node.gpu_type!r}; the "
                    f"catalog knows {', '.join(GPU_TYPES)} (other types need measured rates: "
                    "interleave table)"
                )
        types = {(t or REFERENCE_GPU).lower() for t in self.cluster.gpu_types()}
        for name in self.power.gpus if self.power is not None else {}:
            if name.lower() not in types:
                raise ValueError(
                    f"power.gpus.{name}: no node has GPU type {name!r} (the cluster has "
                    f"{', '.join(sorted(types))})"
                )
        if (self.interleave == "table") != (self.throughputs is not None):
            raise ValueError(
                "throughputs: give a throughputs file exactly when 'interleave' is table"
            )
        if self.objective == "cost" and (self.power is None or self.power.tariff is None):
            raise ValueError("objective: cost prices the energy by power.tariff; give one")
        return self


def gpu_watts(inst: ClusterInstance, gpu_type: str | None) -> tuple[float, float]:
    """(busy, idle) watts of one GPU of ``gpu_type`` in ``inst``: its power's figures
    (:meth:`Power.gpu_watts`) and the base draw of the machines with such GPUs spread over
    their GPUs; zeros without a power."""
    power = inst.power
    if power is None:
        return 0.0, 0.0
    busy, idle = power.gpu_watts(gpu_type)
    nodes = [n for n in inst.cluster.nodes if n.gpu and n.gpu_type == gpu_type]
    base = power.node_base * sum(n.count for n in nodes) / sum(n.gpu * n.count for n in nodes)
    return busy + base, idle + base

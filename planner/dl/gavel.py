"""Gavel's workload data (Narayanan et al., OSDI 2020; stanford-futuredata/gavel): its
job traces and its measured throughputs per GPU type, alone and beside each partner.

A trace has one line per job, 10 tab-separated fields: job type, command, working
directory, steps flag, needs-data-dir (unused in simulation), total steps, scale factor
(GPUs, a gang on one GPU type), priority weight, SLO (``-1``: none) and arrival time
(seconds), as Gavel's ``utils.parse_trace`` reads them. The throughputs file maps each
GPU type to each job key ``"('ResNet-18 (batch size 64)', 1)"`` (job type, scale
factor): its steps per second alone (``"null"``) and beside each partner key
(``[own, partner's]``), as Gavel's ``read_all_throughputs_json_v2`` reads it. A job's
duration on a type is its total steps over that type's throughput alone.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass
from pathlib import Path

from planner.errors import InputError
from planner.rates import JobKey, Throughputs

FIELDS = 10
"""Tab-separated fields of a trace line."""


@dataclass(frozen=True)
class GavelJob:
    """One job of a Gavel trace."""

    job_type: str
    """E.g. ``ResNet-18 (batch size 64)``."""
    steps: int
    """Total steps to run."""
    scale: int
    """GPUs, all of one type (a gang)."""
    weight: float
    """Priority weight (1; 5 for high priority in Gavel's traces)."""
    slo: float | None
    """Service-level objective (seconds), ``None`` for none."""
    arrival: float
    """Arrival time (seconds)."""

    @property
    def key(self) -> JobKey:
        """The job's key in the throughputs."""
        return (self.job_type, self.scale)


def read_gavel_trace(path: str | Path) -> list[GavelJob]:
    """The jobs of a Gavel trace file, in file order.

    Raises
    ------
    InputError
        For a missing file, or a line without 10 tab-separated fields or with a field
        that is not a number where one is due, naming the line.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the trace ({exc.__class__.__name__})", str(path)) from None
    jobs = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != FIELDS:
            raise InputError(
                f"line {n}: {len(fields)} tab-separated fields, a Gavel trace line has {FIELDS}",
                str(path),
            )
        try:
            steps, scale = int(fields[5]), int(fields[6])
            weight, slo, arrival = float(fields[7]), float(fields[8]), float(fields[9])
        except ValueError:
            raise InputError(
                f"line {n}: steps, scale factor, weight, SLO and arrival must be numbers",
                str(path),
            ) from None
        if steps < 1 or scale < 1 or not (math.isfinite(arrival) and arrival >= 0):
            raise InputError(
                f"line {n}: steps and scale factor must be at least 1, arrival a time >= 0",
                str(path),
            )
        if not (math.isfinite(weight) and weight > 0):
            raise InputError(f"line {n}: the priority weight must be a number > 0", str(path))
        jobs.append(GavelJob(fields[0], steps, scale, weight, None if slo < 0 else slo, arrival))
    if not jobs:
        raise InputError("the trace holds no job", str(path))
    return jobs


def read_throughputs(path: str | Path) -> Throughputs:
    """Gavel's throughputs file (``simulation_throughputs.json``).

    Raises
    ------
    InputError
        For a missing file, invalid JSON, or an entry of another shape, naming it.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(
            f"cannot read the throughputs ({exc.__class__.__name__})", str(path)
        ) from None
    if not isinstance(data, dict):
        raise InputError("expected an object of GPU types", str(path))
    alone: dict[str, dict[JobKey, float]] = {}
    pairs: dict[str, dict[tuple[JobKey, JobKey], tuple[float, float]]] = {}
    for gpu_type, jobs in data.items():
        if not isinstance(jobs, dict):
            raise InputError(f"{gpu_type}: expected an object of job keys", str(path))
        alone[gpu_type], pairs[gpu_type] = {}, {}
        for raw, entry in jobs.items():
            key = _job_key(raw, f"{path}: {gpu_type}")
            if not isinstance(entry, dict) or not isinstance(entry.get("null"), int | float):
                raise InputError(f"{gpu_type}.{raw}: expected its 'null' throughput", str(path))
            alone[gpu_type][key] = float(entry["null"])
            for other, both in entry.items():
                if other == "null":
                    continue
                if not (isinstance(both, list) and len(both) == 2):
                    raise InputError(
                        f"{gpu_type}.{raw}.{other}: expected [own, partner's] throughputs",
                        str(path),
                    )
                partner = _job_key(other, f"{path}: {gpu_type}.{raw}")
                pairs[gpu_type][key, partner] = (float(both[0]), float(both[1]))
    return Throughputs(alone, pairs)


def _job_key(raw: str, where: str) -> JobKey:
    """``"('ResNet-18 (batch size 64)', 1)"`` as ``('ResNet-18 (batch size 64)', 1)``."""
    try:
        key = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        key = None
    if not (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], int)
    ):
        raise InputError(f"{where}: {raw!r} is not a job key ('JOB TYPE', SCALE)")
    return key


GAVEL_CLUSTER_TYPES = ("v100", "p100", "k80")
"""The GPU types of Gavel's cluster spec ``V100:P100:K80``, in its order."""


@dataclass(frozen=True)
class GavelCluster:
    """A cluster of Gavel's spec: GPUs of each type, on servers of one size."""

    gpus: dict[str, int]
    """GPUs of each type."""
    per_server: int = 1
    """GPUs per server (Gavel's ``--num_gpus_per_server``, default 1 of every type)."""

    @property
    def types(self) -> tuple[str, ...]:
        """Each server's GPU type (servers of a type together, in the spec's order)."""
        return tuple(t for t, n in self.gpus.items() for _ in range(n // self.per_server))


def parse_cluster(spec: str, per_server: int = 1) -> GavelCluster:
    """Gavel's ``-c V100:P100:K80`` (e.g. ``8:16:24``) on servers of ``per_server`` GPUs.

    Raises
    ------
    InputError
        For another form, a negative count, no GPU at all, or a count that is not a
        multiple of ``per_server``.
    """
    parts = spec.split(":")
    try:
        counts = [int(p) for p in parts]
    except ValueError:
        counts = []
    if len(counts) != len(GAVEL_CLUSTER_TYPES) or min(counts, default=-1) < 0 or not any(counts):
        raise InputError(f"cluster {spec!r}: expected V100:P100:K80 GPU counts, e.g. 8:16:24")
    if per_server < 1 or any(n % per_server for n in counts):
        raise InputError(
            f"cluster {spec!r}: every count must be a multiple of {per_server} GPUs per server"
        )
    return GavelCluster(dict(zip(GAVEL_CLUSTER_TYPES, counts, strict=True)), per_server)


def generate_gavel_jobs(
    table: Throughputs,
    count: int,
    seed: int = 0,
    jobs_per_hour: float | None = None,
    multi_gpu: bool = True,
    high_priority: float = 0.0,
) -> list[GavelJob]:
    """A batch with Gavel's job mix (its paper, section 7.1): job types uniformly from
    those the table measures on one GPU of the reference type (``v100``, else the first);
    a scale factor of 1, or (``multi_gpu``) 2, 4 or 8 with probabilities 0.1, 0.15 and
    0.05 where the type is measured at it; a duration of ``10^x`` minutes, ``x`` uniform
    in [1.5, 3] with probability 0.8, else in [3, 4]; its steps that duration at its
    rate on the reference type; weight 5 with probability ``high_priority``; arrivals a
    Poisson process of ``jobs_per_hour`` (``None``: all at 0).

    Raises
    ------
    InputError
        For a table that measures no job on one GPU of its reference type.
    """
    import numpy as np

    reference = "v100" if "v100" in table.alone else table.types[0]
    rates = table.alone[reference]
    types = sorted(k[0] for k, r in rates.items() if k[1] == 1 and r > 0)
    if not types:
        raise InputError(f"the throughputs measure no job on one {reference} GPU")
    rng = np.random.default_rng(seed)
    jobs, clock = [], 0.0
    for _ in range(count):
        job_type = types[rng.integers(len(types))]
        scale, draw = 1, rng.random()
        if multi_gpu and draw >= 0.7:
            scale = 2 if draw < 0.8 else 4 if draw < 0.95 else 8
            if rates.get((job_type, scale), 0.0) <= 0:
                scale = 1
        low, high = (1.5, 3.0) if rng.random() < 0.8 else (3.0, 4.0)
        minutes = 10 ** rng.uniform(low, high)
        steps = max(1, round(minutes * 60 * rates[job_type, scale]))
        weight = 5.0 if rng.random() < high_priority else 1.0
        if jobs_per_hour is not None:
            clock += rng.exponential(3600.0 / jobs_per_hour)
        jobs.append(GavelJob(job_type, steps, scale, weight, None, round(clock, 3)))
    return jobs


def gavel_instance(
    jobs: list[GavelJob], cluster: GavelCluster, throughputs: str, name: str = "gavel"
) -> dict[str, object]:
    """A cluster-form instance (data) of Gavel's jobs on its cluster under the ``table``
    model, its rates from ``throughputs`` (a path relative to the instance's folder).
    Every job restarts for free, as in Gavel's simulator."""
    nodes = [
        {
            "name": f"{t}_",
            "count": n // cluster.per_server,
            "gpu": cluster.per_server,
            "gpu_type": t,
        }
        for t, n in cluster.gpus.items()
        if n
    ]
    return {
        "name": name,
        "interleave": "table",
        "throughputs": throughputs,
        "cluster": {"nodes": nodes},
        "jobs": [
            {
                "name": f"job{i}",
                "gpus": j.scale,
                "model": j.job_type,
                "iterations": j.steps,
                "release": j.arrival,
                "weight": j.weight,
                "restart": 0.0,
            }
            for i, j in enumerate(jobs)
        ],
    }

"""The model catalog: measured per-iteration stage times, restart costs and per-GPU-type
speed factors.

Stage times and restart costs come from the Muri artifact
(``catalog/muri_model_stage_profiles.csv``, ``catalog/muri_restart_overhead.csv``), speed
factors from Gavel's measured throughputs (``catalog/gavel_throughputs.csv``), GPU
power per type (``catalog/gpu_power.csv``); ``catalog/README.md`` gives their
provenance. Instance files may add profiles of their own.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from planner.errors import InputError

REFERENCE_GPU = "v100"
GPU_TYPES = ("k80", "p100", "v100")
GAVEL_FAMILY = {
    "resnet18": "ResNet-18 (batch size 128)",
    "vgg16": "ResNet-50 (batch size 128)",
    "vgg19": "ResNet-50 (batch size 128)",
    "shufflenet_v2_x1_0": "ResNet-50 (batch size 128)",
    "bert": "Transformer (batch size 16)",
    "gpt2": "Transformer (batch size 16)",
    "a2c": "A3C",
    "dqn": "A3C",
}
"""Catalog model -> the Gavel job type whose throughputs give its speed factors."""


@dataclass(frozen=True)
class StageTimes:
    """Seconds per iteration of the data, GPU and synchronisation stages."""

    data: float
    gpu: float
    sync: float

    @property
    def iteration(self) -> float:
        """Seconds per iteration with the stages run one after the other."""
        return self.data + self.gpu + self.sync

    def on(self, factor: float) -> StageTimes:
        """The same profile with the GPU stage ``factor`` times slower."""
        return StageTimes(self.data, self.gpu * factor, self.sync)


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("planner.dl").joinpath(f"catalog/{name}").read_text()
    return list(csv.DictReader(io.StringIO(text)))


@cache
def stage_profiles() -> dict[tuple[str, int, int], StageTimes]:
    """Catalog profiles keyed by ``(model, batch_size, gpus)``."""
    out: dict[tuple[str, int, int], StageTimes] = {}
    for row in _read("muri_model_stage_profiles.csv"):
        key = (row["model_name"], int(row["batch_size"]), int(row["num_gpu"]))
        times = StageTimes(
            float(row["data_load_ms(res0:IO+CPU)"]) / 1000,
            float(row["gpu_compute_ms(res1)"]) / 1000,
            float(row["network_sync_ms(res2)"]) / 1000,
        )
        if key not in out or times.iteration > out[key].iteration:
            out[key] = times
    return out


@cache
def _restart_table() -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for row in _read("muri_restart_overhead.csv"):
        out.setdefault(row["model_name"], []).append((int(row["num_gpu"]), float(row["restart_s"])))
    return {m: sorted(rows) for m, rows in out.items()}


def restart_models() -> list[str]:
    """The models the catalog has measured restart costs of."""
    return sorted(_restart_table())


def restart_seconds(model: str, gpus: int) -> float | None:
    """Measured restart cost in seconds of ``model`` on ``gpus`` GPUs, ``None`` if unknown.

    The row at the smallest listed GPU count >= ``gpus`` (the largest count beyond it).
    """
    rows = _restart_table().get(model)
    if not rows:
        return None
    return next((s for g, s in rows if g >= gpus), rows[-1][1])


@cache
def _single_gpu_throughputs() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for row in _read("gavel_throughputs.csv"):
        if row["scale_factor"] == "1":
            out[row["job_type"]] = {t: float(row[t]) for t in GPU_TYPES}
    return out


def speed_factor(gpu_type: str, family: str | None) -> float:
    """How many times longer the GPU stage takes on ``gpu_type`` than on a V100.

    ``family`` is a Gavel job type; ``None`` uses the mean over all job types.
    """
    table = _single_gpu_throughputs()
    gpu_type = gpu_type.lower()
    if gpu_type not in GPU_TYPES:
        raise ValueError(f"unknown GPU type {gpu_type!r}; the catalog knows {', '.join(GPU_TYPES)}")
    if family is not None and family not in table:
        raise ValueError(f"unknown Gavel job type {family!r}")
    rows = [table[family]] if family is not None else list(table.values())
    return sum(r[REFERENCE_GPU] / r[gpu_type] for r in rows) / len(rows)


@dataclass(frozen=True)
class GpuPower:
    """The watts one GPU draws while it computes and at rest, and where each figure is from."""

    busy: float
    idle: float
    busy_source: str
    idle_source: str


@cache
def gpu_power() -> dict[str, GpuPower]:
    """The catalog's power figures per GPU type (``catalog/gpu_power.csv``)."""
    return {
        row["gpu_type"]: GpuPower(
            float(row["busy_watts"]),
            float(row["idle_watts"]),
            row["busy_source"],
            row["idle_source"],
        )
        for row in _read("gpu_power.csv")
    }


def models() -> list[str]:
    """Model names in the catalog."""
    return sorted({m for m, _, _ in stage_profiles()})


@cache
def synergy_profiles() -> dict[str, dict[str, list]]:
    """Synergy's throughput profiles of its models on one GPU, as an instance's
    ``resource_profiles`` give them: per model, ``cpu`` cores and ``mem`` GB per GPU
    (ascending) and the ``speedup`` over the GPU-proportional share of its default
    cluster (3 cores, 62.5 GB per GPU) at each point."""
    grid: dict[str, dict[tuple[float, float], float]] = {}
    for row in _read("synergy_throughput_profiles.csv"):
        point = (float(row["cpus_per_gpu"]), float(row["mem_gb_per_gpu"]))
        grid.setdefault(row["model"], {})[point] = float(row["throughput_norm"])
    out = {}
    for model, values in grid.items():
        cpus = sorted({c for c, _ in values})
        mems = sorted({m for _, m in values})
        out[model] = {
            "cpu": cpus,
            "mem": mems,
            "speedup": [[values[c, m] for m in mems] for c in cpus],
        }
    return out


SCALING_COUNTS = (1, 2, 4, 8, 16, 32)
"""The GPU counts the catalog's stage profiles were measured on."""


def scaling_plans(
    model: str,
    gpus: int,
    batch_size: int,
    stages: tuple[float, float, float],
    iteration_time: float,
    most: int,
) -> list[dict[str, Any]]:
    """Data-parallel plans of a Muri job (``model`` on ``gpus`` GPUs at ``batch_size`` per
    GPU, with its measured ``stages`` and ``iteration_time``) on every GPU count of
    :data:`SCALING_COUNTS` up to ``most`` (and its own), at one global batch: its
    statistical efficiency is then the same on every plan, and one iteration is one
    iteration on each.

    On ``n`` GPUs each GPU loads and computes ``gpus / n`` of its own share of the batch:
    its data and GPU stages scale by ``gpus / n`` (linear in the batch per GPU, which
    flatters small batches); its synchronisation follows the catalog's profile of the
    model on ``n`` GPUs, relative to its own count. A count where the batch per GPU would
    fall below one sample is left out. The stages are scaled so that the job's own plan
    takes its ``iteration_time``.

    Raises
    ------
    InputError
        If the catalog has no stage profile of ``model``.
    """
    profile = {g: t for (m, _, g), t in stage_profiles().items() if m == model}
    if not profile:
        known = sorted({m for m, _, _ in stage_profiles()})
        raise InputError(
            f"model {model!r}: the catalog has no stage profile of it to make it elastic "
            f"(it knows {', '.join(known)})"
        )
    data, gpu, sync = stages
    scale = iteration_time / (data + gpu + sync) if iteration_time > 0 else 1.0
    own = profile[min(profile, key=lambda g: abs(g - gpus))]
    out = []
    for n in sorted({g for g in SCALING_COUNTS if g <= most} | {gpus}):
        if n > batch_size * gpus:
            continue
        if n == gpus:
            times = (data, gpu, sync)
        else:
            there = profile.get(n, own)
            if sync > 0 and own.sync > 0:
                synced = sync * there.sync / own.sync
            else:  # no synchronisation measured on its own count: the profile's, to scale
                synced = there.sync * (data + gpu) / max(own.data + own.gpu, 1e-9)
            times = (data * gpus / n, gpu * gpus / n, synced if n > 1 else 0.0)
        out.append({
            "data": n,
            "stages": dict(zip(("data", "gpu", "sync"), (t * scale for t in times), strict=True)),
        })  # fmt: skip
    return out

"""Hybrid-parallel transformer jobs: their parallel plans from a cost model, and a seeded
generator of such batches (``planner generate --hybrid``).

A job trains a transformer of ``P`` billion parameters at a global batch of ``B``
sequences. On a plan of ``d`` data-parallel replicas, ``p`` pipeline stages and tensor
degree ``t`` (``d p t`` GPUs), one iteration takes

- compute: ``C P B / (d p t)`` seconds (``C``: :data:`COMPUTE` GPU-seconds per billion
  parameters per sequence), times the pipeline's bubble ``1 + (p - 1) / m`` for ``m``
  micro-batches per replica, times ``1 + 0.1 (t - 1)`` for tensor parallelism's
  communication inside a layer;
- synchronisation: a ring all-reduce of the replica's fp16 gradients,
  ``2 (d - 1) / d x 2 P / (p t)`` GB at :data:`NVLINK` GB/s within a node, at
  :data:`NETWORK` GB/s across nodes;

and each GPU holds ``16 P / (p t)`` GB of weights, gradients and Adam's state (mixed
precision) plus ``1.5 sqrt(P) / t`` GB of activations. These are the textbook estimates
(Megatron-LM's accounting), not a measurement: the point is the trade-off a policy faces,
faster plans needing more memory per GPU and more GPUs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.dl.workloads import GPU_MIX, arrivals, released
from planner.errors import InputError

COMPUTE = 0.25
"""GPU-seconds per billion parameters per sequence of 1,024 tokens (6 P tokens FLOPs at
about 25 TFLOP/s)."""

NVLINK = 100.0
"""GB/s of an all-reduce within a node."""

NETWORK = 12.5
"""GB/s of an all-reduce across nodes (100 Gb/s)."""

SIZES = {0.35: 0.3, 0.76: 0.25, 1.3: 0.2, 2.7: 0.15, 6.7: 0.1}
"""Billions of parameters of the generated jobs, and how often each is drawn."""

BATCHES = (16, 32, 64)
"""Global batch sizes (sequences) of the generated jobs."""

MICRO_BATCH = 2
"""Sequences per micro-batch."""


def plan_figures(
    params: float, batch: int, data: int, pipeline: int, tensor: int, per_node: int
) -> tuple[float, float, float]:
    """Compute seconds, synchronisation seconds and GB per GPU of one iteration of a
    ``params``-billion model at ``batch`` on ``data`` x ``pipeline`` x ``tensor`` GPUs
    (nodes of ``per_node`` GPUs): see the module docstring."""
    gpus = data * pipeline * tensor
    micro = max(1, batch // (data * MICRO_BATCH))
    compute = COMPUTE * params * batch / gpus
    compute *= (1 + (pipeline - 1) / micro) * (1 + 0.1 * (tensor - 1))
    speed = NVLINK if gpus <= per_node else NETWORK
    sync = 2 * (data - 1) / data * 2 * params / (pipeline * tensor) / speed
    memory = 16 * params / (pipeline * tensor) + 1.5 * math.sqrt(params) / tensor
    return compute, sync, memory


def parallel_plans(params: float, batch: int, most: int, per_node: int) -> list[dict[str, Any]]:
    """Every plan of powers of two on at most ``most`` GPUs (tensor degree within a node,
    at most 8 pipeline stages, at least a micro-batch per replica), as ``parallel_plans``
    entries of the cluster form."""
    out = []
    for t in (1, 2, 4, 8):
        for p in (1, 2, 4, 8):
            for d in (1, 2, 4, 8, 16, 32):
                if d * p * t > most or t > per_node or batch < d * MICRO_BATCH:
                    continue
                compute, sync, memory = plan_figures(params, batch, d, p, t, per_node)
                out.append({
                    "data": d,
                    "pipeline": p,
                    "tensor": t,
                    "stages": {"data": 0.0, "gpu": round(compute, 4), "sync": round(sync, 4)},
                    "gpu_mem_per_gpu": math.ceil(memory),
                })  # fmt: skip
    return out


def _gpus(plan: dict[str, Any]) -> int:
    """A plan entry's GPUs."""
    return int(plan["data"] * plan["pipeline"] * plan["tensor"])


def generate_hybrid(
    jobs: int,
    seed: int,
    nodes: int,
    gpus_per_node: int,
    gpu_memory: int,
    arrival_rate: float | None = None,
) -> dict[str, Any]:
    """A seeded batch of hybrid-parallel transformer jobs in cluster form, on ``nodes``
    nodes of ``gpus_per_node`` GPUs of ``gpu_memory`` GB. Each job draws its size from
    :data:`SIZES` and its batch from :data:`BATCHES`; its own ``gpus`` from the GPU mix
    of Muri's published trace (:data:`~planner.dl.workloads.GPU_MIX`), raised to the
    fewest a plan that fits has, and its own plan the fastest that fits there; its hours
    on it are log-normal (median 1 h, 0.1 to 24 h). With ``arrival_rate`` (jobs
    per hour) releases follow a Poisson process, else all are released at 0. Sizes no
    plan fits on the cluster are not drawn.

    Raises
    ------
    InputError
        If no size fits.
    """
    rng = np.random.default_rng(seed)
    total = nodes * gpus_per_node
    sizes = [
        size
        for size in SIZES
        if any(
            p["gpu_mem_per_gpu"] <= gpu_memory
            for p in parallel_plans(size, max(BATCHES), total, gpus_per_node)
        )
    ]
    if not sizes:
        raise InputError(
            f"no generated model fits GPUs of {gpu_memory} GB on {nodes} x {gpus_per_node} "
            f"GPUs (the smallest, {min(SIZES):g}B parameters, needs more memory or GPUs)"
        )
    weights = np.array([SIZES[size] for size in sizes])
    counts = [g for g in GPU_MIX if g <= total] or [total]
    mix = np.array([GPU_MIX[g] for g in counts], dtype=float)
    mix /= mix.sum()
    releases = arrivals(rng, jobs, arrival_rate)
    out = []
    for k in range(jobs):
        params = float(rng.choice(sizes, p=weights / weights.sum()))
        batch = int(rng.choice(BATCHES))
        hours = float(np.clip(np.exp(rng.normal(0.0, 1.0)), 0.1, 24.0))
        plans = parallel_plans(params, batch, total, gpus_per_node)
        fits = [p for p in plans if p["gpu_mem_per_gpu"] <= gpu_memory]
        period = {id(p): p["stages"]["gpu"] + p["stages"]["sync"] for p in fits}
        least = min(_gpus(p) for p in fits)
        drawn = max(least, int(rng.choice(counts, p=mix)))
        own = min(fits, key=lambda p: (_gpus(p) < drawn, _gpus(p), period[id(p)]))
        job: dict[str, Any] = {
            "name": f"gpt{params:g}b-{k}",
            "gpus": _gpus(own),
            "stages": own["stages"],
            "iterations": max(1, round(hours * 3600 / period[id(own)])),
            "restart": 60.0,
            "gpu_mem_per_gpu": own["gpu_mem_per_gpu"],
            "parallel_plans": plans,
        }
        out.append(released(job, releases[k]))
    return {
        "name": f"hybrid-{jobs}-seed{seed}",
        "interleave": "fluid",
        "max_colocated": 1,
        "cluster": {
            "nodes": [
                {
                    "name": "node",
                    "count": nodes,
                    "gpu": gpus_per_node,
                    "gpu_mem": gpu_memory * gpus_per_node,
                }
            ]
        },
        "jobs": out,
    }

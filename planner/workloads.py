"""Deep-learning workloads: Muri traces and seeded synthetic batches, as cluster-form data.

Both return the plain data of a cluster-form instance (see
:mod:`planner.cluster`), ready to be written as JSON or YAML and loaded back.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.catalog import models, stage_profiles
from planner.errors import InputError

MURI_COLUMNS = (
    "num_gpu",
    "iterations",
    "model_name",
    "batch_size",
    "resource_time_0",
    "resource_time_1",
    "resource_time_2",
)
"""Columns a Muri trace must have (times in ms; ``submit_time`` and ``job_id`` are optional)."""

GPU_MIX = {1: 134, 2: 22, 4: 34, 8: 691, 16: 3, 32: 108}
"""GPU counts of the jobs of Muri's published offline trace (992 jobs): the generator's mix."""

LOG_DURATION = (8.15, 2.87)
"""Mean and standard deviation of ln(job duration in seconds) in the same trace."""


def muri_cluster(nodes: int, gpus_per_node: int) -> dict[str, Any]:
    """A cluster in Muri's model: each GPU brings one data-loading slot and one network slot."""
    node = {"name": "node", "count": nodes, "gpu": gpus_per_node}
    node.update(io=gpus_per_node, net=gpus_per_node)
    return {"nodes": [node]}


def import_muri(
    path: str | Path,
    nodes: int = 8,
    gpus_per_node: int = 8,
    time_unit: str = "1min",
    blocks: int = 1,
) -> dict[str, Any]:
    """Read a Muri trace CSV into cluster-form data.

    Every row becomes a training job with the trace's measured stage times and
    GPU count; ``submit_time`` (ms) becomes the release. One-minute ticks keep
    the horizon of a trace of months small; stage times round up to them.

    Raises
    ------
    InputError
        If the file is missing, lacks a column, or holds a value out of range.
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("no such file", name)
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"not a CSV trace ({str(exc).splitlines()[0]})", name) from None
    missing = [c for c in MURI_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", name, "line 1")
    jobs = []
    for k, row in enumerate(frame.to_dict("records")):
        place = f"line {k + 2}"
        try:
            gpus, iters = _whole(row["num_gpu"], 1), _whole(row["iterations"], 1)
            times = [float(row[f"resource_time_{s}"]) for s in range(3)]
            release = float(row.get("submit_time", 0) or 0) / 1000
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), name, place) from None
        if any(not math.isfinite(t) or t < 0 for t in [*times, release]):
            raise InputError("times must be finite and >= 0", name, place)
        job_id = row.get("job_id", k)
        job: dict[str, Any] = {
            "name": f"job{job_id}",
            "model": str(row["model_name"]),
            "batch_size": _whole(row["batch_size"], 1),
            "gpus": gpus,
            "iterations": iters,
            "blocks": min(blocks, iters),
            "stages": {"data": times[0] / 1000, "gpu": times[1] / 1000, "sync": times[2] / 1000},
        }
        if release:
            job["release"] = release
        jobs.append(job)
    if not jobs:
        raise InputError("the trace has no jobs", name)
    return {
        "name": path.stem,
        "time_unit": time_unit,
        "cluster": muri_cluster(nodes, gpus_per_node),
        "jobs": jobs,
    }


def _whole(value: object, low: int) -> int:
    number = float(value)  # type: ignore[arg-type]
    if not number.is_integer() or number < low:
        raise ValueError(f"expected a whole number >= {low}, got {value!r}")
    return int(number)


def generate(
    jobs: int,
    seed: int = 0,
    nodes: int = 8,
    gpus_per_node: int = 8,
    time_unit: str = "1min",
    blocks: int = 1,
    arrival_rate: float | None = None,
) -> dict[str, Any]:
    """A seeded synthetic batch of catalog training jobs in cluster form.

    GPU counts follow the mix of Muri's published trace (capped at the
    cluster's GPUs), models are drawn uniformly from the catalog, durations
    from the trace's log-normal fit (10 s to 10^6 s). With ``arrival_rate``
    (jobs per hour) releases follow a Poisson process; otherwise all jobs are
    released at 0 (an offline batch).
    """
    if jobs < 1:
        raise InputError("the number of jobs must be at least 1")
    rng = np.random.default_rng(seed)
    total = nodes * gpus_per_node
    counts = [g for g in GPU_MIX if g <= total] or [total]
    weights = np.array([GPU_MIX.get(g, 1) for g in counts], dtype=float)
    gpu_draw = rng.choice(counts, size=jobs, p=weights / weights.sum())
    names = models()
    model_draw = rng.integers(0, len(names), size=jobs)
    seconds = np.clip(np.exp(rng.normal(*LOG_DURATION, size=jobs)), 10, 1e6)
    releases = np.zeros(jobs)
    if arrival_rate:
        releases = np.cumsum(rng.exponential(3600 / arrival_rate, size=jobs))
    profiles = stage_profiles()
    out = []
    for k in range(jobs):
        model, gpus = names[model_draw[k]], int(gpu_draw[k])
        batch = next(b for m, b, g in profiles if m == model and g == gpus)
        per_iter = profiles[(model, batch, gpus)].iteration
        iters = max(blocks, math.ceil(seconds[k] / per_iter))
        job: dict[str, Any] = {
            "name": f"job{k}",
            "model": model,
            "batch_size": batch,
            "gpus": gpus,
            "iterations": iters,
            "blocks": blocks,
        }
        if releases[k]:
            job["release"] = round(float(releases[k]), 3)
        out.append(job)
    return {
        "name": f"generated-{jobs}-seed{seed}",
        "time_unit": time_unit,
        "cluster": muri_cluster(nodes, gpus_per_node),
        "jobs": out,
    }

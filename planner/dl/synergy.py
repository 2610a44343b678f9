"""Synergy's workload (Mohan et al., OSDI 2022, "Looking Beyond GPUs for DNN Scheduling on
Multi-Tenant Clusters"): the job streams its simulator writes and its clusters, read as a
cluster-form instance.

Each job becomes a training job of its model on its GPUs, released at its arrival, with
its iterations at the time an iteration takes on the GPU-proportional share of CPU and
memory (``iter_time_fair_s``): Synergy's speed-up 1. Its model's throughput profile
(:func:`planner.dl.catalog.synergy_profiles`) goes into ``resource_profiles``: the
executor's policies decide each job's CPU cores and memory, and its speed follows. Its
iteration splits into a GPU stage, the iteration at its profile's greatest speed-up
(where CPU and memory no longer limit it), and a data stage, the rest: the time its
GPU waits on data at the fair share, which more CPU and memory shorten
(:func:`planner.executor.model.resources.at_speed`). Synergy's simulator charges no restart
and never puts two jobs on one GPU: the instance says so (``restart: 0``,
``max_colocated: 1``; the data stages of jobs that share a GPU would load in parallel,
each on its own cores: ``data_slots: 4``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from planner.dl.catalog import synergy_profiles
from planner.dl.workloads import csv_cells
from planner.errors import InputError

SYNERGY_CLUSTERS: dict[str, tuple[int, int, int, int]] = {
    "default": (16, 8, 24, 500),
    "cluster_4": (16, 8, 32, 500),
    "cluster_5": (16, 8, 40, 500),
    "cluster_6": (16, 8, 48, 500),
    "deployment": (4, 8, 24, 500),
    "philly": (64, 8, 24, 500),
    "static_trace": (4, 8, 24, 500),
}
"""Synergy's clusters (its ``configs/*.ini``): servers, GPUs, CPU cores and GB of memory
per server."""

COLUMNS = ("job_id", "model", "gpus", "arrival_s", "total_iters", "iter_time_fair_s")
"""The columns of a Synergy job stream that the import reads."""


def import_synergy(path: str | Path, cluster: str = "default") -> dict[str, Any]:
    """Read a Synergy job stream (CSV with :data:`COLUMNS`) into cluster-form data on one
    of :data:`SYNERGY_CLUSTERS` (see the module docstring).

    Raises
    ------
    InputError
        For an unknown cluster, a file that is missing or not CSV, a missing column, or a
        value out of range (naming line and column).
    """
    if cluster not in SYNERGY_CLUSTERS:
        raise InputError(
            f"unknown Synergy cluster {cluster!r}; choose one of {', '.join(SYNERGY_CLUSTERS)}"
        )
    servers, gpus, cpus, memory = SYNERGY_CLUSTERS[cluster]
    path = Path(path)
    _, cells = csv_cells(path, COLUMNS)
    grids = synergy_profiles()
    jobs = []
    for cell in cells:
        job_gpus = cell.whole("gpus")
        if job_gpus > servers * gpus:
            cell.fail("gpus", f"{job_gpus} GPUs; the cluster has {servers * gpus}")
        period = cell.number("iter_time_fair_s", "", lambda x: math.isfinite(x) and x > 0,
                             "a time > 0 (s)")  # fmt: skip
        arrival = cell.number("arrival_s", "0", lambda x: math.isfinite(x) and x >= 0,
                              "a time >= 0 (s)")  # fmt: skip
        model = cell.text("model")
        if model not in grids:
            cell.fail("model", f"{model!r}: Synergy profiles {', '.join(grids)}")
        top = max(max(row) for row in grids[model]["speedup"])
        gpu = period / max(top, 1.0)
        jobs.append(
            {
                "name": f"job{cell.level('job_id')}",
                "model": model,
                "gpus": job_gpus,
                "iterations": cell.whole("total_iters"),
                "stages": {"data": period - gpu, "gpu": gpu, "sync": 0.0},
                "release": arrival,
                "restart": 0.0,
            }
        )
    if not jobs:
        raise InputError("the stream has no jobs", str(path))
    node = {"name": "server", "count": servers, "gpu": gpus, "cpu": cpus, "mem": memory}
    used = {job["model"] for job in jobs}
    return {
        "name": path.stem,
        "time_unit": "5min",
        "placement": "pooled",
        "max_colocated": 1,
        "data_slots": 4,
        "cluster": {"nodes": [node]},
        "resource_profiles": {m: grids[m] for m in sorted(used)},
        "jobs": jobs,
    }

"""Synergy's workload (Mohan et al., OSDI 2022, "Looking Beyond GPUs for DNN Scheduling on
Multi-Tenant Clusters"): the job streams its simulator writes and its clusters, read as a
cluster-form instance.

Each job becomes a training job of its model on its GPUs, released at its arrival, with
its iterations at the time an iteration takes on the GPU-proportional share of CPU and
memory (``iter_time_fair_s``): Synergy's speed-up 1. Synergy's simulator charges no
restart and never puts two jobs on one GPU: the instance says so (``restart: 0``,
``max_colocated: 1``). The CPU cores and memory of its servers are kept in the nodes;
what a job's speed gains from more of them (Synergy's throughput profiles) is not
modelled yet: the instance runs every job at its fair-share speed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

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
    jobs = []
    for cell in cells:
        job_gpus = cell.whole("gpus")
        if job_gpus > servers * gpus:
            cell.fail("gpus", f"{job_gpus} GPUs; the cluster has {servers * gpus}")
        period = cell.number("iter_time_fair_s", "", lambda x: math.isfinite(x) and x > 0,
                             "a time > 0 (s)")  # fmt: skip
        arrival = cell.number("arrival_s", "0", lambda x: math.isfinite(x) and x >= 0,
                              "a time >= 0 (s)")  # fmt: skip
        jobs.append(
            {
                "name": f"job{cell.level('job_id')}",
                "model": cell.text("model"),
                "gpus": job_gpus,
                "iterations": cell.whole("total_iters"),
                "stages": {"data": 0.0, "gpu": period, "sync": 0.0},
                "release": arrival,
                "restart": 0.0,
            }
        )
    if not jobs:
        raise InputError("the stream has no jobs", str(path))
    node = {"name": "server", "count": servers, "gpu": gpus, "cpu": cpus, "mem": memory}
    return {
        "name": path.stem,
        "time_unit": "5min",
        "placement": "pooled",
        "max_colocated": 1,
        "cluster": {"nodes": [node]},
        "jobs": jobs,
    }

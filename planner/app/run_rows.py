"""The rows and colours of a job-level run's charts: its physical GPUs in node order and
one colour per job, shared by the static chart (:mod:`planner.app.colocation`) and the
interactive one (:mod:`planner.app.run_svg`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


def _order(label: str) -> tuple[object, ...]:
    """Sort key of a GPU label: nodes by name with their numbers as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label))


def physical_gpus(label: str) -> list[str]:
    """The GPUs of a GPU set label (``node1:0-3+node2:0,2``) as ``NODE:i``."""
    out = []
    for part in label.split("+"):
        node, _, ids = part.rpartition(":")
        for piece in ids.split(","):
            first, _, last = piece.partition("-")
            out += [f"{node}:{i}" for i in range(int(first), int(last or first) + 1)]
    return out


def run_gpus(run: dict[str, Any]) -> list[str]:
    """A run's GPU rows, ``NODE:i`` in node order: those its jobs held and every GPU of
    its ``cluster`` where it names one (idle ones too)."""
    cluster = run.get("cluster") or {}
    gpus = {g for r in run["residences"] if r["gpus"] for g in physical_gpus(r["gpus"])}
    for node in cluster.get("nodes") or ():
        gpus.update(f"{node}:{i}" for i in range(int(cluster.get("gpus_per_node") or 0)))
    return sorted(gpus, key=_order)


def job_colours(jobs: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    """One colour per job, by name: tab20's for at most 20 jobs, else evenly spread over
    a perceptually ordered map, neighbours in name order far apart."""
    from matplotlib import colormaps

    names = sorted(set(jobs))
    if len(names) <= 20:
        return {n: colormaps["tab20"](k) for k, n in enumerate(names)}
    count = len(names)
    stride = max(1, int(count**0.5))  # neighbours in name order get distant shades
    order = sorted(range(count), key=lambda k: (k % stride, k // stride))
    return {names[k]: colormaps["turbo"](0.05 + 0.9 * pos / (count - 1))
            for pos, k in enumerate(order)}  # fmt: skip

"""Pollux's baselines reproduced in the executor (issue 55): ``pollux-tiresias`` and
``pollux-optimus`` on Pollux's eight workloads (16 nodes of 4 T4 GPUs, 60-second rounds,
no slowdown factors), against the figures of Pollux's simulator. Run from the
repository's top folder::

    python benchmarks/bench_pollux.py --benchmarks ../shared/benchmarks [--runs 2]
        [--set workloads] [--policies pollux-tiresias,pollux-optimus,goodput]
        [--peer-python PY --peer-simulator DIR]

``--set`` picks another set of Pollux's workloads (``workloads-1.5``, ``workloads-2.0``,
``workloads-realistic``: held out). With ``--peer-python`` and ``--peer-simulator`` (a
Python with Pollux's simulator's requirements, and its ``simulator/`` folder), Pollux's
simulator runs every workload too, side by side (its ``tiresias`` and ``optimus``).
Every run of ours is audited. Mean JCT in seconds.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import tempfile
import time
from pathlib import Path
from statistics import fmean

import yaml

import planner
from planner.dl.pollux import WORKLOAD_COLUMNS as COLUMNS
from planner.dl.pollux import import_pollux
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from planner.interleave import Interleave

PUBLISHED = {"pollux-tiresias": 4038.2, "pollux": 2751.1, "goodput": 2751.1}
"""Mean JCT over the eight workloads of the set ``workloads``, Pollux's authors' (its
artifact's results): their Tiresias, and Pollux itself (what ``goodput``, ours, is
measured against)."""

MODEL = Interleave("fluid", max_colocated=1, factors=None)


def ours(instance: Path, policy: str) -> tuple[float, float, float]:
    """One audited run: mean JCT, makespan, wall seconds."""
    workload = jobs_from_instance(instance)
    started = time.perf_counter()
    run = planner.run_policy(list(workload.jobs), policy, nodes=16, gpus_per_node=4,
                             interleave=MODEL)  # fmt: skip
    wall = time.perf_counter() - started
    wrong = audit(run, list(workload.jobs), 64)
    assert run.finished and not wrong, wrong[:3]
    return run.mean_jct, run.makespan, wall


def peer(python: str, folder: Path, workload: Path, policy: str) -> tuple[float, float]:
    """Pollux's simulator on one workload: its mean JCT and wall seconds."""
    started = time.perf_counter()
    done = subprocess.run([python, "simulator.py", str(workload), "--policy", policy],
                          cwd=folder, capture_output=True, text=True, check=True)  # fmt: skip
    means = re.findall(r"Average JCT: ([0-9.]+)", done.stdout)
    return float(means[-1]), time.perf_counter() - started


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--set", default="workloads")
    parser.add_argument("--policies", default="pollux-tiresias,pollux-optimus,goodput")
    parser.add_argument("--peer-python")
    parser.add_argument("--peer-simulator", type=Path)
    args = parser.parse_args()
    policies = args.policies.split(",")
    source = args.benchmarks / "pollux" / "pollux_workloads.csv"
    with source.open() as f:
        rows = [r for r in csv.DictReader(f) if r["set"] == args.set]
    names = sorted({r["workload"] for r in rows}, key=lambda n: int(n.split("-")[1]))
    print(f"set {args.set}: {len(names)} workloads; mean JCT (s), ours run {args.runs} times")
    peered = [p for p in policies if args.peer_python and p.startswith("pollux-")]
    head = "| workload | " + " | ".join(
        f"{p} (ours) | {p} (Pollux's simulator)" if p in peered else f"{p} (ours)" for p in policies
    )
    print(head + " |")
    print("|---" * (1 + len(policies) + len(peered)) + "|")
    totals: dict[str, list[float]] = {p: [] for p in policies}
    peers: dict[str, list[float]] = {p: [] for p in policies}
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            workload = Path(tmp) / f"{name}.csv"
            with workload.open("w") as f:
                f.write(",".join(COLUMNS) + "\n")
                for r in rows:
                    if r["workload"] == name:
                        f.write(",".join(r[c] for c in COLUMNS) + "\n")
            instance = Path(tmp) / f"{name}.yaml"
            instance.write_text(yaml.safe_dump(import_pollux(workload), sort_keys=False))
            cells = []
            for p in policies:
                runs = [ours(instance, p) for _ in range(args.runs)]
                walls += [w for *_, w in runs]
                means = [m for m, _, _ in runs]
                totals[p].append(means[0])
                spread = max(means) - min(means)
                cells.append(f"{means[0]:,.1f}" + (f" (runs differ by {spread:.1f})"
                                                   if spread else ""))  # fmt: skip
                if p in peered:
                    mean, _ = peer(args.peer_python, args.peer_simulator, workload,
                                   p.removeprefix("pollux-"))  # fmt: skip
                    peers[p].append(mean)
                    cells.append(f"{mean:,.1f} (ours {means[0] / mean - 1:+.2%})")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    row = []
    for p in policies:
        mean = fmean(totals[p])
        published = PUBLISHED.get(p) if args.set == "workloads" else None
        note = f" ({mean / published - 1:+.2%} vs the authors' {published:,.1f})" \
            if published else ""  # fmt: skip
        row.append(f"**{mean:,.1f}**{note}")
        if p in peered:
            row.append(f"**{fmean(peers[p]):,.1f}**")
    print("| mean | " + " | ".join(row) + " |")
    print(f"\nours: one run {min(walls):.1f} to {max(walls):.1f} s (executor and audit apart: "
          "the run only)")  # fmt: skip


if __name__ == "__main__":
    main()

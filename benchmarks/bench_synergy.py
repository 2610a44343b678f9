"""Synergy's FIFO with GPU-proportional CPU and memory (``FIFO-Fair``), reproduced in the
job-level executor: Synergy's artifact stream (9 jobs an hour, seed 42, 6,376 jobs) on
its default cluster (16 servers of 8 GPUs, 24 CPUs and 500 GB), every job at its speed on
the fair share, one job a GPU, no restart cost and no slowdown (Synergy's simulator has
neither). The figures are the JCTs of jobs 4000-4999, Synergy's measured window, against
its simulator's (the benchmarks' ``synergy/README.md``). Every run is audited. Run from the
repository's top folder::

    python benchmarks/bench_synergy.py --benchmarks ../shared/benchmarks [--runs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

import planner
from planner.dl.synergy import import_synergy
from planner.execution.audit import audit
from planner.execution.jobs import jobs_from_instance
from planner.interleave import Interleave

SYNERGY = {
    "fifo": ("FIFO-Fair", 81.09, 70.70, 214.61),
    "srtf": ("SRTF-Fair", None, None, None),
}
"""Our policy -> Synergy's policy and its simulator's mean, p50 and p99 JCT (h); SRTF-Fair
did not finish in its simulator here (its README)."""

WINDOW = range(4000, 5000)
"""Synergy's measured jobs."""


def main() -> None:
    """Import the stream, run every policy ``--runs`` times, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    stream = args.benchmarks / "synergy" / "trace_fifo_tune_9jph_seed42.csv"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synergy.yaml"
        path.write_text(yaml.safe_dump(import_synergy(stream)))
        workload = jobs_from_instance(path)
    model = Interleave("fluid", max_colocated=1, factors=None)
    print("| ours | Synergy's | mean JCT (h) | p50 (h) | p99 (h) | Synergy's mean / p50 / p99 (h) "
          "| ours / Synergy's mean | wall (s) per run | audit |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for policy, (theirs, mean_s, p50_s, p99_s) in SYNERGY.items():
        walls, figures, valid = [], None, True
        for _ in range(args.runs):
            t0 = time.perf_counter()
            run = planner.run_policy(workload, policy, interleave=model)
            walls.append(time.perf_counter() - t0)
            jct = np.array([run.finish[f"job{k}"] - run.release[f"job{k}"] for k in WINDOW])
            figures = (jct.mean() / 3600, *np.percentile(jct, [50, 99]) / 3600)
            valid = valid and audit(run, workload.jobs, 128) == []
        assert figures is not None
        mean, p50, p99 = figures
        peer = "-" if mean_s is None else f"{mean_s:.2f} / {p50_s:.2f} / {p99_s:.2f}"
        ratio = "-" if mean_s is None else f"{mean / mean_s:.3f}"
        wall = ", ".join(f"{w:.1f}" for w in walls)
        print(f"| {policy} | {theirs} | {mean:.2f} | {p50:.2f} | {p99:.2f} | {peer} | {ratio} | "
              f"{wall} | {'valid' if valid else 'INVALID'} |")  # fmt: skip


if __name__ == "__main__":
    main()

"""Synergy reproduced in the job-level executor, then ours (issue 54): Synergy's artifact
stream (9 jobs an hour, seed 42, 6,376 single-GPU jobs) on its default cluster (16
servers of 8 GPUs, 24 CPUs and 500 GB), every job's speed from its model's throughput
profile at the CPU and memory its policy gives it, no restart cost and no slowdown
(Synergy's simulator has neither). The figures are the JCTs of jobs 4000-4999, Synergy's
measured window (all jobs of a shorter stream), against its simulator's (the benchmarks'
``synergy/README.md``). Every run is audited.

Rows: Synergy's policies (``synergy-ORDER-ALLOCATION``, rounds of 300 s); ``grid-srtf``
(ours: the whole grid, one job a GPU, as Synergy, in its rounds) and
``grid-srtf-events`` (the same, deciding at every arrival and completion); ``+ pairs``:
where two jobs may share a GPU (``fluid``, 4 data-loading slots a GPU), without a
slowdown and with Muri's measured slowdown of a pair (1.33 / 1.015). The JCT bound:
every job alone at its profile's best speed from its arrival. Run from the
repository's top folder::

    python benchmarks/bench_synergy.py --benchmarks ../shared/benchmarks [--runs 2]
    python benchmarks/bench_synergy.py --stream OTHER.csv [--cluster default]
    python benchmarks/bench_synergy.py --resample 7 --rate 10

``--resample SEED --rate JOBS_PER_HOUR``: a stream of the same family, not the shipped
one: as many jobs, each drawn (model, GPUs, iterations) from the artifact stream with
``SEED``, arriving as a Poisson process of ``--rate`` jobs an hour (Synergy's generator
draws its arrivals so).
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml

import planner
from planner.dl.synergy import import_synergy
from planner.executor.audit import audit
from planner.executor.model.jobs import Workload, jobs_from_instance
from planner.executor.model.resources import fastest
from planner.interleave import MURI_GROUP_FACTORS, Interleave

SYNERGY = {
    "synergy-fifo-fair": ("FIFO-Fair", 81.09, 70.70, 214.61),
    "synergy-fifo-greedy": ("FIFO-Greedy", 24.98, None, 159.68),
    "synergy-fifo-tune": ("FIFO-Tune", 21.88, 10.83, 156.93),
    "synergy-srtf-tune": ("SRTF-Tune", 16.60, 3.90, 182.17),
    "synergy-srtf-fair": ("SRTF-Fair", None, None, None),
    "synergy-las-tune": ("LAS-Tune", None, None, None),
}
"""Our policy -> Synergy's policy and its simulator's mean, p50 and p99 JCT (h) on the
artifact stream; SRTF-Fair and LAS-Tune did not finish in its simulator here (its
README)."""

ALONE = Interleave("fluid", data_slots=4, max_colocated=1, factors=None)
PAIRS = Interleave("fluid", data_slots=4, max_colocated=2, factors=None)
PAIRS_SLOWED = Interleave(
    "fluid", data_slots=4, max_colocated=2, factors=(1.0, MURI_GROUP_FACTORS[1])
)
OURS = {
    "grid-srtf": ("grid-srtf", ALONE),
    "grid-srtf + pairs": ("grid-srtf", PAIRS),
    "grid-srtf + pairs, Muri's pair slowdown": ("grid-srtf", PAIRS_SLOWED),
    "grid-srtf-events": ("grid-srtf-events", ALONE),
    "grid-srtf-events + pairs": ("grid-srtf-events", PAIRS),
    "grid-srtf-events + pairs, Muri's pair slowdown": ("grid-srtf-events", PAIRS_SLOWED),
}
"""Our rows: the policy and the model it runs in."""

WINDOW = range(4000, 5000)
"""Synergy's measured jobs."""


def measure(task: tuple[Workload, str, Interleave]) -> tuple[tuple[float, ...], float, bool]:
    """One run: (mean, p50, p99 JCT in hours of the window), its wall time (s), its audit."""
    workload, policy, model = task
    t0 = time.perf_counter()
    run = planner.run_policy(workload, policy, interleave=model)
    wall = time.perf_counter() - t0
    names = measured(workload)
    jct = np.array([run.finish[n] - run.release[n] for n in names]) / 3600
    figures = (float(jct.mean()), *(float(x) for x in np.percentile(jct, [50, 99])))
    gpus = (workload.nodes or 0) * (workload.gpus_per_node or 0)
    return figures, wall, audit(run, workload.jobs, gpus) == []


def measured(workload: Workload) -> list[str]:
    """The measured jobs: Synergy's window where the stream has it, else every job."""
    names = [f"job{k}" for k in WINDOW]
    have = {j.name for j in workload.jobs}
    return names if all(n in have for n in names) else sorted(have)


def jct_bound(workload: Workload) -> float:
    """The mean JCT (h) of the measured jobs with every job alone at its best speed from
    its arrival (:func:`~planner.executor.model.resources.fastest`): no run does better."""
    jobs = {j.name: j for j in fastest(workload.jobs)}
    names = measured(workload)
    return float(np.mean([jobs[n].iterations * jobs[n].iteration_time for n in names])) / 3600


def resampled(stream: Path, seed: int, rate: float, folder: Path) -> Path:
    """A stream of ``stream``'s family (see the module docstring), written in ``folder``."""
    rows = list(csv.DictReader(stream.open()))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(rows), len(rows))
    arrivals = np.cumsum(np.ceil(rng.exponential(3600 / rate, len(rows))))
    out = folder / f"resampled_seed{seed}_{rate:g}jph.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["job_id", "model", "gpus", "arrival_s",
                                               "total_iters", "iter_time_fair_s"])  # fmt: skip
        writer.writeheader()
        for k, (pick, arrival) in enumerate(zip(picks, arrivals, strict=True)):
            row = rows[pick]
            writer.writerow({"job_id": k, "model": row["model"], "gpus": row["gpus"],
                             "arrival_s": int(arrival), "total_iters": row["total_iters"],
                             "iter_time_fair_s": row["iter_time_fair_s"]})  # fmt: skip
    return out


def main() -> None:
    """Import the stream, run every row ``--runs`` times, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    parser.add_argument("--stream", type=Path, help="another stream of Synergy's generator")
    parser.add_argument("--cluster", default="default")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (wall times rise)")
    parser.add_argument("--only", nargs="*", help="rows to run (default: all)")
    parser.add_argument("--resample", type=int, help="a resampled stream of this seed")
    parser.add_argument("--rate", type=float, default=9.0, help="its jobs an hour")
    args = parser.parse_args()
    stream = args.stream or args.benchmarks / "synergy" / "trace_fifo_tune_9jph_seed42.csv"
    with tempfile.TemporaryDirectory() as tmp:
        if args.resample is not None:
            stream = resampled(stream, args.resample, args.rate, Path(tmp))
        path = Path(tmp) / "synergy.yaml"
        path.write_text(yaml.safe_dump(import_synergy(stream, args.cluster)))
        workload = jobs_from_instance(path)
    theirs = SYNERGY if args.stream is None and args.resample is None else {}
    known = {p: (p, ALONE) for p, fig in SYNERGY.items() if fig[1] is not None}
    rows = known | OURS | {p: (p, ALONE) for p in SYNERGY if p not in known}
    if args.only:
        rows = {k: v for k, v in rows.items() if k in args.only}
    tasks = [(workload, policy, model) for policy, model in rows.values() for _ in range(args.runs)]
    print(f"stream {stream.name}, cluster {args.cluster}, {len(workload.jobs)} jobs; JCT bound "
          f"of the measured jobs {jct_bound(workload):.2f} h mean")  # fmt: skip
    print("| row | Synergy's | mean JCT (h) | p50 (h) | p99 (h) | Synergy's mean / p50 / p99 (h) "
          "| ours / Synergy's mean, p99 | wall (s) per run | audit |", flush=True)  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        results = pool.map(measure, tasks)
        for row in rows:
            runs = [next(results) for _ in range(args.runs)]
            print(_row(row, runs, theirs), flush=True)


def _row(
    row: str,
    runs: list[tuple[tuple[float, ...], float, bool]],
    theirs: dict[str, tuple[str, float | None, float | None, float | None]],
) -> str:
    """The table's line of ``row``: its ``runs`` against Synergy's figures (``theirs``)."""
    figures = [r[0] for r in runs]
    spread = max(f[0] for f in figures) - min(f[0] for f in figures)
    mean, p50, p99 = figures[0]
    name, mean_s, p50_s, p99_s = theirs.get(row, ("-", None, None, None))
    peer = "-" if mean_s is None else " / ".join(
        "-" if x is None else f"{x:.2f}" for x in (mean_s, p50_s, p99_s)
    )  # fmt: skip
    ratio = "-" if mean_s is None or p99_s is None else f"{mean / mean_s:.3f}, {p99 / p99_s:.3f}"
    wall = ", ".join(f"{r[1]:.1f}" for r in runs)
    valid = "valid" if all(r[2] for r in runs) else "INVALID"
    noise = f" (runs differ by {spread:.3f})" if spread > 0 else ""
    return (f"| {row} | {name} | {mean:.2f}{noise} | {p50:.2f} | {p99:.2f} | {peer} | {ratio} "
            f"| {wall} | {valid} |")  # fmt: skip


if __name__ == "__main__":
    main()

"""How fast a cluster's history comes in (issue 57): a generated ``sacct -P`` file of
``--lines`` lines (a job, its batch step, now and then a job that never started or ran
on CPUs only), read by :func:`planner.dl.slurm.read_sacct`, and the same jobs written as
a Helios ``cluster_log.csv``, read by :func:`planner.dl.histories.import_history`. Run
from the repository's top folder::

    python benchmarks/bench_import.py [--lines 1000000] [--runs 2]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from planner.dl.histories import import_history
from planner.dl.slurm import read_sacct

HEADER = (
    "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|"
    "ReqTRES|NNodes|NodeList|Timelimit"
)


def write_files(lines: int, folder: Path) -> tuple[Path, Path]:
    """A sacct file of ``lines`` lines and a Helios file of its jobs (seed 0)."""
    rng = random.Random(0)
    sacct, helios = folder / "sacct.txt", folder / "cluster_log.csv"
    with sacct.open("w") as s, helios.open("w") as h:
        s.write(HEADER + "\n")
        h.write("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                "end_time,duration,queue\n")  # fmt: skip
        k, t = 0, 0
        while k < lines - 1:
            t += rng.randint(0, 120)
            gpus = rng.choice((1, 1, 2, 4, 8))
            seconds = rng.randint(60, 86400)
            day, rest = divmod(t, 86400)
            stamp = f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{rest // 3600:02d}:" \
                    f"{rest // 60 % 60:02d}:{rest % 60:02d}"  # fmt: skip
            h_, m_ = divmod(seconds, 3600)
            kind = rng.random()
            start = "Unknown" if kind < 0.05 else stamp
            tres = f"cpu={4 * gpus},mem={16 * gpus}G,node=1" + (
                "" if kind < 0.1 else f",gres/gpu={gpus}"
            )
            s.write(f"{k}|job{k}|u|a|gpu|{stamp}|{start}|{stamp}|{h_:02d}:{m_ // 60:02d}:"
                    f"{m_ % 60:02d}|COMPLETED|0:0|{tres}||1|node{k % 64}|1-00:00:00\n")  # fmt: skip
            s.write(f"{k}.batch|batch|||||{stamp}|{stamp}|00:00:01|COMPLETED|0:0|cpu=1||1|"
                    f"node{k % 64}|\n")  # fmt: skip
            h.write(f"j{k},u,vc,{0 if kind < 0.1 else gpus},{4 * gpus},1,COMPLETED,"
                    f"{stamp.replace('T', ' ')},{'' if kind < 0.05 else stamp.replace('T', ' ')},"
                    f",{seconds},0\n")  # fmt: skip
            k += 2
    return sacct, helios


def main() -> None:
    """Write the files, read each ``--runs`` times, print the rates."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sacct, helios = write_files(args.lines, Path(tmp))
        print("| file | lines | jobs in | left out | seconds per run | jobs per second |")
        print("|---|---|---|---|---|---|")
        for _ in range(args.runs):
            t0 = time.perf_counter()
            history = read_sacct(sacct)
            wall = time.perf_counter() - t0
            jobs = len(history.jobs)
            print(f"| sacct | {history.lines:,} | {jobs:,} | {history.skipped.line()} | "
                  f"{wall:.1f} | {jobs / wall:,.0f} |")  # fmt: skip
        for _ in range(args.runs):
            t0 = time.perf_counter()
            data, left = import_history(helios, "helios")
            wall = time.perf_counter() - t0
            jobs = len(data["jobs"])
            print(f"| helios | {args.lines // 2:,} | {jobs:,} | {left} | {wall:.1f} | "
                  f"{jobs / wall:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()

"""Hybrid-parallel jobs (issue 55): ``goodput`` choosing every job's parallel plan and GPU
count together, against fixed policies that run each job on its own GPUs at the fastest
plan there that fits. Seeded batches of ``planner generate --hybrid`` (transformers of
0.35 to 6.7 billion parameters; Muri's GPU mix; Poisson arrivals) on 4 nodes of 8 GPUs,
at two GPU memories. Run from the repository's top folder::

    python benchmarks/bench_hybrid.py [--seeds 1,2,3,4] [--jobs 60] [--rate 4]
        [--memory 16,40] [--runs 2]

Every run is audited (plans of the set's GPU count, within the GPUs' memory). The model:
fluid, no slowdown factors, one job per GPU set (no co-location). Mean and p99 JCT and
makespan in seconds; ``ratio``: goodput's mean JCT over the best fixed policy's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from statistics import fmean

import yaml

import planner
from planner.dl.hybrid import generate_hybrid
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from planner.interleave import Interleave

POLICIES = ("goodput", "fifo", "srtf", "muri-s")
NODES, PER_NODE = 4, 8


def one(path: str, policy: str, memory: float) -> tuple[float, float, float, float]:
    """One audited run: mean JCT, p99 JCT, makespan, wall seconds."""
    jobs = list(jobs_from_instance(path).jobs)
    model = Interleave("fluid", max_colocated=1, factors=None, gpu_memory=memory)
    started = time.perf_counter()
    run = planner.run_policy(jobs, policy, nodes=NODES, gpus_per_node=PER_NODE, interleave=model)
    wall = time.perf_counter() - started
    wrong = audit(run, jobs, NODES * PER_NODE)
    assert run.finished and not wrong, wrong[:3]
    return run.mean_jct, run.p99_jct, run.makespan, wall


def main() -> None:
    """Print one table row per GPU memory and seed, then the means."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3,4")
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--rate", type=float, default=4.0, help="Jobs per hour.")
    parser.add_argument("--memory", default="16,40", help="GB per GPU, comma-separated.")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| GB | seed | " + " | ".join(f"{p} mean / p99" for p in POLICIES) + " | ratio |")
    print("|---|---|" + "---|" * (len(POLICIES) + 1))
    with tempfile.TemporaryDirectory() as folder:
        for memory in (int(m) for m in args.memory.split(",")):
            ratios, walls = [], []
            for seed in seeds:
                data = generate_hybrid(args.jobs, seed, NODES, PER_NODE, memory, args.rate)
                path = f"{folder}/h{memory}-{seed}.yaml"
                with open(path, "w") as f:
                    yaml.safe_dump(data, f)
                figures = {}
                for policy in POLICIES:
                    runs = [one(path, policy, memory) for _ in range(args.runs)]
                    assert len({r[:3] for r in runs}) == 1, runs  # deterministic
                    figures[policy] = runs[0]
                    if policy == "goodput":
                        walls += [r[3] for r in runs]
                best = min(figures[p][0] for p in POLICIES if p != "goodput")
                ratios.append(figures["goodput"][0] / best)
                cells = " | ".join(f"{figures[p][0]:,.0f} / {figures[p][1]:,.0f}" for p in POLICIES)
                print(f"| {memory} | {seed} | {cells} | {ratios[-1]:.3f} |", flush=True)
            print(f"| {memory} | mean ratio {fmean(ratios):.3f}; goodput {min(walls):.2f} to "
                  f"{max(walls):.2f} s a run | | | | | |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

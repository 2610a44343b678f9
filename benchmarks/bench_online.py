"""Online job completion time: policies and the online planner, with fairness (issue 43).

Every run is the job-level executor's under Muri's interleaving model (``muri``), on
8 x 8 GPUs, and passes the audit. Parts (``--part``):

- ``testbed``: Muri's testbed trace (400 jobs with arrivals) in two settings: Muri's
  slowdown factors and restart overheads (``muri``), and factors 1 without overheads
  (``ideal``). Per policy: mean and p99 JCT and both over ``muri-s``'s, the worst
  finish-time fairness and the share of jobs above 1, Jain's index, the longest wait,
  the makespan, and the online planner's re-plan time per event.
- ``curve``: ``ftf-groups`` at several biases and ``fair-groups`` at several caps on the
  testbed trace, both settings: mean JCT against worst finish-time fairness, beside
  ``tiresias``, ``muri-l``, ``muri-s`` and ``jct-groups``.
- ``loads``: generated batches of 400 jobs (``generate_batch(400, seed, arrival_rate=R)``)
  at three loads: half, once and 1.5 times the cluster's capacity (the rate ``R`` that
  brings that much GPU work per hour, at the jobs' periods alone), ``muri`` setting.
- ``classes``: the testbed trace with Muri's ``priority`` column as classes (strict
  classes): the figures per class.

    python benchmarks/bench_online.py --benchmarks ../shared/benchmarks --part testbed
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from planner.dl.workloads import generate_batch
from planner.executor.audit import audit
from planner.executor.fairness import fairness
from planner.executor.loop import ExecutorRun, run_policy
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance, read_trace
from planner.executor.policies import policy_of
from planner.executor.policies.ftf_groups import FairGroups, FtfGroups
from planner.interleave import MURI_GROUP_FACTORS, Interleave
from planner.replay.planner_policy import SearchPlanner

POLICIES = (
    "muri-s",
    "muri-l",
    "tiresias",
    "srsf-pack",
    "jct-groups",
    "ftf-groups",
    "fair-groups",
    "planner",
)
"""The policies of parts ``testbed`` and ``loads`` (``planner``: 1 s per event)."""

BIASES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 32.0)
"""The biases of ``ftf-groups`` on the trade-off curve."""
CAPS = (4.0, 3.0, 2.0, 1.5, 1.2)
"""The caps of ``fair-groups`` (bias 2) on the trade-off curve."""

LOADS = (0.5, 1.0, 1.5)
"""The loads of part ``loads``, as shares of the cluster's capacity."""

SETTINGS = {"muri": (MURI_GROUP_FACTORS, True), "ideal": (None, False)}
"""Per setting: the slowdown factors and whether restart overheads are charged."""

GPUS = 64


def one(jobs: list[ExecutorJob], policy: Any, setting: str) -> tuple[ExecutorRun, float]:
    """The run of ``policy`` (a name or a policy) and its wall time; it must pass the
    audit."""
    factors, restart = SETTINGS[setting]
    model = Interleave("muri", factors=factors)
    t0 = time.perf_counter()
    run = run_policy(jobs, policy_of(policy), interleave=model, restart=restart)
    wall = time.perf_counter() - t0
    wrong = audit(run, jobs, GPUS)
    if wrong:
        raise SystemExit(f"{policy}: the audit fails: {wrong[0]}")
    return run, wall


def row(
    label: str, run: ExecutorRun, jobs: list[ExecutorJob], base: ExecutorRun | None, wall: float
) -> str:
    """One table line of a run."""
    f = fairness(run, jobs, GPUS).overall
    ratio = (
        f"{run.mean_jct / base.mean_jct:.3f} | {run.p99_jct / base.p99_jct:.3f}"
        if base is not None
        else "- | -"
    )
    plans = run.planning
    replan = f"{np.mean(plans):.3f} / {max(plans):.3f}" if plans else "-"
    return (
        f"| {label} | {run.mean_jct:,.0f} | {run.p99_jct:,.0f} | {ratio} | {f.ftf_max:.2f} | "
        f"{100 * f.ftf_over:.1f}% | {f.jain:.3f} | {f.longest_wait:,.0f} | "
        f"{run.makespan:,.0f} | {replan} | {wall:.1f} |"
    )


HEADER = (
    "| {what} | mean JCT (s) | p99 JCT (s) | mean x muri-s | p99 x muri-s | worst FTF | "
    "FTF > 1 | Jain | longest wait (s) | makespan (s) | re-plan mean / max (s) | wall (s) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def make(name: str, time_limit: float) -> Any:
    """The policy ``name`` (``planner`` with its budget per event)."""
    return SearchPlanner(time_limit=time_limit) if name == "planner" else name


def testbed(args: argparse.Namespace) -> None:
    """Part ``testbed``."""
    jobs = read_trace(args.benchmarks / "dl" / "muri_testbed_trace.csv")
    print(HEADER.format(what="setting, policy"))
    for setting in ("muri", "ideal"):
        base = None
        for name in args.policy or POLICIES:
            run, wall = one(jobs, make(name, args.time_limit), setting)
            base = base or (run if name == "muri-s" else one(jobs, "muri-s", setting)[0])
            print(row(f"{setting}, {name}", run, jobs, base, wall), flush=True)


def curve(args: argparse.Namespace) -> None:
    """Part ``curve``."""
    jobs = read_trace(args.benchmarks / "dl" / "muri_testbed_trace.csv")
    print(HEADER.format(what="setting, policy"))
    for setting in ("muri", "ideal"):
        base, _ = one(jobs, "muri-s", setting)
        for name in ("muri-s", "muri-l", "tiresias", "jct-groups"):
            run, wall = one(jobs, name, setting)
            print(row(f"{setting}, {name}", run, jobs, base, wall), flush=True)
        for bias in BIASES:
            run, wall = one(jobs, FtfGroups(bias=bias), setting)
            print(row(f"{setting}, ftf-groups, bias {bias:g}", run, jobs, base, wall), flush=True)
        for cap in CAPS:
            run, wall = one(jobs, FairGroups(cap=cap), setting)
            print(row(f"{setting}, fair-groups, cap {cap:g}", run, jobs, base, wall), flush=True)


def batch(seed: int, load: float | None, folder: Path) -> list[ExecutorJob]:
    """400 generated jobs at ``load`` times the cluster's capacity (``None``: at 0)."""
    path = folder / f"g{seed}_{load}.json"
    if load is None:
        path.write_text(json.dumps(generate_batch(400, seed=seed, placement="node")))
        return jobs_from_instance(path).jobs
    work = np.mean([j.gpus * j.duration for j in batch(seed, None, folder)])
    rate = load * GPUS / work * 3600
    path.write_text(json.dumps(generate_batch(400, seed=seed, placement="node", arrival_rate=rate)))
    return jobs_from_instance(path).jobs


def loads(args: argparse.Namespace) -> None:
    """Part ``loads``."""
    print(HEADER.format(what="load, policy"))
    with tempfile.TemporaryDirectory() as tmp:
        for load in LOADS:
            jobs = batch(args.seed, load, Path(tmp))
            base = None
            for name in args.policy or POLICIES:
                run, wall = one(jobs, make(name, args.time_limit), "muri")
                base = base or (run if name == "muri-s" else one(jobs, "muri-s", "muri")[0])
                print(row(f"{load:g}, {name}", run, jobs, base, wall), flush=True)


def classes(args: argparse.Namespace) -> None:
    """Part ``classes``."""
    source = args.benchmarks / "dl" / "muri_testbed_trace.csv"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "classes.csv"
        with source.open(newline="") as f:
            rows = list(csv.DictReader(f))
        with path.open("w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=[*rows[0], "class"])
            out.writeheader()
            out.writerows({**r, "class": r["priority"]} for r in rows)
        jobs = read_trace(path)
    print("| policy | class | jobs | mean JCT (s) | p99 JCT (s) | longest wait (s) | worst FTF |")
    print("|---|---|---|---|---|---|---|")
    for name in args.policy or ("muri-s", "jct-groups", "ftf-groups", "fair-groups", "srsf-pack"):
        run, _ = one(jobs, make(name, args.time_limit), "muri")
        fair = fairness(run, jobs, GPUS)
        for level, f in fair.classes.items():
            print(f"| {name} | {level} | {f.jobs} | {f.mean_jct:,.0f} | {f.p99_jct:,.0f} | "
                  f"{f.longest_wait:,.0f} | {f.ftf_max:.2f} |", flush=True)  # fmt: skip


PARTS = {"testbed": testbed, "curve": curve, "loads": loads, "classes": classes}


def main() -> int:
    """Run the part asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True, help="the shared benchmarks")
    parser.add_argument("--part", choices=PARTS, required=True)
    parser.add_argument("--policy", action="append", help="only these policies (repeat)")
    parser.add_argument("--time-limit", type=float, default=1.0, help="planner: s per event")
    parser.add_argument("--seed", type=int, default=0, help="loads: the generator's seed")
    args = parser.parse_args()
    PARTS[args.part](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

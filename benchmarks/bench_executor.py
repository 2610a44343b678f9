"""One executor: what a DL plan delivers, online planning beside the policies, and the
executor's speed at scale.

Parts (``--part``):

- ``online``: Muri's testbed trace (400 jobs with arrivals, 8 x 8 GPUs), imported on
  nodes; the planner online (re-planning at every arrival with each ``--solver``) beside
  ``muri-s``, ``srsf-pack`` and ``srtf``, in one model and one table: ``--interleave``
  (default ``muri``) with factors 1 and no restart overhead (``ideal``), and with Muri's
  factors and restart overheads (``muri``); each re-plan optimises ``--objective``
  (default ``weighted_completion``). Mean and p99 JCT, makespan, mean wait (s),
  the planner's mean and longest re-plan (s), and each run's audit.
- ``monte-carlo``: the plan of ``sgs`` for trace3' (992 jobs, imported on nodes), 100
  noisy runs (``lognormal:0.1``) on 2 processes through ``planner study``: wall time
  and the peak memory of the largest process.
- ``scale``: 5,755 generated jobs (``generate --jobs 5755 --seed 4 --placement node``),
  the ``sgs`` plan run once: the executor's run time.

    python benchmarks/bench_executor.py --benchmarks ../shared/benchmarks --part online \\
        --solver sgs --solver portfolio:1
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from planner.dl.workloads import generate_batch, import_muri
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from planner.executor.runs import Setting, dispatch_of, workload_problem
from planner.io.instance import load_instance
from planner.replay.planner_policy import online_planner
from planner.solvers import solve

POLICIES = ("muri-s", "srsf-pack", "srtf")
"""The policies beside the planner."""


def online(args: argparse.Namespace, folder: Path) -> None:
    """The planner online beside the policies on the testbed trace."""
    path = folder / "testbed.json"
    trace = args.benchmarks / "dl" / "muri_testbed_trace.csv"
    data = import_muri(trace, placement="node")
    data["objective"] = args.objective
    path.write_text(json.dumps(data))
    workload = jobs_from_instance(path)
    problem = workload_problem(path)
    print("| setting | policy | mean JCT (s) | p99 JCT (s) | makespan (s) | mean wait (s) |"
          " re-plan mean / max (s) | x muri-s mean JCT | audit | wall (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, slowdown, restart in (("ideal", "none", False), ("muri", "muri", True)):
        setting = Setting(args.interleave, None, slowdown, restart)
        rows: list[tuple[str, Any, float]] = []
        for solver in args.solver:
            solver_name, _, limit = solver.partition(":")
            options = {"time_limit": float(limit)} if limit else {}
            dispatch = dispatch_of(workload, setting, "planner")
            dispatch.make = online_planner(problem, solver_name, **options)
            t0 = time.perf_counter()
            rows.append((f"planner {solver}", (dispatch, dispatch.run()), time.perf_counter() - t0))
        for policy in POLICIES:
            dispatch = dispatch_of(workload, setting, policy)
            t0 = time.perf_counter()
            rows.append((policy, (dispatch, dispatch.run()), time.perf_counter() - t0))
        base = next(run.mean_jct for label, (_, run), _ in rows if label == "muri-s")
        for label, (dispatch, run), wall in rows:
            waits = [run.started[j] - run.release[j] for j in run.finish]
            plans = run.planning
            replan = f"{sum(plans) / len(plans):.3f} / {max(plans):.3f}" if plans else "-"
            ok = "valid" if not audit(run, dispatch.jobs, 64) else "INVALID"
            print(f"| {args.interleave}, {name} | {label} | {run.mean_jct:,.0f} | "
                  f"{run.p99_jct:,.0f} | {run.makespan:,.0f} | {sum(waits) / len(waits):,.0f} | "
                  f"{replan} | {run.mean_jct / base:.3f} | {ok} | {wall:.1f} |")  # fmt: skip
            sys.stdout.flush()


def monte_carlo(args: argparse.Namespace, folder: Path) -> None:
    """100 noisy runs of the trace3' sgs plan on 2 processes, through the command line."""
    path, plan = folder / "t3.json", folder / "plan.json"
    trace = args.benchmarks / "dl" / "muri_trace3_offline.csv"
    path.write_text(json.dumps(import_muri(trace, placement="node")))
    result = solve(load_instance(path), "sgs")
    assert result.schedule is not None
    result.schedule.save(plan, load_instance(path))
    command = [sys.executable, "-m", "planner", "study", str(path), str(plan), "--noise",
               "lognormal:0.1", "--runs", "100", "--jobs", "2"]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    table = [line for line in done.stdout.splitlines() if line.startswith(("100 runs", "make"))]
    print(f"100 runs on 2 processes: {wall:.1f} s wall, largest process {peak:.0f} MB")
    print("\n".join(table))


def scale(args: argparse.Namespace, folder: Path) -> None:
    """One run of the sgs plan of 5,755 generated jobs."""
    path = folder / "g.json"
    path.write_text(json.dumps(generate_batch(5755, seed=4, placement="node")))
    problem = load_instance(path)
    result = solve(problem, "sgs")
    assert result.schedule is not None
    dispatch = dispatch_of(jobs_from_instance(path), Setting(), plan=(problem, result.schedule))
    t0 = time.perf_counter()
    run = dispatch.run()
    wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    wrong = audit(run, dispatch.jobs, 64)
    check = time.perf_counter() - t1
    print(f"5,755 jobs: run {wall:.1f} s ({run.events} events), audit {check:.1f} s "
          f"({'valid' if not wrong else 'INVALID'}); makespan {run.makespan:,.0f} s, planned "
          f"{dispatch.planned:,.0f} s")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True, help="the shared benchmarks")
    parser.add_argument("--part", choices=("online", "monte-carlo", "scale"), required=True)
    parser.add_argument("--solver", action="append", help="online: SOLVER[:TIME_LIMIT]")
    parser.add_argument("--interleave", choices=("muri", "fluid"), default="muri")
    parser.add_argument(
        "--objective",
        choices=("makespan", "weighted_completion"),
        default="weighted_completion",
        help="online: what each re-plan optimises",
    )
    args = parser.parse_args()
    args.solver = args.solver or ["sgs"]
    if not all(re.fullmatch(r"[a-z-]+(:[\d.]+)?", s) for s in args.solver):
        parser.error("--solver: SOLVER or SOLVER:TIME_LIMIT")
    with tempfile.TemporaryDirectory() as tmp:
        {"online": online, "monte-carlo": monte_carlo, "scale": scale}[args.part](args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())

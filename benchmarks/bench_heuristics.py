"""Benchmark of the heuristics: the Kolisch-Hartmann protocol on PSPLIB, speed and scale.

Quality: mean % deviation from the optimum on J30 (``opt_j30opt`` of
``bks_j30.csv``) and from the critical-path bound (the ``MPM-Time`` of each
file) on J120, at fixed budgets of generated schedules (every SGS pass counts,
justification passes too). Every schedule is validated (``solvers.solve``
runs the validator). Speed: generated schedules per second on J120, one core.
Scale: a random 10,000-task instance, time to a feasible schedule and peak RSS.

Examples::

    python benchmarks/bench_heuristics.py quality --set j30 --solver ga --schedules 1000 5000
    python benchmarks/bench_heuristics.py speed --limit 60
    python benchmarks/bench_heuristics.py scale --tasks 10000
"""

from __future__ import annotations

import argparse
import csv
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner import load_instance  # noqa: E402
from planner.io.psplib_io import mpm_time  # noqa: E402
from planner.model import Mode as TaskMode  # noqa: E402
from planner.model import Precedence, Problem, Resource, Segment, Task  # noqa: E402
from planner.solvers import solve  # noqa: E402


def _instances(bench: Path, which: str, limit: int | None) -> list[tuple[Path, int]]:
    """Instance files of ``which`` with their reference value (optimum or MPM-Time)."""
    folder = bench / "psplib_sm" / which
    files = sorted(folder.glob("*.sm"), key=lambda p: [int(x) for x in p.stem[3:].split("_")])
    if which == "j30":
        with open(bench / "psplib_sm" / "bks_j30.csv") as fh:
            opt = {row["instance"]: int(row["opt_j30opt"]) for row in csv.DictReader(fh)}
        out = [(f, opt[f.stem]) for f in files]
    else:
        out = [(f, mpm_time(f)) for f in files]
    return out[:limit] if limit else out


def quality(args: argparse.Namespace) -> None:
    """Mean deviation per solver and budget; prints a Markdown table."""
    rows = []
    for which in args.set:
        items = _instances(args.bench, which, args.limit)
        problems = [(load_instance(f), ref) for f, ref in items]
        for solver in args.solver:
            for budget in args.schedules:
                t0 = time.perf_counter()
                devs, used = [], 0
                for problem, ref in problems:
                    res = solve(problem, solver, schedules=budget, seed=args.seed)
                    assert res.valid, problem.name
                    devs.append(100.0 * (res.objective - ref) / ref)
                    used += res.stats["schedules"]
                elapsed = time.perf_counter() - t0
                ref_name = "optimum" if which == "j30" else "CPM bound"
                rows.append(
                    (
                        which.upper(),
                        solver,
                        budget,
                        len(devs),
                        ref_name,
                        statistics.mean(devs),
                        sum(d == 0 for d in devs),
                        elapsed,
                    )
                )
                print(f"{rows[-1]}", file=sys.stderr, flush=True)
    print(
        "| set | solver | schedules | instances | deviation from | mean dev. % | "
        "at reference | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for s, solver, b, n, ref, dev, hits, el in rows:
        print(f"| {s} | {solver} | {b:,} | {n} | {ref} | {dev:.2f} | {hits} | {el:.1f} |")


def speed(args: argparse.Namespace) -> None:
    """Generated schedules per second (GA, justification included) on J120, no early stop."""
    items = _instances(args.bench, "j120", args.limit)
    problems = [load_instance(f) for f, _ in items]
    for solver in args.solver:
        solve(problems[0], solver, schedules=200)  # compile the kernels outside the timing
    for solver in args.solver:
        total, elapsed = 0, 0.0
        for problem in problems:
            res = solve(problem, solver, schedules=args.budget, seed=args.seed)
            # Early stops at the bound would flatter the rate: count the time actually spent.
            total += res.stats["schedules"]
            elapsed += res.runtime
        print(
            f"| {solver} | {len(problems)} J120 instances | {total:,} schedules | "
            f"{elapsed:.2f} s | {total / elapsed:,.0f} schedules/s |"
        )


def random_instance(n_tasks: int, seed: int) -> Problem:
    """A J120-like random instance: 4 resources, durations 1-10, 1-3 recent predecessors."""
    rng = np.random.default_rng(seed)
    names = [f"r{k}" for k in range(4)]
    resources = [Resource(name=r, capacity=20) for r in names]
    tasks, precs = [], []
    for i in range(n_tasks):
        demand = {r: int(q) for r, q in zip(names, rng.integers(0, 8, 4), strict=True) if q}
        seg = Segment(duration=int(rng.integers(1, 11)), demand=demand)
        tasks.append(Task(name=f"t{i}", modes=[TaskMode(segments=[seg])]))
        if i:
            for b in set(rng.integers(max(0, i - 60), i, int(rng.integers(1, 4))).tolist()):
                precs.append(Precedence(before=f"t{b}", after=f"t{i}"))
    return Problem(name=f"random{n_tasks}", resources=resources, tasks=tasks, precedences=precs)


def scale(args: argparse.Namespace) -> None:
    """Time to a feasible schedule on a large random instance, and peak RSS."""
    t0 = time.perf_counter()
    problem = random_instance(args.tasks, args.seed)
    built = time.perf_counter() - t0
    for solver, options in (("sgs", {}), ("ga", {"time_limit": args.time_limit})):
        t1 = time.perf_counter()
        res = solve(problem, solver, seed=args.seed, **options)
        wall = time.perf_counter() - t1
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"| {solver} | {args.tasks:,} tasks | built in {built:.1f} s | "
            f"makespan {res.objective:g} (CPM {res.lower_bound:g}) | "
            f"{res.stats['schedules']} schedules | solve {wall:.2f} s | "
            f"valid {res.valid} | peak RSS {rss:.0f} MiB |"
        )


def main() -> None:
    """Parse the command line and run one benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--benchmarks",
        "--bench",
        dest="bench",
        type=Path,
        default=ROOT.parent / "shared" / "benchmarks",
        help="Benchmark folder (with psplib_sm/).",
    )
    parser.add_argument("--seed", type=int, default=0)
    sub = parser.add_subparsers(dest="what", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--set", nargs="+", default=["j30", "j120"], choices=["j30", "j120"])
    q.add_argument("--solver", nargs="+", default=["ga", "pso"])
    q.add_argument("--schedules", nargs="+", type=int, default=[1000, 5000])
    q.add_argument("--limit", type=int, default=None, help="Only the first N instances.")
    s = sub.add_parser("speed")
    s.add_argument("--solver", nargs="+", default=["ga", "pso"])
    s.add_argument("--budget", type=int, default=50000)
    s.add_argument("--limit", type=int, default=60)
    c = sub.add_parser("scale")
    c.add_argument("--tasks", type=int, default=10000)
    c.add_argument("--time-limit", type=float, default=5.0)
    args = parser.parse_args()
    {"quality": quality, "speed": speed, "scale": scale}[args.what](args)


if __name__ == "__main__":
    main()

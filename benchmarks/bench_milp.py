"""MILP benchmark: proven optima of the time-indexed MILP with CBC and HiGHS.

Two sets: a stratified sample of PSPLIB J30 (``--per-class`` instances of each
of the 48 parameter classes) compared with the published optima, and small
cluster-form instances with time-varying demands generated here. Every
instance is solved by each MILP backend and, when the ``cpsat`` solver is
registered, by CP-SAT; every schedule passes the validator (``solvers.solve``
checks it). Each run writes one CSV row as it finishes; the script prints
Markdown tables.

    python benchmarks/bench_milp.py --benchmarks ../shared/benchmarks --per-class 1 \\
        --time-limit 60 --cpsat-time-limit 10 --out milp_runs.csv
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

from planner.dl.cluster import compile_cluster
from planner.dl.specs import ClusterInstance
from planner.io.instance import load_instance
from planner.model import Problem
from planner.solvers import solve
from planner.solvers.registry import SOLVERS
from planner.validate import validate

FIELDS = ["set", "instance", "solver", "status", "objective", "bound", "runtime", "valid", "best"]


def j30_sample(
    folder: Path, classes: list[int], per_class: int, seed: int
) -> list[tuple[str, Path, int]]:
    """``per_class`` instances of each J30 parameter class in ``classes``, with their optimum."""
    best: dict[str, int] = {}
    with open(folder / "bks_j30.csv") as f:
        for row in csv.DictReader(f):
            best[row["instance"]] = int(row["best_ub"])
    rng = random.Random(seed)
    picks = []
    for param in classes:
        for inst in sorted(rng.sample(range(1, 11), per_class)):
            name = f"j30{param}_{inst}"
            picks.append((name, folder / "j30" / f"{name}.sm", best[name]))
    return picks


def cluster_instance(k: int) -> Problem:
    """A small cluster-form instance: a few jobs of 1-3 blocks of data/gpu/sync segments."""
    rng = random.Random(1000 + k)
    jobs = []
    for j in range(rng.randint(3, 5)):
        iterations = rng.randint(2, 6)
        jobs.append(
            {
                "name": f"job{j}",
                "gpus": rng.choice([1, 2, 4]),
                "iterations": iterations,
                "blocks": rng.randint(1, min(3, iterations)),
                "stages": {
                    "data": rng.choice([0.5, 1.0, 1.5, 2.0]),
                    "gpu": rng.choice([1.0, 2.0, 3.0, 4.0]),
                    "sync": rng.choice([0.0, 0.5, 1.0]),
                },
                "cpu_per_gpu": 2,
                "weight": rng.choice([1.0, 2.0, 3.0]),
                "stage_in": rng.choice([0.0, 0.0, 1.0]),
            }
        )
    return compile_cluster(
        ClusterInstance.model_validate(
            {
                "name": f"cluster{k + 1}",
                "time_unit": "500ms",
                "objective": "makespan" if k % 2 == 0 else "weighted_completion",
                "cluster": {
                    "nodes": [{"name": "n", "count": 2, "gpu": 4, "cpu": 8, "io": 2, "net": 2}]
                },
                "jobs": jobs,
            }
        )
    )


def run(
    set_name: str, name: str, problem: Problem, solver: str, best: float | None, **options: object
) -> dict[str, object]:
    """Solve once and return the CSV row."""
    result = solve(problem, solver, workers=1, **options)
    valid = result.schedule is not None and validate(problem, result.schedule).ok
    label = solver
    if solver == "milp":
        label = f"milp-{options['backend']}" + (
            "" if options.get("cliques", True) else "-nocliques"
        )
    return {
        "set": set_name,
        "instance": name,
        "solver": label,
        "status": str(result.status),
        "objective": result.objective,
        "bound": result.lower_bound,
        "runtime": round(result.runtime, 2),
        "valid": valid,
        "best": best,
    }


def summary(rows: list[dict[str, object]]) -> str:
    """One Markdown table per set: proven optima, agreement with the reference, validity."""
    out = []
    by_set: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        by_set[str(r["set"])].append(r)
    for set_name, runs in by_set.items():
        optimum: dict[str, set[float]] = defaultdict(set)
        for r in runs:
            if r["status"] == "optimal":
                optimum[str(r["instance"])].add(float(r["objective"]))  # type: ignore[arg-type]
        out.append(
            f"\n{set_name}\n\n| solver | runs | proven optimal | optimum = published | "
            "optimum = other solvers' | valid schedules | mean runtime (s) |\n"
            "|---|---|---|---|---|---|---|"
        )
        solvers = sorted({str(r["solver"]) for r in runs})
        for s in solvers:
            mine = [r for r in runs if r["solver"] == s]
            opt = [r for r in mine if r["status"] == "optimal"]
            published = [r for r in opt if r["best"] not in (None, "")]
            equal_pub = sum(float(r["objective"]) == float(r["best"]) for r in published)  # type: ignore[arg-type]
            agree = sum(len(optimum[str(r["instance"])]) == 1 for r in opt)
            pub = f"{equal_pub}/{len(published)}" if published else "-"
            mean = sum(float(r["runtime"]) for r in mine) / len(mine)  # type: ignore[arg-type]
            out.append(
                f"| {s} | {len(mine)} | {len(opt)} ({100 * len(opt) / len(mine):.0f}%) | {pub} | "
                f"{agree}/{len(opt)} | {sum(bool(r['valid']) for r in mine)}/{len(mine)} | "
                f"{mean:.1f} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, write the CSV and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    parser.add_argument("--per-class", type=int, default=1, help="J30 instances per class.")
    parser.add_argument(
        "--classes",
        nargs="+",
        type=int,
        default=list(range(1, 49)),
        help="J30 parameter classes (1-48) to sample.",
    )
    parser.add_argument("--cluster", type=int, default=20, help="Generated cluster instances.")
    parser.add_argument("--time-limit", type=float, default=60.0, help="Seconds per MILP run.")
    parser.add_argument("--cpsat-time-limit", type=float, default=10.0)
    parser.add_argument("--backends", nargs="+", default=["cbc", "highs"])
    parser.add_argument(
        "--cliques",
        nargs="+",
        choices=["on", "off"],
        default=["on"],
        help="MILP runs with the clique cuts, without them, or both side by side.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the J30 sample.")
    parser.add_argument("--out", type=Path, default=Path("milp_runs.csv"))
    args = parser.parse_args(argv)

    cases: list[tuple[str, str, Problem, float | None]] = [
        ("cluster", f"cluster{k + 1}", cluster_instance(k), None) for k in range(args.cluster)
    ]
    if args.per_class:
        folder = args.benchmarks / "psplib_sm"
        cases += [
            ("j30", name, load_instance(path), best)
            for name, path, best in j30_sample(folder, args.classes, args.per_class, args.seed)
        ]
    with_cpsat = "cpsat" in SOLVERS
    rows = []
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for set_name, name, problem, best in cases:
            runs = [
                ("milp", {"backend": b, "time_limit": args.time_limit, "cliques": c == "on"})
                for b in args.backends
                for c in args.cliques
            ]
            if with_cpsat:
                runs.append(("cpsat", {"time_limit": args.cpsat_time_limit}))
            for solver, options in runs:
                row = run(set_name, name, problem, solver, best, **options)
                writer.writerow(row)
                f.flush()
                rows.append(row)
                print(",".join(str(row[k]) for k in FIELDS), file=sys.stderr, flush=True)
    print(
        f"bench_milp {date.today()} time limit {args.time_limit:g} s (MILP), "
        f"{args.cpsat_time_limit:g} s (CP-SAT), threads 1; cpsat available: {with_cpsat}"
    )
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

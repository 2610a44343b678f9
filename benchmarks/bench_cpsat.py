"""Benchmark the CP-SAT solvers (``portfolio``, ``cpsat``) on PSPLIB / MMLIB sets and a large
cluster-form instance.

Examples::

    python benchmarks/bench_cpsat.py --set j30 --time-limit 10 --workers 2 --out j30.csv
    python benchmarks/bench_cpsat.py --set j120 --sample 12 --time-limit 60 --peer pyjobshop
    python benchmarks/bench_cpsat.py --set cluster --time-limit 60

Every schedule (ours and the peer's) is checked with the project's validator.
``--sample N`` takes N instances spread over the parameter classes (class
``k * classes / N``, instance number cycling through 1..10). The peer runs in a
subprocess of the benchmark environment ``.bench-venv`` (see
``benchmarks/peer_pyjobshop.py``); it is never a dependency of the project.

``--out`` gets one row per run as soon as the run ends. A long run (the J120 sample of
120 took 2 h 16 min with the peer) can be stopped and continued later with
``--resume``: the runs already in ``--out`` are kept and skipped, and they count in the
summary. An existing ``--out`` is never overwritten without ``--resume``.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner import Schedule, load_instance, validate  # noqa: E402
from planner.dl.cluster import compile_cluster  # noqa: E402
from planner.dl.specs import ClusterInstance  # noqa: E402
from planner.result import Progress  # noqa: E402
from planner.solvers import solve  # noqa: E402

SETS = {
    # name: (folder, extension, reference CSV, instance column, best-known column)
    "j30": ("psplib_sm/j30", ".sm", "psplib_sm/bks_j30.csv", "instance", "best_ub"),
    "j120": ("psplib_sm/j120", ".sm", "psplib_sm/bks_j120.csv", "instance", "best_ub"),
    "j10mm": ("psplib_mm/j10", ".mm", "psplib_mm/bks_j10.csv", "instance", "makespan"),
    "mmlib50": ("mmlib/MMLIB50", ".mm", "mmlib/bks_MMLIB50.csv", "instance", "best_ub"),
}
FIELDS = [
    "instance",
    "solver",
    "status",
    "objective",
    "bound",
    "best_known",
    "gap_pct",
    "time_s",
    "time_limit",
    "workers",
]
_NUMBERS = ("objective", "bound", "gap_pct", "time_s")
"""The fields of a row that are numbers (read back as such by ``--resume``)."""
_NAME = re.compile(r"^[A-Za-z]+?(\d+)_(\d+)$")


def instance_files(folder: Path, ext: str, prefix_digits: int) -> list[tuple[int, int, Path]]:
    """``(class, number, path)`` of every instance, sorted by class and number."""
    out = []
    for path in folder.glob(f"*{ext}"):
        m = _NAME.match(path.stem)
        if m:
            out.append((int(m.group(1)[prefix_digits:]), int(m.group(2)), path))
    return sorted(out)


def stratified(files: list[tuple[int, int, Path]], n: int) -> list[Path]:
    """``n`` files spread evenly over the parameter classes."""
    classes = sorted({c for c, _, _ in files})
    by_key = {(c, k): p for c, k, p in files}
    picked = []
    for i in range(n):
        c = classes[i * len(classes) // n]
        k = i % 10 + 1
        picked.append(by_key.get((c, k)) or next(p for cc, _, p in files if cc == c))
    return picked


def best_known(path: Path, column: str, key: str) -> dict[str, int]:
    """Best-known makespan per instance name."""
    with path.open() as f:
        return {row[key]: int(row[column]) for row in csv.DictReader(f) if row[column]}


def gap_pct(value: float | None, best: int | None) -> float | None:
    """Percent above the best-known value."""
    if value is None or not best:
        return None
    return 100.0 * (value - best) / best


VARIANTS: dict[str, tuple[str, dict]] = {"portfolio-single": ("portfolio", {"split": False})}
"""Benchmark names of solvers with options: (solver, options)."""


def run_ours(path: Path, args: argparse.Namespace, solver: str) -> dict:
    """Solve with our ``solver`` (validated by the registry)."""
    problem = load_instance(path)
    name, options = VARIANTS.get(solver, (solver, {}))
    result = solve(problem, name, time_limit=args.time_limit, workers=args.workers, **options)
    assert result.schedule is None or validate(problem, result.schedule).ok
    return {
        "solver": solver,
        "status": result.status.value,
        "objective": result.objective,
        "bound": result.lower_bound,
        "time_s": result.runtime,
    }


def run_peer(path: Path, args: argparse.Namespace) -> dict:
    """Solve with PyJobShop in its own environment and validate its schedule."""
    python = ROOT / ".bench-venv" / "bin" / "python"
    cmd = [str(python), str(ROOT / "benchmarks" / "peer_pyjobshop.py"), str(path)]
    cmd += ["--time-limit", str(args.time_limit), "--workers", str(args.workers)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    out = json.loads(done.stdout.strip().splitlines()[-1])
    row = {"solver": "pyjobshop", "status": out["status"], "bound": out["bound"]}
    row["time_s"] = out["total_time"]
    row["wall_s"] = wall
    if out["makespan"] is None:
        return {**row, "objective": None}
    problem = load_instance(path)
    names = [t.name for t in problem.tasks]
    schedule = Schedule(
        modes={n: str(m) for n, m in zip(names, out["modes"], strict=True)},
        starts={n: int(s) for n, s in zip(names, out["starts"], strict=True)},
    )
    report = validate(problem, schedule)
    if not report.ok:
        raise SystemExit(f"{path.name}: PyJobShop schedule invalid: {report.violations[0]}")
    return {**row, "objective": schedule.makespan(problem)}


def summarise(rows: list[dict]) -> list[str]:
    """One table line per solver."""
    lines = [
        "| solver | instances | optimal | reach best known | mean gap % | max gap % "
        "| median time s | mean time s | max time s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for solver in dict.fromkeys(r["solver"] for r in rows):
        rs = [r for r in rows if r["solver"] == solver]
        gaps = [r["gap_pct"] for r in rs if r["gap_pct"] is not None]
        times = [r["time_s"] for r in rs]
        optimal = sum(r["status"].lower() == "optimal" for r in rs)
        reach = sum(g <= 1e-9 for g in gaps)
        mean_gap = f"{statistics.fmean(gaps):.2f}" if gaps else "-"
        max_gap = f"{max(gaps):.2f}" if gaps else "-"
        lines.append(
            f"| {solver} | {len(rs)} | {optimal} | {reach} | {mean_gap} | {max_gap} "
            f"| {statistics.median(times):.3f} | {statistics.fmean(times):.3f} "
            f"| {max(times):.3f} |"
        )
    return lines


class ResumeError(Exception):
    """``--out`` cannot be continued by this run (its message is the one-line error)."""


def _number(text: str | None) -> float | None:
    return float(text) if text else None


def _show(value: float | None) -> str:
    return "unknown" if value is None else f"{value:g}"


def earlier_rows(args: argparse.Namespace) -> list[dict]:
    """The runs already in ``args.out`` (with ``--resume``); they must share its settings."""
    if args.out is None or not args.out.exists():
        return []
    if not args.resume:
        raise ResumeError(f"{args.out} exists; pass --resume to continue it, or choose a new --out")
    rows = []
    with args.out.open(newline="") as f:
        for n, row in enumerate(csv.DictReader(f), 2):
            try:
                limit, workers = (_number(row.get(k)) for k in ("time_limit", "workers"))
                row.update({k: _number(row.get(k)) for k in _NUMBERS})
                row["instance"], row["solver"], row["status"] = (
                    row[k] or "" for k in ("instance", "solver", "status")
                )
            except (KeyError, TypeError, ValueError):
                raise ResumeError(f"{args.out}: line {n}: not a row of this benchmark") from None
            if (limit, workers) != (args.time_limit, args.workers):
                raise ResumeError(
                    f"{args.out}: {row['instance']} ran with time limit {_show(limit)} and "
                    f"workers {_show(workers)}, not {args.time_limit:g} and {args.workers}"
                )
            rows.append(row)
    return rows


class RowWriter:
    """Appends each run's row to ``--out`` (with the header once) as soon as it ends."""

    def __init__(self, path: Path | None, args: argparse.Namespace) -> None:
        self.path = path
        self.settings = {"time_limit": args.time_limit, "workers": args.workers}
        if path is not None and not path.exists():
            with path.open("w", newline="") as f:
                csv.DictWriter(f, fieldnames=FIELDS).writeheader()

    def write(self, row: dict) -> None:
        """Append ``row`` and the run's settings."""
        if self.path is None:
            return
        with self.path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            writer.writerow({**row, **self.settings})


def benchmark_set(args: argparse.Namespace, earlier: list[dict]) -> list[dict]:
    """Run ours (and the peer) on the instances of ``args.set`` not in ``earlier``."""
    folder, ext, ref, key, column = SETS[args.set]
    prefix = {"j30": 2, "j120": 3, "j10mm": 2, "mmlib50": 2}[args.set]
    files = instance_files(args.benchmarks / folder, ext, prefix)
    paths = stratified(files, args.sample) if args.sample else [p for _, _, p in files]
    best = best_known(args.benchmarks / ref, column, key)
    stems = {p.stem for p in paths}
    for r in earlier:
        if r["instance"] not in stems:
            raise ResumeError(f"{args.out}: {r['instance']} is not an instance of this run")
    rows = list(earlier)
    done = {(r["instance"], r["solver"]) for r in rows}
    runs = {s: functools.partial(run_ours, solver=s) for s in args.solver}
    runs |= {"pyjobshop": run_peer} if args.peer == "pyjobshop" else {}
    todo = [
        (path, run)
        for path in paths
        for solver, run in runs.items()
        if (path.stem, solver) not in done
    ]
    if rows:
        print(f"resuming: {len(rows)} runs in {args.out}, {len(todo)} to go", flush=True)
    out = RowWriter(args.out, args)
    if not todo:
        return rows
    for k, (path, run) in enumerate(todo, 1):
        row = {"instance": path.stem, **run(path, args)}
        row["best_known"] = best.get(path.stem)
        row["gap_pct"] = gap_pct(row["objective"], row["best_known"])
        rows.append(row)
        out.write(row)
        print(
            f"[{k}/{len(todo)}] {row['instance']:>12} {row['solver']:>9} {row['status']:>10} "
            f"{row['objective']} (best {row['best_known']}) {row['time_s']:.2f} s",
            flush=True,
        )
    return rows


def cluster_instance(jobs: int, blocks: int, seed: int) -> ClusterInstance:
    """A random batch of ``jobs`` training jobs of ``blocks`` blocks on 8 nodes x 8 GPUs."""
    rng = np.random.default_rng(seed)
    node = {"name": "node", "count": 8, "gpu": 8, "cpu": 92, "io": 8, "net": 8}
    batch = []
    for j in range(jobs):
        batch.append(
            {
                "name": f"job{j}",
                "gpus": int(rng.choice([1, 2, 4, 8], p=[0.4, 0.3, 0.2, 0.1])),
                "iterations": int(rng.integers(50, 400)) * blocks,
                "stages": {
                    "data": round(float(rng.uniform(0.05, 0.5)), 3),
                    "gpu": round(float(rng.uniform(0.1, 0.6)), 3),
                    "sync": round(float(rng.uniform(0.0, 0.2)), 3),
                },
                "blocks": blocks,
                "cpu_per_gpu": int(rng.integers(2, 10)),
            }
        )
    return ClusterInstance.model_validate(
        {
            "name": f"cluster-{jobs}x{blocks}",
            "time_unit": "10s",
            "cluster": {"nodes": [node]},
            "jobs": batch,
        }
    )


def benchmark_cluster(args: argparse.Namespace) -> list[dict]:
    """Time to the first schedule and the gap after the time limit on a cluster-form batch."""
    problem = compile_cluster(cluster_instance(args.jobs, args.blocks, args.seed))
    solver = args.solver[0]
    events: list[Progress] = []
    t0 = time.perf_counter()
    result = solve(
        problem, solver, time_limit=args.time_limit, workers=args.workers, progress=events.append
    )
    wall = time.perf_counter() - t0
    first = events[0].elapsed if events else None
    row = {
        "instance": problem.name,
        "solver": solver,
        "status": result.status.value,
        "objective": result.objective,
        "bound": result.lower_bound,
        "best_known": None,
        "gap_pct": None if result.gap is None else 100 * result.gap,
        "time_s": wall,
    }
    print(
        f"{problem.name}: {len(problem.tasks)} tasks, first schedule at {first} s "
        f"(hint makespan {result.stats.get('hint_makespan')}), after {wall:.1f} s: "
        f"{result.status.value} makespan {result.objective}, bound {result.lower_bound}, "
        f"gap to bound {row['gap_pct']}%, {len(events)} improving solutions, "
        f"model built in {result.stats.get('setup_time', 0):.2f} s"
    )
    return [row]


def main() -> None:
    """Parse the arguments, run, write the CSV and print the summary table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=[*SETS, "cluster"], default="j30")
    parser.add_argument("--benchmarks", type=Path, default=ROOT.parent / "shared" / "benchmarks")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=0, help="Stratified sample size.")
    parser.add_argument("--peer", choices=["pyjobshop"], default=None)
    parser.add_argument(
        "--solver",
        nargs="+",
        choices=["portfolio", "portfolio-single", "cpsat"],
        default=["portfolio"],
        help="Our solvers to run (the cluster set runs the first); portfolio-single: the "
        "portfolio with one search (split=False).",
    )
    parser.add_argument("--jobs", type=int, default=250, help="Cluster set: jobs.")
    parser.add_argument("--blocks", type=int, default=8, help="Cluster set: blocks per job.")
    parser.add_argument("--seed", type=int, default=0, help="Cluster set: generator seed.")
    parser.add_argument("--out", type=Path, default=None, help="CSV of one row per run.")
    parser.add_argument(
        "--resume", action="store_true", help="Continue the runs in --out; skip those done."
    )
    args = parser.parse_args()
    try:
        earlier = earlier_rows(args)
        if args.set != "cluster":
            print("\n".join(summarise(benchmark_set(args, earlier))))
        elif earlier:
            print(f"{args.out} already has the cluster run")
        else:
            out = RowWriter(args.out, args)
            for row in benchmark_cluster(args):
                out.write(row)
    except ResumeError as e:
        parser.exit(2, f"error: {e}\n")


if __name__ == "__main__":
    main()

"""Deep-learning workload benchmark: Muri's offline trace and a trace of 5,755 jobs.

On ``muri_trace3_offline.csv`` (992 jobs, 8 nodes x 8 GPUs) it reports the
fluid lower bound, the makespan of every solver run (validated), the best one,
the ``exclusive-*`` baselines and the interleaving gain, and the best solver's
makespan again with every stage time inflated by 1.31 (Muri's measured
slowdown of a pair of interleaved jobs). Then it generates a 5,755-job trace
and measures the time and peak memory to load and plan it. Times are seconds.

    python benchmarks/bench_dl.py --benchmarks ../shared/benchmarks \
        --solver sgs:rule=grw,scheme=parallel --solver ga:time_limit=300
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from planner.dl.workloads import import_muri
from planner.io.instance import problem_from_data
from planner.solvers import solve
from planner.times import tick_seconds

MURI_S = 4_400_675
"""Muri-S's published makespan on this trace (seconds, with measured slowdowns)."""
MURI_S_IDEAL = 3_378_496
"""Muri-S re-simulated with ideal interleaving (no slowdowns)."""
INFLATION = 1.31


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name:key=value,key=value`` -> (name, options)."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return name, options


def fluid_bound(trace: Path, gpus: int) -> float:
    """Max over data, GPU and network of GPUs x iterations x stage time / cluster GPUs (s)."""
    frame = pd.read_csv(trace)
    work = [
        (frame.num_gpu * frame.iterations * frame[f"resource_time_{s}"]).sum() for s in range(3)
    ]
    return max(work) / gpus / 1000


def run_all(data: dict, specs: list[str]) -> list[dict[str, Any]]:
    """Solve the instance with every solver spec; makespans in seconds."""
    problem = problem_from_data(data)
    tick = tick_seconds(data["time_unit"])
    rows = []
    for spec in specs:
        name, options = parse_spec(spec)
        result = solve(problem, name, **options)
        rows.append(
            {
                "solver": spec,
                "status": result.status.value,
                "makespan (s)": None if result.objective is None else result.objective * tick,
                "runtime (s)": round(result.runtime, 1),
                "valid": bool(result.valid),
            }
        )
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def inflate(data: dict, factor: float) -> dict:
    """The same instance with every stage time multiplied by ``factor``."""
    jobs = []
    for job in data["jobs"]:
        stages = {k: v * factor for k, v in job["stages"].items()}
        jobs.append({**job, "stages": stages})
    return {**data, "name": f"{data['name']}-x{factor}", "jobs": jobs}


def scale_run(jobs: int, spec: str) -> dict[str, Any]:
    """Generate ``jobs`` jobs and plan them in a fresh process: time and peak memory."""
    name, options = parse_spec(spec)
    code = f"""
import json, resource, time
t0 = time.perf_counter()
from planner.io.instance import problem_from_data
from planner.dl.workloads import generate_batch
from planner.solvers import solve
problem = problem_from_data(generate_batch({jobs}, seed=0))
t1 = time.perf_counter()
result = solve(problem, {name!r}, **json.loads({json.dumps(options)!r}))
t2 = time.perf_counter()
print(json.dumps({{"tasks": len(problem.tasks), "build (s)": round(t1 - t0, 1),
    "plan (s)": round(t2 - t1, 1), "valid": bool(result.valid),
    "peak memory (MB)": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}}))
"""
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    return {"jobs": jobs, "solver": spec, **json.loads(out.stdout.strip().splitlines()[-1])}


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table; floats with thousands separators."""
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [_cell(v) for v in row.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.1f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    parser.add_argument("--solver", action="append", default=[], help="name:key=value,...")
    parser.add_argument("--time-unit", default="1min")
    parser.add_argument("--scale-jobs", type=int, default=5755)
    parser.add_argument("--scale-solver", default="sgs:rule=grw,scheme=parallel")
    args = parser.parse_args(argv)
    trace = args.benchmarks / "dl" / "muri_trace3_offline.csv"
    data = import_muri(trace, time_unit=args.time_unit)
    fluid = fluid_bound(trace, 64)
    baselines = ["exclusive-fifo", "exclusive-srtf", "exclusive-srsf"]
    rows = run_all(data, baselines + args.solver)
    for row in rows:
        ms = row["makespan (s)"]
        row["vs fluid bound"] = None if ms is None else f"{100 * (ms / fluid - 1):.1f}%"
    interleaved = [r for r in rows if r["solver"] not in baselines and r["makespan (s)"]]
    best = min(interleaved, key=lambda r: r["makespan (s)"]) if interleaved else None
    srtf = next(r for r in rows if r["solver"] == "exclusive-srtf")
    print(f"## Muri trace 3 (992 jobs, 64 GPUs), ticks of {args.time_unit}\n")
    print(f"fluid lower bound: {fluid:,.0f} s\n")
    print(table(rows) + "\n")
    if best is not None:
        inflated = run_all(inflate(data, INFLATION), [best["solver"]])[0]
        gain = srtf["makespan (s)"] / best["makespan (s)"]
        print(f"- best interleaved: {best['solver']}: {best['makespan (s)']:,.0f} s")
        print(f"- exclusive-srtf / best = {gain:.2f} (Muri reports SRTF / Muri-S = 1.65)")
        print(
            f"- best with stage times x{INFLATION}: {inflated['makespan (s)']:,.0f} s "
            f"(Muri-S published {MURI_S:,} s; Muri-S ideal {MURI_S_IDEAL:,} s)"
        )
    scale = scale_run(args.scale_jobs, args.scale_solver)
    print(f"\n## {args.scale_jobs} generated jobs\n")
    print(table([scale]))
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"\nbenchmark process peak memory: {usage} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

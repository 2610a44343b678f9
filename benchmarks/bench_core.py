"""Core benchmark: PSPLIB reading, critical-path bound and validated SGS schedules.

For every ``.sm`` file of the J30 and J120 sets it checks that the
critical-path bound equals the ``MPM-Time`` of the file header, solves the
instance with the serial SGS (through ``solvers.solve``, which validates every
schedule) and checks the schedule once more with the validator. It prints a
Markdown table.

    python benchmarks/bench_core.py --benchmarks ../shared/benchmarks
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from planner.bounds import critical_path_bound
from planner.io.instance import load_instance
from planner.io.psplib_io import mpm_time
from planner.solvers import solve
from planner.validate import validate


def run_set(folder: Path, rule: str) -> dict[str, object]:
    """Measure one PSPLIB set."""
    files = sorted(folder.glob("*.sm"))
    cp_equal = valid = 0
    devs: list[float] = []
    load_times: list[float] = []
    solve_times: list[float] = []
    for path in files:
        t0 = time.perf_counter()
        problem = load_instance(path)
        load_times.append(time.perf_counter() - t0)
        cp = critical_path_bound(problem)
        cp_equal += cp == mpm_time(path)
        result = solve(problem, "sgs", rule=rule)
        solve_times.append(result.runtime)
        if result.schedule is not None and validate(problem, result.schedule).ok:
            valid += 1
            devs.append(100.0 * (result.objective - cp) / cp)
    return {
        "set": folder.name.upper(),
        "instances": len(files),
        "CP bound = MPM-Time": cp_equal,
        "valid SGS schedules": valid,
        "mean dev. from CP bound (%)": f"{statistics.mean(devs):.2f}" if devs else "-",
        "mean load (ms)": f"{1000 * statistics.mean(load_times):.1f}",
        "mean SGS (ms)": f"{1000 * statistics.mean(solve_times):.1f}",
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    parser.add_argument("--sets", nargs="+", default=["j30", "j120"])
    parser.add_argument("--rule", default="lft", help="SGS priority rule")
    args = parser.parse_args(argv)
    rows = [run_set(args.benchmarks / "psplib_sm" / name, args.rule) for name in args.sets]
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    ok = all(r["CP bound = MPM-Time"] == r["instances"] == r["valid SGS schedules"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

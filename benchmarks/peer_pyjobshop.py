"""Solve one PSPLIB instance with PyJobShop's OR-Tools backend and print the result as JSON.

Runs in the separate benchmark environment that has PyJobShop installed (never a
dependency of the project); ``bench_cpsat.py --peer pyjobshop`` calls it as a
subprocess::

    .bench-venv/bin/python benchmarks/peer_pyjobshop.py INSTANCE --time-limit 10 --workers 2

The instance is read with PyJobShop's own reader. The JSON has the makespan,
bound, status, solver wall time, and per task (in file order) its start and its
mode number within the task (1-based), so that the caller can validate it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pyjobshop import read, solve


def main() -> None:
    """Parse the arguments, solve, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = read(args.instance, instance_format="psplib")
    result = solve(data, "ortools", time_limit=args.time_limit, num_workers=args.workers)
    first_mode: dict[int, int] = {}
    for index, mode in enumerate(data.modes):
        first_mode.setdefault(mode.task, index)
    tasks = result.best.tasks
    out = {
        "makespan": None if not tasks else result.objective,
        "bound": result.lower_bound,
        "status": result.status.value,
        "solver_time": result.runtime,
        "total_time": time.perf_counter() - t0,
        "starts": [t.start for t in tasks],
        "modes": [t.mode - first_mode[i] + 1 for i, t in enumerate(tasks)],
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""Gavel reproduced, then ours: heterogeneous GPUs in planner's executor.

Runs Gavel's policies (``gavel-*``, :mod:`planner.executor.policies.gavel`) on Gavel's two
traces on its cluster ``8:16:24`` (8 V100, 16 P100, 24 K80, one GPU per server) under the
``table`` model (Gavel's measured throughputs, alone and in pairs; no restart cost, as
its simulator), and prints each figure beside the one Gavel's simulator gives (the table
in the benchmarks' ``gavel/README.md``). Then ours (``het-srpt``,
``het-makespan``) on the same traces, the bounds under the model, and ``het-srpt`` with
its packing off and with heterogeneity awareness off, once each, and the online planner
(its search at every event and round, 0.5 s each). Every run is audited;
every row is run ``--repeat`` times (the figures are deterministic; the wall time is
not). With ``--scale``, 1,000 generated jobs of Gavel's mix on ``36:36:36`` with
arrivals: every policy's wall time.

    python benchmarks/bench_gavel.py --benchmarks ../shared/benchmarks [--scale] [--markdown F]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from planner.dl.gavel import (
    generate_gavel_jobs,
    parse_cluster,
    read_gavel_trace,
    read_throughputs,
)
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.fairness import fairness
from planner.executor.loop import run_policy
from planner.executor.model.jobs import ExecutorJob
from planner.executor.policies import POLICIES, Policy
from planner.executor.policies.hetero import HeteroRounds
from planner.interleave import Interleave, Stages
from planner.rates import Throughputs, alone_seconds, table_bound
from planner.replay.planner_policy import SearchPlanner

GAVEL = {
    ("minimize_makespan", "fifo"): (274_228, 211_551),
    ("minimize_makespan", "min_total_duration"): (76_635, 71_950),
    ("minimize_makespan", "min_total_duration_perf"): (64_721, 63_775),
    ("minimize_makespan", "min_total_duration_packed"): (58_794, 57_641),
    ("minimize_makespan", "max_min_fairness_perf"): (68_522, 35_659),
    ("minimize_makespan", "max_min_fairness_packed"): (63_895, 32_315),
    ("minimize_makespan", "finish_time_fairness_perf"): (70_400, 36_333),
    ("minimize_makespan", "gandiva"): (75_994, 35_075),
    ("max_min_fairness", "max_min_fairness"): (77_141, 19_989),
    ("max_min_fairness", "max_min_fairness_perf"): (63_945, 14_623),
    ("max_min_fairness", "max_min_fairness_packed"): (63_692, 14_083),
    ("max_min_fairness", "finish_time_fairness_perf"): (64_971, 15_010),
    ("max_min_fairness", "fifo_perf"): (72_320, 19_527),
    ("max_min_fairness", "gandiva"): (67_405, 17_379),
}
"""Gavel's simulator on its traces, ``-c 8:16:24 --seed 0``: (makespan, mean JCT), s."""

OURS = ("het-srpt", "het-makespan")

RATE = 2.0
"""``--scale``: jobs per hour (Poisson); the cluster of 36 V100, 36 P100 and 36 K80 does
about 2.2 of Gavel's mix an hour."""


def gavel_jobs(batch: list, table: Throughputs) -> list[ExecutorJob]:
    """Gavel's jobs as the executor's, each free to restart (as in Gavel's simulator)."""
    jobs = []
    for i, g in enumerate(batch):
        period = 1.0 / table.best(g.key)[1]
        jobs.append(
            ExecutorJob(f"job{i}", g.scale, g.steps, Stages(0.0, period, 0.0), period,
                    g.steps * period, g.job_type, g.arrival, weight=g.weight, restart=0.0)
        )  # fmt: skip
    return jobs


def run(jobs: list[ExecutorJob], policy: str | Policy, table: Throughputs, types: tuple) -> dict:
    """One audited run: its figures."""
    t0 = time.perf_counter()
    out = run_policy(jobs, policy, nodes=len(types), gpus_per_node=1, restart=False,
                     interleave=Interleave("table", table=table), types=types)  # fmt: skip
    wall = time.perf_counter() - t0
    wrong = audit(out, jobs, len(types))
    fair = fairness(out, jobs, len(types)).overall
    return {"makespan": out.makespan, "jct": out.mean_jct, "ftf": fair.ftf_max, "wall": wall,
            "valid": not wrong and out.finished}  # fmt: skip


def row(cells: list[object]) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True, help="the shared benchmarks")
    parser.add_argument("--repeat", type=int, default=2, help="runs of every row (default 2)")
    parser.add_argument("--scale", action="store_true", help="the 1,000-job run instead")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args()
    folder = args.benchmarks / "gavel"
    table = read_throughputs(folder / "simulation_throughputs.json")
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if args.scale:
        scale(table, args.repeat, say)
    else:
        reproduce(folder, table, args.repeat, say)
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    return 0


def reproduce(folder: Path, table: Throughputs, repeat: int, say) -> None:  # type: ignore[no-untyped-def]
    """Gavel's table, ours, the bounds and the ablations."""
    types = parse_cluster("8:16:24").types
    table = table.only(types)
    say(row(["trace", "policy", "makespan (s)", "Gavel", "diff", "mean JCT (s)", "Gavel",
             "diff", "worst FTF", "wall (s)", "audit"]))  # fmt: skip
    say(row(["---"] * 11))
    traces = {}
    for trace in ("minimize_makespan", "max_min_fairness"):
        traces[trace] = gavel_jobs(read_gavel_trace(folder / f"{trace}.trace"), table)
    for (trace, policy), (mk, jct) in GAVEL.items():
        name = "gavel-" + policy.replace("_", "-")
        runs = [run(traces[trace], name, table, types) for _ in range(repeat)]
        r = runs[0]
        walls = "/".join(f"{x['wall']:.1f}" for x in runs)
        say(row([trace, name, f"{r['makespan']:,.0f}", f"{mk:,}",
                 f"{100 * (r['makespan'] / mk - 1):+.1f}%", f"{r['jct']:,.0f}", f"{jct:,}",
                 f"{100 * (r['jct'] / jct - 1):+.1f}%", f"{r['ftf']:.2f}", walls,
                 "valid" if all(x["valid"] for x in runs) else "INVALID"]))  # fmt: skip
    say("")
    say(row(["trace", "ours", "makespan (s)", "x Gavel's best", "mean JCT (s)",
             "x Gavel's best", "worst FTF", "wall (s)", "audit"]))  # fmt: skip
    say(row(["---"] * 9))
    best = {"minimize_makespan": (58_794, 32_315), "max_min_fairness": (63_692, 14_083)}
    variants: list[tuple[str, object]] = [(n, n) for n in OURS]
    variants += [
        ("het-srpt, packing off", lambda: HeteroRounds("jct", packing=False)),
        ("het-srpt, heterogeneity awareness off", lambda: HeteroRounds("jct", aware=False)),
        ("het-makespan, packing off", lambda: HeteroRounds("makespan", packing=False)),
        (
            "het-makespan, heterogeneity awareness off",
            lambda: HeteroRounds("makespan", aware=False),
        ),
        ("planner online (0.5 s a re-plan)", lambda: SearchPlanner(time_limit=0.5)),
    ]
    for trace, jobs in traces.items():
        for label, make in variants:
            runs = []
            for _ in range(repeat):
                policy = make() if callable(make) else make
                runs.append(run(jobs, policy, table, types))  # type: ignore[arg-type]
            r = runs[0]
            walls = "/".join(f"{x['wall']:.1f}" for x in runs)
            say(row([trace, label, f"{r['makespan']:,.0f}", f"{r['makespan'] / best[trace][0]:.3f}",
                     f"{r['jct']:,.0f}", f"{r['jct'] / best[trace][1]:.3f}", f"{r['ftf']:.2f}",
                     walls, "valid" if all(x["valid"] for x in runs) else "INVALID"]))  # fmt: skip
    say("")
    say(row(["trace", "makespan bound (s)", "relaxation, pairs", "relaxation, no pairs",
             "longest job", "mean JCT bound (s)"]))  # fmt: skip
    say(row(["---"] * 6))
    lone = Throughputs(table.alone, {t: {} for t in table.alone})
    for trace, jobs in traces.items():
        work = [((j.model, j.gpus), float(j.iterations), j.release) for j in jobs]
        gpus = {"v100": 8, "p100": 16, "k80": 24}
        b, nb = table_bound(work, gpus, table), table_bound(work, gpus, lone)
        jct = np.mean([alone_seconds((j.model, j.gpus), j.iterations, table) for j in jobs])
        say(row([trace, f"{b['bound']:,.0f}", f"{b['lp']:,.0f}", f"{nb['lp']:,.0f}",
                 f"{b['longest']:,.0f}", f"{jct:,.0f}"]))  # fmt: skip


def scale(table: Throughputs, repeat: int, say) -> None:  # type: ignore[no-untyped-def]
    """1,000 jobs of Gavel's mix on 36:36:36, :data:`RATE` an hour: every policy's wall
    time."""
    types = parse_cluster("36:36:36").types
    table = table.only(types)
    jobs = gavel_jobs(generate_gavel_jobs(table, 1000, seed=0, jobs_per_hour=RATE), table)
    say(row(["policy", "makespan (s)", "mean JCT (s)", "worst FTF", "wall (s), each run",
             "audit"]))  # fmt: skip
    say(row(["---"] * 6))
    names = [n for n in POLICIES if n.startswith("gavel-")] + list(OURS)
    for name in names:
        try:
            runs = [run(jobs, name, table, types) for _ in range(repeat)]
        except InputError as exc:
            say(row([name, "-", "-", "-", "-", f"stops: {exc}"]))
            continue
        r = runs[0]
        walls = "/".join(f"{x['wall']:.1f}" for x in runs)
        say(row([name, f"{r['makespan']:,.0f}", f"{r['jct']:,.0f}", f"{r['ftf']:.2f}", walls,
                 "valid" if all(x["valid"] for x in runs) else "INVALID"]))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

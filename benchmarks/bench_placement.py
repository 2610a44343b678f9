"""Placement benchmark: Muri's trace 3 placed on nodes and pooled, at scale, long horizons.

Measures what the placement issue asks, every schedule validated:

- ``trace``: ``muri_trace3_offline.csv`` imported at each ``--blocks`` count, with
  ``placement: node``, pooled, and (``--placements``) placed with migration (every
  job ``migrate: true``, the catalog's restart costs), its training blocks compiled
  as fluid shares or phases (``--interleave``); per instance every ``--solver`` spec
  runs; a placed plan is also executed job by job under ``fluid`` with one data slot,
  and that makespan is compared with the fluid bound (3,207,558 s).
- ``overhead``: one decoder pass (serial and parallel, ``grw``), placed against pooled.
- ``horizon``: the same pass at one-second ticks against one-minute ticks.
- ``energy``: trace 3 placed at one block under ``fluid``, interleaved plans against an
  exclusive baseline: planned and executed makespan, energy and mean power.
- ``tariff``: trace 3 placed at one block under ``fluid`` with a day-night tariff, planned
  without a cap and with the GPUs capped by day: makespan, energy and its cost.
- ``scale``: generated traces of ``--scale-jobs`` jobs, placed, seeds ``--seeds``: one
  parallel ``grw`` pass per seed; on the slowest seed, ``--scale-solver`` with time limits
  of 60 s and 120 s in fresh processes (time of the first incumbent, makespan against the
  energy bound, peak memory).

    python benchmarks/bench_placement.py --benchmarks ../shared/benchmarks \\
        --solver sgs:rule=grw,scheme=serial --solver portfolio:time_limit=300
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from bench_dl import parse_spec

from planner.app.compare import pareto_watts
from planner.app.compare_report import pareto_front, save_pareto
from planner.bounds import energy_bound, lower_bound
from planner.dl.workloads import import_muri
from planner.executor.energy import run_energy
from planner.executor.loop import run_policy
from planner.executor.model.jobs import Workload, jobs_from_instance, model_of, plan_of
from planner.executor.runs import Setting, dispatch_of, judge
from planner.io.instance import problem_from_data
from planner.metrics import energy_terms, schedule_metrics
from planner.model import Problem
from planner.schedule import Schedule
from planner.solvers import solve
from planner.solvers.kernels import load_kernels
from planner.solvers.sgs import Decoder, priorities
from planner.times import tick_seconds
from planner.validate import validate

FLUID = 3_207_558
"""Fluid lower bound of trace 3 (s): max over stages of GPUs x iterations x time / 64."""
MURI_L_IDEAL = 3_302_449
"""Muri-L's makespan with ideal interleaving, placing on the same 8 x 8 GPUs (s)."""


PLACEMENTS = ("node", "gpu", "pooled", "migrate")
"""Instance forms of the trace part: placed on machines or single GPUs, pooled, placed
with migration."""


def trace_data(
    trace: Path, blocks: int, placement: str, time_unit: str, interleave: str = "fluid"
) -> dict[str, Any]:
    """Trace 3 in the cluster form: ``blocks`` per job, placed, pooled, or placed with
    migration; training blocks as ``interleave`` compiles them."""
    migrate = placement == "migrate"
    data = import_muri(
        trace,
        time_unit=time_unit,
        blocks=blocks,
        placement="node" if migrate else placement,
        migrate=migrate,
    )
    data["interleave"] = interleave
    return data


def trace_problem(
    trace: Path, blocks: int, placement: str, time_unit: str, interleave: str = "fluid"
) -> Problem:
    """Trace 3 as a problem (:func:`trace_data`)."""
    return problem_from_data(trace_data(trace, blocks, placement, time_unit, interleave))


def workload_of(data: dict[str, Any]) -> Workload:
    """The job-level workload of cluster-form ``data`` (read from a file, as the command
    line reads it)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "instance.json"
        path.write_text(json.dumps(data))
        return jobs_from_instance(path)


def executed(data: dict[str, Any], problem: Problem, schedule: Schedule) -> float | None:
    """The makespan (s) of a placed plan run job by job under ``fluid`` with one data
    slot, no slowdown and no restart cost (the model the plan is made in); ``None``
    pooled."""
    if not problem.nodes:
        return None
    workload = workload_of(data)
    setting = Setting("fluid", slowdown="none", restart=False)
    return judge(dispatch_of(workload, setting, plan=(problem, schedule)))["makespan_mean"]


def one_pass(problem: Problem, parallel: bool, rule: str = "grw") -> tuple[float, int, bool]:
    """(seconds, makespan in ticks, valid) of one pass under ``rule``."""
    dec = Decoder(problem)
    order = dec.order(priorities(problem, rule))
    t0 = time.perf_counter()
    dec.run(order, parallel=parallel)
    took = time.perf_counter() - t0
    schedule = dec.schedule()
    return took, schedule.makespan(problem), validate(problem, schedule).ok


def trace_rows(
    trace: Path,
    blocks: list[int],
    specs: list[str],
    placements: list[str],
    models: list[str],
) -> list[dict[str, Any]]:
    """Every spec on every (blocks, placement, block model) instance; makespans in
    seconds, planned and (placed) executed job by job under ``fluid``."""
    rows = []
    for b in blocks:
        for placement in placements:
            for model in models:
                data = trace_data(trace, b, placement, "1min", model)
                problem = problem_from_data(data)
                for spec in specs:
                    name, options = parse_spec(spec)
                    r = solve(problem, name, **options)
                    ms = None if r.objective is None else r.objective * 60
                    done = None if r.schedule is None else executed(data, problem, r.schedule)
                    rows.append(
                        {
                            "blocks": b,
                            "placement": placement,
                            "blocks as": model,
                            "solver": spec,
                            "planned (s)": ms,
                            "executed (s)": None if done is None else round(done),
                            "executed vs fluid": None if done is None else f"{done / FLUID:.3f}",
                            "runtime (s)": round(r.runtime, 1),
                            "valid": bool(r.valid),
                        }
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
    return rows


def energy_rows(trace: Path, specs: list[str]) -> list[dict[str, Any]]:
    """Trace 3 placed at one block under ``fluid``: per solver spec (an ``exclusive-*``
    baseline among them), the plan's makespan and estimated energy
    (:func:`planner.metrics.schedule_metrics`: GPUs 300 / 60 W, data and network slots),
    and the plan executed job by job under ``fluid`` with the GPUs' energy
    (:func:`planner.executor.energy.run_energy`: 300 / 60 W)."""
    data = trace_data(trace, 1, "node", "1min", "fluid")
    problem = problem_from_data(data)
    workload = workload_of(data)
    model = model_of(workload, "fluid", None)
    gpus = (workload.nodes or 8) * (workload.gpus_per_node or 8)
    rows = []
    for spec in specs:
        name, options = parse_spec(spec)
        r = solve(problem, name, **options)
        m = schedule_metrics(problem, r.schedule)
        jobs, placed = plan_of(problem, r.schedule, workload.jobs)
        run = run_policy(
            jobs, "plan", workload.nodes or 8, workload.gpus_per_node or 8, model,
            restart=False, plan=placed,
        )  # fmt: skip
        used = run_energy(run, jobs, gpus)
        rows.append(
            {
                "solver": spec,
                "planned (s)": r.objective * 60,
                "planned kWh": round(m.energy_kwh or 0.0),
                "planned mean kW": round(m.mean_kw or 0.0, 1),
                "planned peak kW": round(m.peak_kw or 0.0, 1),
                "executed (s)": round(run.makespan),
                "executed GPU kWh": round(used.kwh),
                "executed mean kW": round(used.mean_kw, 1),
                "valid": bool(r.valid),
            }
        )
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


DAY = 86_400
"""Seconds of a day: the tariff's period."""
NIGHT = ((0, 21_600, 0.10), (79_200, DAY, 0.10))
"""A day-night tariff: 0.10 per kWh from 22:00 to 06:00, 0.30 by day."""


def tariff_rows(trace: Path, spec: str, day_caps: list[float]) -> list[dict[str, Any]]:
    """Trace 3 placed at one block under ``fluid``, GPUs at 300 / 60 W, under a day-night
    tariff: the plan of ``spec`` without a cap, then with the GPUs capped by day (06:00 to
    22:00) at each share of their peak draw in ``day_caps``: makespan, energy and cost."""
    data = trace_data(trace, 1, "node", "1min", "fluid")
    tariff = {
        "price": 0.30,
        "period": DAY,
        "windows": [{"start": a, "end": b, "price": p} for a, b, p in NIGHT],
    }
    gpus = 64
    peak = gpus * 300.0
    rows = []
    for share in [None, *day_caps]:
        power: dict[str, Any] = {"gpu_busy": 300, "gpu_idle": 60, "tariff": tariff}
        if share is not None:
            days = 60  # the caps' windows cover 60 days, past any plan here
            power["cap"] = peak
            power["windows"] = [
                {"start": d * DAY + 21_600, "end": d * DAY + 79_200, "cap": share * peak}
                for d in range(days)
            ]
        problem = problem_from_data({**data, "power": power})
        name, options = parse_spec(spec)
        r = solve(problem, name, **options)
        m = schedule_metrics(problem, r.schedule)
        rows.append(
            {
                "day cap": "none" if share is None else f"{share:.0%} of peak",
                "solver": spec,
                "makespan (s)": r.objective * 60,
                "energy (kWh)": round(m.energy_kwh or 0.0),
                "cost": round(m.cost or 0.0),
                "valid": bool(r.valid),
            }
        )
        print(rows[-1], file=sys.stderr, flush=True)
    base = rows[0]["cost"]
    for row in rows:
        row["cost saved"] = f"{100 * (1 - row['cost'] / base):.1f}%"
    return rows


LIMITS = [
    {"share": 0.8, "speed": 0.95},
    {"share": 0.65, "speed": 0.85},
    {"share": 0.5, "speed": 0.7},
]
"""An assumed throughput-against-power-limit curve (no published one is in the catalog):
at 80% of a GPU's busy watts 95% of its speed, at 65% 85%, at 50% 70%."""


def pareto_rows(
    trace: Path, specs: list[str], points: int, cap_share: float
) -> list[dict[str, Any]]:
    """Trace 3 pooled at one block under ``fluid`` (one-minute ticks), GPUs at 300 / 60 W
    that may run under the :data:`LIMITS`, the cluster capped at ``cap_share`` of its
    peak GPU draw: per solver spec, the plan for the makespan without the limits and with
    them, then for the energy at ``points`` makespan_watts
    (:func:`planner.app.compare.pareto_watts`)."""
    data = trace_data(trace, 1, "pooled", "1min", "fluid")
    power = {"gpu_busy": 300, "gpu_idle": 60, "cap": cap_share * 64 * 300}
    full = problem_from_data({**data, "power": power})
    base = problem_from_data({**data, "power": {**power, "limits": LIMITS}})
    bounds = {id(p): least_energy(p) for p in (full, base)}
    rows = []
    for watts in ["no limits", None, *pareto_watts(base, points)]:
        problem = full if watts == "no limits" else base
        if isinstance(watts, float):
            problem = base.model_copy(update={"objective": "energy", "makespan_watts": watts})
        for spec in specs:
            name, options = parse_spec(spec)
            r = solve(problem, name, **options)
            m = schedule_metrics(problem, r.schedule)
            limited = sum("%" in mode for mode in r.schedule.modes.values())
            least = bounds[id(full if watts == "no limits" else base)]
            rows.append(
                {
                    "objective": (
                        f"energy, {watts:g} W"
                        if isinstance(watts, float)
                        else f"makespan{', no limits' if watts else ''}"
                    ),
                    "solver": spec,
                    "makespan (s)": m.makespan * 60,
                    "energy (kWh)": round(m.energy_kwh or 0.0),
                    "blocks limited": f"{limited}/{len(problem.tasks)}",
                    "makespan bound (s)": least[0] * 60,
                    "energy bound (kWh)": round(least[1]),
                    "peak kW": round(m.peak_kw or 0.0, 1),
                    "valid": bool(r.valid),
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


SAMPLE = Path(__file__).resolve().parents[1] / "instances" / "muri_trace3_40.csv"
"""The first 40 jobs of trace 3, shipped with the toolkit."""


def cost_rows(spec: str) -> list[dict[str, Any]]:
    """The 40-job sample of trace 3 pooled at one block under ``fluid``, in ticks of 10
    minutes, GPUs at 300 / 60 W, under the day-night tariff of :func:`tariff_rows`: the
    plan of ``spec`` for the makespan, then for the cost, with every GPU's idle draw and
    with idle GPUs off (``switch_off``): makespan, energy and cost, and the cost saved
    against the plan for the makespan."""
    data = trace_data(SAMPLE, 1, "pooled", "10min", "fluid")
    tariff = {
        "price": 0.30,
        "period": DAY,
        "windows": [{"start": a, "end": b, "price": p} for a, b, p in NIGHT],
    }
    rows = []
    for off in (False, True):
        power = {"gpu_busy": 300, "gpu_idle": 60, "tariff": tariff, "switch_off": off}
        base = problem_from_data({**data, "power": power})
        for objective in ("makespan", "cost"):
            problem = base.model_copy(update={"objective": objective})
            name, options = parse_spec(spec)
            r = solve(problem, name, **options)
            m = schedule_metrics(problem, r.schedule)
            rows.append(
                {
                    "idle GPUs": "off" if off else "on",
                    "objective": objective,
                    "solver": spec,
                    "status": r.status.value,
                    "makespan (s)": m.makespan * 600,
                    "energy (kWh)": round(m.energy_kwh or 0.0, 1),
                    "cost": round(m.cost or 0.0, 2),
                    "valid": bool(r.valid),
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
        made = rows[-2]["cost"]
        rows[-1]["cost saved"] = f"{100 * (1 - rows[-1]['cost'] / made):.1f}%"
        rows[-2]["cost saved"] = "0.0%"
    return rows


def least_energy(problem: Problem) -> tuple[int, float]:
    """A lower bound on the makespan (ticks) and one on the energy (kWh) of any plan of
    ``problem``: every task in its mode of least draw, the idle draw over the least
    makespan."""
    per, over = energy_terms(problem)
    makespan = lower_bound(problem)
    return makespan, sum(min(row) for row in per) + over * makespan


def draw_front(rows: list[dict[str, Any]], path: Path) -> None:
    """Draw the rows of :func:`pareto_rows` with power limits as a makespan-energy front
    (:func:`planner.app.compare_report.save_pareto`; makespans in minutes)."""
    runs = pd.DataFrame(
        {
            "instance": f"trace3'@{row['objective']}",
            "solver": row["solver"],
            "seed": 0,
            "status": "feasible",
            "makespan": row["makespan (s)"] / 60,
            "energy_kwh": row["energy (kWh)"],
        }
        for row in rows
        if "no limits" not in row["objective"]
    )
    save_pareto(pareto_front(runs), path)


def overhead_rows(trace: Path) -> list[dict[str, Any]]:
    """One grw pass placed and pooled (4 blocks, minute ticks), and at one-second ticks."""
    rows = []
    for unit in ("1min", "1s"):
        for placement in ("pooled", "node"):
            problem = trace_problem(trace, 4, placement, unit)
            for parallel in (False, True):
                took, ms, ok = one_pass(problem, parallel)
                rows.append(
                    {
                        "ticks": unit,
                        "placement": placement,
                        "pass": "parallel" if parallel else "serial",
                        "pass (s)": round(took, 2),
                        "makespan (s)": ms * tick_seconds(unit),
                        "valid": ok,
                    }
                )
                print(rows[-1], file=sys.stderr, flush=True)
    return rows


SCALE = """
import json, resource, sys, time
t0 = time.perf_counter()
import pandas as pd

from planner.app.compare import pareto_watts
from planner.app.compare_report import pareto_front, save_pareto
from planner.bounds import energy_bound, lower_bound
from planner.io.instance import problem_from_data
from planner.metrics import energy_terms, schedule_metrics
from planner.dl.workloads import generate_batch
from planner.solvers import solve
from planner.solvers.kernels import load_kernels
load_kernels()
problem = problem_from_data(generate_batch({jobs}, seed={seed}, placement={placement!r}))
t1 = time.perf_counter()
first = []
def progress(p):
    if p.objective is not None and not first:
        first.append(p.elapsed)
result = solve(problem, {name!r}, progress=progress, **json.loads({options!r}))
t2 = time.perf_counter()
print(json.dumps({{"tasks": len(problem.tasks), "build (s)": round(t1 - t0, 1),
    "plan (s)": round(t2 - t1, 1), "first incumbent (s)": round(first[0], 1) if first else None,
    "makespan": result.objective, "energy bound": energy_bound(problem),
    "valid": bool(result.valid),
    "peak memory (MB)": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}}))
"""


def scale_run(jobs: int, seed: int, spec: str, placement: str = "node") -> dict[str, Any]:
    """Generate a placed trace and plan it with ``spec`` in a fresh process."""
    name, options = parse_spec(spec)
    code = SCALE.format(
        jobs=jobs, seed=seed, name=name, options=json.dumps(options), placement=placement
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["vs bound"] = f"{row['makespan'] / row['energy bound']:.3f}" if row["makespan"] else None
    return {"seed": seed, "solver": spec, **row}


def scale_rows(
    jobs: int, seeds: list[int], spec: str, placement: str = "node"
) -> list[dict[str, Any]]:
    """One serial ``lpt`` pass per seed (the portfolio's first on a placed problem);
    ``spec`` at 60 s and 120 s on the slowest seed; jobs placed on machines (``node``) or
    single GPUs (``gpu``)."""
    from planner.dl.workloads import generate_batch

    passes = []
    for seed in seeds:
        problem = problem_from_data(generate_batch(jobs, seed=seed, placement=placement))
        took, ms, ok = one_pass(problem, False, "lpt")
        passes.append(
            {
                "seed": seed,
                "tasks": len(problem.tasks),
                "serial lpt pass (s)": round(took, 2),
                "makespan": ms,
                "energy bound": energy_bound(problem),
                "vs bound": f"{ms / energy_bound(problem):.3f}",
                "valid": ok,
            }
        )
        print(passes[-1], file=sys.stderr, flush=True)
    slowest = max(passes, key=lambda r: r["serial lpt pass (s)"])["seed"]
    sep = "," if ":" in spec else ":"
    runs = [scale_run(jobs, slowest, f"{spec}{sep}time_limit={t}", placement) for t in (60, 120)]
    return passes + runs


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of ``rows`` (the keys of all rows, in order of appearance)."""
    header = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(k)) for k in header) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    """Run the parts asked for and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    parser.add_argument("--solver", action="append", default=[], help="name:key=value,...")
    parser.add_argument("--blocks", type=int, action="append", default=[])
    parser.add_argument("--placements", nargs="+", choices=PLACEMENTS, default=["node", "pooled"])
    parser.add_argument(
        "--interleave",
        nargs="+",
        choices=["fluid", "phases"],
        default=["fluid"],
        help="How training blocks compile: fluid shares (the default) or phases.",
    )
    parser.add_argument(
        "--part",
        action="append",
        choices=["trace", "overhead", "scale", "energy", "tariff", "pareto", "cost"],
        default=[],
    )
    parser.add_argument("--pareto-points", type=int, default=4)
    parser.add_argument("--figure", type=Path, help="pareto: draw the front into this image")
    parser.add_argument("--scale-jobs", type=int, default=5755)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--scale-solver", default="portfolio")
    parser.add_argument("--scale-placement", choices=["node", "gpu"], default="node")
    args = parser.parse_args(argv)
    trace = args.benchmarks / "dl" / "muri_trace3_offline.csv"
    parts = args.part or ["trace", "overhead", "scale", "energy", "tariff"]
    load_kernels()
    if "trace" in parts:
        specs = args.solver or ["sgs:rule=grw,scheme=serial", "sgs:rule=grw,scheme=parallel"]
        print(f"## trace 3 placed and pooled (fluid bound {FLUID:,} s)\n")
        rows = trace_rows(trace, args.blocks or [1, 4, 16], specs, args.placements, args.interleave)
        print(table(rows) + "\n", flush=True)
    if "energy" in parts:
        specs = args.solver or ["sgs:rule=lpt,scheme=serial", "exclusive-srtf"]
        print("## energy of trace 3, placed, 1 block, fluid: interleaved against exclusive\n")
        print(table(energy_rows(trace, specs)) + "\n", flush=True)
    if "tariff" in parts:
        spec = (args.solver or ["sgs:rule=lpt,scheme=serial"])[0]
        print("## trace 3 under a day-night tariff, GPUs capped by day\n")
        print(table(tariff_rows(trace, spec, [0.8, 0.6, 0.4])) + "\n", flush=True)
    if "pareto" in parts:
        specs = args.solver or ["ga:schedules=2000", "portfolio:time_limit=60"]
        print("## trace 3 pooled, 1 block, fluid, cap 60%: makespan against energy\n")
        rows = pareto_rows(trace, specs, args.pareto_points, 0.6)
        print(table(rows) + "\n", flush=True)
        if args.figure is not None:
            draw_front(rows, args.figure)
    if "cost" in parts:
        spec = (args.solver or ["portfolio:time_limit=120"])[0]
        print("## 40 jobs of trace 3 under a day-night tariff: the plan for the cost\n")
        print(table(cost_rows(spec)) + "\n", flush=True)
    if "overhead" in parts:
        print("## one grw pass, 4 blocks: placed against pooled, 1 s against 1 min\n")
        print(table(overhead_rows(trace)) + "\n", flush=True)
    if "scale" in parts:
        print(f"## {args.scale_jobs} generated jobs, placed on {args.scale_placement}s\n")
        rows = scale_rows(args.scale_jobs, args.seeds, args.scale_solver, args.scale_placement)
        print(table(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

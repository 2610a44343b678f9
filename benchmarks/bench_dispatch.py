"""Plans in the executor's model: ``planner solve``'s search
(:mod:`planner.solvers.dispatch_search`) against the executor's bound, its stages, and the
executor's speed.

Parts (``--part``):

- ``trace3``: Muri's trace3' (992 jobs at 0, 8 x 8 GPUs), the search at ``--time-limit``
  seconds in each setting: ``muri`` with factors 1 and no restart overhead, ``muri``
  with Muri's factors and overheads, ``fluid`` (1 data slot) with factors 1, and the mean
  JCT objective under ``muri`` with factors 1 beside ``muri-s``. The static stage plans
  the trace imported on nodes. Each figure against the executor's bound (the group-mix
  bound here) and ``lp-groups``'s.
- ``batch60``: ``generate --jobs 60 --seed 5 --nodes 2 --placement gpu`` under ``fluid``
  with factors 1 and no overhead, the search at ``--time-limit``, then once with each
  stage off (what each stage gives).
- ``colgen``: ``planner solve -s cpsat``'s search (configuration program, policies,
  recombined, column generation with CP-SAT pricing to the limit) beside the portfolio's,
  each twice, on the 60-job batch (``fluid``, factors 1, no overhead), the shipped
  example (its own model: Muri's factors, overheads) and trace3' (``muri``, factors 1,
  and with Muri's factors and overheads, where the restart model runs after column
  generation): the plan, the bound, the columns and the pricing's share of the time;
  ``--case PREFIX`` (repeatable) runs the cases whose label starts with it, ``--solver``
  (repeatable) one of the two, ``--runs`` how many times each (2).
- ``speed``: dispatches per second (``lp-groups`` runs of the whole workload) at 100 and
  1,000 generated jobs and 5,755 (``--seed 4``), all at 0 on 8 x 8 GPUs.

    python benchmarks/bench_dispatch.py --benchmarks ../shared/benchmarks --part trace3 \\
        --time-limit 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from planner.app.solve_dl import static_portfolio
from planner.dl.workloads import generate_batch, import_muri
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from planner.executor.runs import Setting, dispatch_of
from planner.io.instance import load_instance
from planner.solvers.dispatch_search import STAGES, search_dispatch


def _row(label: str, result: object, base: float, wall: float, dispatch: object) -> str:
    """One table row of a search result."""
    best = result.best  # type: ignore[attr-defined]
    ok = "valid"
    if best.static is None:
        ok = "valid" if not audit(best.run, dispatch.jobs, 64) else "INVALID"  # type: ignore[attr-defined]
    stages = "; ".join(
        f"{s} {c.value:,.0f}"
        for s, c in result.stage_best().items()  # type: ignore[attr-defined]
    )
    return (
        f"| {label} | {best.value:,.0f} | {result.bound:,.0f} ({result.bound_kind}) | "  # type: ignore[attr-defined]
        f"{best.value / result.bound:.4f} | {base:,.0f} ({base / result.bound:.4f}) | "  # type: ignore[attr-defined]
        f"{best.source} | {stages} | {len(result.tried)} | {ok} | {wall:.0f} |"  # type: ignore[attr-defined]
    )


HEADER = (
    "| case | plan (s) | executor's bound (s) | x bound | policy (s, x bound) | plan from |"
    " stages' best (s) | dispatches | audit | wall (s) |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def trace3(args: argparse.Namespace, folder: Path) -> None:
    """The search on trace3' in each setting."""
    trace = args.benchmarks / "dl" / "muri_trace3_offline.csv"
    print(HEADER)
    cases = (
        ("muri, factors 1", "muri", "node", "none", False, "makespan", "lp-groups"),
        ("muri, Muri's factors and overheads", "muri", "node", "muri", True, "makespan",
         "lp-groups"),
        ("fluid, 1 data slot, single GPUs, factors 1", "fluid", "gpu", "none", False,
         "makespan", "lp-groups"),
        ("mean JCT, muri, factors 1", "muri", "node", "none", False, "weighted_completion",
         "muri-s"),
    )  # fmt: skip
    for label, kind, placement, slowdown, restart, objective, peer in cases:
        path = folder / f"trace3-{kind}-{placement}-{objective}.json"
        data = import_muri(trace, placement=placement)
        data["interleave"] = kind
        data["objective"] = objective
        path.write_text(json.dumps(data))
        workload = jobs_from_instance(path)
        problem = load_instance(path)
        setting = Setting(kind, None, slowdown, restart)
        dispatch = dispatch_of(workload, setting, peer)
        base_run = dispatch.run()
        base = base_run.makespan if objective == "makespan" else base_run.mean_jct
        t0 = time.perf_counter()
        result = search_dispatch(dispatch, setting, objective, time_limit=args.time_limit,
                                 static=static_portfolio(problem))  # fmt: skip
        wall = time.perf_counter() - t0
        print(_row(f"{label} ({peer})", result, base, wall, dispatch), flush=True)


def batch60(args: argparse.Namespace, folder: Path) -> None:
    """The 60-job batch, with every stage and with each stage off."""
    path = folder / "batch60.json"
    path.write_text(json.dumps(generate_batch(60, seed=5, nodes=2, placement="gpu")))
    workload = jobs_from_instance(path)
    problem = load_instance(path)
    setting = Setting("fluid", None, "none", False)
    dispatch = dispatch_of(workload, setting, "lp-groups")
    base = dispatch.run().makespan
    print(HEADER)
    runs = [("all stages", STAGES)] + [
        (f"without {s}", tuple(x for x in STAGES if x != s)) for s in STAGES
    ]
    for label, stages in runs:
        t0 = time.perf_counter()
        result = search_dispatch(dispatch, setting, time_limit=args.time_limit, stages=stages,
                                 static=static_portfolio(problem))  # fmt: skip
        wall = time.perf_counter() - t0
        print(_row(f"60 jobs, {label}", result, base, wall, dispatch), flush=True)


def colgen(args: argparse.Namespace, folder: Path) -> None:
    """``solve -s cpsat``'s stages beside the portfolio's, twice each."""
    from planner.app.solve_dl import CPSAT_STAGES

    batch = folder / "batch60.json"
    batch.write_text(json.dumps(generate_batch(60, seed=5, nodes=2, placement="gpu")))
    trace = folder / "trace3.json"
    data = import_muri(args.benchmarks / "dl" / "muri_trace3_offline.csv", placement="node")
    trace.write_text(json.dumps({**data, "interleave": "muri"}))
    example = Path(__file__).parent.parent / "instances" / "example.yaml"
    ideal = {kind: Setting(kind, None, "none", False) for kind in ("fluid", "muri")}
    cases = (
        ("60-job batch, fluid, factors 1, no overhead", batch, ideal["fluid"], 60.0),
        ("example, its model", example, Setting(), 30.0),
        ("trace3', muri, factors 1, no overhead", trace, ideal["muri"], 300.0),
        ("trace3', muri, Muri's factors and overheads", trace, Setting("muri", None, "muri", True),
         300.0),
    )  # fmt: skip
    if args.case:
        cases = tuple(c for c in cases if any(c[0].startswith(k) for k in args.case))
    print("| case | solver | run | plan (s) | bound (s) | x bound | columns | wall (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, path, setting, limit in cases:
        workload = jobs_from_instance(path)
        problem = load_instance(path)
        dispatch = dispatch_of(workload, setting, "lp-groups")
        for solver, stages in (("portfolio", STAGES), ("cpsat", CPSAT_STAGES)):
            if args.solver and solver not in args.solver:
                continue
            for k in range(1, args.runs + 1):
                t0 = time.perf_counter()
                static = static_portfolio(problem) if solver == "portfolio" else None
                result = search_dispatch(dispatch, setting, time_limit=limit, stages=stages,
                                         static=static)  # fmt: skip
                wall = time.perf_counter() - t0
                best = result.best
                assert best is not None
                if best.static is None:
                    assert not audit(
                        best.run, dispatch.jobs, dispatch.nodes * dispatch.gpus_per_node
                    )
                found = result.colgen
                columns = "-" if found is None else (
                    f"{'converged' if found.converged else 'not converged'}, {found.rounds} "
                    f"rounds, {found.greedy_columns} greedy + {found.cpsat_columns} CP-SAT "
                    f"columns, pricing {found.pricing_seconds:.0f} of {found.seconds:.0f} s, "
                    f"master {found.plan.makespan:,.0f}"
                )  # fmt: skip
                last = result.stage_best().get("colgen")
                if last is not None:
                    columns += f"; stage colgen's best run {last.value:,.0f} ({last.source})"
                ratio = best.value / result.bound
                print(f"| {label} | {solver} | {k} | {best.value:,.0f} ({best.source}) | "
                      f"{result.bound:,.0f} ({result.bound_kind}) | {ratio:.4f} | {columns} | "
                      f"{wall:.0f} |", flush=True)  # fmt: skip


def speed(args: argparse.Namespace, folder: Path) -> None:
    """Dispatches per second at 100, 1,000 and 5,755 jobs."""
    print("| jobs | model | runs | seconds per run | dispatches per second |")
    print("|---|---|---|---|---|")
    for jobs, seed in ((100, 0), (1000, 0), (5755, 4)):
        path = folder / f"gen{jobs}.json"
        path.write_text(json.dumps(generate_batch(jobs, seed=seed, placement="node")))
        workload = jobs_from_instance(path)
        for kind in ("muri", "fluid"):
            dispatch = dispatch_of(workload, Setting(kind, None, "none", False), "lp-groups")
            count = 3 if jobs > 1000 else 5
            t0 = time.perf_counter()
            for _ in range(count):
                dispatch.run()
            per = (time.perf_counter() - t0) / count
            print(f"| {jobs:,} | {kind} | {count} | {per:.2f} | {1 / per:.2f} |", flush=True)


def main() -> None:
    """Run the part asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True)
    parser.add_argument("--part", choices=("trace3", "batch60", "colgen", "speed"), required=True)
    parser.add_argument("--case", action="append", help="colgen: the cases whose label starts so")
    parser.add_argument(
        "--solver", action="append", help="colgen: portfolio or cpsat (default both)"
    )
    parser.add_argument("--runs", type=int, default=2, help="colgen: runs of each")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        parts = {"trace3": trace3, "batch60": batch60, "colgen": colgen, "speed": speed}
        parts[args.part](args, Path(tmp))


if __name__ == "__main__":
    main()

"""Muri reproduced: the peer policies in planner's executor on Muri's trace3'.

Runs ``srtf``, ``srsf``, ``tiresias``, ``muri-s``, ``muri-l`` and ours, ``lp-groups``
(:mod:`planner.executor.loop`, :mod:`planner.executor.model.grouping`), on
``muri_trace3_offline.csv`` (992 jobs, all at 0, 8 nodes x 8 GPUs) under Muri's
interleaving model, twice: with Muri's slowdown factors and restart overheads (the
published setting), and ideal (factors 1, no restart overhead). Prints one row per
run: our makespan and mean JCT, Muri's figure for the same setting, the difference,
the ratio to Muri-S's and Muri-L's published makespans of the setting, the
per-resource bound under the model and the run time (seconds); then the bounds, with
the group-mix bound (:func:`planner.executor.model.grouping.mix_bound`) of each setting. Writes the
table as Markdown with ``--markdown``.

    python benchmarks/bench_muri.py --benchmarks ../shared/benchmarks [--markdown out.md]

With ``--ablation``, lp-groups on trace3' with one of its parts off at a time. With
``--online``, Muri's 400-job testbed trace with its arrivals instead: every
policy's makespan, mean and p99 JCT, and its JCTs over muri-s's in the same setting.
With ``--elastic``, that trace's jobs made elastic through their models' catalog profiles
(:func:`planner.dl.catalog.scaling_plans`), under ``goodput-pack`` and ``goodput`` with
elasticity and co-location off in turn, beside muri-s on the jobs as they are; every
run audited.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

from planner.executor.audit import audit
from planner.executor.energy import run_energy
from planner.executor.loop import run_policy
from planner.executor.model.elastic import Hybrid
from planner.executor.model.grouping import mix_bound
from planner.executor.model.jobs import read_trace
from planner.executor.policies import POLICIES
from planner.interleave import MURI_GROUP_FACTORS, Interleave, model_bound

PUBLISHED = {
    ("srtf", "muri"): 7_261_796,
    ("srsf", "muri"): 6_907_790,
    ("tiresias", "muri"): 6_761_641,
    ("muri-s", "muri"): 4_400_675,
    ("muri-l", "muri"): 4_403_652,
    ("srtf", "ideal"): 7_110_416,
    ("srsf", "ideal"): 6_736_976,
    ("muri-s", "ideal"): 3_378_496,
    ("muri-l", "ideal"): 3_302_449,
}
"""Muri's makespans (s): published with its factors and overheads, and its simulator
re-run with factors 1 and no restart cost."""
RERUN = {("muri-l", "muri"): 4_351_395, ("muri-l", "ideal"): 3_312_508}
"""Muri's public simulator re-run on the same input (a second figure)."""
PUBLISHED_JCT = {("srtf", "muri"): 844_395, ("srsf", "muri"): 798_058, ("muri-s", "muri"): 537_777}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=Path, required=True, help="the shared benchmarks")
    parser.add_argument("--policy", action="append", choices=POLICIES, help="default: all")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument(
        "--interleave",
        choices=("muri", "fluid"),
        default="muri",
        help="the model (under fluid there is no figure of Muri's to compare with)",
    )
    parser.add_argument("--data-slots", type=float, default=1.0, help="fluid: per GPU")
    parser.add_argument(
        "--online",
        action="store_true",
        help="run Muri's 400-job testbed trace with its arrivals instead, on the JCT",
    )
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="run lp-groups on trace3' with one of its parts turned off at a time",
    )
    parser.add_argument(
        "--elastic",
        action="store_true",
        help="the testbed trace's jobs made elastic, goodput-pack's ablation against muri-s",
    )
    args = parser.parse_args()
    if args.elastic:
        return elastic(args)
    if args.online:
        return online(args)
    if args.ablation:
        return ablation(args)
    jobs = read_trace(args.benchmarks / "dl" / "muri_trace3_offline.csv")
    work = [(j.gpus, j.iterations, j.stages) for j in jobs]
    bound = model_bound(work, 64, Interleave(args.interleave, data_slots=args.data_slots))["bound"]
    header = (
        "| policy | setting | makespan (s) | Muri's (s) | diff | x Muri-S | x Muri-L | x bound "
        "| mean JCT (s) | Muri's JCT (s) | energy (kWh) | run time (s) |"
    )
    rows = [header, "|" + "---|" * 12]
    for policy in args.policy or POLICIES:
        for setting in ("muri", "ideal"):
            factors = MURI_GROUP_FACTORS if setting == "muri" else None
            model = Interleave(args.interleave, data_slots=args.data_slots, factors=factors)
            run = run_policy(jobs, policy, interleave=model, restart=setting == "muri")
            figures = (PUBLISHED.get((policy, setting)), RERUN.get((policy, setting)))
            known = [r for r in figures if r and args.interleave == "muri"]
            refs = " / ".join(f"{r:,}" for r in known) or "-"
            diff = " / ".join(f"{100 * (run.makespan / r - 1):+.2f}%" for r in known) or "-"
            jct = PUBLISHED_JCT.get((policy, setting)) if args.interleave == "muri" else None
            peers = [PUBLISHED[(p, setting)] for p in ("muri-s", "muri-l")]
            versus = " | ".join(
                f"{run.makespan / r:.3f}" if args.interleave == "muri" else "-" for r in peers
            )
            rows.append(
                f"| {policy} | {setting} | {run.makespan:,.0f} | {refs} | {diff} | {versus} | "
                f"{run.makespan / bound:.3f} | {run.mean_jct:,.0f} | "
                f"{f'{jct:,}' if jct else '-'} | {run_energy(run, jobs, 64).kwh:,.0f} | "
                f"{run.runtime:.1f} |"
            )
            print(rows[-1], flush=True)
    mixes = []
    for setting in ("muri", "ideal"):
        factors = MURI_GROUP_FACTORS if setting == "muri" else None
        model = Interleave(args.interleave, data_slots=args.data_slots, factors=factors)
        mixes.append(f"{mix_bound(jobs, model, 64):,.0f} s ({setting})")
    text = "\n".join(rows) + (
        f"\n\nbound under {args.interleave}: {bound:,.0f} s per resource; "
        f"group-mix bound {', '.join(mixes)}\n"
    )
    if args.markdown is not None:
        args.markdown.write_text(text)
    print(text)
    return 0


def ablation(args: argparse.Namespace) -> int:
    """lp-groups on trace3' with each part off once: grouping (one job per GPU set), groups
    beyond pairs, the critical-job rule, and the re-solve interval (every event)."""
    from planner.executor.model import grouping

    jobs = read_trace(args.benchmarks / "dl" / "muri_trace3_offline.csv")
    variants = [
        ("lp-groups", {}, 4),
        ("no grouping (one job per GPU set)", {}, 1),
        ("pairs at most", {}, 2),
        ("no critical-job rule", {"CRITICAL": math.inf}, 4),
        ("program solved at every event", {"RESOLVE": 0.0}, 4),
    ]
    rows = ["| variant | setting | makespan (s) | x Muri-L | run time (s) |", "|" + "---|" * 5]
    for name, patch, most in variants:
        saved = {k: getattr(grouping, k) for k in patch}
        for k, v in patch.items():
            setattr(grouping, k, v)
        for setting in ("ideal", "muri"):
            factors = MURI_GROUP_FACTORS if setting == "muri" else None
            model = Interleave(args.interleave, data_slots=args.data_slots,
                               max_colocated=most, factors=factors)  # fmt: skip
            run = run_policy(jobs, "lp-groups", interleave=model, restart=setting == "muri")
            rows.append(
                f"| {name} | {setting} | {run.makespan:,.0f} | "
                f"{run.makespan / PUBLISHED[('muri-l', setting)]:.3f} | {run.runtime:.1f} |"
            )
            print(rows[-1], flush=True)
        for k, v in saved.items():
            setattr(grouping, k, v)
    return _written(args, rows)


def online(args: argparse.Namespace) -> int:
    """Every policy on the testbed trace (arrivals), both settings: makespan, mean and p99
    JCT, and the mean and p99 JCT over muri-s's in the same setting."""
    jobs = read_trace(args.benchmarks / "dl" / "muri_testbed_trace.csv")
    header = (
        "| policy | setting | makespan (s) | mean JCT (s) | p99 JCT (s) | mean JCT x muri-s "
        "| p99 JCT x muri-s | run time (s) |"
    )
    rows = [header, "|" + "---|" * 8]
    for setting in ("muri", "ideal"):
        factors = MURI_GROUP_FACTORS if setting == "muri" else None
        model = Interleave(args.interleave, data_slots=args.data_slots, factors=factors)
        runs = {
            p: run_policy(jobs, p, interleave=model, restart=setting == "muri")
            for p in args.policy or POLICIES
        }
        ref = runs.get("muri-s") or run_policy(
            jobs, "muri-s", interleave=model, restart=setting == "muri"
        )
        for policy, run in runs.items():
            _row(rows, policy, setting, f"{run.makespan:,.0f}", f"{run.mean_jct:,.0f}",
                 f"{run.p99_jct:,.0f}", f"{run.mean_jct / ref.mean_jct:.3f}",
                 f"{run.p99_jct / ref.p99_jct:.3f}", f"{run.runtime:.1f}")  # fmt: skip
    return _written(args, rows)


def _row(rows: list[str], *cells: str) -> None:
    """Append a table row of ``cells`` to ``rows`` and print it."""
    rows.append("| " + " | ".join(cells) + " |")
    print(rows[-1], flush=True)


def _written(args: argparse.Namespace, rows: list[str]) -> int:
    """Print the table ``rows`` (and write it to ``--markdown``); exit status 0."""
    text = "\n".join(rows) + "\n"
    if args.markdown is not None:
        args.markdown.write_text(text)
    print(text)
    return 0


def elastic(args: argparse.Namespace) -> int:
    """The testbed trace's jobs made elastic (every plan of their catalog profiles, or
    their own only: elasticity off) under goodput-pack and goodput (co-location off), and
    as they are under muri-s and tiresias, both settings; every run audited."""
    path = args.benchmarks / "dl" / "muri_testbed_trace.csv"
    fixed = read_trace(path)
    made = read_trace(path, elastic=64)
    own = [
        replace(j, elastic=Hybrid(tuple(p for p in j.elastic.plans if p.gpus == j.gpus), j.gpus))
        for j in made
    ]
    cases = [
        ("muri-s", "as they are", fixed, "yes", "no"),
        ("tiresias", "as they are", fixed, "no", "no"),
        ("goodput-pack", "elastic", made, "yes", "yes"),
        ("goodput", "elastic", made, "no", "yes"),
        ("goodput-pack", "own plan only", own, "yes", "no"),
        ("goodput", "own plan only", own, "no", "no"),
    ]
    rows = [
        "| setting | policy | jobs | co-location | elasticity | mean JCT (s) | p99 JCT (s) "
        "| makespan (s) | mean x muri-s | p99 x muri-s | audit | run time (s) |",
        "|" + "---|" * 12,
    ]
    for setting in ("muri", "ideal"):
        factors = MURI_GROUP_FACTORS if setting == "muri" else None
        model = Interleave("muri", factors=factors)
        ref = None
        for policy, what, jobs, colocation, elasticity in cases:
            start = time.perf_counter()
            run = run_policy(jobs, policy, interleave=model, restart=setting == "muri")
            seconds = time.perf_counter() - start
            ref = ref or run
            verdict = "valid" if not audit(run, jobs, 64) else "INVALID"
            _row(rows, setting, policy, what, colocation, elasticity, f"{run.mean_jct:,.0f}",
                 f"{run.p99_jct:,.0f}", f"{run.makespan:,.0f}",
                 f"{run.mean_jct / ref.mean_jct:.3f}", f"{run.p99_jct / ref.p99_jct:.3f}",
                 verdict, f"{seconds:.1f}")  # fmt: skip
    return _written(args, rows)


if __name__ == "__main__":
    sys.exit(main())

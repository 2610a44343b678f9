"""Plans on a real Slurm (issue 57): planned against realized, and what a plan saves
against Slurm's own scheduling. Needs a running Slurm whose nodes are ``node1`` ..
``nodeN`` with ``--gpus-per-node`` GPUs each (``export SLURM_CONF=$(.ci/slurm)``: three
nodes of 8). Run from the repository's top folder::

    python benchmarks/bench_slurm.py [--jobs 40] [--seed 5] [--scale 0.001] [--runs 2]
        [--objectives makespan,weighted_completion]

1. **The plan in Slurm.** A seeded batch (``planner generate``), planned by ``planner
   solve --no-preempt`` at each objective (makespan; weighted_completion: mean JCT; the
   executor's model: fluid, Muri's slowdown factors), launched
   ``--runs`` times at ``--scale`` (``planner launch``): planned and realized makespan and
   mean JCT (the plan's seconds), Slurm's delay per job.
2. **Slurm's own.** The same jobs, each asking its GPUs (``-N`` nodes of whole GPUs for a
   gang) and sleeping its time alone, all submitted at once in the batch's order and
   scheduled by Slurm's backfill: its realized figures. Its record, written as ``sacct
   -P`` output (in unscaled seconds), is the **history**: imported by ``planner import
   slurm``, planned by ``solve --no-preempt`` (jobs of compute only: Slurm knows no stage
   times) and launched: what the plan would have saved against what the cluster did.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from statistics import fmean

import yaml

from planner.app.job_runs import dispatch_file
from planner.app.launch import Realized, launch, poll, submit, summary
from planner.dl.workloads import generate_batch
from planner.executor.model.jobs import Workload, jobs_from_instance
from planner.executor.model.policy import JobState
from planner.executor.runs import DEFAULT_RESTART, DEFAULT_SLOWDOWN, Setting


def planner_cli(*args: object) -> str:
    """Run ``planner`` with ``args``; its output (exit on failure)."""
    done = subprocess.run([sys.executable, "-m", "planner", *map(str, args)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"planner {' '.join(map(str, args))}: {done.stderr.strip()}")
    return done.stdout


def plan(instance: Path, out: Path) -> tuple[float, float]:
    """``solve --no-preempt`` of ``instance`` into ``out``: its makespan and mean JCT."""
    planner_cli("solve", instance, "--no-preempt", "-t", 20, "-o", out)
    data = json.loads(out.read_text())
    return data["makespan"], data["mean_jct"]


HEAD = (
    "| run | planned makespan (s) | realized | planned mean JCT (s) | realized | "
    "Slurm's delay per job, mean / max (wall s) | placement | starts | wall |"
)
"""The head of a table of launches."""


def with_objective(instance: Path, objective: str, out: Path) -> Path:
    """A copy of ``instance`` at ``objective``."""
    data = yaml.safe_load(instance.read_text())
    data["objective"] = objective
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def launched(instance: Path, plan_file: Path, scale: float, label: str) -> dict[str, float]:
    """Launch a plan once; its figures (printed as one row)."""
    dispatch = dispatch_file(plan_file)
    assert dispatch is not None
    workload = jobs_from_instance(instance)
    started = time.monotonic()
    done = launch(dispatch, workload, scale)
    rows = dict(summary(done, dispatch))
    spans = {j.name: done.seconds(j.name) for j in workload.jobs}
    assert all(s is not None for s in spans.values()), rows
    ends = {n: s[1] for n, s in spans.items() if s is not None}
    delays = done.delays()
    out = {
        "planned makespan": dispatch.makespan,
        "realized makespan": max(ends.values()),
        "planned mean JCT": fmean(done.placed[j.name].end - j.release for j in workload.jobs),
        "realized mean JCT": fmean(ends[j.name] - j.release for j in workload.jobs),
        "delay mean": fmean(delays),
        "delay max": max(delays),
    }  # fmt: skip
    print(f"| {label} | {out['planned makespan']:,.0f} | {out['realized makespan']:,.0f} | "
          f"{out['planned mean JCT']:,.0f} | {out['realized mean JCT']:,.0f} | "
          f"{out['delay mean']:.2f} / {out['delay max']:.0f} | {rows['placement']} | "
          f"{rows['starts']} | {time.monotonic() - started:.0f} s |", flush=True)  # fmt: skip
    return out


def slurm_own(workload: Workload, gpus_per_node: int, scale: float, folder: Path
              ) -> tuple[dict[str, Realized], datetime]:  # fmt: skip
    """Submit the jobs at once, each its GPUs and its time alone (in the plan's model: its
    period alone, slowdown factors included, times its iterations), and let Slurm schedule
    them; what Slurm did per job, and the moment of submission."""
    folder.mkdir(parents=True, exist_ok=True)
    model = Setting(None, None, DEFAULT_SLOWDOWN, DEFAULT_RESTART).model(workload)
    scripts = []
    for k, job in enumerate(workload.jobs):
        nodes = math.ceil(job.gpus / gpus_per_node)
        alone = JobState(job, k, model, restart=False).alone * job.iterations
        seconds = max(1, math.ceil(alone * scale))
        text = (f"#!/bin/bash\n#SBATCH -J {job.name}\n#SBATCH -N {nodes}\n"
                f"#SBATCH --gres=gpu:{job.gpus // nodes}\nsleep {seconds}\n")  # fmt: skip
        (folder / f"{job.name}.sh").write_text(text)
        scripts.append(f"{job.name}.sh")
    zero = datetime.now().replace(microsecond=0)
    ids = submit(folder, scripts)
    seen: dict[str, Realized] = {}
    while not poll(ids, seen):
        time.sleep(0.5)
    names = dict(zip(ids, (j.name for j in workload.jobs), strict=True))
    return {names[i]: seen[i] for i in ids}, zero


def history(realized: dict[str, Realized], workload: Workload, zero: datetime, scale: float,
            path: Path) -> dict[str, float]:  # fmt: skip
    """Slurm's own run as ``sacct -P`` output in unscaled seconds; its makespan and mean
    JCT (the plan's seconds)."""

    def stamp(seconds: float) -> str:
        return (datetime(2026, 11, 2) + timedelta(seconds=seconds)).isoformat()

    lines = ["JobID|JobName|Submit|Start|End|Elapsed|State|AllocTRES|NNodes|NodeList"]
    ends = {}
    for k, job in enumerate(workload.jobs):
        r = realized[job.name]
        assert r.start is not None and r.end is not None and r.state == "COMPLETED", r
        start = (r.start - zero).total_seconds() / scale
        end = (r.end - zero).total_seconds() / scale
        ends[job.name] = end
        elapsed = int(end - start)
        lines.append(
            f"{k + 1}|{job.name}|{stamp(job.release)}|{stamp(start)}|{stamp(end)}|"
            f"{elapsed // 3600:02d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}|COMPLETED|"
            f"cpu={len(r.nodes)},gres/gpu={job.gpus},node={len(r.nodes)}|{len(r.nodes)}|"
            f"{','.join(r.nodes)}"
        )
    path.write_text("\n".join(lines) + "\n")
    return {"makespan": max(ends.values()),
            "mean JCT": fmean(ends[j.name] - j.release for j in workload.jobs)}  # fmt: skip


def plans_launched(instance: Path, objectives: list[str], stem: Path, label: str,
                   args: argparse.Namespace) -> None:  # fmt: skip
    """Plan ``instance`` at each objective and launch each plan ``args.runs`` times: one
    table."""
    print(HEAD + "\n" + "|---" * 9 + "|")
    for objective in objectives:
        chosen = with_objective(
            instance, objective, stem.with_name(f"{stem.name}-{objective}.yaml")
        )
        plan_file = stem.with_name(f"{stem.name}-plan-{objective}.json")
        plan(chosen, plan_file)
        for r in range(args.runs):
            launched(chosen, plan_file, args.scale, f"{label} ({objective}), launch {r + 1}")


def main() -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--scale", type=float, default=0.001)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--objectives", default="makespan,weighted_completion")
    args = parser.parse_args()
    objectives = args.objectives.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        instance = folder / "batch.yaml"
        data = generate_batch(args.jobs, args.seed, args.nodes, args.gpus_per_node)
        instance.write_text(yaml.safe_dump(data, sort_keys=False))
        print(f"batch: {args.jobs} jobs (seed {args.seed}) on {args.nodes} x "
              f"{args.gpus_per_node} GPUs; time scale {args.scale:g} (Slurm's whole "
              f"seconds: {1 / args.scale:,.0f} s of the plan's)\n")  # fmt: skip
        plans_launched(instance, objectives, folder / "batch", "plan", args)
        workload = jobs_from_instance(instance)
        print(
            "\n| Slurm's own (backfill, submitted at once) | makespan (s) | mean JCT (s) | wall |"
        )
        print("|---|---|---|---|")
        own = None
        for r in range(args.runs):
            started = time.monotonic()
            realized, zero = slurm_own(workload, args.gpus_per_node, args.scale,
                                       folder / f"own{r}")  # fmt: skip
            fig = history(realized, workload, zero, args.scale, folder / f"sacct{r}.txt")
            own = own or (fig, folder / f"sacct{r}.txt")
            print(f"| run {r + 1} | {fig['makespan']:,.0f} | {fig['mean JCT']:,.0f} | "
                  f"{time.monotonic() - started:.0f} s |", flush=True)  # fmt: skip
        assert own is not None
        fig, sacct = own
        hist = folder / "history.yaml"
        sinfo = folder / "sinfo.txt"
        sinfo.write_text(f"NODELIST CPUS MEMORY GRES\nnode[1-{args.nodes}] 32 256000 "
                         f"gpu:{args.gpus_per_node}\n")  # fmt: skip
        said = planner_cli("import", "slurm", sacct, "--nodes", sinfo, "-o", hist)
        said = said.strip().replace(f"{sacct} -> {hist} ", "")
        print(f"\nhistory (Slurm's own run 1, as sacct): {said}; it did makespan "
              f"{fig['makespan']:,.0f} s, mean JCT {fig['mean JCT']:,.0f} s; its plans "
              "(solve --no-preempt; jobs of compute only, as Slurm knows them):\n")  # fmt: skip
        plans_launched(hist, objectives, folder / "history", "history's plan", args)


if __name__ == "__main__":
    main()

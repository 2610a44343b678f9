"""A plan run by a real Slurm: ``planner launch INSTANCE PLAN [--time-scale F] -o RUN``.

The plan (a dispatch of ``planner solve --no-preempt``) is exported as batch scripts
(:mod:`planner.executor.slurm_export`) whose ``--begin`` times count from one moment,
``zero``, a couple of seconds after launch; the scripts are submitted with ``sbatch`` to
the Slurm that ``SLURM_CONF`` (or Slurm's default configuration) names. The launch
polls ``scontrol show job`` until every job has ended, noting the GPUs each was given
while it ran, then reads each job's nodes, start and end back: from ``sacct`` where
accounting runs, else from ``scontrol`` (which keeps a job for ``MinJobAge`` after its
end). Realized times are wall seconds after ``zero`` divided by the time scale, so they
read in the plan's seconds; Slurm records whole seconds, which at scale 0.001 is 1,000
of the plan's seconds.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from planner.dl.slurm import expand_hostlist
from planner.errors import InputError
from planner.executor.dispatch import DispatchPlan
from planner.executor.model.jobs import Workload
from planner.executor.slurm_export import (
    DEFAULT_COMMAND,
    Placed,
    check_options,
    export_slurm,
    placements,
)

ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
     "BOOT_FAIL", "DEADLINE"}
)  # fmt: skip
"""Slurm's job states after which a job never runs again."""

LEAD = 3.0
"""Seconds from the launch to the plan's time 0: the time ``sbatch`` takes for the jobs."""


@dataclass
class Realized:
    """What Slurm did with one job: its id, state, nodes, wall start and end (``None``
    where it never started or ended), and the GPU indices it held per node while it ran
    (where a poll saw it running)."""

    job_id: str
    state: str = "PENDING"
    nodes: list[str] = field(default_factory=list)
    start: datetime | None = None
    end: datetime | None = None
    gpus: dict[str, str] = field(default_factory=dict)


def slurm_command(name: str) -> str:
    """The path of Slurm's command ``name``.

    Raises
    ------
    InputError
        Where it is not on ``PATH`` (no Slurm client here).
    """
    found = shutil.which(name)
    if found is None:
        raise InputError(
            f"no Slurm here: {name} is not on PATH (install Slurm's client commands and point "
            "SLURM_CONF to its configuration)"
        )
    return found


def _call(args: Sequence[str], what: str) -> str:
    """The output of a Slurm command; a failure is an :class:`InputError` with its message."""
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{what}: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise InputError(f"{what}: {said[-1] if said else f'exit status {done.returncode}'}")
    return done.stdout


def fields(line: str) -> dict[str, str]:
    """``scontrol show job -o -d``'s ``Key=Value`` pairs (values may hold ``=`` and
    parentheses, never spaces); a detail key that repeats per node (``Nodes``, ``GRES``)
    keeps its values joined by spaces."""
    out: dict[str, str] = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if not sep:
            continue
        out[key] = f"{out[key]} {value}" if key in ("Nodes", "GRES") and key in out else value
    return out


def gpu_indices(line: str) -> dict[str, str]:
    """Per node the GPU indices a running job holds, from ``scontrol show job -o -d``
    (``Nodes=node1 CPU_IDs=0 Mem=4000 GRES=gpu:2(IDX:0-1)``; a shard job names the GPU
    its shards come from, ``GRES=shard:2(IDX:0)``)."""
    out = {}
    for nodes, rest in re.findall(r"\bNodes=(\S+)((?:\s+(?!Nodes=)\S+)*)", line):
        idx = re.search(r"\bGRES=(?:gpu|shard)(?::[^:(\s]+)?:\d+\(IDX:([0-9,\-]+)\)", rest)
        if idx is not None:
            for node in expand_hostlist(nodes):
                out[node] = idx.group(1)
    return out


def _time(text: str) -> datetime | None:
    """A Slurm time (``2026-12-07T06:46:08``), ``None`` for ``Unknown``/``None``/empty."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def submit(folder: Path, scripts: Sequence[str]) -> list[str]:
    """``sbatch --parsable`` each script of ``folder`` (its working folder); the job ids."""
    sbatch = slurm_command("sbatch")
    ids = []
    for script in scripts:
        out = _call([sbatch, "--parsable", "-D", str(folder), str(folder / script)],
                    f"sbatch {script}")  # fmt: skip
        ids.append(out.strip().split(";")[0])
    return ids


def poll(ids: Sequence[str], seen: dict[str, Realized]) -> bool:
    """One look at the jobs ``ids`` through ``scontrol show job -o -d``, noted in ``seen``;
    whether all have ended."""
    scontrol = slurm_command("scontrol")
    out = _call([scontrol, "show", "job", "-o", "-d"], "scontrol show job")
    wanted = set(ids)
    for line in out.splitlines():
        f = fields(line)
        job_id = f.get("JobId")
        if job_id not in wanted:
            continue
        r = seen.setdefault(job_id, Realized(job_id))
        r.state = f.get("JobState", r.state)
        r.nodes = (
            expand_hostlist(f.get("NodeList", ""))
            if f.get("NodeList") not in (None, "(null)")
            else []
        )
        r.start, r.end = _time(f.get("StartTime", "")), _time(f.get("EndTime", ""))
        if r.state == "RUNNING":
            r.gpus.update(gpu_indices(line))
    return all(seen.get(i, Realized(i)).state in ENDED for i in ids)


def from_sacct(ids: Sequence[str], seen: dict[str, Realized]) -> bool:
    """The jobs' nodes, start and end from ``sacct`` (Slurm's accounting) into ``seen``;
    ``False`` where accounting does not run here (``seen`` keeps ``scontrol``'s)."""
    sacct = shutil.which("sacct")
    if sacct is None:
        return False
    done = subprocess.run(
        [sacct, "-n", "-P", "-X", "-j", ",".join(ids),
         "--format=JobID,State,NodeList,Start,End"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        return False
    for line in done.stdout.splitlines():
        job_id, state, nodes, start, end = (line.split("|") + [""] * 5)[:5]
        if job_id in seen:
            r = seen[job_id]
            r.state, r.nodes = state.split()[0] if state else r.state, expand_hostlist(nodes)
            r.start, r.end = _time(start) or r.start, _time(end) or r.end
    return True


@dataclass
class Launch:
    """A plan as Slurm ran it: per job its plan and what Slurm did, the moment of the
    plan's time 0, the time scale, and where the times were read."""

    workload: Workload
    placed: dict[str, Placed]
    realized: dict[str, Realized]
    zero: datetime
    scale: float
    source: str
    asked: dict[str, float]
    """Per job the wall seconds after ``zero`` of its ``--begin``."""

    def offset(self, when: datetime | None) -> float | None:
        """Wall seconds after ``zero``."""
        return None if when is None else (when - self.zero).total_seconds()

    def seconds(self, job: str) -> tuple[float, float] | None:
        """A job's realized start and end in the plan's seconds (``None`` where it did not
        run to its end)."""
        r = self.realized[job]
        start, end = self.offset(r.start), self.offset(r.end)
        if start is None or end is None or r.state != "COMPLETED":
            return None
        return start / self.scale, end / self.scale

    def delays(self) -> list[float]:
        """Per job that ran, wall seconds from its ``--begin`` to its start in Slurm."""
        out = []
        for name, r in self.realized.items():
            start = self.offset(r.start)
            if start is not None and r.state == "COMPLETED":
                out.append(start - self.asked[name])
        return out


def launch(
    plan: DispatchPlan,
    workload: Workload,
    time_scale: float = 1.0,
    command: str = DEFAULT_COMMAND,
    folder: Path | None = None,
    wait_limit: float | None = None,
    tick: Callable[[int, int], None] | None = None,
) -> Launch:
    """Submit ``plan`` to Slurm at ``time_scale`` and wait until every job has ended.

    ``folder`` keeps the batch scripts and the jobs' output (a temporary folder by
    default); ``wait_limit`` (wall seconds, by default twice the scaled plan plus 120)
    bounds the wait, after which the jobs left are cancelled; ``tick(ended, jobs)`` is
    called after each poll.

    Raises
    ------
    InputError
        For options :func:`~planner.executor.slurm_export.check_options` refuses, without
        Slurm, for a plan with preemption, a node the instance names that Slurm
        does not have, a failed ``sbatch``, or a wait beyond ``wait_limit``.
    """
    check_options(command, time_scale)
    placed = placements(plan, workload)
    slurm_command("sbatch")
    known = set(_call([slurm_command("sinfo"), "-h", "-N", "-o", "%N"], "sinfo").split())
    names = workload.names(workload.nodes or 0)
    missing = sorted({names[k] for p in placed.values() for k, _ in p.where} - known)
    if missing:
        raise InputError(
            f"Slurm has no node {', '.join(missing)} (its nodes: {', '.join(sorted(known))}); "
            "plan on an instance whose nodes carry Slurm's names"
        )
    limit = wait_limit if wait_limit is not None else 2 * plan.makespan * time_scale + 120
    with tempfile.TemporaryDirectory(prefix="planner-launch-") as scratch:
        where = folder or Path(scratch)
        zero = datetime.now().replace(microsecond=0) + timedelta(seconds=math.ceil(LEAD))
        scripts = export_slurm(plan, workload, where, command, time_scale, zero, placed).scripts
        ids = submit(where.resolve(), [script for _, script in scripts])
        by_id = dict(zip(ids, (name for name, _ in scripts), strict=True))
        seen: dict[str, Realized] = {}
        deadline = time.monotonic() + limit
        try:
            while not poll(ids, seen):
                if tick is not None:
                    tick(sum(r.state in ENDED for r in seen.values()), len(ids))
                if time.monotonic() > deadline:
                    raise InputError(
                        f"the jobs ran beyond the wait limit of {limit:,.0f} s; cancelled "
                        "(--wait-limit)"
                    )
                time.sleep(0.5)
        except BaseException:
            subprocess.run([slurm_command("scancel"), *ids], capture_output=True, check=False)
            raise
        if tick is not None:
            tick(len(ids), len(ids))
        source = "sacct" if from_sacct(ids, seen) else "scontrol"
    asked = {j.name: float(math.floor(placed[j.name].start * time_scale)) for j in workload.jobs}
    realized = {by_id[i]: seen.get(i, Realized(i)) for i in ids}
    realized = {j.name: realized[j.name] for j in workload.jobs}
    return Launch(workload, placed, realized, zero, time_scale, source, asked)


def _mean_jct(ends: Mapping[str, float], workload: Workload) -> float:
    """Mean of end minus release over the jobs."""
    return fmean(ends[j.name] - j.release for j in workload.jobs)


def summary(done: Launch, plan: DispatchPlan) -> list[tuple[str, str]]:
    """The launch's figures as ``(key, value)`` rows: planned and realized makespan and
    mean JCT side by side (the plan's seconds), Slurm's delay per job (wall seconds),
    jobs off their planned nodes, and jobs that did not complete."""
    w = done.workload
    ran = {j.name: done.seconds(j.name) for j in w.jobs}
    rows = [("source", f"{done.source} (Slurm's records, whole seconds; time scale "
                       f"{done.scale:g})")]  # fmt: skip
    failed = [f"{n} ({done.realized[n].state})" for n, s in ran.items() if s is None]
    if failed:
        rows.append(("not completed", ", ".join(failed)))
        return rows
    names = w.names(w.nodes or 0)
    planned_end = {n: p.end for n, p in done.placed.items()}
    real_end = {n: s[1] for n, s in ran.items() if s is not None}
    rows.append(("makespan", f"planned {plan.makespan:,.0f} s, realized "
                             f"{max(real_end.values()):,.0f} s"))  # fmt: skip
    rows.append(("mean JCT", f"planned {_mean_jct(planned_end, w):,.0f} s, realized "
                             f"{_mean_jct(real_end, w):,.0f} s"))  # fmt: skip
    delays = done.delays()
    rows.append(("Slurm's delay", f"mean {fmean(delays):.2f} s, max {max(delays):.0f} s "
                                  "per job, wall time from its --begin to its start"))  # fmt: skip
    off = [n for n, p in done.placed.items()
           if sorted(done.realized[n].nodes) != sorted(names[k] for k, _ in p.where)]  # fmt: skip
    early = [n for n, s in ran.items() if s is not None and s[0] * done.scale < done.asked[n]]
    where = f"{len(w.jobs) - len(off)} of {len(w.jobs)} jobs on their planned nodes"
    rows.append(("placement", where + (f"; off: {', '.join(off)}" if off else "")))
    starts = f"{len(early)} jobs before their planned start"
    rows.append(("starts", starts + (f": {', '.join(early)}" if early else "")))
    return rows


def run_data(done: Launch, plan_name: str) -> dict[str, Any]:
    """The launch as a job-level run file (``planner gantt`` draws it): its
    ``residences`` (one row per job, on its realized nodes and GPUs where a poll saw
    them, partners those on the same GPUs at the same time), the plan's and Slurm's
    times per job, and the figures."""
    rows = []
    for job in done.workload.jobs:
        span = done.seconds(job.name)
        if span is None:
            continue
        r = done.realized[job.name]
        label = ",".join(f"{n}:{r.gpus[n]}" if n in r.gpus else n for n in r.nodes)
        rows.append({"job": job.name, "gpus": label, "start": span[0], "end": span[1],
                     "partners": []})  # fmt: skip
    for row in rows:
        row["partners"] = [o["job"] for o in rows if o is not row and o["gpus"] == row["gpus"]
                           and o["start"] < row["end"] and row["start"] < o["end"]]  # fmt: skip
    jobs = {
        j.name: {
            "planned": [done.placed[j.name].start, done.placed[j.name].end],
            "realized": list(done.seconds(j.name) or ()),
            "slurm_state": done.realized[j.name].state,
            "nodes": done.realized[j.name].nodes,
        }
        for j in done.workload.jobs
    }
    makespan = max((r["end"] for r in rows), default=0.0)
    return {"residences": rows, "policy": f"Slurm's run of {plan_name}",
            "interleave": f"time scale {done.scale:g}", "makespan": makespan,
            "zero": done.zero.isoformat(), "source": done.source, "jobs": jobs}  # fmt: skip


def progress(enabled: bool) -> Callable[[int, int], None] | None:
    """A ``tick`` printing the jobs ended so far on stderr, on a terminal only."""
    if not enabled or not sys.stderr.isatty():
        return None

    def tick(ended: int, jobs: int) -> None:
        sys.stderr.write(f"\r{ended} of {jobs} jobs ended")
        if ended == jobs:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return tick

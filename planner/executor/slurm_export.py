"""A plan as Slurm batch scripts: ``planner export slurm INSTANCE PLAN -o DIR``.

The plan is a dispatch file of ``planner solve --no-preempt``: every job runs once,
from its start to its end, on one GPU set. Each job becomes ``DIR/jobs/JOB.sh``:

- ``-J`` its name, ``-w`` its nodes (the instance's node names), ``-N`` their count;
- ``--gres=gpu:N`` its GPUs per node (``--gpus=N`` in all where the plan puts other
  counts on its nodes); a job of one GPU that the plan puts beside others
  asks ``--gres=shard:1`` instead, so that Slurm lets them share the GPU (Slurm takes all
  of a job's shards from one GPU, so a job of several GPUs that shares them asks whole
  GPUs, and the export says how many such jobs there are);
- ``--begin=now+S``: its planned start, ``S`` seconds after ``submit.sh`` runs (times
  scaled by ``time_scale``), or at a given time of day (``planner launch`` gives one, so
  that the time ``sbatch`` takes does not shift the later jobs);
- its command: the user's template (``{job}``, ``{gpus}``, ``{seconds}`` filled in), by
  default ``sleep`` of its planned run time.

``DIR/submit.sh`` submits them all with ``sbatch``, in the order of their planned starts
(Slurm's priority is its submission order: a job that waits for its nodes holds back
the jobs submitted after it that need them).
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from planner.errors import InputError, OutputError
from planner.executor.dispatch import DispatchPlan
from planner.executor.model.jobs import Workload
from planner.files import write_text

DEFAULT_COMMAND = "sleep {seconds}"
"""The training command of a job where the user gives none: its planned run time."""


@dataclass(frozen=True)
class Placed:
    """A job of a plan without preemption: its GPU set, planned start and end (s), and
    whether it shares its GPUs."""

    where: tuple[tuple[int, tuple[int, ...]], ...]
    start: float
    end: float
    shares: bool


def placements(plan: DispatchPlan, workload: Workload) -> dict[str, Placed]:
    """Every job of ``plan`` on its one GPU set, from its start to its end.

    Raises
    ------
    InputError
        If a job of the plan moves, pauses, or never runs (a plan with preemption).
    """
    events = plan.events
    ends = [t for t, _ in events[1:]] + [plan.makespan]
    runs: dict[str, list[tuple[int, object, float, float, int]]] = {}
    for k, ((t, groups), end) in enumerate(zip(events, ends, strict=True)):
        for names, where in groups:
            for n in names:
                runs.setdefault(n, []).append((k, where, t, end, len(names)))
    out = {}
    for job in workload.jobs:
        spans = runs.get(job.name)
        if not spans:
            raise InputError(f"the plan never runs job {job.name!r}")
        steps = [k for k, *_ in spans]
        sets = {where for _, where, *_ in spans}
        if len(sets) > 1 or steps != list(range(steps[0], steps[-1] + 1)):
            raise InputError(
                f"job {job.name!r} moves or pauses in this plan: a batch cluster runs each job "
                "once, on one GPU set (plan with planner solve --no-preempt)"
            )
        out[job.name] = Placed(
            spans[0][1],  # type: ignore[arg-type]
            spans[0][2],
            spans[-1][3],
            any(size > 1 for *_, size in spans),
        )
    return out


@dataclass(frozen=True)
class Export:
    """What :func:`export_slurm` wrote: per job its name and its script
    (``jobs/NAME.sh``), in the order of the planned starts, which ``submit.sh`` keeps; and
    how many jobs share GPUs across several GPUs (they ask whole GPUs, so Slurm does not
    overlap them)."""

    scripts: list[tuple[str, str]]
    whole: int

    @property
    def line(self) -> str:
        """What was written, as one line."""
        note = f"; {self.whole} jobs share GPUs across several GPUs and ask whole GPUs" \
            if self.whole else ""  # fmt: skip
        return f"{len(self.scripts)} batch scripts and submit.sh{note}"


def export_slurm(
    plan: DispatchPlan,
    workload: Workload,
    folder: Path,
    command: str = DEFAULT_COMMAND,
    time_scale: float = 1.0,
    zero: datetime | None = None,
    placed: dict[str, Placed] | None = None,
) -> Export:
    """Write ``plan``'s batch scripts and ``submit.sh`` into ``folder`` (see the module
    docstring); what was written (:class:`Export`).

    ``zero``: the local time of day at which the plan's time 0 falls (``--begin`` as that
    time plus the scaled start); by default the moment each job is submitted. ``placed``:
    the plan's :func:`placements`, where the caller has them.

    Raises
    ------
    InputError
        For a plan with preemption, or options :func:`check_options` refuses.
    """
    check_options(command, time_scale)
    names = workload.names(workload.nodes or 0)
    placed = placed if placed is not None else placements(plan, workload)
    try:
        (folder / "jobs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", str(folder)) from None
    scripts = []
    # submitted in the order of their planned starts: Slurm's priority is its submission
    # order, and a job that waits for its nodes holds back those submitted after it
    for job in sorted(workload.jobs, key=lambda j: (placed[j.name].start, j.name)):
        p = placed[job.name]
        nodes = [names[k] for k, _ in p.where]
        counts = {len(ids) for _, ids in p.where}
        shard = p.shares and job.gpus == 1
        seconds = max(1, math.ceil((p.end - p.start) * time_scale))
        begin = math.floor(p.start * time_scale)
        when = (
            f"now+{begin}"
            if zero is None
            else (zero + timedelta(seconds=begin)).isoformat(timespec="seconds")
        )
        gres = (
            "--gres=shard:1"
            if shard
            else f"--gres=gpu:{counts.pop()}"
            if len(counts) == 1
            else f"--gpus={job.gpus}"  # other counts on its nodes: Slurm spreads them
        )
        name = re.sub(r"[^A-Za-z0-9._-]", "_", job.name)
        lines = [
            "#!/bin/bash",
            f"#SBATCH -J {name}",
            f"#SBATCH -w {','.join(nodes)}",
            f"#SBATCH -N {len(nodes)}",
            f"#SBATCH {gres}",
            f"#SBATCH --begin={when}",
            f"# planned: {p.start:,.0f} s to {p.end:,.0f} s on {', '.join(nodes)}"
            + (" beside other jobs" if p.shares else ""),
            command.format(job=shlex.quote(job.name), gpus=job.gpus, seconds=seconds),
        ]
        script = f"jobs/{name}.sh"
        write_text(folder / script, "\n".join(lines) + "\n")
        scripts.append((job.name, script))
    submit = ["#!/bin/bash", "set -euo pipefail", 'cd "$(dirname "$0")"']
    submit += [f"sbatch --parsable {shlex.quote(s)}" for _, s in scripts]
    write_text(folder / "submit.sh", "\n".join(submit) + "\n")
    (folder / "submit.sh").chmod(0o755)
    whole = sum(placed[job.name].shares and job.gpus > 1 for job in workload.jobs)
    return Export(scripts, whole)


def check_options(command: str, time_scale: float) -> None:
    """Refuse a time scale not > 0 and a command template with another field than
    ``{job}``, ``{gpus}`` and ``{seconds}`` (:class:`InputError`)."""
    if not 0 < time_scale < math.inf:
        raise InputError(f"--time-scale {time_scale:g}: give a factor > 0")
    try:
        command.format(job="j", gpus=1, seconds=1)
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(
            f"--command {command!r}: a template may use {{job}}, {{gpus}} and {{seconds}} "
            f"({exc.__class__.__name__}: {exc})"
        ) from None

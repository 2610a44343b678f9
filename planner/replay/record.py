"""What a replay gives: every task's run (:class:`TaskRun`), the realized run with its
figures (:class:`Execution`), and how a finished replay becomes one (:func:`record`):
the realized instance and schedule, which the independent validator checks.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.disturbances import Disturbances
from planner.errors import InputError
from planner.files import write_text
from planner.metrics import job_completion, offered_capacity
from planner.model import CapacityWindow, Mode, Precedence, Problem, Resource, Segment, Task
from planner.schedule import Schedule
from planner.validate import Report, validate

if TYPE_CHECKING:
    from planner.replay.replay_state import ReplayState

log = logging.getLogger(__name__)


@dataclass
class TaskRun:
    """How one task ran: planned and realized times (ticks), nodes, lost attempts."""

    task: str
    job: str | None
    mode: str
    nodes: tuple[str, ...]
    """Its nodes (or placement key); empty on the pool."""
    planned_start: int
    planned_finish: int
    start: int
    finish: int
    lost: list[tuple[int, int]] = field(default_factory=list)
    """Lost attempts as ``(start, end)``: killed by a failure at ``end``."""
    waited: int = 0
    """Ticks spent between segments waiting for resources."""

    @property
    def rerun(self) -> bool:
        """Whether a failure made the task run again."""
        return bool(self.lost)


@dataclass
class Execution:
    """A realized run of a plan and what it says about the plan."""

    problem: Problem
    """The realized instance (see the module docstring)."""
    schedule: Schedule
    """The realized schedule of :attr:`problem`."""
    report: Report
    """The independent validator's verdict on :attr:`schedule`."""
    runs: list[TaskRun]
    """One entry per task of the planned instance, in its order."""
    planned_makespan: int
    makespan: int
    mean_jct: float | None
    p99_jct: float | None
    planned_mean_jct: float | None
    utilisation: dict[str, float]
    """Per cluster resource and per node kind (over all nodes): work done (lost work
    included) / capacity offered (none while a node is down) over the makespan."""
    lost_gpu_ticks: int
    """Work lost to failures: GPUs times ticks of every lost attempt."""
    lost_task_ticks: int
    """Work lost to failures: ticks of every lost attempt."""
    seed: int
    disturbances: Disturbances
    notes: list[str] = field(default_factory=list)

    @property
    def optimism(self) -> float:
        """Realized makespan / planned makespan (1 when the plan is empty)."""
        return self.makespan / self.planned_makespan if self.planned_makespan else 1.0

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``run.json``: the figures, the notes and every task's run."""
        segments = self.schedule.to_dict(self.problem)["tasks"]
        by_task = {s["task"]: s["segments"] for s in segments}
        return {
            "instance": self.problem.name.removesuffix(" (realized)"),
            "time_unit": self.problem.time_unit,
            "seed": self.seed,
            "disturbances": self.disturbances.to_dict(),
            "validator": str(self.report),
            "planned_makespan": self.planned_makespan,
            "makespan": self.makespan,
            "optimism": self.optimism,
            "mean_jct": self.mean_jct,
            "p99_jct": self.p99_jct,
            "planned_mean_jct": self.planned_mean_jct,
            "utilisation": self.utilisation,
            "lost_gpu_ticks": self.lost_gpu_ticks,
            "lost_task_ticks": self.lost_task_ticks,
            "notes": self.notes,
            "tasks": [
                {
                    "task": r.task,
                    "job": r.job,
                    "mode": r.mode,
                    "nodes": list(r.nodes),
                    "planned_start": r.planned_start,
                    "planned_finish": r.planned_finish,
                    "start": r.start,
                    "finish": r.finish,
                    "rerun": r.rerun,
                    "lost": [list(a) for a in r.lost],
                    "waited": r.waited,
                    "segments": by_task[r.task],
                    "lost_segments": [
                        by_task[f"{r.task}#lost{k}"] for k in range(1, len(r.lost) + 1)
                    ],
                }
                for r in self.runs
            ],
        }

    def node_view(self, planned: Problem) -> tuple[Problem, Schedule]:
        """The realized run as a placed instance and schedule, for a chart by node.

        Every attempt of :attr:`schedule` becomes a task on its nodes, of one mode whose
        segments are the realized ones (waits demand nothing), each demanding of every
        node kind what it demanded on each of its nodes. ``planned`` is the instance
        that ran (its nodes). Not for the validator: :attr:`problem` is the checked form.
        """
        kinds = set(planned.node_kinds)
        tasks, nodes = [], {}
        for t in self.problem.tasks:
            mode = t.modes[0]
            on = mode.placement.split("+") if mode.placement else []
            segments = [
                seg.model_copy(
                    update={
                        "demand": {
                            k: q
                            for r, q in seg.demand.items()
                            if (k := r.partition(".")[2]) in kinds and r.partition(".")[0] in on
                        }
                    }
                )
                for seg in mode.segments
            ]
            view = Mode(name=mode.name, segments=segments, nodes=len(on) or None)
            tasks.append(t.model_copy(update={"modes": [view]}))
            if on:
                nodes[t.name] = tuple(on)
        problem = Problem(
            name=self.problem.name,
            time_unit=self.problem.time_unit,
            resources=planned.renewables,
            nodes=planned.nodes,
            tasks=tasks,
            jobs=self.problem.jobs,
            units=planned.units,
        )
        schedule = Schedule(
            modes=dict(self.schedule.modes), starts=dict(self.schedule.starts), nodes=nodes
        )
        return problem, schedule

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to a ``.json`` file."""
        path = Path(path)
        if path.suffix.lower() != ".json":
            raise InputError("the run file must end in .json", str(path))
        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


def record(replay: ReplayState) -> Execution:
    """The :class:`Execution` of the finished replay ``replay``: the realized instance and
    schedule, checked by the validator, and the figures."""
    problem, plan = replay.problem, replay.plan
    real, sched, runs = _realized(replay)
    report = validate(real, sched)
    if not report.ok:
        log.error("the replay produced an invalid schedule: %s", report.violations[0])
    makespan = sched.makespan(real)
    mean, p99 = job_completion(problem, {r.task: r.finish for r in runs})
    planned = {t.name: plan.finish(problem, t.name) for t in problem.tasks}
    return Execution(
        problem=real,
        schedule=sched,
        report=report,
        runs=runs,
        planned_makespan=plan.makespan(problem),
        makespan=makespan,
        mean_jct=mean,
        p99_jct=p99,
        planned_mean_jct=job_completion(problem, planned)[0],
        utilisation=_utilisation(replay, real, sched, makespan),
        lost_gpu_ticks=replay.lost_gpu,
        lost_task_ticks=replay.lost_ticks,
        seed=replay.seed,
        disturbances=replay.dist,
        notes=_notes(replay, runs),
    )


def _segments(replay: ReplayState, i: int, pieces: list[tuple[int, int, int]]) -> list[Segment]:
    segs = replay.modes[i].segments
    return [
        Segment(name="wait", duration=b - a)
        if j < 0
        else Segment(
            name=segs[j].name,
            duration=b - a,
            demand={replay.names[s]: q for s, q in replay.dem[i][j]},
        )
        for j, a, b in pieces
    ]


def _realized(replay: ReplayState) -> tuple[Problem, Schedule, list[TaskRun]]:
    problem, plan = replay.problem, replay.plan
    tasks: list[Task] = []
    modes: dict[str, str] = {}
    starts: dict[str, int] = {}
    runs: list[TaskRun] = []
    for i, task in enumerate(problem.tasks):
        mode = replay.modes[i]
        key = "+".join(sorted(replay.on[i])) or None
        for k, (start, pieces) in enumerate(replay.lost[i], start=1):
            name = f"{task.name}#lost{k}"
            lost = Mode(name=mode.name, segments=_segments(replay, i, pieces), placement=key)
            tasks.append(Task(name=name, job=task.job, modes=[lost], release=task.release))
            modes[name], starts[name] = mode.name, start  # type: ignore[assignment]
        real = Mode(
            name=mode.name,
            segments=_segments(replay, i, replay.pieces[i]),
            consumes=mode.consumes,
            placement=key,
        )
        tasks.append(Task(name=task.name, job=task.job, modes=[real], release=task.release))
        modes[task.name], starts[task.name] = mode.name, replay.attempt[i]  # type: ignore[assignment]
        planned = plan.starts[task.name]
        runs.append(
            TaskRun(
                task=task.name,
                job=task.job,
                mode=mode.name,  # type: ignore[arg-type]
                nodes=replay.on[i],
                planned_start=planned,
                planned_finish=planned + mode.duration,
                start=replay.attempt[i],
                finish=replay.finish[i],  # type: ignore[arg-type]
                lost=[(a, a + sum(b - s for _, s, b in p)) for a, p in replay.lost[i]],
                waited=sum(b - a for j, a, b in replay.pieces[i] if j < 0),
            )
        )
    precedences = [
        Precedence(before=f"{p.before}#lost1", after=p.after, kind="SS", lag=p.lag)
        if p.kind == "SS" and replay.lost[problem.task_index[p.before]]
        else p
        for p in problem.precedences
    ]
    resources = []
    for k, name in enumerate(replay.names):
        down = replay.outages.get(replay.owner.get(k, ""), [])
        res = replay.res[k] or Resource(name=name, capacity=replay.cap[k])
        resources.append(_with_outages(res, down) if down else res)
    units = (
        {
            name: problem.unit(name if replay.res[k] else name.removeprefix(f"{replay.owner[k]}."))
            for k, name in enumerate(replay.names)
        }
        if problem.units
        else {}
    )
    real_problem = Problem(
        **problem.settings() | {"units": units},
        name=f"{problem.name} (realized)",
        resources=[*resources, *problem.nonrenewables],
        tasks=tasks,
        precedences=precedences,
        jobs=problem.jobs,
    )
    meta = {"instance": real_problem.name, "solver": "simulate"}
    return real_problem, Schedule(modes=modes, starts=starts, meta=meta), runs


def _utilisation(
    replay: ReplayState, real: Problem, sched: Schedule, makespan: int
) -> dict[str, float]:
    """Work / capacity offered per cluster resource and per node kind over all nodes."""
    label = [
        name if replay.res[k] is not None else name.removeprefix(f"{replay.owner[k]}.")
        for k, name in enumerate(replay.names)
    ]
    work: dict[str, int] = dict.fromkeys(label, 0)
    offered: dict[str, int] = dict.fromkeys(label, 0)
    index = {name: k for k, name in enumerate(replay.names)}
    for res in real.renewables:
        offered[label[index[res.name]]] += offered_capacity(res, makespan)
    for t in real.tasks:
        for seg in t.modes[0].segments:
            for r, q in seg.demand.items():
                work[label[index[r]]] += q * seg.duration
    return {r: work[r] / offered[r] for r in work if offered[r]}


def _notes(replay: ReplayState, runs: list[TaskRun]) -> list[str]:
    notes = []
    if not any(replay.on):
        notes.append("pooled plan: no task has a node; interference counts the pool as one node")
    late = sum(
        1
        for r, t in zip(runs, replay.problem.tasks, strict=True)
        if t.deadline is not None and r.finish > t.deadline
    )
    if late:
        notes.append(f"{late} tasks finish after their deadline")
    waits = [r.waited for r in runs if r.waited]
    if waits:
        notes.append(f"{len(waits)} tasks waited between segments ({sum(waits)} ticks in all)")
    end = max((r.finish for r in runs), default=0)
    for f in replay.dist.failures:
        if f.time >= end:
            notes.append(f"failure {f} comes after the run ended (tick {end}): no effect")
    for note in notes:
        log.info("%s", note)
    return notes


def _with_outages(res: Resource, outages: list[tuple[int, int]]) -> Resource:
    """``res`` with capacity 0 over ``outages``, which override its own windows."""
    spans: list[list[int]] = []
    for start, end in sorted(outages):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    windows = [CapacityWindow(start=a, end=b, capacity=0) for a, b in spans]
    for w in res.windows:
        cuts = [w.start]
        for a, b in spans:
            if a < w.end and b > w.start:
                cuts += [max(a, w.start), min(b, w.end)]
        cuts.append(w.end)
        for a, b in zip(cuts[::2], cuts[1::2], strict=True):
            if b > a:
                windows.append(CapacityWindow(start=a, end=b, capacity=w.capacity))
    return res.model_copy(update={"windows": sorted(windows, key=lambda w: w.start)})

"""Executing a plan: an event-driven replay of a schedule under disturbances.

The plan is replayed as a dispatch policy. Every task keeps its planned mode
and its planned nodes, and runs its segments in order at realized durations
(:mod:`planner.execution.disturbances`). It imports no solver.

**Nodes.** A task's nodes are its schedule's nodes (``Schedule.nodes``, for a
mode with ``nodes`` > 0; its demands on node kinds such as ``gpu`` apply to
every node of the set), else its mode's placement key (a problem-form file
whose node resources are cluster-wide resources named ``KEY.kind``), else none:
the task runs on the pool. A pooled plan (no task has nodes) counts the pool
as one node, which a note of the :class:`Execution` says.

**Dispatch rule.** Events happen at whole ticks. At each tick the replay first
ends the segments that are due (their demand is freed), then applies node
failures and recoveries, then starts work: first the tasks that are between
two segments, then the tasks that are ready, each group in *plan order*
(planned start, then position in the instance). A task is ready when each
predecessor has finished (``FS``) or started (``SS``) at least the lag ago, its
release has come and, unless ``work_conserving``, its planned start has come.
A segment starts when its demand fits, on every resource of every node of the
task, the capacity left by the segments running now and none of the task's
nodes is down; on a resource with capacity windows it must also fit every
window it could reach at the worst slowdown, with the segments running now
counted to their own worst-case ends. A task that does not fit is passed over
for the next ones (backfilling) and tried again when resources are freed. A
task whose next segment does not fit waits, holding nothing (a ``wait``
segment without demand), so the realized schedule is valid by construction.
With no disturbance every task starts at its planned start and the realized
schedule is the plan.

**Durations.** A segment's work is its planned duration times its noise factor
(one factor per segment, drawn from ``seed`` in task order, so plans with the
same segments see the same factors). Work progresses at rate 1, or ``1 / s(k)``
while the task is interleaved with ``k - 1`` others; the segment ends at the
first whole tick at which its work is done.

**Interference.** A task's GPUs are its peak demand (per node of its set) on
resources or node kinds named ``gpu``, ``gpu.*``, ``KEY.gpu`` or
``KEY.gpu.*``; a node's GPUs are its capacity of GPU kinds (for a placement
key or the pool: the capacity of the GPU resources its tasks use). While the
tasks with GPUs that run on a node (started, not finished, waiting included)
demand more GPUs together than the node has, they must time-share them and each
of these ``k`` tasks is interleaved with ``k - 1`` others. A gang runs at the
pace of its slowest node.

**Failures.** A failure ``NODE@TIME+DOWN`` kills the tasks running on the node
(placed there, a gang of which it is one node, or using one of its ``NODE.*``
resources) at ``TIME``: their attempts are lost and they re-run from their
start, that is from the end of the last finished block of their job (a
finished task is never lost), at the same realized durations, as soon as all
their nodes are up (the node is back at ``TIME + DOWN``), in plan order. Lost
work is counted in GPU-ticks (all GPUs of the task times the ticks of the lost
attempt) and in task-ticks.

**The realized run** is checked by the independent validator in this
representation: a :class:`~planner.model.Problem` whose resources are the
cluster-wide resources plus one renewable ``NODE.kind`` per node and kind (the
node's capacity), each at capacity 0 in windows while its node is down (also
the ``KEY.*`` resources of a placement key that failed); one task per task
with one mode, its realized segments (``wait`` segments included) whose node
demands are spelled out on the ``NODE.kind`` of every node of its set, and
whose placement key is its node set (``node1+node2``), so that the jobs'
colocation is checked too; one more task ``NAME#lostK`` per lost attempt; an
``SS`` precedence on a re-run task pointing at its first attempt; deadlines
dropped (a note counts the misses); budgets used once, by the final attempts.
Plus a :class:`~planner.schedule.Schedule` of it.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError, PlannerError
from planner.execution.disturbances import MAX_RUNS, MAX_SEED, Disturbances, Failure
from planner.metrics import job_completion, offered_capacity
from planner.model import CapacityWindow, Mode, Precedence, Problem, Resource, Segment, Task
from planner.schedule import Schedule
from planner.times import tick_label
from planner.validate import Report, validate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from planner.interrupt import Halt

log = logging.getLogger(__name__)

_GPU = re.compile(r"^(?:[^.]+\.)?gpu(?:\.[^.]+)?$")
_EPS = 1e-6
"""Work left below this many ticks counts as done (float rounding of the rates)."""
_END, _FAIL, _BACK, _READY, _WAKE = range(5)
"""Event kinds, in the order they are handled within one tick."""


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
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")


def simulate(
    problem: Problem,
    schedule: Schedule,
    disturbances: Disturbances | None = None,
    seed: int = 0,
) -> Execution:
    """Replay ``schedule`` on ``problem`` under ``disturbances``.

    Parameters
    ----------
    problem
        The planned instance.
    schedule
        A valid schedule of it: the plan.
    disturbances
        Noise, slowdown, failures and the dispatch variant; none by default.
    seed
        Seed of the noise factors.

    Returns
    -------
    Execution
        The realized run, its figures, the realized instance and schedule and
        the validator's verdict on them.

    Raises
    ------
    InputError
        If the schedule is not valid for the instance, or a failure names a
        node the plan does not have (or the plan is pooled).
    PlannerError
        If tasks could never start (a capacity window that never lets them fit).
    """
    dist = disturbances if disturbances is not None else Disturbances()
    check_inputs(problem, schedule, dist)
    return _Replay(problem, schedule, dist, seed).execution()


def dispatch(
    problem: Problem,
    plan: Schedule,
    disturbances: Disturbances,
    seed: int,
    noise_keys: Sequence[int],
) -> Execution:
    """Replay ``plan`` as :func:`simulate` does, without requiring it to be valid.

    Online planning (:func:`planner.execution.replan.simulate_online`) replays a composite plan:
    what has started keeps the entries it ran under, the rest follows the latest plan.
    Such a plan need not be valid (the realized run is valid by construction, and
    checked). Each task's noise factors are drawn from ``(seed, noise_keys[i])``, so a
    task sees the same factors whatever the other tasks of the replay are.
    """
    return _Replay(problem, plan, disturbances, seed, noise_keys).execution()


def check_inputs(problem: Problem, schedule: Schedule, disturbances: Disturbances) -> None:
    """Raise :class:`InputError` unless ``schedule`` is valid and every failure names a node.

    The nodes a failure may name are the problem's nodes and the placement keys
    of the plan's modes.
    """
    report = validate(problem, schedule)
    if not report.ok:
        raise InputError(f"the schedule is not valid for the instance: {report.violations[0]}")
    if not disturbances.failures:
        return
    modes = [t.mode(schedule.modes[t.name]) for t in problem.tasks]
    if not any(m.nodes or m.placement for m in modes):
        raise InputError(
            f"failure {disturbances.failures[0]}: the plan is pooled (no task has a node); "
            "failures need a placed plan"
        )
    names = _domains(problem)
    for f in disturbances.failures:
        if f.node not in names:
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise InputError(f"failure {f}: no node {f.node!r} (nodes: {shown})")


@dataclass(frozen=True)
class RunSummary:
    """The figures of one Monte Carlo run."""

    seed: int
    makespan: int
    optimism: float
    mean_jct: float | None
    p99_jct: float | None
    lost_gpu_ticks: int
    valid: bool


def summarize(execution: Execution) -> RunSummary:
    """The figures of ``execution`` that a Monte Carlo study keeps."""
    ex = execution
    return RunSummary(
        ex.seed, ex.makespan, ex.optimism, ex.mean_jct, ex.p99_jct, ex.lost_gpu_ticks, ex.report.ok
    )


class Study:
    """Monte Carlo runs kept as columns: a few numbers per run, never an execution, so
    memory stays small whatever the number of runs (:data:`~planner.execution.disturbances.MAX_RUNS`
    at most: 56 bytes each).

    Rows are in the order they were added; :meth:`figures` sorts them by seed.
    """

    COLUMNS = ("seed", "makespan", "optimism", "mean_jct", "p99_jct", "lost_gpu_ticks", "valid")

    def __init__(self, capacity: int) -> None:
        self.data = np.full((capacity, len(self.COLUMNS)), np.nan)
        self.size = 0
        self.interrupted = False
        """Whether Ctrl-C stopped the study before its last run."""

    def add(self, run: RunSummary) -> None:
        """Append one run's figures."""
        jct = [math.nan if v is None else v for v in (run.mean_jct, run.p99_jct)]
        row = (run.seed, run.makespan, run.optimism, *jct, run.lost_gpu_ticks, run.valid)
        self.data[self.size] = row
        self.size += 1

    def __len__(self) -> int:
        return self.size

    def _in_seed_order(self) -> np.ndarray:
        rows = self.data[: self.size]
        return rows[np.argsort(rows[:, 0], kind="stable")]

    def column(self, name: str) -> np.ndarray:
        """The values of column ``name`` of the runs done, in seed order."""
        return self._in_seed_order()[:, self.COLUMNS.index(name)]

    @property
    def invalid(self) -> int:
        """Runs whose realized schedule the validator rejected (0 unless there is a bug)."""
        return int((self.data[: self.size, self.COLUMNS.index("valid")] == 0).sum())

    def figures(self, per_run: bool = True) -> dict[str, Any]:
        """The distributions of the realized makespan and mean JCT, and (``per_run``) the
        runs' figures as one list per column, in seed order."""
        rows = self._in_seed_order()
        jct = rows[:, self.COLUMNS.index("mean_jct")]
        jct = jct[~np.isnan(jct)]
        out: dict[str, Any] = {
            "runs": self.size,
            "interrupted": self.interrupted,
            "makespan": distribution(rows[:, self.COLUMNS.index("makespan")]),
            "mean_jct": distribution(jct) if len(jct) else None,
        }
        if per_run:
            cols: dict[str, Any] = {}
            for k, name in enumerate(self.COLUMNS):
                values = rows[:, k]
                if name in ("seed", "makespan", "lost_gpu_ticks"):
                    cols[name] = values.astype(np.int64).tolist()
                elif name == "valid":
                    cols[name] = (values == 1).tolist()
                else:
                    cols[name] = [None if math.isnan(v) else v for v in values.tolist()]
            out["per_run"] = cols
        return out


def monte_carlo(
    problem: Problem,
    schedule: Schedule,
    disturbances: Disturbances,
    runs: int = 10,
    seed: int = 0,
    jobs: int = 1,
    progress: Callable[[RunSummary], None] | None = None,
    study: Study | None = None,
    halt: Halt | None = None,
) -> Study:
    """Replay ``schedule`` with the seeds ``seed .. seed + runs - 1``.

    The runs are streamed: each keeps only its figures (:class:`Study`), and at most
    two runs per worker are in flight. The first Ctrl-C (on the main thread) stops the
    study after the runs in flight (within one run's time), and the study is returned
    with :attr:`Study.interrupted` set; a second Ctrl-C aborts.

    Parameters
    ----------
    problem, schedule, disturbances
        As for :func:`simulate`.
    runs
        Replays, 1 to :data:`~planner.execution.disturbances.MAX_RUNS`.
    seed
        The first seed.
    jobs
        Worker processes; 1 runs in this process.
    progress
        Called with each run's summary as it ends.
    study
        Runs done before (e.g. the full replay of the first seed): the new ones are
        added to it, and its capacity must hold them.
    halt
        The stop request Ctrl-C sets (a new one by default): a caller that shares it
        can tell a first Ctrl-C from a second.

    Raises
    ------
    InputError
        For a bad count, or as :func:`simulate`.
    """
    from planner.interrupt import Halt, run_interruptibly

    if not 1 <= runs <= MAX_RUNS:
        raise InputError(f"runs must be from 1 to {MAX_RUNS:,}, got {runs}")
    if not 0 <= seed <= MAX_SEED - runs + 1:
        raise InputError(f"the seeds {seed} .. {seed + runs - 1} are not all in 0 .. {MAX_SEED}")
    check_inputs(problem, schedule, disturbances)
    out = study if study is not None else Study(runs)
    if out.size + runs > len(out.data):
        raise InputError(f"the study holds {len(out.data) - out.size} more runs, not {runs}")
    halt = halt if halt is not None else Halt()

    def note(run: RunSummary) -> None:
        out.add(run)
        if progress:
            progress(run)

    def work() -> None:
        seeds = range(seed, seed + runs)
        if jobs <= 1 or runs <= 1:
            for s in seeds:
                if halt.is_set():
                    return
                note(summarize(_Replay(problem, schedule, disturbances, s).execution()))
            return
        with ProcessPoolExecutor(
            min(jobs, runs), initializer=_init_worker, initargs=(problem, schedule, disturbances)
        ) as pool:
            todo = iter(seeds)
            flying = {pool.submit(_worker_run, s) for s in islice(todo, 2 * jobs)}
            while flying:
                done, flying = wait(flying, return_when=FIRST_COMPLETED)
                for fut in done:
                    note(fut.result())
                if not halt.is_set():
                    flying |= {pool.submit(_worker_run, s) for s in islice(todo, len(done))}

    _, out.interrupted = run_interruptibly(work, halt.set, "monte-carlo")
    out.interrupted = out.interrupted or halt.is_set()
    return out


def distribution(values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Mean, 5th, 50th and 95th percentile and maximum of ``values`` (not empty)."""
    a = np.asarray(values, dtype=float)
    p5, p50, p95 = np.percentile(a, [5, 50, 95])
    return {
        "mean": float(a.mean()),
        "p5": float(p5),
        "p50": float(p50),
        "p95": float(p95),
        "max": float(a.max()),
    }


@dataclass(frozen=True)
class Ranking:
    """One plan judged by its realized runs."""

    name: str
    planned_makespan: int
    makespan: dict[str, float]
    """Distribution of the realized makespan (:func:`distribution`)."""
    mean_jct: dict[str, float] | None
    """Distribution of the realized mean JCT, if the instance has jobs."""
    invalid: int
    """Runs whose realized schedule the validator rejected (0 unless there is a bug)."""
    runs: int
    """The replays of the plan."""


def rank_by_realized(
    problem: Problem,
    schedules: Mapping[str, Schedule],
    disturbances: Disturbances,
    runs: int = 10,
    seed: int = 0,
    jobs: int = 1,
) -> list[Ranking]:
    """Rank plans of one instance by their realized makespan over ``runs`` seeded replays.

    Every plan is replayed with the same seeds ``seed .. seed + runs - 1`` (plans
    with the same segments see the same noise factors).

    Parameters
    ----------
    problem
        The instance.
    schedules
        The plans by name (e.g. by solver).
    disturbances, jobs
        As for :func:`monte_carlo`.
    runs
        Replays per plan, at least 1.

    Returns
    -------
    list[Ranking]
        Best first: by mean realized makespan, then its 95th percentile, then name.
    """
    out = []
    for name, schedule in schedules.items():
        got = monte_carlo(problem, schedule, disturbances, runs, seed, jobs)
        if got.interrupted:
            raise KeyboardInterrupt
        figures = got.figures(per_run=False)
        out.append(
            Ranking(
                name=name,
                planned_makespan=schedule.makespan(problem),
                makespan=figures["makespan"],
                mean_jct=figures["mean_jct"],
                invalid=got.invalid,
                runs=len(got),
            )
        )
    return sorted(out, key=lambda r: (r.makespan["mean"], r.makespan["p95"], r.name))


def draw_makespans(ax: Axes, study: Study, planned: int, time_unit: str) -> Axes:
    """Histogram of the realized makespans of ``study`` on ``ax``, the planned one marked."""
    ax.hist(study.column("makespan"), bins="auto", color="#4c72b0", alpha=0.8)
    ax.axvline(planned, color="#c44e52", linewidth=1.5, label=f"planned {planned}")
    ax.set_xlabel(f"realized makespan ({tick_label(time_unit)})")
    ax.set_ylabel("runs")
    ax.set_title(f"{len(study)} replays", fontsize=10, loc="left")
    ax.legend(frameon=False)
    return ax


def replay_run(problem: Problem, run: Mapping[str, Any], file: str | None = None) -> Execution:
    """The :class:`Execution` of a run file of ``planner simulate -o``, replayed from its plan,
    disturbances and seed (a replay is deterministic), and checked against the file.

    Raises
    ------
    InputError
        If the file is not a run of ``problem``, or its replay differs (a run of
        ``simulate --online``, re-planned as it went, is not a replay of one plan).
    """
    from planner.execution.disturbances import Noise, Slowdown

    try:
        rows = {r["task"]: r for r in run["tasks"]}
        plan = Schedule(
            modes={t: str(r["mode"]) for t, r in rows.items()},
            starts={t: int(r["planned_start"]) for t, r in rows.items()},
            nodes={t: tuple(r["nodes"]) for t, r in rows.items() if r.get("nodes")},
        )
        d = run["disturbances"]
        factors = d.get("slowdown_factors")
        dist = Disturbances(
            noise=Noise.parse(d["noise"]) if d.get("noise") else None,
            slowdown=Slowdown(tuple(factors), str(d.get("slowdown"))) if factors else None,
            failures=tuple(Failure.parse(f) for f in d.get("failures") or ()),
            work_conserving=bool(d.get("work_conserving")),
        )
        seed = int(run["seed"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError(
            "not a run of planner simulate -o (tasks with mode, nodes and planned_start; "
            "disturbances; seed)",
            file,
        ) from None
    missing = [t.name for t in problem.tasks if t.name not in rows]
    if missing or len(rows) != len(problem.tasks):
        raise InputError(f"not a run of instance {problem.name!r} (task {missing[:1]})", file)
    ex = simulate(problem, plan, dist, seed)
    same = all(
        (r.start, r.finish) == (int(rows[r.task]["start"]), int(rows[r.task]["finish"]))
        for r in ex.runs
    )
    if not same:
        raise InputError(
            "replaying the run's plan gives another run (a run of simulate --online is "
            "re-planned as it goes: draw it with simulate --online --gantt)",
            file,
        )
    return ex


_WORKER: tuple[Problem, Schedule, Disturbances] | None = None


def _init_worker(problem: Problem, schedule: Schedule, disturbances: Disturbances) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent stops the study, the workers
    # finish the run they have.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = (problem, schedule, disturbances)


def _worker_run(seed: int) -> RunSummary:
    assert _WORKER is not None
    return summarize(_Replay(*_WORKER, seed).execution())


def _task_nodes(schedule: Schedule, task: Task, mode: Mode) -> tuple[str, ...]:
    """The nodes of ``task``: its schedule's nodes, else its placement key, else none."""
    if mode.nodes:
        return schedule.nodes[task.name]
    return (mode.placement,) if mode.placement else ()


def _domains(problem: Problem) -> list[str]:
    """What can fail: the problem's nodes, then the placement keys of its modes."""
    names = [n.name for n in problem.nodes]
    keys = {m.placement for t in problem.tasks for m in t.modes if m.placement}
    return names + sorted(keys - set(names))  # type: ignore[operator]


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


class _Replay:
    """The event loop: state per task in flat lists indexed by the task's position.

    Capacities are *slots*: the cluster-wide renewables first, then one per
    node and node kind. A segment's demand is a list of ``(slot, quantity)``.
    """

    def __init__(
        self,
        problem: Problem,
        schedule: Schedule,
        dist: Disturbances,
        seed: int,
        noise_keys: Sequence[int] | None = None,
    ) -> None:
        self.problem, self.plan, self.dist, self.seed = problem, schedule, dist, seed
        self.slow = dist.slowdown
        tasks = problem.tasks
        n = len(tasks)
        self.modes = [t.mode(schedule.modes[t.name]) for t in tasks]
        self.on = [_task_nodes(schedule, t, m) for t, m in zip(tasks, self.modes, strict=True)]
        self._slots()
        self.dem = [
            [self._demand(seg.demand, i) for seg in m.segments] for i, m in enumerate(self.modes)
        ]
        durations = np.array([s.duration for m in self.modes for s in m.segments], dtype=float)
        if dist.noise is not None and noise_keys is not None:
            durations *= np.concatenate(
                [
                    dist.noise.factors(np.random.default_rng([seed, key]), len(m.segments))
                    for key, m in zip(noise_keys, self.modes, strict=True)
                ]
            )
        elif dist.noise is not None:
            durations *= dist.noise.factors(np.random.default_rng(seed), len(durations))
        flat = durations.tolist()
        self.work: list[list[float]] = []
        at = 0
        for m in self.modes:
            self.work.append(flat[at : at + len(m.segments)])
            at += len(m.segments)
        self.gpus = [
            max(
                (
                    sum(q for r, q in s.demand.items() if _GPU.match(r))
                    for s in m.segments
                    if s.duration
                ),
                default=0,
            )
            for m in self.modes
        ]
        self.all_gpus = [
            g * (len(self.on[i]) if m.nodes else 1)
            for i, (g, m) in enumerate(zip(self.gpus, self.modes, strict=True))
        ]
        self.touch = [
            sorted(
                {
                    *self.on[i],
                    *(self.owner[s] for d in self.dem[i] for s, _ in d if s in self.owner),
                }
            )
            for i in range(n)
        ]
        self._interference()
        self._queues(schedule)
        # Precedences.
        index = problem.task_index
        self.succ: list[list[tuple[int, str, int]]] = [[] for _ in range(n)]
        self.preds_left = [0] * n
        self.earliest = [
            t.release if dist.work_conserving else max(t.release, schedule.starts[t.name])
            for t in tasks
        ]
        for p in problem.precedences:
            self.succ[index[p.before]].append((index[p.after], p.kind, p.lag))
            self.preds_left[index[p.after]] += 1
        # Task state.
        self.seg = [-1] * n
        self.waiting: list[int | None] = [None] * n
        self.seg_start = [0] * n
        self.rem = [0.0] * n
        self.speed = [1.0] * n
        self.last = [0] * n
        self.book_end = [0] * n
        self.version = [0] * n
        self.attempt = [0] * n
        self.first_start: list[int | None] = [None] * n
        self.finish: list[int | None] = [None] * n
        self.pieces: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.lost: list[list[tuple[int, list[tuple[int, int, int]]]]] = [[] for _ in range(n)]
        self.running_on: dict[str, set[int]] = {v: set() for v in self.domains}
        self.down_until: dict[str, int] = {}
        self.outages: dict[str, list[tuple[int, int]]] = {}
        self.lost_gpu = self.lost_ticks = 0
        self.events: list[tuple[int, int, int, int, int]] = []
        self.seq = 0

    # Set-up.

    def _slots(self) -> None:
        """Slots, their capacities, windows, realized names and owning nodes."""
        problem = self.problem
        ren = problem.renewables
        self.res: list[Resource | None] = list(ren)
        self.names = [r.name for r in ren]
        self.cap = [r.capacity for r in ren]
        self.slot = {r.name: k for k, r in enumerate(ren)}
        self.node_slot: dict[tuple[str, str], int] = {}
        self.owner: dict[int, str] = {}
        for node in problem.nodes:
            for kind, cap in node.capacity.items():
                name = f"{node.name}.{kind}"
                if name in self.slot:
                    raise InputError(
                        f"node {node.name!r}: its {kind!r} is named {name!r} in the realized run, "
                        "which is already a cluster-wide resource"
                    )
                self.node_slot[node.name, kind] = len(self.names)
                self.owner[len(self.names)] = node.name
                self.res.append(None)
                self.names.append(name)
                self.cap.append(cap)
        self.domains = _domains(problem)
        keys = [v for v in self.domains if v not in {n.name for n in problem.nodes}]
        for k, r in enumerate(ren):
            hits = [v for v in keys if r.name.startswith(f"{v}.")]
            if hits:
                self.owner[k] = max(hits, key=len)
        self.windowed = [r is not None and bool(r.windows) for r in self.res]
        self.load = [0] * len(self.names)
        self.bookings: list[dict[int, tuple[int, int]]] = [{} for _ in self.names]

    def _demand(self, demand: Mapping[str, int], i: int) -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []
        for r, q in demand.items():
            if not q:
                continue
            if r in self.slot:
                out.append((self.slot[r], q))
            else:
                out.extend((self.node_slot[v, r], q) for v in self.on[i])
        return tuple(out)

    def _interference(self) -> None:
        """Interference groups (a node, a placement key, or ``None``: the pool) and their GPUs."""
        nodes = {nd.name: nd for nd in self.problem.nodes}
        self.groups: list[tuple[str | None, ...]] = [on or (None,) for on in self.on]
        used: dict[str | None, set[int]] = {}
        for i, groups in enumerate(self.groups):
            for g in groups:
                used.setdefault(g, set()).update(
                    s for d in self.dem[i] for s, _ in d if s < len(self.problem.renewables)
                )
        self.gpu_cap: dict[str | None, int] = {}
        for g, slots in used.items():
            if g in nodes:
                caps = nodes[g].capacity.items()
                self.gpu_cap[g] = sum(c for kind, c in caps if _GPU.match(kind))
            else:
                self.gpu_cap[g] = sum(self.cap[s] for s in slots if _GPU.match(self.names[s]))
        self.members: dict[str | None, set[int]] = {g: set() for g in used}
        self.gpu_sum = dict.fromkeys(used, 0)
        self.factor = dict.fromkeys(used, 1.0)

    def _queues(self, schedule: Schedule) -> None:
        """Plan order, and dispatch queues per *signature* (nodes touched, segment demand).

        Within one dispatch pass loads only grow, so once the first task of a
        signature does not fit, none of the later ones does: a pass tries the
        head of each queue only (every task, on resources with capacity windows,
        whose fit also depends on the task's duration).
        """
        tasks = self.problem.tasks
        n = len(tasks)
        self.order = sorted(range(n), key=lambda i: (schedule.starts[tasks[i].name], i))
        self.rank = [0] * n
        for k, i in enumerate(self.order):
            self.rank[i] = k
        ids: dict[tuple[tuple[str, ...], tuple[tuple[int, int], ...]], int] = {}
        self.sig_dem: list[tuple[tuple[int, int], ...]] = []
        self.sig_touch: list[list[str]] = []
        self.sig_windowed: list[bool] = []
        self.slot_sigs: list[set[int]] = [set() for _ in self.names]
        self.node_sigs: dict[str, set[int]] = {v: set() for v in self.domains}
        self.sig: list[list[int]] = []
        for i in range(n):
            row = []
            for dem in [*self.dem[i], ()]:
                key = (tuple(self.touch[i]), dem)
                if key not in ids:
                    g = ids[key] = len(self.sig_dem)
                    self.sig_dem.append(dem)
                    self.sig_touch.append(self.touch[i])
                    self.sig_windowed.append(any(self.windowed[s] for s, _ in dem))
                    for s, _ in dem:
                        self.slot_sigs[s].add(g)
                    for v in self.touch[i]:
                        self.node_sigs[v].add(g)
                row.append(ids[key])
            self.sig.append(row)
        self.first = [self._next_work(i, 0) for i in range(n)]
        # Heaps of ranks, cleaned lazily: an entry counts while its task is queued there.
        self.ready: list[list[int]] = [[] for _ in self.sig_dem]
        self.cont: list[list[int]] = [[] for _ in self.sig_dem]
        self.ready_at = [-1] * n
        self.cont_at = [-1] * n
        self.dirty: set[int] = set()

    def push(self, time: int, kind: int, a: int, b: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (time, kind, self.seq, a, b))

    # The loop.

    def run(self) -> None:
        for i in range(len(self.modes)):
            if not self.preds_left[i]:
                self.push(self.earliest[i], _READY, i)
        for k, f in enumerate(self.dist.failures):
            self.push(f.time, _FAIL, k)
        while self.events:
            t = self.events[0][0]
            while self.events and self.events[0][0] == t:
                _, kind, _, a, b = heapq.heappop(self.events)
                if kind == _END:
                    if b == self.version[a]:
                        self._end_segment(a, t)
                elif kind == _FAIL:
                    self._fail(self.dist.failures[a], t)
                elif kind == _BACK:
                    node = self.domains[a]
                    if self.down_until[node] == t:
                        self.dirty |= self.node_sigs[node]
                elif kind == _READY:
                    self._make_ready(a)
                else:
                    self.dirty.add(a)
            self._dispatch(t)
        stuck = [t.name for t, f in zip(self.problem.tasks, self.finish, strict=True) if f is None]
        if stuck:
            raise PlannerError(
                f"the replay stalled: {len(stuck)} tasks never fit (first {stuck[0]!r})"
            )

    def _dispatch(self, t: int) -> None:
        """Start what fits at ``t``: continuing tasks, then ready ones, each in plan order."""
        while self.dirty:
            sigs, self.dirty = self.dirty, set()
            self._drain(self.cont, self.cont_at, sigs, t)
            self._drain(self.ready, self.ready_at, sigs, t)

    def _drain(self, queues: list[list[int]], at: list[int], sigs: set[int], t: int) -> None:
        """Start, in plan order, the tasks queued in ``queues`` under ``sigs`` that fit at ``t``."""
        heap: list[tuple[int, int]] = []
        for g in sigs:
            q = queues[g]
            while q and at[self.order[q[0]]] != g:
                heapq.heappop(q)
            if not q:
                continue
            if self.sig_windowed[g]:
                heap.extend((k, g) for k in q if at[self.order[k]] == g)
            else:
                heap.append((q[0], g))
        heapq.heapify(heap)
        while heap:
            k, g = heapq.heappop(heap)
            i = self.order[k]
            if at[i] != g:
                continue
            j = self.seg[i] if queues is self.cont else self.first[i]
            if not self._fits(i, j, g, t):
                continue
            at[i] = -1
            if queues is self.cont:
                self._start_segment(i, j, t)
            else:
                self._start_task(i, t)
            if not self.sig_windowed[g]:
                q = queues[g]
                while q and at[self.order[q[0]]] != g:
                    heapq.heappop(q)
                if q:
                    heapq.heappush(heap, (q[0], g))

    def _gate(self, i: int, t: int) -> None:
        if self.earliest[i] <= t:
            self._make_ready(i)
        else:
            self.push(self.earliest[i], _READY, i)

    def _make_ready(self, i: int) -> None:
        self._queue(self.ready, self.ready_at, i, self.sig[i][self.first[i]])

    def _queue(self, queues: list[list[int]], at: list[int], i: int, g: int) -> None:
        at[i] = g
        heapq.heappush(queues[g], self.rank[i])
        self.dirty.add(g)

    def _fits(self, i: int, j: int, g: int, t: int) -> bool:
        """Whether segment ``j`` of task ``i`` (signature ``g``) can start at ``t``."""
        for v in self.sig_touch[g]:
            if self.down_until.get(v, -1) > t:
                return False
        load, cap, windowed = self.load, self.cap, self.windowed
        for s, q in self.sig_dem[g]:
            limit = self.res[s].capacity_at(t) if windowed[s] else cap[s]  # type: ignore[union-attr]
            if load[s] + q > limit:
                if windowed[s]:
                    self._wake(s, g, t)
                return False
        if self.sig_windowed[g]:
            for s, q in self.sig_dem[g]:
                if windowed[s] and not self._fits_windows(s, q, t, t + self._bound(i, j)):
                    self._wake(s, g, t)
                    return False
        return True

    def _wake(self, s: int, g: int, t: int) -> None:
        """Try signature ``g`` again at the next window edge of slot ``s`` after ``t``."""
        res = self.res[s]
        assert res is not None
        edges = [e for w in res.windows for e in (w.start, w.end) if e > t]
        if edges:
            self.push(min(edges), _WAKE, g)

    def _fits_windows(self, s: int, q: int, t: int, end: int) -> bool:
        """Whether ``q`` more fits slot ``s`` over ``[t, end)``, running segments to bounds."""
        res = self.res[s]
        assert res is not None
        points = {t, *(p for w in res.windows for p in (w.start, w.end) if t < p < end)}
        for p in points:
            booked = sum(qq for qq, until in self.bookings[s].values() if until > p)
            if booked + q > res.capacity_at(p):
                return False
        return True

    def _bound(self, i: int, j: int) -> int:
        """Most ticks segment ``j`` of task ``i`` can take: its work at the worst slowdown."""
        worst = self.slow.worst if self.slow is not None and self.gpus[i] else 1.0
        return max(1, math.ceil(self.work[i][j] * worst - _EPS))

    def _next_work(self, i: int, j: int) -> int:
        """First segment from ``j`` that takes time (``len`` if none)."""
        work = self.work[i]
        while j < len(work) and not work[j]:
            j += 1
        return j

    # Tasks and segments.

    def _start_task(self, i: int, t: int) -> None:
        self.attempt[i] = t
        self.pieces[i] = []
        self.seg[i] = -1
        if self.first_start[i] is None:
            self.first_start[i] = t
            for s, kind, lag in self.succ[i]:
                if kind == "SS":
                    self._release_succ(s, t + lag, t)
        j = self._record_instant(i, 0, t)
        if j == len(self.dem[i]):
            self._finish(i, t)
            return
        self._join(i, t)
        self._start_segment(i, j, t)

    def _record_instant(self, i: int, j: int, t: int) -> int:
        """Record the zero-duration segments from ``j`` at ``t``; the next one that takes time."""
        nxt = self._next_work(i, j)
        self.pieces[i].extend((k, t, t) for k in range(j, nxt))
        return nxt

    def _start_segment(self, i: int, j: int, t: int) -> None:
        waited = self.waiting[i]
        if waited is not None:
            if t > waited:
                self.pieces[i].append((-1, waited, t))
            self.waiting[i] = None
        self.seg[i], self.seg_start[i], self.last[i] = j, t, t
        self.rem[i] = self.work[i][j]
        self.speed[i] = max(self.factor[g] for g in self.groups[i]) if self.gpus[i] else 1.0
        self.book_end[i] = t + self._bound(i, j)
        for s, q in self.dem[i][j]:
            self.load[s] += q
            if self.windowed[s]:
                self.bookings[s][i] = (q, self.book_end[i])
        self._schedule_end(i, t)

    def _schedule_end(self, i: int, t: int) -> None:
        """(Re)schedule the end of task ``i``'s segment from ``t``, never before ``t``.

        A new speed at ``t`` (another task left) can find the segment's work already
        done: it ends at ``t``, the first whole tick at which it is done, not in the past.
        """
        end = t + math.ceil(self.rem[i] * self.speed[i] - _EPS)
        end = min(max(end, t, self.seg_start[i] + 1), self.book_end[i])
        self.version[i] += 1
        self.push(end, _END, i, self.version[i])

    def _release(self, i: int, j: int) -> None:
        for s, q in self.dem[i][j]:
            self.load[s] -= q
            self.dirty |= self.slot_sigs[s]
            if self.windowed[s]:
                del self.bookings[s][i]

    def _end_segment(self, i: int, t: int) -> None:
        j = self.seg[i]
        self._release(i, j)
        self.pieces[i].append((j, self.seg_start[i], t))
        j = self._record_instant(i, j + 1, t)
        if j == len(self.dem[i]):
            self._leave(i, t)
            self._finish(i, t)
            return
        self.seg[i], self.waiting[i] = j, t
        self._queue(self.cont, self.cont_at, i, self.sig[i][j])

    def _finish(self, i: int, t: int) -> None:
        self.finish[i] = t
        for s, kind, lag in self.succ[i]:
            if kind == "FS":
                self._release_succ(s, t + lag, t)

    def _release_succ(self, s: int, earliest: int, t: int) -> None:
        self.earliest[s] = max(self.earliest[s], earliest)
        self.preds_left[s] -= 1
        if not self.preds_left[s]:
            self._gate(s, t)

    # Interference.

    def _join(self, i: int, t: int) -> None:
        for v in self.touch[i]:
            self.running_on[v].add(i)
        if self.gpus[i]:
            for g in self.groups[i]:
                self.members[g].add(i)
                self.gpu_sum[g] += self.gpus[i]
            self._refactor(self.groups[i], t)

    def _leave(self, i: int, t: int) -> None:
        for v in self.touch[i]:
            self.running_on[v].discard(i)
        if self.gpus[i]:
            for g in self.groups[i]:
                self.members[g].discard(i)
                self.gpu_sum[g] -= self.gpus[i]
            self._refactor(self.groups[i], t)

    def _refactor(self, groups: tuple[str | None, ...], t: int) -> None:
        """Set the slowdown of the tasks on ``groups`` after a task joined or left them."""
        if self.slow is None:
            return
        changed: set[int] = set()
        for g in groups:
            members = self.members[g]
            k = len(members) if self.gpu_sum[g] > self.gpu_cap[g] else 1
            s = self.slow.factor(k)
            if s != self.factor[g]:
                self.factor[g] = s
                changed |= members
        for m in sorted(changed):
            s = max(self.factor[g] for g in self.groups[m])
            if self.waiting[m] is None and self.seg[m] >= 0 and s != self.speed[m]:
                self.rem[m] -= (t - self.last[m]) / self.speed[m]
                self.last[m], self.speed[m] = t, s
                self._schedule_end(m, t)

    # Failures.

    def _fail(self, f: Failure, t: int) -> None:
        until = t + f.down
        if f.down:
            self.outages.setdefault(f.node, []).append((t, until))
        if until > self.down_until.get(f.node, -1):
            self.down_until[f.node] = until
            self.push(until, _BACK, self.domains.index(f.node))
        for i in sorted(self.running_on[f.node], key=self.rank.__getitem__):
            self._kill(i, t)

    def _kill(self, i: int, t: int) -> None:
        waited = self.waiting[i]
        if waited is not None:
            if t > waited:
                self.pieces[i].append((-1, waited, t))
            self.cont_at[i] = -1
            self.waiting[i] = None
        else:
            j = self.seg[i]
            self._release(i, j)
            if t > self.seg_start[i]:
                self.pieces[i].append((j, self.seg_start[i], t))
        self.version[i] += 1
        self.lost[i].append((self.attempt[i], self.pieces[i]))
        self.lost_gpu += self.all_gpus[i] * (t - self.attempt[i])
        self.lost_ticks += t - self.attempt[i]
        self._leave(i, t)
        self.seg[i] = -1
        self.pieces[i] = []
        self._make_ready(i)

    # The result.

    def execution(self) -> Execution:
        self.run()
        problem, plan = self.problem, self.plan
        real, sched, runs = self._realized()
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
            utilisation=self._utilisation(real, sched, makespan),
            lost_gpu_ticks=self.lost_gpu,
            lost_task_ticks=self.lost_ticks,
            seed=self.seed,
            disturbances=self.dist,
            notes=self._notes(runs),
        )

    def _segments(self, i: int, pieces: list[tuple[int, int, int]]) -> list[Segment]:
        segs = self.modes[i].segments
        return [
            Segment(name="wait", duration=b - a)
            if j < 0
            else Segment(
                name=segs[j].name,
                duration=b - a,
                demand={self.names[s]: q for s, q in self.dem[i][j]},
            )
            for j, a, b in pieces
        ]

    def _realized(self) -> tuple[Problem, Schedule, list[TaskRun]]:
        problem, plan = self.problem, self.plan
        tasks: list[Task] = []
        modes: dict[str, str] = {}
        starts: dict[str, int] = {}
        runs: list[TaskRun] = []
        for i, task in enumerate(problem.tasks):
            mode = self.modes[i]
            key = "+".join(sorted(self.on[i])) or None
            for k, (start, pieces) in enumerate(self.lost[i], start=1):
                name = f"{task.name}#lost{k}"
                lost = Mode(name=mode.name, segments=self._segments(i, pieces), placement=key)
                tasks.append(Task(name=name, job=task.job, modes=[lost], release=task.release))
                modes[name], starts[name] = mode.name, start  # type: ignore[assignment]
            real = Mode(
                name=mode.name,
                segments=self._segments(i, self.pieces[i]),
                consumes=mode.consumes,
                placement=key,
            )
            tasks.append(Task(name=task.name, job=task.job, modes=[real], release=task.release))
            modes[task.name], starts[task.name] = mode.name, self.attempt[i]  # type: ignore[assignment]
            planned = plan.starts[task.name]
            runs.append(
                TaskRun(
                    task=task.name,
                    job=task.job,
                    mode=mode.name,  # type: ignore[arg-type]
                    nodes=self.on[i],
                    planned_start=planned,
                    planned_finish=planned + mode.duration,
                    start=self.attempt[i],
                    finish=self.finish[i],  # type: ignore[arg-type]
                    lost=[(a, a + sum(b - s for _, s, b in p)) for a, p in self.lost[i]],
                    waited=sum(b - a for j, a, b in self.pieces[i] if j < 0),
                )
            )
        precedences = [
            Precedence(before=f"{p.before}#lost1", after=p.after, kind="SS", lag=p.lag)
            if p.kind == "SS" and self.lost[problem.task_index[p.before]]
            else p
            for p in problem.precedences
        ]
        resources = []
        for k, name in enumerate(self.names):
            down = self.outages.get(self.owner.get(k, ""), [])
            res = self.res[k] or Resource(name=name, capacity=self.cap[k])
            resources.append(_with_outages(res, down) if down else res)
        real_problem = Problem(
            name=f"{problem.name} (realized)",
            time_unit=problem.time_unit,
            objective=problem.objective,
            resources=[*resources, *problem.nonrenewables],
            tasks=tasks,
            precedences=precedences,
            jobs=problem.jobs,
        )
        meta = {"instance": real_problem.name, "solver": "simulate"}
        return real_problem, Schedule(modes=modes, starts=starts, meta=meta), runs

    def _utilisation(self, real: Problem, sched: Schedule, makespan: int) -> dict[str, float]:
        """Work / capacity offered per cluster resource and per node kind over all nodes."""
        label = [
            name if self.res[k] is not None else name.removeprefix(f"{self.owner[k]}.")
            for k, name in enumerate(self.names)
        ]
        work: dict[str, int] = dict.fromkeys(label, 0)
        offered: dict[str, int] = dict.fromkeys(label, 0)
        index = {name: k for k, name in enumerate(self.names)}
        for res in real.renewables:
            offered[label[index[res.name]]] += offered_capacity(res, makespan)
        for t in real.tasks:
            for seg in t.modes[0].segments:
                for r, q in seg.demand.items():
                    work[label[index[r]]] += q * seg.duration
        return {r: work[r] / offered[r] for r in work if offered[r]}

    def _notes(self, runs: list[TaskRun]) -> list[str]:
        notes = []
        if not any(self.on):
            notes.append(
                "pooled plan: no task has a node; interference counts the pool as one node"
            )
        late = sum(
            1
            for r, t in zip(runs, self.problem.tasks, strict=True)
            if t.deadline is not None and r.finish > t.deadline
        )
        if late:
            notes.append(f"{late} tasks finish after their deadline")
        waits = [r.waited for r in runs if r.waited]
        if waits:
            notes.append(f"{len(waits)} tasks waited between segments ({sum(waits)} ticks in all)")
        end = max((r.finish for r in runs), default=0)
        for f in self.dist.failures:
            if f.time >= end:
                notes.append(f"failure {f} comes after the run ended (tick {end}): no effect")
        for note in notes:
            log.info("%s", note)
        return notes

"""The executor's public face: one replay of a plan under disturbances
(:func:`simulate`, its event loop in :mod:`planner.execution.replay`), dispatching a
plan, Monte Carlo studies streamed into a :class:`Study`, rankings of plans by what
they deliver, and replays of run files. It imports no solver.
"""

from __future__ import annotations

import logging
import math
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError
from planner.execution.disturbances import MAX_RUNS, MAX_SEED, Disturbances, Failure
from planner.model import Problem
from planner.schedule import Schedule
from planner.validate import validate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from planner.interrupt import Halt

from planner.execution.record import Execution
from planner.execution.replay import _Replay, domains

log = logging.getLogger(__name__)


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

    Online planning (:func:`planner.execution.online.simulate_online`) replays a composite plan:
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
    names = domains(problem)
    for f in disturbances.failures:
        if f.node not in names:
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise InputError(f"failure {f}: no node {f.node!r} (nodes: {shown})")


@dataclass(frozen=True)
class RunSummary:
    """The figures of one Monte Carlo run."""

    seed: int
    makespan: float
    """Ticks of a task-level replay, seconds of a job-level run."""
    optimism: float
    mean_jct: float | None
    p99_jct: float | None
    lost_gpu_ticks: int
    valid: bool
    ftf_max: float | None = None
    """The worst finish-time fairness (a job-level run; :mod:`planner.execution.fairness`)."""
    jain: float | None = None
    """Jain's index of the attained service (a job-level run)."""
    longest_wait: float | None = None
    """The longest wait from release to first start (s; a job-level run)."""


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

    COLUMNS = ("seed", "makespan", "optimism", "mean_jct", "p99_jct", "lost_gpu_ticks", "valid",
               "ftf_max", "jain", "longest_wait")  # fmt: skip

    def __init__(self, capacity: int) -> None:
        self.data = np.full((capacity, len(self.COLUMNS)), np.nan)
        self.size = 0
        self.interrupted = False
        """Whether Ctrl-C stopped the study before its last run."""

    def add(self, run: RunSummary) -> None:
        """Append one run's figures."""
        jct = [math.nan if v is None else v for v in (run.mean_jct, run.p99_jct)]
        fair = [math.nan if v is None else v for v in (run.ftf_max, run.jain, run.longest_wait)]
        row = (run.seed, run.makespan, run.optimism, *jct, run.lost_gpu_ticks, run.valid, *fair)
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
                if name in ("seed", "lost_gpu_ticks"):
                    cols[name] = values.astype(np.int64).tolist()
                elif name == "makespan":  # whole ticks, or seconds of a job-level run
                    cols[name] = [int(v) if v.is_integer() else v for v in values.tolist()]
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
    """Replay ``schedule`` task by task with the seeds ``seed .. seed + runs - 1``
    (:func:`stream_runs`).

    Parameters
    ----------
    problem, schedule, disturbances
        As for :func:`simulate`.
    runs, seed, jobs, progress, study, halt
        As for :func:`stream_runs`.

    Raises
    ------
    InputError
        For a bad count, or as :func:`simulate`.
    """
    check_inputs(problem, schedule, disturbances)
    replay = TaskReplay(problem, schedule, disturbances)
    return stream_runs(replay, runs, seed, jobs, progress, study, halt)


@dataclass(frozen=True)
class TaskReplay:
    """The task-level replay of a plan, as a picklable function of the seed."""

    problem: Problem
    schedule: Schedule
    disturbances: Disturbances

    def __call__(self, seed: int) -> RunSummary:
        """The figures of the replay of ``seed``."""
        return summarize(_Replay(self.problem, self.schedule, self.disturbances, seed).execution())


def stream_runs(
    runner: Callable[[int], RunSummary],
    runs: int = 10,
    seed: int = 0,
    jobs: int = 1,
    progress: Callable[[RunSummary], None] | None = None,
    study: Study | None = None,
    halt: Halt | None = None,
) -> Study:
    """Run ``runner`` (a picklable function of the seed: a :class:`TaskReplay`, or a
    job-level :class:`~planner.execution.runs.Dispatch`) with the seeds ``seed .. seed +
    runs - 1``.

    The runs are streamed: each keeps only its figures (:class:`Study`), and at most
    two runs per worker are in flight. The first Ctrl-C (on the main thread) stops the
    study after the runs in flight (within one run's time), and the study is returned
    with :attr:`Study.interrupted` set; a second Ctrl-C aborts.

    Parameters
    ----------
    runner
        One run's figures from its seed.
    runs
        Runs, 1 to :data:`~planner.execution.disturbances.MAX_RUNS`.
    seed
        The first seed.
    jobs
        Worker processes; 1 runs in this process.
    progress
        Called with each run's summary as it ends.
    study
        Runs done before (e.g. the full run of the first seed): the new ones are
        added to it, and its capacity must hold them.
    halt
        The stop request Ctrl-C sets (a new one by default): a caller that shares it
        can tell a first Ctrl-C from a second.

    Raises
    ------
    InputError
        For a bad count or seed.
    """
    from planner.interrupt import Halt, run_interruptibly

    if not 1 <= runs <= MAX_RUNS:
        raise InputError(f"runs must be from 1 to {MAX_RUNS:,}, got {runs}")
    if not 0 <= seed <= MAX_SEED - runs + 1:
        raise InputError(f"the seeds {seed} .. {seed + runs - 1} are not all in 0 .. {MAX_SEED}")
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
                note(runner(s))
            return
        with ProcessPoolExecutor(
            min(jobs, runs), initializer=_init_worker, initargs=(runner,)
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


def draw_makespans(ax: Axes, study: Study, planned: float | None, unit: str) -> Axes:
    """Histogram of the realized makespans of ``study`` on ``ax``, the planned one marked
    (if any); ``unit`` names the makespans' unit (``ticks of 1min``, ``seconds``)."""
    ax.hist(study.column("makespan"), bins="auto", color="#4c72b0", alpha=0.8)
    if planned is not None:
        ax.axvline(planned, color="#c44e52", linewidth=1.5, label=f"planned {planned:,.0f}")
        ax.legend(frameon=False)
    ax.set_xlabel(f"realized makespan ({unit})")
    ax.set_ylabel("runs")
    ax.set_title(f"{len(study)} runs", fontsize=10, loc="left")
    return ax


def replay_run(problem: Problem, run: Mapping[str, Any], file: str | None = None) -> Execution:
    """The :class:`Execution` of a run file of ``planner run -o``, replayed from its plan,
    disturbances and seed (a replay is deterministic), and checked against the file.

    Raises
    ------
    InputError
        If the file is not a run of ``problem``, or its replay differs (a run of
        ``planner online``, re-planned as it went, is not a replay of one plan).
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
            "not a run file of planner run -o (tasks with mode, nodes and planned_start; "
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
            "replaying the run's plan gives another run (a run of planner online is "
            "re-planned as it goes: draw it with planner online --gantt)",
            file,
        )
    return ex


_WORKER: Callable[[int], RunSummary] | None = None


def _init_worker(runner: Callable[[int], RunSummary]) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent stops the study, the workers
    # finish the run they have.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = runner


def _worker_run(seed: int) -> RunSummary:
    assert _WORKER is not None
    return _WORKER(seed)

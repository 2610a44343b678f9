"""The executor's public face: one replay of a plan under disturbances
(:func:`simulate`, its event loop in :mod:`planner.replay.loop`), dispatching a
plan, Monte Carlo studies streamed into a :class:`Study`, rankings of plans by what
they deliver, and replays of run files. It imports no solver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.disturbances import Disturbances, Failure
from planner.errors import InputError
from planner.model import Problem
from planner.schedule import Schedule
from planner.study import RunSummary, Study, stream_runs
from planner.validate import validate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from planner.interrupt import Halt

from planner.replay.loop import _Replay, domains
from planner.replay.record import Execution

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

    Online planning (:func:`planner.replay.online.simulate_online`) replays a composite plan:
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


def summarize(execution: Execution) -> RunSummary:
    """The figures of ``execution`` that a Monte Carlo study keeps."""
    ex = execution
    return RunSummary(
        ex.seed, ex.makespan, ex.optimism, ex.mean_jct, ex.p99_jct, ex.lost_gpu_ticks, ex.report.ok
    )


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
    from planner.disturbances import Noise, Slowdown

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

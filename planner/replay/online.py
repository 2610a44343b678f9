"""Online planning: the planner re-planning as jobs arrive (``planner
online``), under disturbances, with the figures of the run."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError, PlannerError
from planner.model import Problem, Task
from planner.replay.events import Arrival
from planner.replay.replan import prepare
from planner.replay.state import State, state_from_run
from planner.schedule import Schedule

if TYPE_CHECKING:
    from planner.disturbances import Disturbances
    from planner.interrupt import Halt
    from planner.replay.record import Execution

log = logging.getLogger(__name__)


@dataclass
class OnlineRun:
    """An online run: the offline planner re-planning as jobs arrive, under disturbances."""

    solver: str
    execution: Execution
    """The realized run of every job (the replay after the last re-plan)."""
    events: list[int]
    """The ticks of the re-plans."""
    planner_seconds: list[float]
    """Wall time of each re-plan (building the instance and solving)."""
    mean_jct: float | None
    p99_jct: float | None
    mean_queueing: float | None
    """Mean over jobs of first start - arrival (release), in ticks."""
    makespan: int
    jobs: int
    """The jobs the figures cover: all, or those arrived by the last re-plan if interrupted."""
    interrupted: bool = False
    """Whether Ctrl-C stopped the re-plans before the last."""

    def figures(self) -> dict[str, Any]:
        """The figures as plain data."""
        secs = self.planner_seconds
        return {
            "solver": self.solver,
            "replans": len(self.events),
            "jobs": self.jobs,
            "interrupted": self.interrupted,
            "makespan": self.makespan,
            "mean_jct": self.mean_jct,
            "p99_jct": self.p99_jct,
            "mean_queueing": self.mean_queueing,
            "planner_mean_seconds": float(np.mean(secs)) if secs else 0.0,
            "planner_max_seconds": max(secs, default=0.0),
            "validator": str(self.execution.report),
        }


def simulate_online(
    problem: Problem,
    solver: str = "sgs",
    every: str | int = "arrival",
    disturbances: Disturbances | None = None,
    seed: int = 0,
    stability: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
    halt: Halt | None = None,
    **options: Any,
) -> OnlineRun:
    """Replay ``problem``'s jobs as they arrive, re-planning with ``solver`` at events.

    A job arrives at its release (the least release of its tasks; a task without a
    job is a job alone) and is unknown before. At each event the jobs that have
    arrived and are not yet planned join; the state comes from the replay so far
    (:func:`state_from_run`); :func:`replan` plans what has not started with the
    per-re-plan ``options`` (e.g. ``time_limit``). The replay (:func:`planner.replay.simulate.
    dispatch`, under ``disturbances``) then runs what has started under the plan
    it started with and the rest under the new plan. Replaying from tick 0 each
    time reproduces the run so far exactly (checked), since what has not started
    is released at the event at the earliest and each task's noise is its own.

    Parameters
    ----------
    problem
        The workload, with release times.
    solver
        Any solver of the registry; ``exclusive-*`` dispatch by their rule.
    every
        ``"arrival"``: re-plan at every arrival; a whole number of ticks ``P >= 1``:
        every ``P`` ticks from the first arrival, until every job has arrived (jobs
        arrived in between wait for the next event).
    disturbances, seed
        As for :func:`planner.replay.simulate.simulate`.
    stability
        As for :func:`replan`.
    progress
        Called with (re-plans done, re-plans in all) after each.
    halt
        Checked before each re-plan: once set, the run stops there and its figures cover
        the jobs arrived so far, replayed to their end (:attr:`OnlineRun.interrupted`).

    Raises
    ------
    InputError
        For a bad ``every``, a failure of a node the problem lacks, or a solver option.
    PlannerError
        If the replay diverges from the run so far (a bug).
    KeyboardInterrupt
        If ``halt`` is set before the first re-plan ends.
    """
    from planner.disturbances import Disturbances
    from planner.replay.simulate import dispatch

    dist = disturbances if disturbances is not None else Disturbances()
    names = {n.name for n in problem.nodes}
    for f in dist.failures:
        if f.node not in names:
            raise InputError(f"failure {f}: no node {f.node!r} in the instance")
    groups: dict[str, list[Task]] = {}
    for t in problem.tasks:
        groups.setdefault(t.job if t.job is not None else f"\0{t.name}", []).append(t)
    arrival = {g: min(t.release for t in ts) for g, ts in groups.items()}
    times = _event_times(sorted(set(arrival.values())), every)
    keys = problem.task_index
    known: set[str] = set()
    plan: dict[str, tuple[str, tuple[str, ...], int]] = {}
    current: Problem | None = None
    execution: Execution | None = None
    last: Schedule | None = None
    seconds: list[float] = []
    done = 0
    for k, t in enumerate(times):
        if halt is not None and halt.is_set():
            break
        t0 = time.perf_counter()
        new = {g for g in groups if arrival[g] <= t and g not in known}
        known |= new
        if current is None:
            built = prepare(restrict(problem, known, t), None, t)
            state = State(t, {})
        else:
            state = state_from_run(current, execution.to_json(), t)  # type: ignore[union-attr]
            events = [Arrival(restrict(problem, new, t), f"{len(new)} jobs")] if new else []
            built = prepare(current, last, t, events, state)
        result = built.solve(solver, stability, **options)
        if result.schedule is None:
            raise PlannerError(f"online: no re-plan at tick {t}: {result.reason}")
        seconds.append(time.perf_counter() - t0)
        last = result.schedule
        current = restrict(problem, known, 0)
        started = set(state.started) | set(state.lost)
        for task in current.tasks:
            if task.name not in started:
                plan[task.name] = (
                    last.modes[task.name],
                    tuple(last.nodes.get(task.name, ())),
                    last.starts[task.name],
                )
        replay = current.model_copy(
            update={
                "tasks": [
                    task
                    if task.name in started
                    else task.model_copy(update={"release": max(task.release, t)})
                    for task in current.tasks
                ]
            }
        )
        composite = Schedule(
            modes={n: e[0] for n, e in plan.items()},
            starts={n: e[2] for n, e in plan.items()},
            nodes={n: e[1] for n, e in plan.items() if e[1]},
        )
        ran = execution
        execution = dispatch(replay, composite, dist, seed, [keys[x.name] for x in replay.tasks])
        if ran is not None and _attempts(ran, t) != _attempts(execution, t):
            raise PlannerError(f"online: the replay diverged from the run so far at tick {t}")
        done = k + 1
        if progress is not None:
            progress(done, len(times))
    if execution is None:
        raise KeyboardInterrupt
    ran = {g: ts for g, ts in groups.items() if g in known}
    out = _online_figures(problem, solver, execution, times[:done], seconds, ran, arrival)
    return replace(out, interrupted=done < len(times))


def _event_times(arrivals: list[int], every: str | int) -> list[int]:
    if every == "arrival":
        return arrivals
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise InputError(f"re-plan every: expected 'arrival' or a whole number >= 1, got {every!r}")
    out = [arrivals[0]]
    while out[-1] < arrivals[-1]:
        out.append(out[-1] + every)
    return out


def restrict(problem: Problem, groups: set[str], at: int) -> Problem:
    """The tasks of ``groups`` (jobs; a task without a job is its own group), released
    at ``at`` at the earliest (a task released before is copied with that release)."""
    tasks = [
        t if t.release >= at else t.model_copy(update={"release": at})
        for t in problem.tasks
        if (t.job if t.job is not None else f"\0{t.name}") in groups
    ]
    names = {t.name for t in tasks}
    jobs = {t.job for t in tasks}
    return problem.model_copy(
        update={
            "tasks": tasks,
            "precedences": [
                q for q in problem.precedences if q.before in names and q.after in names
            ],
            "jobs": [j for j in problem.jobs if j.name in jobs],
        }
    )


def _attempts(execution: Execution, at: int) -> set[tuple[str, int, int]]:
    """Every attempt (task, start, end) of ``execution`` started before ``at``, cut at it."""
    out = set()
    for r in execution.runs:
        for a, b in [*r.lost, (r.start, r.finish)]:
            if a < at:
                out.add((r.task, a, min(b, at)))
    return out


def _online_figures(
    problem: Problem,
    solver: str,
    execution: Execution,
    times: list[int],
    seconds: list[float],
    groups: dict[str, list[Task]],
    arrival: dict[str, int],
) -> OnlineRun:
    runs = {r.task: r for r in execution.runs}
    jct, wait = [], []
    for g, tasks in groups.items():
        done = max(runs[t.name].finish for t in tasks)
        first = min(min([runs[t.name].start, *(a for a, _ in runs[t.name].lost)]) for t in tasks)
        jct.append(done - arrival[g])
        wait.append(first - arrival[g])
    return OnlineRun(
        solver=solver,
        execution=execution,
        events=times,
        planner_seconds=seconds,
        mean_jct=float(np.mean(jct)) if jct else None,
        p99_jct=float(np.percentile(jct, 99)) if jct else None,
        mean_queueing=float(np.mean(wait)) if wait else None,
        makespan=execution.makespan,
        jobs=len(groups),
    )

"""Re-planning: freeze what has run before a tick T, apply events, plan the rest.

:func:`prepare` builds the **re-planned instance**: the instance plus the events at
``T``, in which every schedule of the rest is a complete schedule, checked by the
independent validator like any other:

- **State at T.** It comes from the old plan (:func:`state_from_schedule`) or from a
  realized run of ``planner run`` (:func:`state_from_run`). A task whose attempt
  started before ``T`` has *started*; it has *finished* if it ends by ``T``.
- **Frozen tasks.** A finished task, and a running one whose nodes did not fail,
  keep what they did: one mode, their realized segments (waits between segments
  included, as demand-free ``wait`` segments) and, for a running task, the rest of
  its planned segments from ``T``; release = start, deadline = finish, pinned
  (``Mode.on``) to their nodes. A realized run reaches ``T`` slowed down or sped up,
  so the running tasks' rests, back to back from ``T``, may no longer fit together:
  each rest segment goes at the earliest tick it fits beside those placed before it
  (the first segments of all running tasks by start, then the second, ...), after a
  ``wait``. Attempts lost before ``T`` (a realized run's failures) and attempts
  killed at ``T`` are frozen as ``TASK#lostK`` (no job).
- **Unfrozen tasks** (not started, or killed at ``T``) keep all their modes and are
  released at ``T`` at the earliest. Precedences between kept tasks stay, but one
  from an unfrozen task to a frozen one is dropped: it held when the frozen task
  started (an ``SS`` successor of a task that is now killed).
- ``fail:NODE+DOWN``: the tasks running on ``NODE`` (gangs through it included) are
  killed at ``T`` and start again from scratch, paying their job's restart cost
  (``Job.restart``): every mode begins with a ``restart`` segment of that many ticks
  that holds the mode's peak demands (a migrating job's moved block already has one).
  A task ``NODE#down`` pinned to the node holds its whole capacity over
  ``[T, T + DOWN)`` (``+0``: the node restarts at once). A colocated job whose frozen
  tasks ran on the node restarts there once it is back.
  ``fail:NODE`` (no ``DOWN``): the node is gone for good. It stays in the instance
  (frozen tasks ran on it) but is given the type ``gone`` (``TYPE (gone)`` on a typed
  cluster) and the unfrozen modes that could run on any node ask for the type ``up``
  of the others, so no unfrozen task can use it; modes that no longer fit are
  dropped. A colocated job that ran on it moves: its frozen tasks become job
  ``JOB#ran``, so that the rest of the job may run on other nodes, and its first
  tasks there pay the restart cost.
- ``overrun:TASK:FACTOR``: the remaining duration of a running or unstarted task is
  multiplied by ``FACTOR`` (every segment from ``T``, rounded up to whole ticks).
- ``arrive:FILE``: more jobs (cluster or problem form, on the same nodes, resources
  and time unit). A job that arrives before ``T`` is refused.
- ``cancel:JOB``: the job's unfinished tasks are dropped (a running one is kept as
  ``TASK#cancelled``, its segments until ``T``), with their precedences.

The solvers see one more zero-duration task ``#replan`` at ``T``, after every frozen
task and before every unfrozen one (``SS`` precedences of lag 0, which every
precedence-feasible activity list respects), so that decoders place the frozen
tasks first; it is left out of the schedule returned.

:meth:`Replanning.solve` plans the rest with any solver of the registry. The score of
a re-plan is its objective plus ``stability`` times the **total shift**, the sum of
``|new start - old start|`` over the unfrozen tasks of the old plan. ``cpsat``
minimises it exactly (:mod:`models.cpsat`), hinted with the old plan's order decoded
by the serial SGS. ``ga``, ``pso`` and ``portfolio`` take that decode as their
``initial_solution`` (the GA's first individual, the swarm's first particle, the
portfolio's warm start when it beats its SGS passes); ``sgs`` and ``milp`` plan the
re-planned instance as they would any other. Their schedule and
the decoded old order (the better of two decodes: free, and keeping every task in its
old mode on its old nodes where they are up) compete by the score, the shift breaking ties (so with
``stability`` 0 the shift is a tie-break). The ``exclusive-*`` baselines dispatch the
unfrozen jobs by their rule, holding their peak demands; they take no stability.

:func:`simulate_online` is the offline planner used as an online scheduler.

The module is part of the app layer: it imports the solvers lazily, in functions.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError
from planner.model import Mode, Precedence, Problem, Segment, Task
from planner.replay.events import Arrival, Cancel, Event, Overrun
from planner.replay.rebuild import Build, failures
from planner.replay.state import State, state_from_schedule
from planner.result import Result, Status
from planner.schedule import Schedule
from planner.validate import validate

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

MILESTONE = "#replan"
"""The zero-duration task at ``T`` that orders frozen tasks before unfrozen ones."""


# The re-planned instance.


@dataclass
class Replanning:
    """The re-planned instance at ``at`` and what is needed to plan and judge its rest."""

    instance: Problem
    """The instance plus the events: every complete schedule is valid for it."""
    problem: Problem
    """What the solvers see: :attr:`instance` and the :data:`MILESTONE` when both frozen
    and unfrozen tasks exist."""
    at: int
    frozen: dict[str, int]
    """Start of every frozen task (``TASK#lostK``, ``TASK#cancelled``, ``NODE#down``
    included)."""
    reference: dict[str, int]
    """Old start of every unfrozen task of the old plan."""
    old_nodes: dict[str, tuple[str, ...]]
    old_modes: dict[str, str]
    failed: set[str]
    """The nodes that fail at ``at``, or are down at it."""
    down: set[str]
    """The ``NODE#down`` tasks that hold a down node: not work, so not in the makespan."""
    old_makespan: int | None
    figures: dict[str, Any]
    """Counts of the state and the events (finished, running, killed, lost work, ...)."""

    @property
    def unfrozen(self) -> list[str]:
        """The tasks to plan, in instance order."""
        return [t.name for t in self.instance.tasks if t.name not in self.frozen]

    def frozen_schedule(self) -> Schedule:
        """The frozen tasks alone, where they ran."""
        modes, nodes = {}, {}
        for name in self.frozen:
            mode = self.instance.task(name).modes[0]
            modes[name] = mode.name
            if mode.on:
                nodes[name] = tuple(mode.on)
        return Schedule(modes=modes, starts=dict(self.frozen), nodes=nodes)  # type: ignore[arg-type]

    def shift(self, schedule: Schedule) -> tuple[int, int, int]:
        """(tasks moved, total shift, tasks on other nodes) of ``schedule`` against the old plan."""
        moved = shift = replaced = 0
        for name, old in self.reference.items():
            d = abs(schedule.starts[name] - old)
            moved += d > 0
            shift += d
            replaced += set(schedule.nodes.get(name, ())) != set(self.old_nodes.get(name, ()))
        return moved, shift, replaced

    def makespan(self, schedule: Schedule) -> int:
        """The jobs' makespan: the latest finish over every task but the ``NODE#down``
        placeholders (``at`` at the least)."""
        return max(
            (schedule.finish(self.problem, t) for t in schedule.starts if t not in self.down),
            default=self.at,
        )

    def objective(self, schedule: Schedule) -> float:
        """The objective of ``schedule``, the makespan being :meth:`makespan`."""
        if self.problem.objective == "makespan":
            return self.makespan(schedule)
        # a solver's schedule holds the milestone; a returned one does not
        return schedule.objective(self.problem if MILESTONE in schedule.modes else self.instance)

    def score(self, schedule: Schedule, stability: float) -> tuple[float, int]:
        """(objective + ``stability`` x total shift, total shift): smaller is better.

        ``schedule`` is one of :attr:`problem` (or of :attr:`instance`).
        """
        shift = self.shift(schedule)[1]
        return self.objective(schedule) + stability * shift, shift

    def solve(self, solver: str = "portfolio", stability: float = 0.0, **options: Any) -> Result:
        """Plan the unfrozen tasks with ``solver`` (see the module docstring).

        Parameters
        ----------
        solver
            A solver of the registry (:data:`solvers.registry.SOLVERS`).
        stability
            Weight (>= 0) of the total shift in the score.
        options
            The solver's options (``time_limit``, ``seed``, ...).

        Returns
        -------
        Result
            A complete schedule of :attr:`instance`, validated; ``stats["replan"]`` holds
            the figures (makespan, moved, shift, re-placed, and those of the state).

        Raises
        ------
        InputError
            For an unknown solver or option, a negative stability, stability with an
            ``exclusive-*`` baseline, or a re-planned instance proven infeasible.
        PlannerError
            If a schedule fails the validator (a bug).
        """
        from planner.solvers.registry import SolverError, options_of
        from planner.solvers.registry import solve as run

        if not math.isfinite(stability) or stability < 0:
            raise InputError(f"stability must be a number >= 0, got {stability}")
        t0 = time.perf_counter()
        chosen = "solver"
        if not self.unfrozen:
            frozen = self.frozen_schedule()
            result = Result(
                solver,
                Status.OPTIMAL,
                frozen,
                objective=self.objective(frozen),
                reason="nothing is left to plan",
            )
        elif solver.startswith("exclusive-"):
            if stability:
                raise InputError(
                    f"stability: solver {solver!r} dispatches by its rule; it takes no "
                    "stability weight"
                )
            result = _exclusive(self, solver, **options)
        else:
            warm = _warm(self, stability)
            if solver == "cpsat":
                opts = dict(options)
                if warm is not None:
                    opts.setdefault("initial_solution", warm)
                if stability and self.reference:
                    opts.update(stability=float(stability), reference_starts=self.reference)
                result = run(self.problem, "cpsat", **opts)
            else:
                opts = dict(options)
                if warm is not None and "initial_solution" in options_of(solver):
                    opts.setdefault("initial_solution", warm)  # ga, pso, portfolio
                result = run(self.problem, solver, **opts)
                if warm is not None and (
                    result.schedule is None
                    or self.score(warm, stability) < self.score(result.schedule, stability)
                ):
                    chosen = "old order"
                    result = replace(
                        result,
                        schedule=warm,
                        objective=self.objective(warm),
                        status=Status.FEASIBLE,
                        reason="the old plan's order, decoded by the serial SGS, scores better "
                        "than the solver's schedule",
                    )
        if result.schedule is None:
            return replace(result, runtime=time.perf_counter() - t0)
        schedule = _without_milestone(result.schedule)
        report = validate(self.instance, schedule)
        if not report.ok:
            raise SolverError(f"solver {solver!r}: the re-plan is invalid: {report.violations[0]}")
        moved, shift, replaced = self.shift(schedule)
        makespan = self.makespan(schedule)
        figures = {
            **self.figures,
            "makespan": makespan,
            "old_makespan": self.old_makespan,
            "moved": moved,
            "shift": shift,
            "replaced": replaced,
            "stability": stability,
            "chosen": chosen,
        }
        schedule.meta.setdefault("solver", solver)
        return replace(
            result,
            schedule=schedule,
            objective=self.objective(schedule),
            valid=True,
            runtime=time.perf_counter() - t0,
            stats={**result.stats, "replan": figures},
            instance=self.instance,
        )


def _priorities(built: Replanning, values: Mapping[str, float]) -> np.ndarray:
    """Per task of ``built.problem``: frozen tasks and the milestone first, then ``values``."""
    first = -1.0 - max((abs(v) for v in values.values()), default=0.0)
    return np.array([values.get(t.name, first) for t in built.problem.tasks], dtype=float)


def _warm(built: Replanning, stability: float) -> Schedule | None:
    """The old plan's order (arrivals by release) decoded by the serial SGS, if it fits.

    Two decodes: one free to choose modes and nodes, one that keeps every task of
    the old plan in its old mode on its old nodes where they are still up (tasks on
    a failed node go free); the one of better score (``stability``) is returned.
    """
    from planner.solvers.sgs import serial_sgs

    keys = {
        name: float(built.reference.get(name, built.instance.task(name).release))
        for name in built.unfrozen
    }
    order = _priorities(built, keys)
    found = [serial_sgs(built.problem, order)[0], serial_sgs(_kept(built), order)[0]]
    found = [s for s in found if s is not None]
    return min(found, key=lambda s: built.score(s, stability), default=None)


def _kept(built: Replanning) -> Problem:
    """``built.problem`` with the old plan's tasks pinned to their old mode and nodes."""
    failed = built.failed
    tasks = []
    for t in built.problem.tasks:
        mode = built.old_modes.get(t.name)
        nodes = built.old_nodes.get(t.name, ())
        kept = next((m for m in t.modes if m.name == mode), None)
        if kept is None or set(nodes) & failed or (kept.nodes and len(nodes) != kept.nodes):
            tasks.append(t)
            continue
        pinned = kept.model_copy(update={"on": list(nodes)}) if kept.nodes else kept
        tasks.append(t.model_copy(update={"modes": [pinned]}))
    return built.problem.model_copy(update={"tasks": tasks})


def _exclusive(built: Replanning, solver: str, **options: Any) -> Result:
    """An ``exclusive-*`` baseline over the unfrozen jobs; the frozen tasks as they ran."""
    from planner.solvers.exclusive import exclusive_problem, job_ranks
    from planner.solvers.kernels import load_kernels
    from planner.solvers.registry import check_options, solver_function
    from planner.solvers.sgs import serial_sgs

    check_options(solver, solver_function(solver), options)
    policy = solver.removeprefix("exclusive-")
    load_kernels(options.get("progress"))
    t0 = time.perf_counter()
    free = set(built.unfrozen)
    sub = built.problem.model_copy(
        update={
            "tasks": [t for t in built.problem.tasks if t.name in free],
            "precedences": [
                p for p in built.problem.precedences if p.before in free and p.after in free
            ],
        }
    )
    ranks = job_ranks(sub, policy)
    held = {t.name: t for t in exclusive_problem(sub).tasks}
    tasks = [held.get(t.name, t) for t in built.problem.tasks]
    peak = built.problem.model_copy(update={"tasks": tasks})
    keys = {t.name: float(r) for t, r in zip(sub.tasks, ranks, strict=True)}
    schedule, why = serial_sgs(peak, _priorities(built, keys))
    runtime = time.perf_counter() - t0
    if schedule is None:
        return Result(solver, Status.UNKNOWN, runtime=runtime, reason=why)
    return Result(
        solver,
        Status.FEASIBLE,
        schedule,
        objective=schedule.objective(built.problem),
        runtime=runtime,
    )


def _without_milestone(schedule: Schedule) -> Schedule:
    keep = [t for t in schedule.starts if t != MILESTONE]
    return Schedule(
        modes={t: schedule.modes[t] for t in keep},
        starts={t: schedule.starts[t] for t in keep},
        nodes={t: n for t, n in schedule.nodes.items() if t != MILESTONE},
        meta=dict(schedule.meta),
    )


def prepare(
    problem: Problem,
    schedule: Schedule | None,
    at: int,
    events: Iterable[Event] = (),
    state: State | None = None,
) -> Replanning:
    """The re-planned instance of ``problem`` at ``at`` under ``events``.

    Parameters
    ----------
    problem
        The instance.
    schedule
        The old plan: the order of the warm start and the starts the shift is measured
        from and, unless ``state`` is given, the state at ``at`` (it must then be valid
        for ``problem``). ``None``: no old plan.
    at
        The re-planning tick ``T`` (>= 0).
    events
        What happens at ``at`` (:func:`parse_event`).
    state
        What has happened by ``at``, e.g. :func:`state_from_run` of a realized run.

    Raises
    ------
    InputError
        For an invalid old plan, an event that names no node, task or job of the
        instance, an overrun of a finished task, an arrival before ``at`` or that
        clashes with the instance, or a task left without a mode that fits.
    """
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        raise InputError(f"the re-planning time must be a whole number of ticks >= 0, got {at!r}")
    if state is None and schedule is not None:
        report = validate(problem, schedule)
        if not report.ok:
            raise InputError(f"the schedule is not valid for the instance: {report.violations[0]}")
        state = state_from_schedule(problem, schedule, at)
    elif state is None:
        state = State(at, {})
    events = list(events)
    down = failures(problem, events, state)
    builder = Build(problem, state, down)
    for ev in events:
        if isinstance(ev, Overrun):
            builder.overrun(ev)
        elif isinstance(ev, Cancel):
            builder.cancel(ev)
    builder.tasks()
    for ev in events:
        if isinstance(ev, Arrival):
            builder.arrive(ev)
    instance = builder.instance()
    solved = _with_milestone(instance, builder.frozen, at)
    reference: dict[str, int] = {}
    old_nodes: dict[str, tuple[str, ...]] = {}
    old_modes: dict[str, str] = {}
    if schedule is not None:
        for t in instance.tasks:
            if t.name not in builder.frozen and t.name in schedule.starts:
                reference[t.name] = schedule.starts[t.name]
                old_nodes[t.name] = tuple(schedule.nodes.get(t.name, ()))
                old_modes[t.name] = schedule.modes[t.name]
    return Replanning(
        instance=instance,
        problem=solved,
        at=at,
        frozen=builder.frozen,
        reference=reference,
        old_nodes=old_nodes,
        old_modes=old_modes,
        failed=set(down),
        down=builder.down,
        old_makespan=None if schedule is None else _makespan(problem, schedule),
        figures=builder.figures,
    )


def replan(
    problem: Problem,
    schedule: Schedule | None,
    at: int,
    events: Iterable[Event] = (),
    solver: str = "portfolio",
    *,
    state: State | None = None,
    stability: float = 0.0,
    **options: Any,
) -> Result:
    """Re-plan ``problem`` at ``at``: freeze what ran, apply ``events``, plan the rest.

    :func:`prepare` then :meth:`Replanning.solve` (see the module docstring). The
    schedule returned is complete and valid for the re-planned instance (the instance
    plus the events, in ``result.instance``); ``stats["replan"]`` holds the new
    makespan, the tasks moved, the total shift and the figures of the state.

    Raises
    ------
    InputError
        As :func:`prepare` and :meth:`Replanning.solve`.
    """
    built = prepare(problem, schedule, at, events, state)
    return built.solve(solver, stability, **options)


def _makespan(problem: Problem, schedule: Schedule) -> int:
    """Latest finish of the tasks of ``problem`` in ``schedule``."""
    return max((schedule.finish(problem, t.name) for t in problem.tasks), default=0)


def _with_milestone(instance: Problem, frozen: Mapping[str, int], at: int) -> Problem:
    """``instance`` plus the :data:`MILESTONE` between frozen and unfrozen tasks, if both exist."""
    free = [t.name for t in instance.tasks if t.name not in frozen]
    if not frozen or not free:
        return instance
    has_free_pred = {q.after for q in instance.precedences if q.before not in frozen}
    mark = Task(
        name=MILESTONE,
        modes=[Mode(name="T", segments=[Segment(name="T", duration=0)])],
        release=at,
        deadline=at,
    )
    links = [Precedence(before=name, after=MILESTONE, kind="SS") for name in frozen]
    links += [
        Precedence(before=MILESTONE, after=name, kind="SS")
        for name in free
        if name not in has_free_pred
    ]
    return instance.model_copy(
        update={
            "tasks": [*instance.tasks, mark],
            "precedences": [*instance.precedences, *links],
        }
    )

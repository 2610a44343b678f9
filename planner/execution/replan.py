"""Re-planning: freeze what has run before a tick T, apply events, plan the rest.

:func:`prepare` builds the **re-planned instance**: the instance plus the events at
``T``, in which every schedule of the rest is a complete schedule, checked by the
independent validator like any other:

- **State at T.** It comes from the old plan (:func:`state_from_schedule`) or from a
  realized run of ``planner simulate`` (:func:`state_from_run`). A task whose attempt
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
from planner.execution.events import Arrival, Cancel, Event, NodeFailure, Overrun
from planner.execution.state import Started, State, state_from_schedule
from planner.model import Job, Mode, Precedence, Problem, Resource, Segment, Task
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
    failures = _failures(problem, events, state)
    builder = _Build(problem, state, failures)
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
        failed=set(failures),
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


def _failures(problem: Problem, events: list[Event], state: State) -> dict[str, int | None]:
    """Failed node -> ticks down from ``T`` (``None``: gone for good), each checked: the
    nodes that fail at ``T`` and those still down from a failure before it
    (:attr:`State.outages`)."""
    names = [n.name for n in problem.nodes]
    out: dict[str, int | None] = {n: back - state.at for n, back in state.outages.items()}
    for ev in events:
        if not isinstance(ev, NodeFailure):
            continue
        if not names:
            raise InputError(f"event {ev}: the instance has no nodes (a pooled instance)")
        if ev.node not in names:
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise InputError(f"event {ev}: no node {ev.node!r} (nodes: {shown})")
        if ev.node in state.outages:
            raise InputError(
                f"event {ev}: node {ev.node!r} is already down (a failure of the run, back at "
                f"tick {state.outages[ev.node]}); a node fails again only once it is back"
            )
        if ev.node in out:
            raise InputError(
                f"event {ev}: node {ev.node!r} is already down (event fail:{ev.node}); a node "
                "fails again only once it is back"
            )
        out[ev.node] = ev.down
    return out


def _restarting(mode: Mode, cost: int) -> Mode:
    """``mode`` after a ``restart`` segment of ``cost`` ticks that holds the mode's peak
    demand on every resource; a mode that begins with one (a migrating job's moved
    block) keeps its own."""
    if mode.segments[0].name == "restart":
        return mode
    names = {r for seg in mode.segments for r in seg.demand}
    peak = {r: q for r in sorted(names) if (q := mode.peak(r))}
    step = Segment(name="restart", duration=cost, demand=peak)
    return mode.model_copy(update={"segments": [step, *mode.segments]})


def scaled_segments(segments: Iterable[Segment], factor: float) -> list[Segment]:
    """``segments`` with their durations scaled by ``factor``, rounded up to ticks."""
    return [
        s.model_copy(update={"duration": math.ceil(round(s.duration * factor, 9))})
        for s in segments
    ]


def _earliest(
    caps: Mapping[tuple[str, str | None], Resource],
    booked: Mapping[tuple[str, str | None], list[tuple[int, int, int]]],
    need: list[tuple[tuple[str, str | None], int]],
    t: int,
    duration: int,
) -> int:
    """Earliest tick from ``t`` at which ``need`` (per capacity, a quantity) fits beside
    ``booked`` (per capacity, its ``(start, end, quantity)``) for ``duration`` ticks.

    The last candidate (every booking over, every window passed) if none fits: a demand
    above the capacity never fits, and the re-planned instance then says so.
    """
    if not duration:
        return t
    edges = {t}
    for key, _ in need:
        edges.update(b for _, b, _ in booked[key] if b > t)
        edges.update(e for w in caps[key].windows for e in (w.start, w.end) if e > t)

    def fits(s: int) -> bool:
        for key, q in need:
            res, spans = caps[key], booked[key]
            points = {s, *(a for a, _, _ in spans if s < a < s + duration)}
            points.update(e for w in res.windows for e in (w.start, w.end) if s < e < s + duration)
            for p in points:
                load = sum(qq for a, b, qq in spans if a <= p < b)
                if load + q > res.capacity_at(p):
                    return False
        return True

    candidates = sorted(edges)
    return next((s for s in candidates if fits(s)), candidates[-1])


def _gpu_ticks(problem: Problem, mode: Mode, started: Started, at: int) -> int:
    """GPUs (per node times nodes) times ticks of an attempt cut at ``at``."""
    return problem.gpus(mode) * max(1, mode.nodes) * (at - started.start)


class _Survivors:
    """The nodes after the failures at ``T``: those gone for good typed ``gone`` (or
    ``TYPE (gone)``), the others ``up`` (or their type), so that no mode lands on a node
    gone for good (see the module docstring); and which modes of a task still can run."""

    def __init__(self, problem: Problem, gone: set[str]) -> None:
        self.gone = gone
        self.nodes = list(problem.nodes)
        if not gone:
            return
        if len({n.type is not None for n in problem.nodes}) > 1:
            raise InputError(
                f"event fail:{sorted(gone)[0]}: a node gone for good on a cluster whose "
                "nodes are partly typed; give fail:NODE+DOWN"
            )
        self.nodes = []
        for n in problem.nodes:
            if n.name in gone:
                kind = "gone" if n.type is None else f"{n.type} (gone)"
            else:
                kind = "up" if n.type is None else n.type
            self.nodes.append(n.model_copy(update={"type": kind}))

    def usable(self, task: Task, modes: list[Mode]) -> list[Mode]:
        """``modes`` that avoid the nodes gone for good (untyped ones ask for ``up``)."""
        if not self.gone:
            return modes
        out = []
        for m in modes:
            if not m.nodes:
                out.append(m)
                continue
            if m.on is not None and set(m.on) & self.gone:
                continue
            kind = "up" if m.node_type is None else m.node_type
            have = sum(n.type == kind for n in self.nodes)
            if m.nodes <= have:
                out.append(m.model_copy(update={"node_type": kind}))
        if not out:
            need = min(m.nodes for m in modes)
            raise InputError(
                f"event fail:{sorted(self.gone)[0]}: task {task.name!r} needs {need} nodes; "
                "too few are left"
            )
        return out


class _Build:
    """The re-planned instance, one task family at a time (see :func:`prepare`)."""

    def __init__(self, problem: Problem, state: State, failures: dict[str, int | None]) -> None:
        self.p = problem
        self.state = state
        self.at = state.at
        self.failures = failures
        self.gone = {n for n, d in failures.items() if d is None}
        self.factor: dict[str, float] = dict(state.left)
        self.cancelled: set[str] = set()
        self.out: list[Task] = []
        self.frozen: dict[str, int] = {}
        self.down: set[str] = set()
        self.dropped: set[str] = set()
        self.extra_precedences: list[Precedence] = []
        self.extra_jobs: list[Job] = []
        self.survivors = _Survivors(problem, self.gone)
        self.nodes = self.survivors.nodes
        self.figures: dict[str, Any] = {
            "at": self.at,
            "finished": 0,
            "running": 0,
            "killed": 0,
            "lost_gpu_ticks": 0,
            "lost_task_ticks": 0,
            "cancelled": 0,
            "arrived": 0,
            "restarted": 0,
        }
        self.restart = {j.name: j.restart for j in problem.jobs}

    # Events that change tasks.

    def overrun(self, ev: Overrun) -> None:
        if ev.task not in self.p.task_index:
            raise InputError(f"event {ev}: no task {ev.task!r} in the instance")
        st = self.state.started.get(ev.task)
        if st is not None and st.finish <= self.at:
            raise InputError(
                f"event {ev}: task {ev.task!r} finished at tick {st.finish}, by the "
                f"re-planning time {self.at}"
            )
        self.factor[ev.task] = self.factor.get(ev.task, 1.0) * ev.factor

    def cancel(self, ev: Cancel) -> None:
        if ev.job not in {j.name for j in self.p.jobs}:
            raise InputError(f"event {ev}: no job {ev.job!r} in the instance")
        if ev.job in self.cancelled:
            raise InputError(f"event {ev}: job {ev.job!r} is cancelled once (a repeated event)")
        self.cancelled.add(ev.job)

    # Nodes.

    # Tasks.

    def _frozen(self, name: str, job: str | None, mode: Mode, st: Started, rest: bool) -> None:
        segments = [*st.past, *(st.rest if rest else [])]
        frozen = Mode(
            name=mode.name,
            segments=segments,
            consumes=mode.consumes if rest else {},
            placement=mode.placement,
            nodes=mode.nodes,
            on=list(st.nodes) if mode.nodes else None,
        )
        end = st.start + sum(s.duration for s in segments)
        self.out.append(Task(name=name, job=job, modes=[frozen], release=st.start, deadline=end))
        self.frozen[name] = st.start

    def tasks(self) -> None:
        at, state = self.at, self.state
        moving = self._moving_jobs()
        rests = self._rests()
        before: dict[str, list[str]] = {t.name: [] for t in self.p.tasks}
        for q in self.p.precedences:
            before[q.after].append(q.before)
        for t in self.p.tasks:
            for k, attempt in enumerate(state.lost.get(t.name, ()), start=1):
                mode = t.mode(attempt.mode)
                self._record(f"{t.name}#lost{k}", mode, attempt)
            st = state.started.get(t.name)
            mode = t.mode(st.mode) if st is not None else None
            job = t.job
            if st is not None and st.finish <= at:
                self.figures["finished"] += 1
                if job in moving:
                    job = f"{job}#ran"
                self._frozen(t.name, job, mode, st, rest=True)  # type: ignore[arg-type]
                continue
            if t.job in self.cancelled:
                self.figures["cancelled"] += 1
                self.dropped.add(t.name)
                if st is not None:
                    self._record(f"{t.name}#cancelled", mode, st)  # type: ignore[arg-type]
                continue
            if st is not None and not set(st.nodes) & set(self.failures):
                self.figures["running"] += 1
                st = replace(st, rest=rests[t.name])
                self._frozen(t.name, job, mode, st, rest=True)  # type: ignore[arg-type]
                continue
            if st is not None:
                self.figures["killed"] += 1
                self.figures["lost_task_ticks"] += at - st.start
                self.figures["lost_gpu_ticks"] += _gpu_ticks(self.p, mode, st, at)  # type: ignore[arg-type]
                lost = len(state.lost.get(t.name, ())) + 1
                self._record(f"{t.name}#lost{lost}", mode, st)  # type: ignore[arg-type]
            moves = t.job in moving and any(
                b in state.started and state.started[b].finish <= at for b in before[t.name]
            )
            self._unfrozen(t, restart=st is not None or moves)
        for node, down in self.failures.items():
            if down:
                self._down(node, down)
        for name in moving:
            self.extra_jobs.append(Job(name=f"{name}#ran", weight=self.p.job_weight(name)))

    def _rests(self) -> dict[str, list[Segment]]:
        """The rest from ``T`` of every running task that is kept, scaled by its overrun
        and delayed by demand-free ``wait`` segments where it does not fit beside the
        rests placed before it.

        A realized run reaches ``T`` with the tasks slowed down (interference) or sped up
        (noise), so the planned rests, back to back from ``T``, may overlap beyond a
        capacity. Each segment goes at the earliest tick it fits, in rounds: the first
        segment of every task (in order of start), then the second, and so on. The other
        frozen tasks end by ``T``, but ``NODE#down``, on a node none of these tasks uses.
        """
        p, at = self.p, self.at
        caps = {(r.name, None): r for r in p.renewables}
        for n in p.nodes:
            for kind in p.node_kinds:
                caps[kind, n.name] = Resource(name=kind, capacity=n.capacity.get(kind, 0))
        running = []
        for t in p.tasks:
            st = self.state.started.get(t.name)
            if (
                st is not None
                and st.finish > at
                and t.job not in self.cancelled
                and not set(st.nodes) & set(self.failures)
            ):
                rest = scaled_segments(st.rest, self.factor.get(t.name, 1.0))
                running.append((st.start, t.name, st.nodes, rest))
        running.sort(key=lambda r: r[0])
        booked: dict[tuple[str, str | None], list[tuple[int, int, int]]] = {k: [] for k in caps}
        cursor = {name: at for _, name, _, _ in running}
        out: dict[str, list[Segment]] = {name: [] for _, name, _, _ in running}
        for k in range(max((len(r[3]) for r in running), default=0)):
            for _, name, nodes, rest in running:
                if k >= len(rest):
                    continue
                seg = rest[k]
                need = [
                    (key, q)
                    for r, q in seg.demand.items()
                    if q
                    for key in ([(r, None)] if (r, None) in caps else [(r, v) for v in nodes])
                ]
                start = _earliest(caps, booked, need, cursor[name], seg.duration)
                if start > cursor[name]:
                    out[name].append(Segment(name="wait", duration=start - cursor[name]))
                out[name].append(seg)
                cursor[name] = start + seg.duration
                if seg.duration:
                    for key, q in need:
                        booked[key].append((start, cursor[name], q))
        return out

    def _record(self, name: str, mode: Mode, st: Started) -> None:
        """An attempt that ran until ``T`` (or its loss) and no further: frozen, no job."""
        self._frozen(name, None, mode, replace(st, rest=[]), rest=False)

    def _unfrozen(self, t: Task, restart: bool = False) -> None:
        factor = self.factor.get(t.name, 1.0)
        modes = [
            m.model_copy(update={"segments": scaled_segments(m.segments, factor)})
            if factor != 1
            else m
            for m in t.modes
        ]
        cost = self.restart.get(t.job, 0) if restart else 0
        if cost:
            self.figures["restarted"] += 1
            modes = [_restarting(m, cost) for m in modes]
        modes = self.survivors.usable(t, modes)
        self.out.append(t.model_copy(update={"modes": modes, "release": max(t.release, self.at)}))

    def _down(self, node: str, down: int) -> None:
        cap = {
            k: q for k, q in next(n for n in self.p.nodes if n.name == node).capacity.items() if q
        }
        hold = Mode(
            name="down",
            segments=[Segment(name="down", duration=down, demand=cap)],
            nodes=1,
            on=[node],
        )
        name = f"{node}#down"
        self.out.append(Task(name=name, modes=[hold], release=self.at, deadline=self.at + down))
        self.frozen[name] = self.at
        self.down.add(name)

    def _moving_jobs(self) -> set[str]:
        """Colocated jobs with a task finished on a node gone for good and work left."""
        if not self.gone:
            return set()
        colocated = {j.name for j in self.p.jobs if j.colocate}
        ran, left = set(), set()
        for t in self.p.tasks:
            st = self.state.started.get(t.name)
            if t.job not in colocated or t.job in self.cancelled:
                continue
            if st is not None and st.finish <= self.at:
                if set(st.nodes) & self.gone:
                    ran.add(t.job)
            else:
                left.add(t.job)
        return ran & left

    # Arrivals.

    def arrive(self, ev: Arrival) -> None:
        a, p = ev.jobs, self.p
        where = f"event {ev}"
        if a.time_unit != p.time_unit:
            raise InputError(
                f"{where}: its time unit {a.time_unit!r} is not the instance's {p.time_unit!r}"
            )
        ours = {(n.name, tuple(sorted(n.capacity.items())), n.type) for n in p.nodes}
        if (
            a.nodes
            and {(n.name, tuple(sorted(n.capacity.items())), n.type) for n in a.nodes} != ours
        ):
            raise InputError(f"{where}: its nodes are not the instance's")
        kinds = {r.name: r.kind for r in p.resources}
        for r in a.resources:
            if kinds.get(r.name) != r.kind:
                raise InputError(f"{where}: resource {r.name!r} is not one of the instance's")
        names = {t.name for t in self.out} | self.dropped | set(p.task_index)
        jobs = {j.name for j in [*p.jobs, *self.extra_jobs]}
        for t in a.tasks:
            if t.name in names:
                raise InputError(f"{where}: task {t.name!r} is already in the instance")
        for j in a.jobs:
            if j.name in jobs:
                raise InputError(f"{where}: job {j.name!r} is already in the instance")
        has_pred = {q.after for q in a.precedences}
        for t in a.tasks:
            if t.name not in has_pred and t.release < self.at:
                what = f"job {t.job!r}" if t.job else f"task {t.name!r}"
                raise InputError(
                    f"{where}: {what} arrives at tick {t.release}, before the re-planning "
                    f"time {self.at}"
                )
        for t in a.tasks:
            self._unfrozen(t)
        self.extra_precedences.extend(a.precedences)
        self.extra_jobs.extend(a.jobs)
        self.figures["arrived"] += len(a.jobs) or len(a.tasks)

    def instance(self) -> Problem:
        from planner.model import validated

        kept = {t.name for t in self.out}
        precedences = [
            q
            for q in self.p.precedences
            if q.before in kept
            and q.after in kept
            and not (q.after in self.frozen and q.before not in self.frozen)
        ]
        data = {
            **self.p.settings(),
            "name": f"{self.p.name} (re-planned at {self.at})",
            "resources": self.p.resources,
            "nodes": self.nodes,
            "tasks": self.out,
            "precedences": [*precedences, *self.extra_precedences],
            "jobs": [*self.p.jobs, *self.extra_jobs],
        }
        return validated(Problem, data)


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

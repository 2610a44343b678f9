"""The re-planned instance, one task family at a time (:func:`planner.replay.replan.prepare`):
frozen tasks where they ran, running tasks' rests from ``T``, the events applied, the
rest to plan, nodes down held by ``NODE#down`` tasks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.model import Job, Mode, Precedence, Problem, Resource, Segment, Task
from planner.replay.events import Arrival, Cancel, Event, NodeFailure, Overrun
from planner.replay.state import Started, State

if TYPE_CHECKING:
    pass


def failures(problem: Problem, events: list[Event], state: State) -> dict[str, int | None]:
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


class Build:
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

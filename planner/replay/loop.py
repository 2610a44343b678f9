"""Executing a plan: an event-driven replay of a schedule under disturbances.

The plan is replayed as a dispatch policy. Every task keeps its planned mode
and its planned nodes, and runs its segments in order at realized durations
(:mod:`planner.disturbances`). It imports no solver.

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

**Interference.** A task's GPUs are its residency where it has one (a fluid
training block's ``resident``), else its peak demand (per node of its set) on
resources or node kinds named ``gpu``, ``gpu.*``, ``KEY.gpu`` or
``KEY.gpu.*``, in whole GPUs (the problem's ``units``); a node's GPUs are its
capacity of GPU kinds in whole GPUs (for a placement
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
import logging
import math
from collections.abc import Mapping, Sequence

import numpy as np

from planner.disturbances import Disturbances, Failure
from planner.errors import InputError, PlannerError
from planner.model import Mode, Problem, Resource, Task
from planner.replay.interference import Interference
from planner.replay.record import Execution, record
from planner.schedule import Schedule

log = logging.getLogger(__name__)

_EPS = 1e-6
"""Work left below this many ticks counts as done (float rounding of the rates)."""
_END, _FAIL, _BACK, _READY, _WAKE = range(5)
"""Event kinds, in the order they are handled within one tick."""


def _task_nodes(schedule: Schedule, task: Task, mode: Mode) -> tuple[str, ...]:
    """The nodes of ``task``: its schedule's nodes, else its placement key, else none."""
    if mode.nodes:
        return schedule.nodes[task.name]
    return (mode.placement,) if mode.placement else ()


def domains(problem: Problem) -> list[str]:
    """What can fail: the problem's nodes, then the placement keys of its modes."""
    names = [n.name for n in problem.nodes]
    keys = {m.placement for t in problem.tasks for m in t.modes if m.placement}
    return names + sorted(keys - set(names))  # type: ignore[operator]


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
        planned = np.array([s.duration for m in self.modes for s in m.segments], dtype=float)
        durations = planned.copy()
        if dist.noise is not None and noise_keys is not None:
            durations *= np.concatenate(
                [
                    dist.noise.factors(np.random.default_rng([seed, key]), len(m.segments))
                    for key, m in zip(noise_keys, self.modes, strict=True)
                ]
            )
        elif dist.noise is not None:
            durations *= dist.noise.factors(np.random.default_rng(seed), len(durations))
        # A task whose window is its one mode's duration is fixed in time: work a run did
        # before a re-plan (``planner replan``). It runs again as it ran: no noise, no slowdown.
        self.fixed = [
            len(t.modes) == 1 and t.deadline is not None and t.deadline - t.release == m.duration
            for t, m in zip(tasks, self.modes, strict=True)
        ]
        if any(self.fixed):
            fixed = np.repeat(self.fixed, [len(m.segments) for m in self.modes])
            durations[fixed] = planned[fixed]
        flat = durations.tolist()
        self.work: list[list[float]] = []
        at = 0
        for m in self.modes:
            self.work.append(flat[at : at + len(m.segments)])
            at += len(m.segments)
        self.gpus = [problem.gpus(m) for m in self.modes]
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
        self.interference = Interference(self)
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
        self.domains = domains(problem)
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
        self.speed[i] = self.interference.speed(i) if self.gpus[i] else 1.0
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
            self._rates(self.interference.join(i), t)

    def _leave(self, i: int, t: int) -> None:
        for v in self.touch[i]:
            self.running_on[v].discard(i)
        if self.gpus[i]:
            self._rates(self.interference.leave(i), t)

    def _rates(self, changed: set[int], t: int) -> None:
        """Give the running tasks of ``changed`` their new speed from ``t`` on."""
        for m in sorted(changed):
            s = self.interference.speed(m)
            if self.waiting[m] is None and self.seg[m] >= 0 and s != self.speed[m]:
                self.rem[m] -= (t - self.last[m]) / self.speed[m]
                self.last[m], self.speed[m] = t, s
                self._schedule_end(m, t)

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

    def execution(self) -> Execution:
        """Run the replay and record it (:func:`planner.replay.record.record`)."""
        self.run()
        return record(self)

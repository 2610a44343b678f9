"""The CP-SAT formulation of the complete problem model.

Every task has one start variable. A mode is a chain of segments back to back,
and every segment that takes time is an interval in the cumulative of each
renewable resource it uses. Modes are encoded in one of two ways:

- ``shared``: when all modes of a task have the same number of
  segments, segment position ``k`` is one interval whose size and demands are
  linear in the mode literals (exactly one true), chained ``start[k+1] ==
  end[k]``. The cumulative then sees one interval per segment position.
- ``optional`` (default, measured stronger on MMLIB50, see BENCHMARKS.md): one
  optional interval per mode and segment, present when the mode's literal is
  true, placed at the task start plus the segment's offset.

Tasks with a single mode need neither: their segments are fixed-size intervals
at the task start plus a constant offset. A task whose modes differ in their
number of segments always uses the optional encoding.

Capacity windows become fixed intervals that consume the capacity missing
during the window; the cumulative's capacity is the largest capacity the
resource ever has. For the makespan objective an interval from the makespan to
the horizon takes the whole capacity of every cumulative it can share.

Node placement: a mode on ``k`` nodes has one Boolean per node it can use, exactly
``k`` of them true when the mode is chosen (none otherwise), and per such node an
optional interval per segment, present with the node's Boolean, at the task's own
start: a gang starts at once on all its nodes. Every node and node resource kind is
one cumulative, and a redundant one per kind pools all nodes. A colocated job has one
Boolean per node, its node set: a task's node Booleans imply the job's, and the set
has the size of the chosen mode's gang. A mode that keeps a predecessor's nodes
(``same_nodes_as``) has, when chosen, the predecessor's node Booleans.
Within each class of identical nodes, the first task that runs on nodes uses the
lowest-numbered ones (see :mod:`models.placement`).

Stability (re-planning): given reference starts for some tasks and a weight ``w``,
the objective adds ``w`` times the total shift ``sum |start - reference|`` over those
tasks, one shift variable per task (see :func:`build_model`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal, get_args

from ortools.sat.python import cp_model

from planner.arrays import FS
from planner.bounds import earliest_starts, latest_starts
from planner.model import Mode, Problem
from planner.models.cpsat_objective import Objectives
from planner.models.placement import (
    canonical_nodes,
    colocated_placements,
    identical_node_classes,
    job_node_sets,
    node_segments,
    symmetry_task,
)
from planner.schedule import Schedule

Encoding = Literal["shared", "optional"]
"""Ways to encode the modes of a task with several modes."""
ENCODINGS: tuple[str, ...] = get_args(Encoding)


@dataclass
class CpsatModel:
    """A built CP-SAT model and the handles needed to hint it and read a schedule back."""

    model: cp_model.CpModel
    horizon: int
    start: list[cp_model.IntVar]
    mode_lits: list[list[cp_model.IntVar]]
    """Per task, one literal per mode (empty for a single-mode task)."""
    objective_scale: float = 1
    """The CP-SAT objective is the problem's objective times this factor."""
    objective_slack: float = 0.0
    """How far the problem's objective may lie below the CP-SAT objective over the scale
    (energy coefficients rounded to whole units)."""
    makespan: cp_model.IntVar | None = None
    completion: dict[int, cp_model.IntVar] = field(default_factory=dict)
    """Per job number, its completion time (weighted-completion objective)."""
    placement: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    """Per (job, placement key id), whether the job is placed there (colocated jobs)."""
    hinted: list[tuple[cp_model.IntVar, object]] = field(default_factory=list)
    """Auxiliary variables and how to compute their hint from a schedule (see :func:`hint`)."""
    node_lits: dict[tuple[int, int], dict[int, cp_model.IntVar]] = field(default_factory=dict)
    """Per (task, mode number within the task) that runs on nodes: node index -> whether
    the task runs there in that mode."""
    node_sets: dict[int, dict[int, cp_model.IntVar]] = field(default_factory=dict)
    """Per colocated job: node index -> whether the job's node set holds the node."""
    set_sizes: dict[int, int] = field(default_factory=dict)
    """Per colocated job whose node set always exists, its size."""
    shifts: list[cp_model.IntVar] = field(default_factory=list)
    """Per task with a reference start, its shift ``|start - reference|`` (stability)."""
    shift_weight: int = 0
    """Coefficient of every shift in the CP-SAT objective (0: no stability term)."""

    def problem_objective(self, objective_value: float, value) -> float:
        """The problem's objective from the CP-SAT objective (the stability term taken off)."""
        shift = sum(value(d) for d in self.shifts) if self.shift_weight else 0
        return (objective_value - self.shift_weight * shift) / self.objective_scale

    def schedule(self, problem: Problem, value) -> Schedule:
        """The schedule of a solution; ``value`` maps a variable to its value."""
        modes, starts, nodes = {}, {}, {}
        for i, task in enumerate(problem.tasks):
            lits = self.mode_lits[i]
            k = next((k for k, lit in enumerate(lits) if value(lit)), 0)
            modes[task.name] = task.modes[k].name
            starts[task.name] = int(value(self.start[i]))
            if (i, k) in self.node_lits:
                on = self.node_lits[i, k]
                nodes[task.name] = tuple(problem.nodes[n].name for n in on if value(on[n]))
        return Schedule(modes=modes, starts=starts, nodes=nodes)


class _Builder(Objectives):
    """Builds the model one constraint family at a time (see :func:`build_model`)."""

    def __init__(
        self,
        problem: Problem,
        horizon: int,
        encoding: Encoding,
        makespan_interval: bool,
        lower: int,
        reference: Mapping[str, int],
        stability: float,
    ) -> None:
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown mode encoding {encoding!r}; choose one of {ENCODINGS}")
        self.p = problem
        self.a = problem.arrays
        self.h = horizon
        self.encoding = encoding
        self.makespan_interval = makespan_interval
        self.lower = lower
        self.reference = reference
        self.stability = stability
        self.m = cp_model.CpModel()
        # Per renewable resource: (interval, demand expression) pairs of the cumulative.
        self.uses: list[list[tuple[cp_model.IntervalVar, object]]] = [
            [] for _ in range(self.a.n_resources)
        ]
        self.end: list[object] = []
        # Per task: the least and the most its start may be.
        self.window: list[tuple[int, int]] = []
        # The tariff's price summed from tick 0 (objective cost), memoised, in whole units
        # of price times this scale.
        self.paid: dict[int, int] = {}
        self.price_scale = 1
        # Per node index, node resource kind): (interval, demand) pairs of its cumulative.
        self.node_uses: dict[tuple[int, str], list[tuple[cp_model.IntervalVar, int]]] = {}
        # Per node resource kind: (interval, demand over all nodes) of the pooled cumulative.
        self.pooled: dict[str, list[tuple[cp_model.IntervalVar, int]]] = {}
        # Per task of a colocated job that runs on nodes: the job.
        self.job_of: dict[int, int] = {}

    def build(self) -> CpsatModel:
        # Order matters: tasks create the variables every later family refers to.
        self.out = CpsatModel(self.m, self.h, [], [])
        self._tasks()
        # Node sets of colocated jobs before the tasks' node Booleans, which may be them.
        self._node_sets()
        self._nodes()
        self._kept_nodes()
        self._node_symmetry()
        self._precedences()
        self._budgets()
        self._colocation()
        self._objective()
        self._resources()
        self._node_resources()
        return self.out

    def _tasks(self) -> None:
        a = self.a
        es = earliest_starts(self.p)
        ls = latest_starts(self.p, self.h)
        for i, task in enumerate(self.p.tasks):
            lo, hi = es[task.name], ls[task.name]
            hi = self.h if hi is None else hi
            start = self.m.new_int_var(lo, max(lo, hi), f"s{i}")
            self.window.append((lo, max(lo, hi)))
            self.out.start.append(start)
            modes = range(int(a.mode_start[i]), int(a.mode_start[i + 1]))
            if len(modes) == 1:
                self.out.mode_lits.append([])
                self._fixed_segments(modes[0], start, None)
                self.end.append(start + int(a.mode_duration[modes[0]]))
            else:
                lits = [self.m.new_bool_var(f"x{i}_{k}") for k in range(len(modes))]
                self.m.add_exactly_one(lits)
                self.out.mode_lits.append(lits)
                counts = {int(a.seg_start[m + 1] - a.seg_start[m]) for m in modes}
                if self.encoding == "shared" and len(counts) == 1:
                    self.end.append(self._shared_segments(i, list(modes), lits, start))
                else:
                    for m, lit in zip(modes, lits, strict=True):
                        self._fixed_segments(m, start, lit)
                    self.end.append(self._mode_end(i, list(modes), lits, start, lo))
            if a.deadline[i] >= 0:
                self.m.add(self.end[i] <= int(a.deadline[i]))

    def _fixed_segments(self, mode: int, start: cp_model.IntVar, lit) -> None:
        """Intervals at constant offsets from the task start (optional if ``lit`` is given)."""
        a = self.a
        for s in range(int(a.seg_start[mode]), int(a.seg_start[mode + 1])):
            dur, demand = int(a.seg_duration[s]), a.seg_demand[s]
            if dur == 0 or not demand.any():
                continue
            at = start + int(a.seg_offset[s])
            if lit is None:
                iv = self.m.new_fixed_size_interval_var(at, dur, f"i{s}")
            else:
                iv = self.m.new_optional_fixed_size_interval_var(at, dur, lit, f"i{s}")
            for r in range(a.n_resources):
                if demand[r]:
                    self.uses[r].append((iv, int(demand[r])))

    def _mode_end(
        self, i: int, modes: list[int], lits: list, start: cp_model.IntVar, lo: int
    ) -> object:
        durs = [int(self.a.mode_duration[m]) for m in modes]
        end = self.m.new_int_var(lo + min(durs), self.h, f"e{i}")
        for d, lit in zip(durs, lits, strict=True):
            self.m.add(end == start + d).only_enforce_if(lit)
        self.out.hinted.append((end, ("end", i)))
        return end

    def _shared_segments(
        self, i: int, modes: list[int], lits: list, start: cp_model.IntVar
    ) -> object:
        """One interval per segment position; size and demands follow the mode literals."""
        a = self.a
        first = [int(a.seg_start[m]) for m in modes]
        at: object = start
        for k in range(int(a.seg_start[modes[0] + 1] - a.seg_start[modes[0]])):
            segs = [f + k for f in first]
            durs = [int(a.seg_duration[s]) for s in segs]
            if len(set(durs)) == 1:
                size: object = durs[0]
            else:
                size = self._encoded(durs, lits, f"d{i}_{k}")
                self.out.hinted.append((size, ("size", i, k)))
            end = self.m.new_int_var(0, self.h, f"e{i}_{k}")
            self.out.hinted.append((end, ("seg_end", i, k)))
            iv = self.m.new_interval_var(at, size, end, f"i{i}_{k}")
            if max(durs) > 0:
                for r in range(a.n_resources):
                    qs = [int(a.seg_demand[s, r]) if a.seg_duration[s] else 0 for s in segs]
                    if any(qs):
                        self.uses[r].append((iv, self._demand(i, k, r, qs, lits)))
            at = end
        return at

    def _demand(self, i: int, k: int, r: int, qs: list[int], lits: list) -> object:
        if len(set(qs)) == 1:
            return qs[0]
        q = self._encoded(qs, lits, f"q{i}_{k}_{r}")
        self.out.hinted.append((q, ("demand", i, k, r)))
        return q

    def _encoded(self, values: list[int], lits: list, name: str) -> cp_model.IntVar:
        """A variable equal to ``values[k]`` when ``lits[k]`` is true (one literal is).

        One enforced equality per literal rather than one linear sum over the literals:
        CP-SAT then sees the variable's domain fully encoded by the mode literals, which
        proves J5092_2 and J5094_3 of MMLIB50 optimal where the linear sum does not.
        """
        var = self.m.new_int_var_from_domain(cp_model.Domain.from_values(sorted(set(values))), name)
        for v, lit in zip(values, lits, strict=True):
            self.m.add(var == v).only_enforce_if(lit)
        return var

    def _precedences(self) -> None:
        a = self.a
        for b, f, kind, lag in zip(
            a.prec_before, a.prec_after, a.prec_kind, a.prec_lag, strict=True
        ):
            ref = self.end[b] if kind == FS else self.out.start[b]
            self.m.add(self.out.start[f] >= ref + int(lag))

    def _budgets(self) -> None:
        a = self.a
        for n, budget in enumerate(a.budget):
            terms, fixed = [], 0
            for i, lits in enumerate(self.out.mode_lits):
                use = [int(u) for u in a.mode_consumption[a.mode_start[i] : a.mode_start[i + 1], n]]
                if len(set(use)) == 1:
                    fixed += use[0]
                else:
                    terms.append(self._encoded(use, lits, f"u{i}_{n}"))
                    self.out.hinted.append((terms[-1], ("consumption", i, n)))
            if terms:
                self.m.add(sum(terms) <= int(budget) - fixed)

    def _colocation(self) -> None:
        a = self.a
        for i, lits in enumerate(self.out.mode_lits):
            j = int(a.task_job[i])
            if j < 0 or not a.job_colocate[j]:
                continue
            modes = range(int(a.mode_start[i]), int(a.mode_start[i + 1]))
            for k, m in enumerate(modes):
                key = int(a.mode_placement[m])
                if key < 0:
                    continue
                y = self._placed(j, key)
                if lits:
                    self.m.add_implication(lits[k], y)
                else:
                    self.m.add(y == 1)
        jobs: dict[int, list] = {}
        for (j, _), y in self.out.placement.items():
            jobs.setdefault(j, []).append(y)
        for ys in jobs.values():
            self.m.add_at_most_one(ys)

    def _placed(self, job: int, key: int) -> cp_model.IntVar:
        if (job, key) not in self.out.placement:
            y = self.m.new_bool_var(f"y{job}_{key}")
            self.out.placement[(job, key)] = y
            self.out.hinted.append((y, ("placed", job, key)))
        return self.out.placement[(job, key)]

    def _mode_lit(self, task: int, mode: int) -> cp_model.IntVar | None:
        """The literal of mode number ``mode`` of ``task``; ``None`` for a single-mode task."""
        lits = self.out.mode_lits[task]
        return lits[mode] if lits else None

    def _node_sets(self) -> None:
        """Per colocated job that runs on nodes, one Boolean per node its tasks could use.

        The set has the gang size of every chosen mode that runs on nodes: when all such
        modes of the job agree, always (the set then exists even if none is chosen);
        otherwise the size of each chosen one.
        """
        for j, pairs in colocated_placements(self.p).items():
            modes = [self.p.tasks[i].modes[k] for i, k in pairs]
            union = sorted({n for m in modes for n in self.p.holding_nodes(m)})
            ys = self.out.node_sets[j] = {n: self.m.new_bool_var(f"y{j}_{n}") for n in union}
            size = cp_model.LinearExpr.sum(list(ys.values()))
            gangs = {m.nodes for m in modes}
            if len(gangs) == 1 and len(union) >= min(gangs):
                self.out.set_sizes[j] = gangs.pop()
                self.m.add(size == self.out.set_sizes[j])
            else:
                for (i, k), mode in zip(pairs, modes, strict=True):
                    ct = self.m.add(size == mode.nodes)
                    lit = self._mode_lit(i, k)
                    if lit is not None:
                        ct.only_enforce_if(lit)
            self.job_of.update((i, j) for i, _ in pairs)

    def _nodes(self) -> None:
        """Node Booleans (exactly ``k`` when the mode is chosen) and per-node intervals.

        A single-mode task of a colocated job runs on exactly the job's node set, so
        the set's Booleans are its own.
        """
        for i, task in enumerate(self.p.tasks):
            for k, mode in enumerate(task.modes):
                if not mode.nodes:
                    continue
                lit = self._mode_lit(i, k)
                nodes = self.p.holding_nodes(mode)
                j = self.job_of.get(i)
                if j is not None and lit is None:
                    on = dict(self.out.node_sets[j])
                    for n in sorted(set(on) - set(nodes)):
                        self.m.add(on.pop(n) == 0)
                else:
                    on = {n: self.m.new_bool_var(f"n{i}_{k}_{n}") for n in nodes}
                    if j is not None:
                        for n, x in on.items():
                            self.m.add_implication(x, self.out.node_sets[j][n])
                    size = cp_model.LinearExpr.sum(list(on.values()))
                    self.m.add(size == mode.nodes * (1 if lit is None else lit))
                self.out.node_lits[i, k] = on
                self._node_intervals(i, mode, on)
                self._pooled_intervals(i, mode, lit)

    def _kept_nodes(self) -> None:
        """A mode that keeps a predecessor's nodes (``same_nodes_as``), when chosen, is on a
        node exactly when the predecessor is (one of its modes' Booleans there)."""
        index = self.p.task_index
        for (i, k), on in self.out.node_lits.items():
            ref = self.p.tasks[i].modes[k].same_nodes_as
            if ref is None:
                continue
            r = index[ref]
            theirs: dict[int, list[cp_model.IntVar]] = {}
            for q in range(len(self.p.tasks[r].modes)):
                for n, x in self.out.node_lits.get((r, q), {}).items():
                    theirs.setdefault(n, []).append(x)
            lit = self._mode_lit(i, k)
            for n in sorted(set(on) | set(theirs)):
                mine = on.get(n, 0)
                ct = self.m.add(mine == cp_model.LinearExpr.sum(theirs.get(n, [])))
                if lit is not None:
                    ct.only_enforce_if(lit)

    def _node_intervals(self, i: int, mode: Mode, on: dict[int, cp_model.IntVar]) -> None:
        """Per node of ``on`` and segment, an interval at the task start, present with the node."""
        start = self.out.start[i]
        for g, seg in enumerate(node_segments(self.p, mode)):
            for n, x in on.items():
                iv = self.m.new_optional_fixed_size_interval_var(
                    start + seg.offset, seg.duration, x, f"i{i}_{mode.name}_{n}_{g}"
                )
                for kind, q in seg.demand.items():
                    self.node_uses.setdefault((n, kind), []).append((iv, q))

    def _pooled_intervals(self, i: int, mode: Mode, lit: cp_model.IntVar | None) -> None:
        """Per segment, one interval in the pooled cumulative of each node resource kind.

        Redundant: the nodes together never hold more than their summed capacity. The
        pooled cumulative sees every task at once, where each node's sees only the
        tasks that might run there.
        """
        start = self.out.start[i]
        for seg in node_segments(self.p, mode):
            at = start + seg.offset
            if lit is None:
                iv = self.m.new_fixed_size_interval_var(at, seg.duration, "")
            else:
                iv = self.m.new_optional_fixed_size_interval_var(at, seg.duration, lit, "")
            for kind, q in seg.demand.items():
                self.pooled.setdefault(kind, []).append((iv, q * mode.nodes))

    def _node_symmetry(self) -> None:
        """The first task on nodes uses a prefix of every class of identical nodes."""
        first = symmetry_task(self.p)
        if first is None:
            return
        used: dict[int, list[cp_model.IntVar]] = {}
        for k in range(len(self.p.tasks[first].modes)):
            for n, x in self.out.node_lits.get((first, k), {}).items():
                used.setdefault(n, []).append(x)
        for members in identical_node_classes(self.p):
            for a, b in pairwise(members):
                if used.get(b):
                    later = cp_model.LinearExpr.sum(used[b])
                    self.m.add(later <= cp_model.LinearExpr.sum(used.get(a, [])))

    def _resources(self) -> None:
        a = self.a
        for r in range(a.n_resources):
            uses = self.uses[r]
            if not uses:
                continue
            base = int(a.capacity[r])
            windows = sorted(a.windows[r])
            cap = max([base, *(c for _, _, c in windows)])
            # Fixed intervals take what is missing of the capacity at each time.
            blocked: list[tuple[int, int, int]] = []
            t = 0
            for s, e, c in windows:
                if s > t and cap > base:
                    blocked.append((t, s, cap - base))
                if cap > c:
                    blocked.append((s, e, cap - c))
                t = e
            if cap > base and t < self.h:
                blocked.append((t, self.h, cap - base))
            intervals = [iv for iv, _ in uses]
            demands = [q for _, q in uses]
            for s, e, q in blocked:
                if s < self.h:
                    intervals.append(self.m.new_fixed_size_interval_var(s, min(e, self.h) - s, ""))
                    demands.append(q)
            mk = self.out.makespan
            if (
                mk is not None
                and self.makespan_interval
                and all(e <= self.lower for _, e, _ in blocked)
            ):
                intervals.append(self.m.new_interval_var(mk, self.h - mk, self.h, "tail"))
                demands.append(cap)
            self.m.add_cumulative(intervals, demands, cap)

    def _node_resources(self) -> None:
        """One cumulative per node and node resource kind, and one per kind over all nodes
        (see :meth:`_pooled_intervals`)."""
        for (n, kind), uses in sorted(self.node_uses.items()):
            self._node_cumulative(uses, self.p.nodes[n].capacity.get(kind, 0))
        if len(self.p.nodes) > 1:
            for kind, uses in self.pooled.items():
                cap = sum(node.capacity.get(kind, 0) for node in self.p.nodes)
                self._node_cumulative(uses, cap)

    def _node_cumulative(self, uses: list[tuple[cp_model.IntervalVar, int]], cap: int) -> None:
        """A cumulative of capacity ``cap`` over ``uses``, unless they can never exceed it."""
        intervals = [iv for iv, _ in uses]
        demands = [q for _, q in uses]
        if sum(demands) <= cap:
            return
        mk = self.out.makespan
        if mk is not None and self.makespan_interval:
            intervals.append(self.m.new_interval_var(mk, self.h - mk, self.h, "tail"))
            demands.append(cap)
        self.m.add_cumulative(intervals, demands, cap)


def build_model(
    problem: Problem,
    horizon: int,
    *,
    encoding: Encoding = "optional",
    makespan_interval: bool = False,
    lower: int = 0,
    reference: Mapping[str, int] | None = None,
    stability: float = 0.0,
) -> CpsatModel:
    """Build the CP-SAT model of ``problem`` with every task finishing by ``horizon``.

    Parameters
    ----------
    problem
        The problem; its task graph must be acyclic.
    horizon
        Latest finish of any task (for the makespan objective, an upper bound on it).
    encoding
        ``"shared"`` or ``"optional"`` for tasks with several modes (see the module docs).
    makespan_interval
        Whether the makespan objective adds an interval ``[makespan, horizon)`` that takes
        the whole capacity of each cumulative.
    lower
        A lower bound on the makespan.
    reference
        Per task name, a start to stay near (the old plan's, when re-planning).
    stability
        Weight ``w >= 0`` of the total shift: the objective adds ``w * sum |start -
        reference|`` over the tasks of ``reference`` (in the problem's objective units).

    Returns
    -------
    CpsatModel
        The model and its variables.
    """
    if stability < 0:
        raise ValueError(f"stability must be >= 0, got {stability}")
    return _Builder(
        problem, horizon, encoding, makespan_interval, lower, reference or {}, stability
    ).build()


def hint(built: CpsatModel, problem: Problem, schedule: Schedule) -> None:
    """Hint every variable of ``built`` with the values of ``schedule``."""
    a = problem.arrays
    m = built.model
    m.clear_hints()
    chosen, ends = [], []
    for i, task in enumerate(problem.tasks):
        k = next(k for k, mode in enumerate(task.modes) if mode.name == schedule.modes[task.name])
        chosen.append(int(a.mode_start[i]) + k)
        start = schedule.starts[task.name]
        m.add_hint(built.start[i], start)
        for kk, lit in enumerate(built.mode_lits[i]):
            m.add_hint(lit, int(kk == k))
        ends.append(start + int(a.mode_duration[chosen[i]]))
    for var, what in built.hinted:
        m.add_hint(var, _hint_value(what, problem, schedule, chosen, ends))
    for var, value in _node_hints(built, problem, schedule).values():
        m.add_hint(var, value)


def _node_hints(
    built: CpsatModel, problem: Problem, schedule: Schedule
) -> dict[int, tuple[cp_model.IntVar, int]]:
    """Per variable index, a node Boolean and its value in ``schedule``.

    The schedule's nodes are first permuted into the form the symmetry break allows.
    """
    on = canonical_nodes(problem, schedule)
    out: dict[int, tuple[cp_model.IntVar, int]] = {}
    for (i, k), lits in built.node_lits.items():
        task = problem.tasks[i]
        here = schedule.modes.get(task.name) == task.modes[k].name
        names = set(on.get(task.name, ())) if here else set()
        for n, lit in lits.items():
            out[lit.index] = (lit, int(problem.nodes[n].name in names))
    sets = job_node_sets(problem, on, built.node_sets, built.set_sizes)
    for j, ys in built.node_sets.items():
        for n, y in ys.items():
            out[y.index] = (y, int(n in sets[j]))
    return out


def _hint_value(what: tuple, problem: Problem, schedule: Schedule, chosen: list, ends: list) -> int:
    a = problem.arrays
    kind = what[0]
    if kind == "end":
        return ends[what[1]]
    if kind == "makespan":
        return max(ends)
    if kind == "completion":
        return max(e for i, e in enumerate(ends) if a.task_job[i] == what[1])
    if kind == "placed":
        job, key = what[1], what[2]
        return int(
            any(a.task_job[i] == job and a.mode_placement[m] == key for i, m in enumerate(chosen))
        )
    if kind == "consumption":
        return int(a.mode_consumption[chosen[what[1]], what[2]])
    if kind == "shift":
        return abs(schedule.starts[problem.tasks[what[1]].name] - what[2])
    i, k = what[1], what[2]
    seg = int(a.seg_start[chosen[i]]) + k
    if kind == "size":
        return int(a.seg_duration[seg])
    if kind == "seg_end":
        start = schedule.starts[problem.tasks[i].name]
        return start + int(a.seg_offset[seg] + a.seg_duration[seg])
    return int(a.seg_demand[seg, what[3]]) if a.seg_duration[seg] else 0


def scaled_bound(value: float, scale: float) -> float:
    """A CP-SAT objective bound back in the problem's units (rounded up for integers)."""
    return float(math.ceil(value - 1e-9)) if scale == 1 else value / scale

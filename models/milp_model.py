"""The time-indexed MILP of the complete problem model, built with PuLP.

A binary ``x[m, s]`` says that the task of mode ``m`` starts at tick ``s`` in
that mode. Starts are limited to the task's window: from its earliest start
(releases, precedences and lags) to the mode's own latest start (the horizon,
deadlines and the latest starts of the successors, with the mode's own
duration), less the ticks at which some segment would exceed a capacity on its
own. Constraint families, each a small function:

- assignment: each task starts exactly once, in one mode;
- precedences in the disaggregated (strong) form: "``after`` has started by
  ``t``" implies "``before`` has finished (FS) or started (SS) by ``t - lag``";
- renewable resources: one row per resource and tick, each start contributing
  the demand of the segment that runs at that tick (time-varying demands and
  capacity windows are exact);
- non-renewable budgets, job colocation (one placement variable per job and
  key) and the objective (makespan, or weighted job completion);
- node placement: per mode on ``k`` nodes and node it can use, step binaries
  "started on that node by ``t``"; at every tick exactly ``k`` of them have
  started when the mode has, and a started node stays started (one node set,
  one start). One row per node, node resource kind and tick, as for renewable
  resources; a colocated job has one binary per node (its node set) that its
  tasks' nodes imply; a chosen mode that keeps a predecessor's nodes
  (``same_nodes_as``) is on exactly the predecessor's. Within each class of
  identical nodes the first task on nodes uses the lowest-numbered ones (see
  :mod:`models.placement`).
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pulp

from planner.arrays import FS
from planner.bounds import lower_bound
from planner.model import Problem
from planner.models.milp_windows import Windows, mode_of
from planner.models.placement import (
    canonical_nodes,
    colocated_placements,
    identical_node_classes,
    job_node_sets,
    node_segments,
    symmetry_task,
)
from planner.schedule import Schedule


@dataclass
class MilpModel:
    """A built model: the PuLP problem and the variables needed to read a schedule back.

    For each mode, ``ticks[m]`` lists its allowed start ticks in order and
    ``steps[m][k]`` is the binary "started in mode ``m`` by ``ticks[m][k]``":
    the step form of the start binaries (``x[m, ticks[m][k]]`` is
    ``steps[m][k] - steps[m][k - 1]``). Its LP relaxation is the same as the
    start binaries' but its rows are sparse and branching on it splits time.
    """

    lp: pulp.LpProblem
    ticks: dict[int, list[int]] = field(default_factory=dict)
    steps: dict[int, list[pulp.LpVariable]] = field(default_factory=dict)
    objective_vars: dict[str | None, pulp.LpVariable] = field(default_factory=dict)
    """Makespan (key ``None``) or completion per job name."""
    node_steps: dict[int, dict[int, list[pulp.LpVariable]]] = field(default_factory=dict)
    """Per mode on nodes, per node index it can use: "started on that node by
    ``ticks[m][k]``", the step form as ``steps``."""
    node_sets: dict[int, dict[int, pulp.LpVariable]] = field(default_factory=dict)
    """Per colocated job: node index -> whether the job's node set holds the node."""
    set_sizes: dict[int, int] = field(default_factory=dict)
    """Per colocated job whose node set always exists, its size."""
    n_constraints: int = 0

    def started_by(self, mode: int, tick: int, node: int | None = None) -> pulp.LpVariable | None:
        """The binary "started in ``mode`` (on ``node``, if given) by ``tick``"; ``None``
        where it is 0."""
        k = bisect.bisect_right(self.ticks[mode], tick) - 1
        if k < 0:
            return None
        return (self.steps[mode] if node is None else self.node_steps[mode][node])[k]

    def warm_start(self, problem: Problem, schedule: Schedule) -> bool:
        """Set initial values from ``schedule``; ``False`` if a start lies outside the windows."""
        a = problem.arrays
        chosen: dict[int, int] = {}
        for i, t in enumerate(problem.tasks):
            m = int(a.mode_start[i]) + [mm.name for mm in t.modes].index(schedule.modes[t.name])
            if schedule.starts[t.name] not in self.ticks.get(m, ()):
                return False
            chosen[m] = schedule.starts[t.name]
        on = canonical_nodes(problem, schedule)
        index = {n.name: k for k, n in enumerate(problem.nodes)}
        for m, nodes in self.node_steps.items():
            task = problem.tasks[int(a.mode_task[m])].name
            names = on.get(task, ()) if m in chosen else ()
            if any(index.get(n) not in nodes for n in names):
                return False
            for n, steps in nodes.items():
                here = problem.nodes[n].name in names
                for tick, var in zip(self.ticks[m], steps, strict=True):
                    var.setInitialValue(1 if here and tick >= chosen[m] else 0)
        sets = job_node_sets(problem, on, self.node_sets, self.set_sizes)
        for j, ys in self.node_sets.items():
            for n, var in ys.items():
                var.setInitialValue(int(n in sets[j]))
        for m, steps in self.steps.items():
            for tick, var in zip(self.ticks[m], steps, strict=True):
                var.setInitialValue(1 if m in chosen and tick >= chosen[m] else 0)
        for job, var in self.objective_vars.items():
            var.setInitialValue(_completion(problem, schedule, job))
        return True

    def schedule(self, problem: Problem) -> Schedule | None:
        """The schedule in the solver's current values, or ``None`` if they are not one."""
        a = problem.arrays
        modes: dict[str, str] = {}
        starts: dict[str, int] = {}
        nodes: dict[str, tuple[str, ...]] = {}
        for m, steps in self.steps.items():
            value = [(v.varValue or 0.0) > 0.5 for v in steps]
            if not value[-1]:
                continue
            i = int(a.mode_task[m])
            t = problem.tasks[i]
            if t.name in starts:
                return None
            modes[t.name] = t.modes[m - int(a.mode_start[i])].name
            starts[t.name] = self.ticks[m][value.index(True)]
            if m in self.node_steps:
                on = self.node_steps[m]
                nodes[t.name] = tuple(
                    problem.nodes[n].name for n in on if (on[n][-1].varValue or 0.0) > 0.5
                )
        if len(starts) != a.n_tasks:
            return None
        return Schedule(modes=modes, starts=starts, nodes=nodes)


def _completion(problem: Problem, schedule: Schedule, job: str | None) -> int:
    return max(
        schedule.finish(problem, t.name) for t in problem.tasks if job is None or t.job == job
    )


def build_model(problem: Problem, windows: Windows, cliques: bool = True) -> MilpModel:
    """Build the time-indexed MILP of ``problem`` over ``windows`` (with ``cliques``, the
    clique cuts of :func:`_cliques`)."""
    model = MilpModel(lp=pulp.LpProblem("planner_milp", pulp.LpMinimize))
    # start variables first: every other family reads them
    _start_variables(problem, windows, model)
    _node_variables(problem, model)
    _assignment(problem, model)
    _precedences(problem, model)
    _renewables(problem, windows, model)
    if cliques:
        _cliques(problem, model)
    _node_capacity(problem, model)
    _budgets(problem, model)
    _colocation(problem, model)
    _node_colocation(problem, model)
    _kept_nodes(problem, model)
    _node_symmetry(problem, model)
    _objective(problem, windows, model)
    model.n_constraints = model.lp.numConstraints()
    return model


def _add(
    model: MilpModel, terms: dict[pulp.LpVariable, float], sense: int, name: str, rhs: float
) -> None:
    row = pulp.LpAffineExpression([(v, c) for v, c in terms.items() if c])
    model.lp += pulp.LpConstraint(row, sense, name, rhs)


def _start_variables(problem: Problem, windows: Windows, model: MilpModel) -> None:
    """Step binaries at the start ticks at which every segment of the mode fits the capacity."""
    a = problem.arrays
    horizon = windows.horizon
    cap = a.capacity_profile(horizon)
    for m in range(len(a.mode_task)):
        i = int(a.mode_task[m])
        lo, hi = int(windows.earliest[i]), int(windows.latest[m])
        if hi < lo:
            continue
        ok = np.ones(hi - lo + 1, dtype=bool)
        for s in range(a.seg_start[m], a.seg_start[m + 1]):
            dur, off, need = int(a.seg_duration[s]), int(a.seg_offset[s]), a.seg_demand[s]
            if dur == 0 or not need.any():
                continue
            bad = (cap < need[:, None]).any(axis=0).astype(np.int64)
            prefix = np.concatenate(([0], np.cumsum(bad)))
            first = np.arange(lo, hi + 1) + off
            ok &= prefix[np.minimum(first + dur, horizon)] - prefix[np.minimum(first, horizon)] == 0
        ticks = [int(s) for s in np.nonzero(ok)[0] + lo]
        if not ticks:
            continue
        model.ticks[m] = ticks
        model.steps[m] = [model.lp.add_variable(f"z_{m}_{s}", cat=pulp.LpBinary) for s in ticks]
        for k in range(len(ticks) - 1):
            steps = model.steps[m]
            _add(model, {steps[k]: 1, steps[k + 1]: -1}, pulp.LpConstraintLE, f"step_{m}_{k}", 0)


def _node_variables(problem: Problem, model: MilpModel) -> None:
    """Per mode on ``k`` nodes and node it can use, step binaries tied to the mode's steps.

    At each start tick, ``k`` nodes have started when the mode has, none otherwise, and
    a node's steps never fall: the mode keeps the ``k`` nodes it started on.
    """
    for m, steps in model.steps.items():
        mode = mode_of(problem, m)
        if not mode.nodes:
            continue
        nodes = problem.holding_nodes(mode)
        on = {
            n: [model.lp.add_variable(f"w_{m}_{n}_{s}", cat=pulp.LpBinary) for s in model.ticks[m]]
            for n in nodes
        }
        model.node_steps[m] = on
        for k, step in enumerate(steps):
            gang = {on[n][k]: 1 for n in nodes}
            gang[step] = -mode.nodes
            _add(model, gang, pulp.LpConstraintEQ, f"gang_{m}_{k}", 0)
            for n in nodes:
                _add(model, {on[n][k]: 1, step: -1}, pulp.LpConstraintLE, f"on_{m}_{n}_{k}", 0)
                if k:
                    stay = {on[n][k - 1]: 1, on[n][k]: -1}
                    _add(model, stay, pulp.LpConstraintLE, f"stay_{m}_{n}_{k}", 0)


def _task_modes(problem: Problem, model: MilpModel, task: int) -> list[int]:
    a = problem.arrays
    return [m for m in range(a.mode_start[task], a.mode_start[task + 1]) if m in model.steps]


def _assignment(problem: Problem, model: MilpModel) -> None:
    """Each task starts once: its modes' last steps sum to one."""
    for i in range(problem.arrays.n_tasks):
        last = {model.steps[m][-1]: 1 for m in _task_modes(problem, model, i)}
        _add(model, last, pulp.LpConstraintEQ, f"assign_{i}", 1)


def _precedences(problem: Problem, model: MilpModel) -> None:
    """Disaggregated rows: started(after, t) <= finished(before, t - lag) (FS) or started (SS)."""
    a = problem.arrays
    for p, (b, f, kind, lag) in enumerate(
        zip(a.prec_before, a.prec_after, a.prec_kind, a.prec_lag, strict=True)
    ):
        before, after = _task_modes(problem, model, b), _task_modes(problem, model, f)
        if not before or not after:
            continue
        # ``before`` counts as done for this precedence ``shift`` ticks after its start
        shift = {m: int(lag) + (int(a.mode_duration[m]) if kind == FS else 0) for m in before}
        done = max(model.ticks[m][-1] + shift[m] for m in before)
        rows = sorted({t for m in after for t in model.ticks[m] if t < done})
        for t in rows:
            terms: dict[pulp.LpVariable, float] = defaultdict(float)
            for m in after:
                var = model.started_by(m, t)
                if var is not None:
                    terms[var] += 1
            for m in before:
                var = model.started_by(m, t - shift[m])
                if var is not None:
                    terms[var] -= 1
            _add(model, terms, pulp.LpConstraintLE, f"prec_{p}_{t}", 0)


def _renewables(problem: Problem, windows: Windows, model: MilpModel) -> None:
    """One row per resource and tick whose possible load exceeds that tick's capacity.

    A segment at offset ``o`` with duration ``d`` runs at tick ``t`` when its
    mode started in ``(t - o - d, t - o]``: two step binaries per segment.
    """
    a = problem.arrays
    cap = a.capacity_profile(windows.horizon)
    for r in range(a.n_resources):
        rows: dict[int, dict[pulp.LpVariable, float]] = defaultdict(lambda: defaultdict(float))
        peak: dict[int, int] = defaultdict(int)
        for m, ticks in model.ticks.items():
            for g in range(a.seg_start[m], a.seg_start[m + 1]):
                q, dur, off = int(a.seg_demand[g, r]), int(a.seg_duration[g]), int(a.seg_offset[g])
                if not q or not dur:
                    continue
                for t in range(ticks[0] + off, ticks[-1] + off + dur):
                    peak[t] += q
                    row = rows[t]
                    on = model.started_by(m, t - off)
                    if on is not None:
                        row[on] += q
                    off_var = model.started_by(m, t - off - dur)
                    if off_var is not None:
                        row[off_var] -= q
        for t in sorted(rows):
            if peak[t] > cap[r, t]:
                _add(model, rows[t], pulp.LpConstraintLE, f"res_{r}_{t}", int(cap[r, t]))


MAX_CLIQUES_PER_TASK = 2
"""Clique cuts kept: at most this many per task."""


def conflict_cliques(problem: Problem) -> list[list[int]]:
    """Cliques of tasks no two of which can run at once: every mode of the one and every
    mode of the other together ask more of some renewable resource than its largest
    capacity. Tasks of one segment per mode, off nodes, only. Maximal cliques by size,
    each kept if it covers a pair no kept one does, at most
    :data:`MAX_CLIQUES_PER_TASK` per task in all."""
    a = problem.arrays
    cap = np.array([r.max_capacity for r in problem.renewables], dtype=np.int64)
    demand: dict[int, np.ndarray] = {}
    for i in range(a.n_tasks):
        modes = range(int(a.mode_start[i]), int(a.mode_start[i + 1]))
        if any(a.mode_nodes[m] or a.seg_start[m + 1] - a.seg_start[m] != 1 for m in modes):
            continue
        demand[i] = np.array([a.seg_demand[a.seg_start[m]] for m in modes])
    graph = nx.Graph()
    tasks = sorted(demand)
    for x, i in enumerate(tasks):
        for j in tasks[x + 1 :]:
            both = demand[i][:, None, :] + demand[j][None, :, :]
            if (both > cap).any(axis=2).all():
                graph.add_edge(i, j)
    covered: set[tuple[int, int]] = set()
    kept: list[list[int]] = []
    for clique in sorted(nx.find_cliques(graph), key=len, reverse=True):
        if len(kept) >= MAX_CLIQUES_PER_TASK * len(tasks):
            break
        pairs = set(itertools.combinations(sorted(clique), 2))
        if len(clique) > 1 and not pairs <= covered:
            covered |= pairs
            kept.append(sorted(clique))
    return kept


def _cliques(problem: Problem, model: MilpModel) -> None:
    """Clique cuts: at every tick, at most one task of a clique of
    :func:`conflict_cliques` runs (a mode of duration ``d`` runs at tick ``t`` when it
    started in ``(t - d, t]``)."""
    a = problem.arrays
    for c, clique in enumerate(conflict_cliques(problem)):
        rows: dict[int, dict[pulp.LpVariable, float]] = defaultdict(lambda: defaultdict(float))
        members: dict[int, set[int]] = defaultdict(set)
        for i in clique:
            for m in range(int(a.mode_start[i]), int(a.mode_start[i + 1])):
                ticks, dur = model.ticks.get(m), int(a.mode_duration[m])
                if not ticks or not dur:
                    continue
                for t in range(ticks[0], ticks[-1] + dur):
                    members[t].add(i)
                    on = model.started_by(m, t)
                    if on is not None:
                        rows[t][on] += 1
                    gone = model.started_by(m, t - dur)
                    if gone is not None:
                        rows[t][gone] -= 1
        for t in sorted(rows):
            if len(members[t]) > 1:
                _add(model, rows[t], pulp.LpConstraintLE, f"clique_{c}_{t}", 1)


def _node_capacity(problem: Problem, model: MilpModel) -> None:
    """One row per node, node resource kind and tick whose possible load exceeds the node's
    capacity: the rows of :func:`_renewables` over the node's step binaries."""
    rows: dict[tuple[int, str, int], dict[pulp.LpVariable, float]] = defaultdict(
        lambda: defaultdict(float)
    )
    peak: dict[tuple[int, str, int], int] = defaultdict(int)
    for m, on in model.node_steps.items():
        ticks = model.ticks[m]
        for g in node_segments(problem, mode_of(problem, m)):
            for t in range(ticks[0] + g.offset, ticks[-1] + g.offset + g.duration):
                for n in on:
                    for kind, q in g.demand.items():
                        peak[n, kind, t] += q
                        row = rows[n, kind, t]
                        start = model.started_by(m, t - g.offset, n)
                        if start is not None:
                            row[start] += q
                        end = model.started_by(m, t - g.offset - g.duration, n)
                        if end is not None:
                            row[end] -= q
    kinds = {kind: r for r, kind in enumerate(problem.node_kinds)}
    for (n, kind, t), row in sorted(rows.items()):
        cap = problem.nodes[n].capacity.get(kind, 0)
        if peak[n, kind, t] > cap:
            _add(model, row, pulp.LpConstraintLE, f"node_{n}_{kinds[kind]}_{t}", cap)


def _budgets(problem: Problem, model: MilpModel) -> None:
    a = problem.arrays
    for k, budget in enumerate(a.budget):
        terms = {
            steps[-1]: int(a.mode_consumption[m, k])
            for m, steps in model.steps.items()
            if a.mode_consumption[m, k]
        }
        if sum(terms.values()) > budget:
            _add(model, terms, pulp.LpConstraintLE, f"budget_{k}", int(budget))


def _colocation(problem: Problem, model: MilpModel) -> None:
    """Per colocated job, one binary per placement key; a mode with a key needs its key's binary."""
    a = problem.arrays
    for j in range(len(problem.jobs)):
        if not a.job_colocate[j]:
            continue
        uses: dict[int, list[int]] = defaultdict(list)
        for m in model.steps:
            key = int(a.mode_placement[m])
            if key >= 0 and a.task_job[a.mode_task[m]] == j:
                uses[key].append(m)
        if len(uses) < 2:
            continue
        place = {key: model.lp.add_variable(f"place_{j}_{key}", cat=pulp.LpBinary) for key in uses}
        _add(model, dict.fromkeys(place.values(), 1), pulp.LpConstraintLE, f"place_{j}", 1)
        for key, modes in uses.items():
            for m in modes:
                terms = {model.steps[m][-1]: 1, place[key]: -1}
                _add(model, terms, pulp.LpConstraintLE, f"place_{j}_{m}", 0)


def _node_colocation(problem: Problem, model: MilpModel) -> None:
    """Per colocated job on nodes, one binary per node: its node set, implied by its
    tasks' nodes, of the size of every chosen mode's gang (always, when they all agree)."""
    a = problem.arrays
    for j, pairs in colocated_placements(problem).items():
        modes = [int(a.mode_start[i]) + k for i, k in pairs]
        modes = [m for m in modes if m in model.node_steps]
        union = sorted({n for m in modes for n in model.node_steps[m]})
        ys = {n: model.lp.add_variable(f"set_{j}_{n}", cat=pulp.LpBinary) for n in union}
        model.node_sets[j] = ys
        for m in modes:
            for n, steps in model.node_steps[m].items():
                _add(model, {steps[-1]: 1, ys[n]: -1}, pulp.LpConstraintLE, f"set_{j}_{m}_{n}", 0)
        gangs = {mode_of(problem, m).nodes for m in modes}
        if len(gangs) == 1 and len(union) >= min(gangs):
            model.set_sizes[j] = gangs.pop()
            terms = dict.fromkeys(ys.values(), 1)
            _add(model, terms, pulp.LpConstraintEQ, f"size_{j}", model.set_sizes[j])
            continue
        for m in modes:
            # chosen (last step 1): size at least k and at most k; else between 0 and all
            k, last = mode_of(problem, m).nodes, model.steps[m][-1]
            size = dict.fromkeys(ys.values(), 1)
            _add(model, {**size, last: -k}, pulp.LpConstraintGE, f"size_{j}_{m}_lo", 0)
            terms = {**size, last: len(union) - k}
            _add(model, terms, pulp.LpConstraintLE, f"size_{j}_{m}_hi", len(union))


def _kept_nodes(problem: Problem, model: MilpModel) -> None:
    """A chosen mode that keeps a predecessor's nodes (``same_nodes_as``) is on a node
    exactly when the predecessor is: ``on <= theirs`` and ``theirs - on <= 1 - chosen``."""
    a = problem.arrays
    for m, on in model.node_steps.items():
        ref = mode_of(problem, m).same_nodes_as
        if ref is None:
            continue
        r = problem.task_index[ref]
        theirs: dict[int, list[pulp.LpVariable]] = defaultdict(list)
        for q in range(int(a.mode_start[r]), int(a.mode_start[r + 1])):
            for n, steps in model.node_steps.get(q, {}).items():
                theirs[n].append(steps[-1])
        chosen = model.steps[m][-1]
        for n in sorted(set(on) | set(theirs)):
            terms: dict[pulp.LpVariable, float] = dict.fromkeys(theirs[n], 1)
            if n in on:
                mine = {on[n][-1]: 1, **{x: -1 for x in theirs[n]}}
                _add(model, mine, pulp.LpConstraintLE, f"keep_{m}_{n}", 0)
                terms[on[n][-1]] = -1
            terms[chosen] = 1
            _add(model, terms, pulp.LpConstraintLE, f"kept_{m}_{n}", 1)


def _node_symmetry(problem: Problem, model: MilpModel) -> None:
    """The first task on nodes uses a prefix of every class of identical nodes."""
    first = symmetry_task(problem)
    if first is None:
        return
    a = problem.arrays
    used: dict[int, list[pulp.LpVariable]] = defaultdict(list)
    for m in range(int(a.mode_start[first]), int(a.mode_start[first + 1])):
        for n, steps in model.node_steps.get(m, {}).items():
            used[n].append(steps[-1])
    for members in identical_node_classes(problem):
        for lo, hi in itertools.pairwise(members):
            if used[hi]:
                terms: dict[pulp.LpVariable, float] = defaultdict(float)
                for var in used[hi]:
                    terms[var] += 1
                for var in used[lo]:
                    terms[var] -= 1
                _add(model, terms, pulp.LpConstraintLE, f"sym_{lo}_{hi}", 0)


def _finish(problem: Problem, model: MilpModel, task: int) -> dict[pulp.LpVariable, float]:
    """The finish tick of ``task`` as a linear form of its step binaries."""
    a = problem.arrays
    terms: dict[pulp.LpVariable, float] = defaultdict(float)
    for m in _task_modes(problem, model, task):
        ticks, steps = model.ticks[m], model.steps[m]
        # sum_k (ticks[k] + d) (steps[k] - steps[k - 1]), summed by parts
        terms[steps[-1]] += ticks[-1] + int(a.mode_duration[m])
        for k in range(len(ticks) - 1):
            terms[steps[k]] -= ticks[k + 1] - ticks[k]
    return terms


def _cost(problem: Problem, model: MilpModel, least: int, horizon: int) -> pulp.LpAffineExpression:
    """The cost objective: per mode and start tick, its segments' draw priced over their
    ticks (on the step variables: started by tick ``k`` weighs the cost at ``k`` less the
    cost at the next allowed tick); the draw over the makespan priced over ``[0,
    makespan)``: the makespan is ``least`` plus "the makespan passes tick ``t``" Booleans,
    each later one at most the one before, each weighing the price of its tick."""
    from planner.metrics import cost_terms
    from planner.times import tick_seconds

    tariff = problem.tariff
    assert tariff is not None  # the problem's validator asks for one
    kwh = tick_seconds(problem.time_unit) / 3.6e6
    per, over = cost_terms(problem)
    segments = [segs for modes in per for segs in modes]
    terms = []
    for m, steps in model.steps.items():
        if not segments[m]:
            continue
        costs = [
            sum(w * tariff.paid(t + a, t + a + d) for a, d, w in segments[m]) * kwh
            for t in model.ticks[m]
        ]
        nexts = [*costs[1:], 0.0]
        terms.extend((c - c2) * var for c, c2, var in zip(costs, nexts, steps, strict=True))
    if over > 0:
        mk = model.objective_vars[None]
        passes = [
            model.lp.add_variable(f"past_{t}", cat=pulp.LpBinary) for t in range(least, horizon)
        ]
        _add(
            model, {mk: 1, **{y: -1 for y in passes}}, pulp.LpConstraintEQ, "makespan_ticks", least
        )
        for k, (y, y2) in enumerate(itertools.pairwise(passes)):
            _add(model, {y2: 1, y: -1}, pulp.LpConstraintLE, f"past_order_{k}", 0)
        rate = over * kwh
        terms.append(rate * tariff.upto(least))
        terms.extend(
            rate * tariff.paid(t, t + 1) * y
            for t, y in zip(range(least, horizon), passes, strict=True)
        )
    return pulp.lpSum(terms)


def _objective(problem: Problem, windows: Windows, model: MilpModel) -> None:
    """A makespan variable (objectives makespan and energy, the latter with every mode's
    draw), or a completion variable per job, above each end task's finish."""
    a = problem.arrays
    has_fs_succ: dict[int, set[int | None]] = defaultdict(set)
    for b, f, kind in zip(a.prec_before, a.prec_after, a.prec_kind, strict=True):
        if kind == FS:
            has_fs_succ[int(b)].add(int(a.task_job[f]))
    groups: dict[str | None, list[int]] = defaultdict(list)
    if problem.objective in ("makespan", "energy", "cost"):
        groups[None] = [i for i in range(a.n_tasks) if not has_fs_succ[i]]
    else:
        for i, t in enumerate(problem.tasks):
            if t.job is not None and int(a.task_job[i]) not in has_fs_succ[i]:
                groups[t.job].append(i)
    least = lower_bound(problem) if problem.objective in ("makespan", "energy", "cost") else 0
    for key, members in groups.items():
        name = "makespan" if key is None else f"completion_{len(model.objective_vars)}"
        var = model.lp.add_variable(name, lowBound=least, upBound=windows.horizon)
        model.objective_vars[key] = var
        for i in members:
            terms = _finish(problem, model, i)
            terms[var] -= 1
            _add(model, terms, pulp.LpConstraintLE, f"{name}_{i}", 0)
    if problem.objective == "makespan":
        model.lp += model.objective_vars[None]
    elif problem.objective == "energy":
        from planner.metrics import energy_terms

        per, over = energy_terms(problem)
        energy = [e for row in per for e in row]
        chosen = [e * model.steps[m][-1] for m, e in enumerate(energy) if e and model.steps.get(m)]
        model.lp += over * model.objective_vars[None] + pulp.lpSum(chosen)
    elif problem.objective == "cost":
        model.lp += _cost(problem, model, least, windows.horizon)
    else:
        weight = {j.name: j.weight for j in problem.jobs}
        model.lp += pulp.lpSum(weight[j] * v for j, v in model.objective_vars.items())

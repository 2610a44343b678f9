"""The restart model: few phases from the configuration program's columns, for runs that
charge restart overheads.

The configuration program (:mod:`planner.executor.configurations`, by column generation
in :mod:`planner.solvers.colgen`) knows no restart overhead: its optimum bounds every
dispatch in groups, but its phases, run where every interval pays its groups' overheads
(Muri's rule: a group pays the sum of its members' restart times at the start of every
interval), run longer than planned. This model chooses, over the same configurations,
which run and for how long, each at most once, charging each phase that runs its
largest group overhead:

    minimise  sum_k d_k + c_k y_k
    subject to  sum_k r_jk d_k >= iterations_j  for every job j,
                0 <= d_k <= U_k y_k,  y_k in {0, 1}

with ``d_k`` whole seconds of progress in configuration ``k``, ``c_k`` its largest group's
overhead (whole seconds, rounded up), ``r_jk`` job ``j``'s rate there (rounded down, so
that a solution does all the work) and ``U_k`` the longest any of its members needs. A
phase then runs ``d_k + c_k`` seconds: every group in it has its overhead and at least
``d_k`` seconds of progress. CP-SAT solves it within a time limit, from the master's
solution as its hint.

What it proves, where CP-SAT proves its optimum: the least makespan of a dispatch that
runs each of these configurations at most once, in this accounting of overheads. A job
that ends inside a phase starts another interval for the groups still running there
(they pay their overheads again), which the model does not see: the executor's run of
the phases is the plan's figure, and the audit its check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.executor.configurations import Configuration, ConfigurationPlan, NodeRoom
from planner.executor.model.policy import Periods, restart_cost

if TYPE_CHECKING:
    from planner.executor.model.jobs import ExecutorJob
    from planner.interleave import Interleave
    from planner.solvers.colgen import ColumnGeneration

RESTART_SHARE = 0.2
"""Where runs charge restart overheads, the share of what is left for the search's stage
``colgen`` that this model gets after column generation."""
RATE_SCALE = 10**6
"""Iterations are counted in millionths in the model's rows (rates rounded down)."""


def restart_plan(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    configs: Sequence[Configuration],
    costs: Sequence[float],
    durations: Sequence[float],
    time_limit: float,
    threads: int = 2,
) -> tuple[ConfigurationPlan, bool] | None:
    """The restart model over ``configs`` (see the module docstring) with each job's
    restart overhead in ``costs`` (seconds), from ``durations`` (the master's, one per
    configuration) as a hint, within ``time_limit`` seconds: its plan (each phase
    ``d_k + c_k`` seconds; its ``makespan`` the model's value) and whether CP-SAT proved
    it optimal. ``None`` where it found no solution in time."""
    from ortools.sat.python import cp_model

    periods = Periods(model, jobs)
    rates = []
    for config in configs:
        row: dict[int, float] = {}
        for members, _ in config:
            for j, period in periods(members).items():
                row[j] = 1.0 / period
        rates.append(row)
    charge = [
        math.ceil(max((sum(costs[j] for j in members) for members, _ in config), default=0.0))
        for config in configs
    ]
    m = cp_model.CpModel()
    d, y = [], []
    for k, row in enumerate(rates):
        most = max(math.ceil(jobs[j].iterations / r) for j, r in row.items())
        d.append(m.NewIntVar(0, most, f"d{k}"))
        y.append(m.NewBoolVar(f"y{k}"))
        m.Add(d[k] <= most * y[k])
        m.AddHint(d[k], math.ceil(durations[k]) if durations[k] > 1e-9 else 0)
        m.AddHint(y[k], durations[k] > 1e-9)
    for j, job in enumerate(jobs):
        terms = [(int(row[j] * RATE_SCALE), d[k]) for k, row in enumerate(rates) if j in row]
        m.Add(sum(c * v for c, v in terms) >= math.ceil(job.iterations * RATE_SCALE))
    m.Minimize(sum(d) + sum(c * v for c, v in zip(charge, y, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
    solver.parameters.num_workers = max(threads, 1)
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    phases = tuple(
        (float(solver.Value(d[k]) + charge[k]), config)
        for k, config in enumerate(configs)
        if solver.Value(y[k]) and solver.Value(d[k]) > 0
    )
    plan = ConfigurationPlan(solver.ObjectiveValue(), phases, len(configs))
    return plan, status == cp_model.OPTIMAL


def restart_stage(
    jobs: Sequence[ExecutorJob],
    model: Interleave,
    found: ColumnGeneration,
    room: NodeRoom,
    time_limit: float,
    threads: int,
) -> tuple[ConfigurationPlan, str] | None:
    """The restart model over the columns column generation ``found`` that keep within
    the nodes (``room``), each job at its restart overhead
    (:func:`~planner.executor.model.policy.restart_cost`): its plan and its name as the
    search names a candidate (``None``: no solution in ``time_limit`` seconds)."""
    kept = [k for k, c in enumerate(found.configs) if room(c)]
    costs = [restart_cost(j) for j in jobs]
    configs = [found.configs[k] for k in kept]
    durations = [found.durations[k] for k in kept]
    solved = restart_plan(jobs, model, configs, costs, durations, time_limit, threads)
    if solved is None:
        return None
    plan, optimal = solved
    proven = ", optimal in it" if optimal else ""
    return plan, f"restart model ({len(plan.phases):,} of {len(configs):,} configurations{proven})"

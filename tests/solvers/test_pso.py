"""The particle swarm: optima on small instances, budgets, determinism, history."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import load_instance, validate
from planner.errors import PlannerError
from planner.result import Progress, Status
from planner.solvers import solve

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


@pytest.mark.parametrize(
    ("name", "optimum"),
    [("psplib/j301_1.sm", 43), ("psplib/j301_2.sm", 47)],
)
def test_reaches_known_optimum(name: str, optimum: int) -> None:
    problem = load_instance(INSTANCES / name)
    res = solve(problem, "pso", schedules=5000, seed=1)
    assert res.valid
    assert validate(problem, res.schedule).ok
    assert res.objective == optimum


@pytest.mark.parametrize(("name", "optimum"), [("mm/j1010_1.mm", 17), ("mm/j102_2.mm", 20)])
def test_multi_mode_stays_valid(name: str, optimum: int) -> None:
    # The swarm is weaker on modes than the GA: valid, never below the optimum, within 15 %
    # on average over five seeds (before the budget repair, j1010_1 averaged 20 > 1.15 * 17;
    # now one seed of the five still ends at 24).
    problem = load_instance(INSTANCES / name)
    found = []
    for seed in range(5):
        res = solve(problem, "pso", schedules=5000, seed=seed)
        assert res.valid
        assert res.objective >= optimum
        found.append(res.objective)
    assert sum(found) / len(found) <= 1.15 * optimum


def test_budget_history_and_progress() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    events: list[Progress] = []
    res = solve(problem, "pso", schedules=1200, seed=0, progress=events.append)
    assert res.status == Status.FEASIBLE
    assert res.stats["schedules"] == 1200
    history = res.history
    assert [h["generation"] for h in history] == list(range(1, len(history) + 1))
    assert history[-1]["schedules"] == 1200
    assert history[-1]["best"] == res.objective
    assert all(h["mean"] >= h["best"] for h in history)
    bests = [e.objective for e in events]
    assert bests == sorted(bests, reverse=True) and bests[-1] == res.objective
    assert res.objective >= 99  # the critical-path bound (MPM-Time) of j1201_1


def test_same_seed_same_schedule() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    a = solve(problem, "pso", schedules=900, seed=7)
    b = solve(problem, "pso", schedules=900, seed=7)
    assert a.schedule.starts == b.schedule.starts and a.schedule.modes == b.schedule.modes


def test_time_limit_alone_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools
    import types

    # A clock that advances 10 ms per reading: the run must stop by its limit, not its speed.
    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: next(ticks) * 0.01)
    monkeypatch.setattr("planner.solvers.search.time", clock)
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    res = solve(problem, "pso", time_limit=0.5, seed=0)
    assert res.valid and res.stats["schedules"] > 0
    assert next(ticks) * 0.01 >= 0.5  # the limit, on the fake clock, was reached


def test_bad_options() -> None:
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    with pytest.raises(PlannerError, match="particles"):
        solve(problem, "pso", particles=0)
    with pytest.raises(PlannerError, match="schedules"):
        solve(problem, "pso", schedules=0)


def test_ring_and_global_best_both_reach_the_optimum() -> None:
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    for ring in (0, 5):
        res = solve(problem, "pso", schedules=5000, seed=1, ring=ring)
        assert res.valid and res.objective == 43
    # The neighbourhood changes the search: the two swarms do not move alike.
    big = load_instance(INSTANCES / "psplib/j1201_1.sm")
    ring = solve(big, "pso", schedules=1200, seed=0)
    best = solve(big, "pso", schedules=1200, seed=0, ring=0)
    assert [h["mean"] for h in ring.history] != [h["mean"] for h in best.history]
    with pytest.raises(PlannerError, match="ring must be at least 0, got -1"):
        solve(problem, "pso", ring=-1)

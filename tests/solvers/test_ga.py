"""The genetic algorithm: optima on small instances, budgets, determinism, history."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner import Problem, load_instance, validate
from planner.errors import PlannerError
from planner.result import Progress, Status
from planner.solvers import solve
from planner.solvers.sgs import Decoder
from planner.solvers.sgs_numba import repair_budgets

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


@pytest.mark.parametrize(
    ("name", "optimum"),
    [
        ("psplib/j301_1.sm", 43),
        ("psplib/j301_2.sm", 47),
        ("mm/j1010_1.mm", 17),
        ("mm/j102_2.mm", 20),
    ],
)
def test_reaches_known_optimum(name: str, optimum: int) -> None:
    problem = load_instance(INSTANCES / name)
    res = solve(problem, "ga", schedules=5000, seed=1)
    assert res.valid
    assert validate(problem, res.schedule).ok
    assert res.objective == optimum


def test_budget_history_and_progress() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    events: list[Progress] = []
    res = solve(problem, "ga", schedules=1200, seed=0, progress=events.append)
    assert res.status == Status.FEASIBLE
    assert res.stats["schedules"] == 1200
    history = res.history
    assert [h["generation"] for h in history] == list(range(len(history)))
    assert history[-1]["schedules"] == 1200
    assert history[-1]["best"] == res.objective
    assert all(h["mean"] >= h["best"] for h in history)
    bests = [e.objective for e in events]
    assert bests == sorted(bests, reverse=True) and bests[-1] == res.objective
    assert res.objective >= 99  # the critical-path bound (MPM-Time) of j1201_1


def test_same_seed_same_schedule() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    a = solve(problem, "ga", schedules=900, seed=7)
    b = solve(problem, "ga", schedules=900, seed=7)
    assert a.schedule.starts == b.schedule.starts and a.schedule.modes == b.schedule.modes


def test_time_limit_alone_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools
    import types

    # A clock that advances 10 ms per reading: the run must stop by its limit, not its speed.
    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: next(ticks) * 0.01)
    monkeypatch.setattr("planner.solvers.search.time", clock)
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    res = solve(problem, "ga", time_limit=0.5, seed=0)
    assert res.valid and res.stats["schedules"] > 0
    assert next(ticks) * 0.01 >= 0.5  # the limit, on the fake clock, was reached


def test_bad_options() -> None:
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    with pytest.raises(PlannerError, match="population"):
        solve(problem, "ga", population=1)
    with pytest.raises(PlannerError, match="schedules"):
        solve(problem, "ga", schedules=0)
    with pytest.raises(PlannerError, match=r"^workers must be at least 1, got 0$"):
        solve(problem, "ga", workers=0)


def test_parallel_runs_share_the_budget_and_keep_the_best() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    res = solve(problem, "ga", schedules=1201, seed=3, workers=2)
    runs = res.stats["runs"]
    assert [r["seed"] for r in runs] == [3, 4]
    assert [r["schedules"] for r in runs] == [601, 600]
    assert res.stats["schedules"] == 1201
    assert res.valid
    assert res.objective == min(r["objective"] for r in runs)
    # Each run is the single run of its seed and budget.
    for run in runs:
        alone = solve(problem, "ga", schedules=run["schedules"], seed=run["seed"])
        assert alone.objective == run["objective"]


def test_interrupting_one_parallel_run_stops_them_all() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    calls: list[float] = []

    def interrupt(event: Progress) -> None:
        calls.append(event.elapsed)
        if len(calls) == 3:
            raise KeyboardInterrupt

    budget = 2_000_000
    res = solve(problem, "ga", schedules=budget, workers=2, progress=interrupt)
    # Both runs ended long before their budgets, and the best schedule so far is kept.
    assert res.interrupted and res.valid and res.status is Status.FEASIBLE
    assert len(res.stats["runs"]) == 2
    assert all(run["schedules"] < budget // 20 for run in res.stats["runs"])


def test_cli_forwards_schedules() -> None:
    from typer.testing import CliRunner

    from planner.app.cli import app

    out = CliRunner().invoke(
        app, ["solve", str(INSTANCES / "psplib/j301_1.sm"), "--solver", "ga", "--schedules", "600"]
    )
    assert out.exit_code == 0, out.output
    assert "validator    valid" in out.output
    assert "makespan     43" in out.output


def test_unmeetable_deadline_gives_no_schedule() -> None:
    from planner.model import Mode, Problem, Resource, Segment, Task

    # Both tasks need the whole resource for 5 ticks and must finish by tick 5.
    seg = Segment(duration=5, demand={"r": 1})
    problem = Problem(
        resources=[Resource(name="r", capacity=1)],
        tasks=[Task(name=name, modes=[Mode(segments=[seg])], deadline=5) for name in ("x", "y")],
    )
    res = solve(problem, "ga", schedules=100)
    assert res.schedule is None and res.status == Status.UNKNOWN
    assert res.stats["schedules"] == 100 and "deadlines" in res.reason


def test_peak_crossover_child_is_precedence_feasible() -> None:
    import numpy as np

    from planner.solvers.ga import peak_cross, peak_window, segment_use
    from planner.solvers.sgs import Decoder, priorities

    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    dec = Decoder(problem)
    d = dec.data
    rng = np.random.default_rng(3)
    lft = priorities(problem, "lft")
    parents = []
    for _ in range(2):
        order = dec.order(lft + rng.random(d.n) * np.ptp(lft))
        dec.run(order)
        # In start order, as the GA keeps its lists.
        parents.append((np.argsort(dec.start, kind="stable"), dec.mode.copy(), dec.start.copy()))
    (mo, mm, ms), (fo, fm, _) = parents
    a = problem.arrays
    makespan = int((ms + a.mode_duration[mm]).max())
    t1, t2 = peak_window(d, segment_use(d), ms, mm, 0.1, 0.5, rng)
    assert 0 <= t1 < t2 <= makespan and t2 - t1 >= int(0.1 * makespan)
    # No other window of that length uses the resources more.
    use = np.zeros(makespan)
    for i in range(d.n):
        for s in range(a.seg_start[mm[i]], a.seg_start[mm[i] + 1]):
            lo = ms[i] + a.seg_offset[s]
            use[lo : lo + a.seg_duration[s]] += (a.seg_demand[s] / a.capacity).sum()
    sums = np.convolve(use, np.ones(t2 - t1), mode="valid")
    assert sums[t1] >= sums.max() - 1e-9
    child_o, child_m = np.empty_like(mo), np.empty_like(mm)
    peak_cross(mo, mm, ms, fo, fm, child_o, child_m, t1, t2, np.empty_like(mo))
    assert sorted(child_o.tolist()) == list(range(d.n))
    pos = np.empty(d.n, dtype=np.int64)
    pos[child_o] = np.arange(d.n)
    for b, f in zip(a.prec_before, a.prec_after, strict=True):
        assert pos[b] < pos[f]
    # The window's tasks sit together, in the mother's order, after those she starts before it.
    inside = [t for t in mo if t1 <= ms[t] < t2]
    before = sum(ms < t1)
    assert child_o[before : before + len(inside)].tolist() == inside
    assert child_o[:before].tolist() == [t for t in fo if ms[t] < t1]


def test_restart_without_any_schedule_keeps_real_modes() -> None:
    from planner.model import Mode, Problem, Resource, Segment, Task

    # No schedule exists: y takes 10 ticks in either mode and must end by tick 5. The
    # population stalls with no schedule and restarts; it must draw y's own modes. (The
    # GA is called directly: solve() refuses the instance at the door, as infeasible.)
    def mode(duration: int) -> Mode:
        return Mode(segments=[Segment(duration=duration, demand={"r": 1})])

    problem = Problem(
        resources=[Resource(name="r", capacity=1)],
        tasks=[
            Task(name="x", modes=[mode(1), mode(2)]),
            Task(name="y", modes=[mode(10), mode(11)], deadline=5),
        ],
    )
    from planner.solvers.ga import solve_ga

    res = solve_ga(problem, schedules=3000)
    assert res.stats["restarts"] > 0
    assert res.schedule is None and res.status == Status.UNKNOWN


def test_a_run_at_the_critical_path_bound_stops_the_others(monkeypatch) -> None:
    import planner.solvers.ga as ga
    from planner.bounds import critical_path_bound
    from planner.interrupt import Halt
    from planner.solvers.search import Search

    problem = load_instance(INSTANCES / "psplib/j1205_3.sm")
    bound = critical_path_bound(problem)
    stopped: list[bool] = []

    def fake(problem, schedules, time_limit, seed, settings, progress, stop: Halt):
        if seed == 0:
            search = Search(problem, "ga", 10, None, progress, stop)
            search.offer(bound, search.best_start, search.best_mode, search.best_placed)
        else:
            stopped.append(stop.event.wait(5) and stop.flag[0] == 1)
        return ga.Result("ga", Status.FEASIBLE, objective=bound + seed, stats={"schedules": 1})

    monkeypatch.setattr(ga, "_evolve", fake)
    res = ga.solve_ga(problem, time_limit=60, workers=2)
    assert stopped == [True]
    assert res.objective == bound and [r["objective"] for r in res.stats["runs"]] == [72, 73]


def test_the_first_incumbent_comes_after_one_individual() -> None:
    """A large instance has an incumbent after a schedule or two, not a whole population."""
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    events: list[Progress] = []
    solve(problem, "ga", schedules=2000, population=40, workers=1, progress=events.append)
    first = next(e for e in events if e.objective is not None)
    assert first.message in {"1 schedules", "2 schedules", "3 schedules"}


def test_ctrl_c_in_the_first_population_keeps_the_timed_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from planner.solvers import ga

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ga, "initial", interrupted)
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    result = solve(problem, "ga", time_limit=5, workers=1)
    assert result.interrupted and result.status == Status.FEASIBLE
    assert result.valid and result.stats["generations"] == 0


@pytest.mark.parametrize("solver", ["ga", "pso"])
def test_tight_budgets_get_a_schedule(solver: str) -> None:
    # MMLIB50 J501_5 (best known 26): before the budget repair neither heuristic found a
    # mode list within its two budgets in 20,000 schedules.
    problem = load_instance(INSTANCES / "mm/J501_5.mm")
    res = solve(problem, solver, schedules=1000, seed=0)
    assert res.valid is True
    assert validate(problem, res.schedule).ok
    assert 26 <= res.objective <= 32


def _budget_problem(budget: int) -> Decoder:
    """Three tasks, each a fast mode (2 ticks, 3 units of money) and two slow ones (4 ticks,
    1 unit; 5 ticks, 1 unit)."""
    modes = [
        {"name": name, "segments": [{"duration": d, "demand": {"r": 1}}], "consumes": {"m": c}}
        for name, d, c in (("fast", 2, 3), ("slow", 4, 1), ("slower", 5, 1))
    ]
    problem = Problem.model_validate(
        {
            "resources": [
                {"name": "r", "capacity": 3},
                {"name": "m", "capacity": budget, "kind": "nonrenewable"},
            ],
            "tasks": [{"name": f"t{i}", "modes": modes} for i in range(3)],
        }
    )
    return Decoder(problem)


def test_budget_repair_cuts_the_overdraft_with_the_shortest_modes() -> None:
    # Budget 7: all fast (9 units) overdraws by 2; one task slow (7 units) fits exactly.
    d = _budget_problem(7).data
    fast, slow = d.mode_start[:-1], d.mode_start[:-1] + 1
    modes = fast.copy()
    assert repair_budgets(d.mode, d.mode_start, d.slack, modes, np.random.default_rng(0))
    assert sorted(modes - d.mode_start[:-1]) == [0, 0, 1]  # one slow mode, not a slower one
    # A list within the budgets is kept; one without a preferred mode is left to the SGS.
    keep = np.array([slow[0], slow[1], fast[2]])
    assert repair_budgets(d.mode, d.mode_start, d.slack, keep, np.random.default_rng(0))
    assert keep.tolist() == [slow[0], slow[1], fast[2]]
    free = np.array([-1, fast[1], fast[2]])
    assert not repair_budgets(d.mode, d.mode_start, d.slack, free, np.random.default_rng(0))
    assert free.tolist() == [-1, fast[1], fast[2]]


def test_budget_repair_reports_budgets_it_cannot_meet() -> None:
    # Budget 2: even three slow modes (3 units) overdraw it.
    d = _budget_problem(2).data
    modes = d.mode_start[:-1].copy()
    assert not repair_budgets(d.mode, d.mode_start, d.slack, modes, np.random.default_rng(0))
    assert (modes >= d.mode_start[:-1]).all() and (modes < d.mode_start[1:]).all()

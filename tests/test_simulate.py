"""Replaying plans: hand-made plans whose realized run is known, the CLI, Monte Carlo."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.disturbances import (
    MURI_FACTORS,
    Disturbances,
    Failure,
    Noise,
    Simulation,
    Slowdown,
    parse_simulation,
)
from planner.errors import InputError
from planner.io.instance import load_instance, problem_from_data
from planner.model import Problem
from planner.replay.record import Execution
from planner.replay.simulate import monte_carlo, rank_by_realized, simulate
from planner.schedule import Schedule, load_schedule
from planner.study import distribution
from planner.validate import validate
from tests.conftest import ROOT, lines

runner = CliRunner()
MURI = Disturbances(slowdown=Slowdown(MURI_FACTORS))
S2 = 1.33 / 1.015


def seg(name: str, duration: int, **demand: int) -> dict[str, Any]:
    return {"name": name, "duration": duration, "demand": demand}


def task(name: str, job: str, *segments: dict[str, Any], nodes: int = 1) -> dict[str, Any]:
    return {"name": name, "job": job, "modes": [{"nodes": nodes, "segments": list(segments)}]}


def placed(*tasks: dict[str, Any], nodes: int = 3, **extra: Any) -> Problem:
    """A problem on ``nodes`` nodes of 8 GPUs and 8 data slots, one job per task's ``job``."""
    jobs = sorted({t["job"] for t in tasks})
    return Problem.model_validate(
        {
            "nodes": [{"name": f"n{k + 1}", "capacity": {"gpu": 8, "io": 8}} for k in range(nodes)],
            "tasks": list(tasks),
            "jobs": [{"name": j} for j in jobs],
            **extra,
        }
    )


def plan(problem: Problem, **where: tuple[int, tuple[str, ...]]) -> Schedule:
    """A plan: task -> (start, nodes), every task in its first mode."""
    sched = Schedule(
        modes={t.name: t.modes[0].name for t in problem.tasks},  # type: ignore[misc]
        starts={name: start for name, (start, _) in where.items()},
        nodes={name: on for name, (_, on) in where.items() if on},
    )
    assert validate(problem, sched).ok, validate(problem, sched).violations
    return sched


# A interleaves with B on n1: A loads while B computes, then the other way round.
PAIR = placed(
    task("a", "A", seg("data", 10, io=8), seg("gpu", 10, gpu=8)),
    task("b", "B", seg("gpu", 10, gpu=8), seg("data", 10, io=8)),
)
PAIR_PLAN = plan(PAIR, a=(0, ("n1",)), b=(0, ("n1",)))

# The pair on n1, a chain of two blocks on n2, then a gang on n2 + n3.
MIXED = placed(
    task("a", "A", seg("data", 10, io=8), seg("gpu", 10, gpu=8)),
    task("b", "B", seg("gpu", 10, gpu=8), seg("data", 10, io=8)),
    task("c1", "C", seg("data", 3, io=4), seg("gpu", 6, gpu=4)),
    task("c2", "C", seg("data", 3, io=4), seg("gpu", 6, gpu=4)),
    task("g", "G", seg("data", 2, io=8), seg("gpu", 8, gpu=8), nodes=2),
    precedences=[{"before": "c1", "after": "c2"}, {"before": "c2", "after": "g"}],
)
MIXED_PLAN = plan(
    MIXED,
    a=(0, ("n1",)),
    b=(0, ("n1",)),
    c1=(0, ("n2",)),
    c2=(9, ("n2",)),
    g=(18, ("n2", "n3")),
)


def spans(ex: Execution) -> dict[str, tuple[int, int]]:
    return {r.task: (r.start, r.finish) for r in ex.runs}


def valid(ex: Execution) -> bool:
    """The run's own verdict, and the independent validator's once more."""
    return ex.report.ok and validate(ex.problem, ex.schedule).ok


def test_no_disturbance_gives_the_plan_exactly() -> None:
    ex = simulate(MIXED, MIXED_PLAN)
    assert ex.makespan == ex.planned_makespan == 28
    assert ex.optimism == 1.0
    assert ex.schedule.starts == MIXED_PLAN.starts
    assert all(r.finish == r.planned_finish and not r.waited for r in ex.runs)
    assert ex.mean_jct == ex.planned_mean_jct == (20 + 20 + 18 + 28) / 4
    assert valid(ex)
    assert ex.notes == []


def test_no_interference_without_time_sharing() -> None:
    # 4 + 4 GPUs on a node of 8: no time-sharing, so Muri's factors do not apply.
    half = placed(
        task("a", "A", seg("data", 10, io=4), seg("gpu", 10, gpu=4)),
        task("b", "B", seg("gpu", 10, gpu=4), seg("data", 10, io=4)),
    )
    ex = simulate(half, plan(half, a=(0, ("n1",)), b=(0, ("n1",))), MURI)
    assert ex.makespan == 20


def test_an_interleaved_pair_is_slowed_by_exactly_s2() -> None:
    # 8 + 8 GPUs on n1 from tick 0 to the end: both run at 1 / s(2) throughout; each
    # 10-tick segment takes ceil(10 * s(2)) = ceil(13.10) = 14 ticks, back to back.
    ex = simulate(PAIR, PAIR_PLAN, MURI)
    assert math.ceil(10 * S2) == 14
    assert spans(ex) == {"a": (0, 28), "b": (0, 28)}
    assert [s.duration for s in ex.problem.task("a").modes[0].segments] == [14, 14]
    assert ex.optimism == 28 / 20
    assert valid(ex)
    # on separate nodes they do not time-share
    apart = plan(PAIR, a=(0, ("n1",)), b=(0, ("n2",)))
    assert simulate(PAIR, apart, MURI).makespan == 20


def test_slowdown_follows_joins_and_leaves(tmp_path: Path) -> None:
    # s(2) = 2 from a file. A loads alone for 10 ticks (10 of 30 done); B joins at 10 and
    # both run at half speed: B's 10 ticks of work end at 30, A has done 10 more; alone
    # again, A's last 10 end at 40, its GPU segment at 50.
    factors = tmp_path / "factors.csv"
    factors.write_text("k,factor\n2,2.0\n")
    problem = placed(
        task("a", "A", seg("data", 30, io=8), seg("gpu", 10, gpu=8)),
        task("b", "B", seg("gpu", 10, gpu=8)),
    )
    sched = plan(problem, a=(0, ("n1",)), b=(10, ("n1",)))
    ex = simulate(problem, sched, Disturbances(slowdown=Slowdown.parse(str(factors))))
    assert spans(ex) == {"a": (0, 50), "b": (10, 30)}
    assert [s.duration for s in ex.problem.task("a").modes[0].segments] == [40, 10]
    assert valid(ex)


def test_a_slowdown_at_a_due_end_does_not_end_the_segment_in_the_past() -> None:
    # Factors that grow when a task leaves (as Muri's s(4) < s(3) do): s(3) = 1.5, s(2) = 4.
    # GPUs (peaks) 4 + 8 + 12 > 16: the three time-share at s(3) from 0, so A's and B's
    # 1-tick segments both end at ceil(1.5) = 2. A's end comes first and A leaves: B and C
    # now run at s(2), and B, whose work was done at 1.5, must still end at 2, not at 1
    # (where its data segment would start on the io that A holds until 2). B's data
    # segment takes 4 ticks at s(2) to 6; C, alone from 6 (12 GPUs of 16), ends its
    # warm-up at 6 + ceil(10 - 2 / 1.5 - 4 / 4) = 14 and its GPU segment at 15.
    problem = Problem.model_validate(
        {
            "nodes": [{"name": "n1", "capacity": {"gpu": 16, "io": 8}}],
            "tasks": [
                task("a", "A", seg("step", 1, io=8, gpu=4)),
                task("b", "B", seg("gpu", 1, gpu=8), seg("data", 1, io=8)),
                task("c", "C", seg("warm", 10, gpu=4), seg("gpu", 1, gpu=12)),
            ],
            "jobs": [{"name": j} for j in "ABC"],
        }
    )
    sched = plan(problem, a=(0, ("n1",)), b=(0, ("n1",)), c=(0, ("n1",)))
    ex = simulate(problem, sched, Disturbances(slowdown=Slowdown((1.0, 4.0, 1.5), "test")))
    assert valid(ex), ex.report.violations
    assert spans(ex) == {"a": (0, 2), "b": (0, 6), "c": (0, 15)}
    assert [s.duration for s in ex.problem.task("b").modes[0].segments] == [2, 4]


def test_a_failure_reruns_exactly_the_lost_block() -> None:
    problem = placed(
        task("b1", "J", seg("gpu", 10, gpu=8)),
        task("b2", "J", seg("gpu", 10, gpu=8)),
        precedences=[{"before": "b1", "after": "b2"}],
    )
    sched = plan(problem, b1=(0, ("n1",)), b2=(10, ("n1",)))
    ex = simulate(problem, sched, Disturbances(failures=(Failure("n1", 15, 5),)))
    # b2 ran [10, 15) and is lost; n1 is back at 20, b2 runs again [20, 30); b1 is kept.
    assert spans(ex) == {"b1": (0, 10), "b2": (20, 30)}
    assert [r.lost for r in ex.runs] == [[], [(10, 15)]]
    assert (ex.lost_task_ticks, ex.lost_gpu_ticks) == (5, 5 * 8)
    lost = ex.problem.task("b2#lost1").modes[0].segments
    assert [(s.duration, s.demand) for s in lost] == [(5, {"n1.gpu": 8})]
    windows = next(r for r in ex.problem.resources if r.name == "n1.gpu").windows
    assert [(w.start, w.end, w.capacity) for w in windows] == [(15, 20, 0)]
    assert valid(ex)
    # the validator checks the outage: the re-run moved into it is rejected
    ex.schedule.starts["b2"] = 16
    assert [v.kind for v in validate(ex.problem, ex.schedule).violations] == ["capacity"]


def test_a_crash_without_downtime_reruns_at_once() -> None:
    ex = simulate(PAIR, PAIR_PLAN, Disturbances(failures=(Failure.parse("n1@5"),)))
    assert spans(ex) == {"a": (5, 25), "b": (5, 25)}
    assert ex.lost_gpu_ticks == 2 * 8 * 5


def test_a_gang_fails_with_any_of_its_nodes() -> None:
    problem = placed(
        task("g", "G", seg("gpu", 10, gpu=8), nodes=2),
        task("s", "S", seg("gpu", 10, gpu=8)),
    )
    sched = plan(problem, g=(0, ("n1", "n2")), s=(0, ("n3",)))
    ex = simulate(problem, sched, Disturbances(failures=(Failure("n2", 4, 2),)))
    # the gang ran 4 ticks on 2 nodes of 8 GPUs, is back when n2 is, at 6
    assert spans(ex) == {"g": (6, 16), "s": (0, 10)}
    assert ex.lost_gpu_ticks == 4 * 16
    assert ex.problem.task("g").modes[0].segments[0].demand == {"n1.gpu": 8, "n2.gpu": 8}
    assert ex.problem.task("g").modes[0].placement == "n1+n2"
    assert valid(ex)


def test_a_placed_cluster_instance() -> None:
    stages = {"data": 0.1, "gpu": 0.2, "sync": 0.05}
    problem = problem_from_data(
        {
            "time_unit": "1s",
            "placement": "node",
            "cluster": {"nodes": [{"name": "n", "count": 2, "gpu": 8, "io": 8, "net": 8}]},
            "jobs": [
                {"name": "x", "gpus": 8, "iterations": 100, "blocks": 2, "stages": stages},
                {"name": "y", "gpus": 16, "iterations": 100, "stages": stages},
            ],
        }
    )
    # x's blocks take 5 + 10 + 3 = 18 s on n1; y takes 10 + 20 + 5 = 35 s on n1 + n2
    sched = plan(
        problem,
        **{"x/block1": (0, ("n1",)), "x/block2": (18, ("n1",)), "y/block1": (36, ("n1", "n2"))},
    )
    assert simulate(problem, sched, MURI).schedule.starts == sched.starts
    ex = simulate(problem, sched, Disturbances(failures=(Failure("n1", 40, 5),)))
    assert spans(ex) == {"x/block1": (0, 18), "x/block2": (18, 36), "y/block1": (45, 80)}
    assert ex.lost_gpu_ticks == 4 * 16
    assert valid(ex)


def test_placement_keys_of_problem_form_files_are_nodes() -> None:
    problem = problem_from_data(
        {
            "resources": [{"name": "n1.gpu", "capacity": 8}, {"name": "n2.gpu", "capacity": 8}],
            "jobs": [{"name": "J", "colocate": True}],
            "tasks": [
                {
                    "name": f"b{k}",
                    "job": "J",
                    "modes": [
                        {
                            "name": node,
                            "placement": node,
                            "segments": [seg("gpu", 10, **{f"{node}.gpu": 8})],
                        }
                        for node in ("n1", "n2")
                    ],
                }
                for k in (1, 2)
            ],
            "precedences": [{"before": "b1", "after": "b2"}],
        }
    )
    sched = Schedule(modes={"b1": "n2", "b2": "n2"}, starts={"b1": 0, "b2": 10})
    ex = simulate(problem, sched, Disturbances(failures=(Failure("n2", 5, 10),)))
    assert spans(ex) == {"b1": (15, 25), "b2": (25, 35)}
    assert ex.runs[0].nodes == ("n2",)
    assert valid(ex)
    with pytest.raises(InputError, match=r"^failure n3@5: no node 'n3' \(nodes: n1, n2\)$"):
        simulate(problem, sched, Disturbances(failures=(Failure("n3", 5),)))


def test_a_pooled_plan_replays_as_one_node() -> None:
    from planner.solvers import solve

    problem = problem_from_data(
        {
            "resources": [{"name": "gpu", "capacity": 8}, {"name": "io", "capacity": 8}],
            "jobs": [{"name": "A"}, {"name": "B"}],
            "tasks": [
                {"name": "a", "job": "A", "modes": [{"segments": PAIR_SEGMENTS[0]}]},
                {"name": "b", "job": "B", "modes": [{"segments": PAIR_SEGMENTS[1]}]},
            ],
        }
    )
    pooled = solve(problem, "sgs").schedule
    assert pooled is not None
    ex = simulate(problem, pooled)
    assert ex.schedule.starts == pooled.starts and ex.makespan == pooled.makespan(problem)
    assert ex.notes == ["pooled plan: no task has a node; interference counts the pool as one node"]
    interleaved = Schedule(modes={"a": "1", "b": "1"}, starts={"a": 0, "b": 0})
    assert simulate(problem, interleaved, MURI).makespan == 28
    with pytest.raises(InputError, match=r"^failure n1@3: the plan is pooled"):
        simulate(problem, interleaved, Disturbances(failures=(Failure("n1", 3),)))


PAIR_SEGMENTS = [
    [seg("data", 10, io=8), seg("gpu", 10, gpu=8)],
    [seg("gpu", 10, gpu=8), seg("data", 10, io=8)],
]


def test_a_capacity_window_delays_a_task_that_could_reach_it() -> None:
    problem = problem_from_data(
        {
            "resources": [
                {"name": "r", "capacity": 1, "windows": [{"start": 5, "end": 10, "capacity": 0}]}
            ],
            "tasks": [{"name": "a", "modes": [{"segments": [seg("run", 5, r=1)]}]}],
        }
    )
    factor = np.random.default_rng(0).uniform(0.5, 1.5, 1)[0]
    assert math.ceil(5 * factor) == 6  # would run into the window: wait until it ends
    ex = simulate(
        problem, Schedule(modes={"a": "1"}, starts={"a": 0}), Disturbances(Noise("uniform", 0.5))
    )
    assert spans(ex) == {"a": (10, 16)}
    assert valid(ex)


DISTURBANCES = [
    Disturbances(),
    MURI,
    Disturbances(Noise("lognormal", 0.3), Slowdown(MURI_FACTORS)),
    Disturbances(Noise("uniform", 0.5), None, (Failure("n2", 7, 4), Failure("n1", 12, 3))),
    Disturbances(Noise("lognormal", 0.3), Slowdown(MURI_FACTORS), (Failure("n3", 20, 5),), True),
]


@pytest.mark.parametrize("dist", DISTURBANCES, ids=range(len(DISTURBANCES)))
def test_every_realized_schedule_is_valid(dist: Disturbances) -> None:
    for seed in range(5):
        ex = simulate(MIXED, MIXED_PLAN, dist, seed)
        assert valid(ex), ex.report.violations
        # no task starts before its plan unless work-conserving
        assert dist.work_conserving or all(r.start >= r.planned_start for r in ex.runs)


def test_the_same_seed_gives_the_same_realized_schedule() -> None:
    dist = DISTURBANCES[4]
    one, two = (simulate(MIXED, MIXED_PLAN, dist, 7) for _ in range(2))
    assert one.to_json() == two.to_json()
    assert one.problem == two.problem
    other = simulate(MIXED, MIXED_PLAN, dist, 8)
    assert other.to_json()["tasks"] != one.to_json()["tasks"]


def test_monte_carlo_in_processes_gives_the_same_runs() -> None:
    dist = DISTURBANCES[2]
    here = monte_carlo(MIXED, MIXED_PLAN, dist, runs=4, seed=3)
    there = monte_carlo(MIXED, MIXED_PLAN, dist, runs=4, seed=3, jobs=2)
    assert here.figures() == there.figures()
    assert list(here.column("seed")) == [3, 4, 5, 6]
    assert list(here.column("makespan")) == [
        simulate(MIXED, MIXED_PLAN, dist, s).makespan for s in range(3, 7)
    ]


def test_distribution() -> None:
    got = distribution([1, 2, 3, 4, 5])
    assert got == {"mean": 3.0, "p5": 1.2, "p50": 3.0, "p95": 4.8, "max": 5.0}


def test_plans_rank_by_realized_makespan() -> None:
    late = Schedule(
        modes=dict(MIXED_PLAN.modes),
        starts={t: s + 5 for t, s in MIXED_PLAN.starts.items()},
        nodes=dict(MIXED_PLAN.nodes),
    )
    ranking = rank_by_realized(MIXED, {"late": late, "plan": MIXED_PLAN}, MURI, runs=2)
    assert [(r.name, r.planned_makespan, r.invalid) for r in ranking] == [
        ("plan", 28, 0),
        ("late", 33, 0),
    ]
    assert ranking[0].makespan["mean"] == simulate(MIXED, MIXED_PLAN, MURI).makespan


def test_the_simulation_option_of_compare() -> None:
    got = parse_simulation("noise=lognormal:0.1, slowdown=none,runs=5,seed=2,fail=n1@3+2")
    assert got == Simulation(
        Disturbances(Noise("lognormal", 0.1), None, (Failure("n1", 3, 2),)), runs=5, seed=2
    )
    assert parse_simulation("runs=3").disturbances.slowdown == Slowdown(MURI_FACTORS)
    with pytest.raises(
        InputError, match=r"^simulation 'runs=0': runs must be a whole number from 1 to 1,000,000$"
    ):
        parse_simulation("runs=0")
    with pytest.raises(InputError, match=r"got 'speed=2'$"):
        parse_simulation("speed=2")


# The command line.


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    instance, schedule = tmp_path / "mixed.json", tmp_path / "plan.json"
    instance.write_text(json.dumps(MIXED.model_dump(exclude_defaults=True)))
    MIXED_PLAN.save(schedule, MIXED)
    return instance, schedule


def test_cli_replays_once(files: tuple[Path, Path], tmp_path: Path) -> None:
    run, chart = tmp_path / "run.json", tmp_path / "run.png"
    args = [*map(str, files), "--fail", "n2@12+3", "-o", str(run), "--gantt", str(chart)]
    result = runner.invoke(app, ["run", *args])
    assert result.exit_code == 0, result.output
    info = lines(result.stdout)
    ex = simulate(MIXED, MIXED_PLAN, Disturbances.parse(slowdown="muri", failures=["n2@12+3"]))
    assert info["makespan"] == f"{ex.makespan} ticks (planned 28)"
    assert info["optimism"] == f"{ex.makespan / 28:.3f} (realized / planned makespan)"
    assert info["disturbances"] == "no noise, slowdown muri, failures n2@12+3, plan starts"
    # c2 started on n2 at 9 with 4 GPUs: 3 ticks lost
    assert info["lost work"] == "12 GPU-ticks, 3 task-ticks (1 lost attempt)"
    assert info["validator"] == "valid (realized run)"
    assert json.loads(run.read_text())["tasks"] == ex.to_json()["tasks"]
    assert chart.stat().st_size > 0


def test_a_task_level_run_prints_seconds_where_ticks_have_a_length(tmp_path: Path) -> None:
    instance, plan = ROOT / "instances" / "interleave.yaml", tmp_path / "plan.json"
    assert runner.invoke(app, ["solve", str(instance), "-s", "sgs", "-o", str(plan)]).exit_code == 0
    ex = simulate(load_instance(instance), load_schedule(plan), Disturbances.parse(slowdown="muri"))
    info = lines(runner.invoke(app, ["run", str(instance), str(plan)]).stdout)
    span, planned = ex.makespan, ex.planned_makespan  # ticks of 1s
    assert (
        info["makespan"]
        == f"{span} s ({span} ticks of 1s); planned {planned} s ({planned} ticks of 1s)"
    )
    result = runner.invoke(app, ["study", str(instance), str(plan), "--noise", "lognormal:0.1",
                                 "--runs", "3"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert any(line.startswith("3 runs (seconds)") for line in result.stdout.splitlines())


def test_cli_monte_carlo(files: tuple[Path, Path], tmp_path: Path) -> None:
    run, hist = tmp_path / "run.json", tmp_path / "h.png"
    args = ["--noise", "lognormal:0.2", "--runs", "4", "--seed", "1", "-o", str(run)]
    result = runner.invoke(app, ["study", *map(str, files), *args, "--histogram", str(hist)])
    assert result.exit_code == 0, result.output
    data = json.loads(run.read_text())["monte_carlo"]
    dist = Disturbances.parse(noise="lognormal:0.2", slowdown="muri")
    makespans = [simulate(MIXED, MIXED_PLAN, dist, s).makespan for s in (1, 2, 3, 4)]
    assert data["per_run"]["makespan"] == makespans
    assert data["per_run"]["seed"] == [1, 2, 3, 4]
    assert data["makespan"] == distribution(makespans)
    out = result.stdout.splitlines()
    assert out[0].endswith("mixed.json is a task graph without training jobs")
    assert out[1] == "The run of seed 1 (the first of 4; their distribution follows)"
    header = out.index(f"{'4 runs (ticks)':<28}" + "".join(f"{c:>12}" for c in COLUMNS))
    assert out[header + 1].split() == ["makespan", *(f"{v:.1f}" for v in data["makespan"].values())]
    assert hist.stat().st_size > 0


COLUMNS = ("mean", "p5", "p50", "p95", "max")

BAD = [
    # unknown noise kind
    (["--noise", "gauss:1"], "noise 'gauss:1': expected lognormal:SIGMA or uniform:A"),
    # a scale that is not a number
    (["--noise", "lognormal:abc"], "noise 'lognormal:abc': 'abc' is not a number"),
    # negative factors
    (
        ["--noise", "uniform:1.5"],
        "noise uniform:1.5: uniform:A needs A < 1 (factors stay positive)",
    ),
    (["--noise", "lognormal:-1"], "noise lognormal:-1: the scale must be a finite number >= 0"),
    # no time
    (["--fail", "n1"], "failure 'n1': expected NODE@TIME[+DOWN], e.g. node3@600+60"),
    (
        ["--fail", "n1@soon"],
        "failure 'n1@soon': TIME: 'soon' is not a time: give whole ticks (600) or a duration "
        "with a unit (90s, 30min, 2h, 1d)",
    ),
    (
        ["--fail", "n1@5+x"],
        "failure 'n1@5+x': DOWN: 'x' is not a time: give whole ticks (600) or a duration with "
        "a unit (90s, 30min, 2h, 1d)",
    ),
    (
        ["--fail", "n1@-5"],
        "failure 'n1@-5': TIME: '-5' is not a time: give whole ticks (600) or a duration with "
        "a unit (90s, 30min, 2h, 1d)",
    ),
    # a node the plan does not have
    (["--fail", "n9@5"], "failure n9@5: no node 'n9' (nodes: n1, n2, n3)"),
    # neither muri, none nor a file
    (["--slowdown", "fast"], "fast: no such slowdown file (use muri, none or a k,factor CSV)"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_cli_bad_disturbance_specs(
    files: tuple[Path, Path], args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(files[0].parent)
    result = runner.invoke(app, ["run", *map(str, files), *args])
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"


def test_cli_bad_slowdown_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    factors = tmp_path / "f.csv"
    factors.write_text("k,factor\ntwo,1.3\n")
    result = runner.invoke(app, ["run", *map(str, files), "--slowdown", str(factors)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {factors}: line 2: expected 'k,factor', got 'two,1.3'\n"


def test_cli_through_a_subprocess(files: tuple[Path, Path]) -> None:
    command = [sys.executable, "-m", "planner", "run", *map(str, files), "--slowdown", "none"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert lines(done.stdout)["makespan"] == "28 ticks (planned 28)"

"""Re-planning: hand-computed replans after failures, frozen tasks, events, online planning."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.disturbances import Disturbances
from planner.errors import InputError
from planner.io.instance import save_instance
from planner.model import Problem
from planner.replay.events import Arrival, Overrun, parse_event
from planner.replay.online import simulate_online
from planner.replay.replan import prepare, replan
from planner.replay.simulate import simulate
from planner.replay.state import state_from_run
from planner.schedule import Schedule
from planner.solvers import solve
from planner.validate import validate

runner = CliRunner()

SOLVERS = ["sgs", "ga", "pso", "cpsat", "portfolio", "exclusive-srtf", "exclusive-fifo"]
LIMITED = {"ga": {"time_limit": 1.0}, "pso": {"time_limit": 1.0}, "portfolio": {"time_limit": 5.0}}


def seg(name: str, duration: int, **demand: int) -> dict[str, Any]:
    return {"name": name, "duration": duration, "demand": demand}


def gpu_task(name: str, job: str, duration: int) -> dict[str, Any]:
    return {
        "name": name,
        "job": job,
        "modes": [{"nodes": 1, "segments": [seg("g", duration, gpu=8)]}],
    }


def two_nodes() -> Problem:
    """Two nodes of 8 GPUs; job A is a1 (4) then a2 (4), B is b1 (6), C is c1 (2).

    Every task takes a whole node; jobs are colocated. Optimal makespan 8: a1, a2 on
    one node over [0, 8), b1 then c1 on the other.
    """
    return Problem.model_validate(
        {
            "nodes": [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")],
            "jobs": [{"name": j, "colocate": True} for j in "ABC"],
            "tasks": [
                gpu_task("a1", "A", 4),
                gpu_task("a2", "A", 4),
                gpu_task("b1", "B", 6),
                gpu_task("c1", "C", 2),
            ],
            "precedences": [{"before": "a1", "after": "a2"}],
        }
    )


def old_plan() -> Schedule:
    return Schedule(
        modes={t: "1" for t in ("a1", "a2", "b1", "c1")},
        starts={"a1": 0, "a2": 4, "b1": 0, "c1": 6},
        nodes={"a1": ("n1",), "a2": ("n1",), "b1": ("n2",), "c1": ("n2",)},
    )


def test_old_plan_is_optimal() -> None:
    problem = two_nodes()
    assert validate(problem, old_plan()).ok
    assert solve(problem, "cpsat").objective == 8


def test_failure_with_downtime_hand_optimum() -> None:
    # At 5, a1 is done, a2 runs on n1 [4, 8) and b1 on n2 [0, 6). n1 fails for 3 ticks:
    # a2 is killed (1 tick lost) and, colocated with a1, restarts on n1 at 8: 12.
    result = replan(two_nodes(), old_plan(), 5, [parse_event("fail:n1+3")], "cpsat")
    assert result.status.value == "optimal"
    assert result.objective == 12
    s = result.schedule
    assert s is not None
    assert s.starts["a2"] == 8 and s.nodes["a2"] == ("n1",)
    assert s.starts["a2#lost1"] == 4 and s.starts["n1#down"] == 5
    f = result.stats["replan"]
    assert (f["finished"], f["running"], f["killed"]) == (1, 1, 1)
    assert (f["lost_task_ticks"], f["lost_gpu_ticks"]) == (1, 8)
    assert (f["moved"], f["shift"]) == (1, 4)


def test_a_killed_task_pays_its_jobs_restart_cost() -> None:
    # As above with job A restarting in 2 ticks: a2 runs again on n1 from 8, restart
    # first (holding its 8 GPUs), then its 4 ticks: 14.
    problem = two_nodes()
    jobs = [j.model_copy(update={"restart": 2}) if j.name == "A" else j for j in problem.jobs]
    problem = problem.model_copy(update={"jobs": jobs})
    result = replan(problem, old_plan(), 5, [parse_event("fail:n1+3")], "cpsat")
    assert (result.status.value, result.objective) == ("optimal", 14)
    s = result.schedule
    assert s is not None and s.starts["a2"] == 8
    built = prepare(problem, old_plan(), 5, [parse_event("fail:n1+3")])
    restart, work = built.instance.task("a2").modes[0].segments
    assert (restart.name, restart.duration, restart.demand, work.duration) == (
        "restart",
        2,
        {"gpu": 8},
        4,
    )
    assert built.figures["restarted"] == 1
    # b1 runs on and c1 has not started: neither pays
    assert built.instance.task("c1").modes[0].segments[0].name == "g"


def test_node_gone_for_good_hand_optimum() -> None:
    # n2 is gone at 5: b1 (5 ticks run, 40 GPU-ticks lost) and c1 must run on n1 after
    # a2 ends at 8, one after the other: 8 + 6 + 2 = 16.
    built = prepare(two_nodes(), old_plan(), 5, [parse_event("fail:n2")])
    result = built.solve("cpsat")
    assert result.objective == 16 and result.status.value == "optimal"
    assert {result.schedule.nodes[t] for t in ("b1", "c1")} == {("n1",)}  # type: ignore[union-attr]
    assert result.stats["replan"]["lost_gpu_ticks"] == 40
    assert [n.type for n in built.instance.nodes] == ["up", "gone"]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("event", ["fail:n1+3", "fail:n2", "overrun:b1:2", "cancel:C"])
def test_frozen_tasks_never_move(solver: str, event: str) -> None:
    built = prepare(two_nodes(), old_plan(), 5, [parse_event(event)])
    result = built.solve(solver, **LIMITED.get(solver, {}))
    s = result.schedule
    assert s is not None
    assert validate(built.instance, s).ok
    assert set(s.starts) == {t.name for t in built.instance.tasks}
    for name, start in built.frozen.items():
        assert s.starts[name] == start
        pinned = built.instance.task(name).modes[0].on
        assert s.nodes.get(name) == (tuple(pinned) if pinned else None)
    assert s.starts["a1"] == 0 and s.nodes["a1"] == ("n1",)


def test_overrun_of_a_running_task() -> None:
    # b1 runs [0, 6); at 5 one tick is left, doubled: it ends at 7; c1 follows: 9.
    result = replan(two_nodes(), old_plan(), 5, [Overrun("b1", 2.0)], "cpsat")
    assert result.objective == 9
    assert result.schedule.starts["c1"] == 7  # type: ignore[union-attr]


def test_stability_keeps_the_old_starts() -> None:
    # One GPU pool; x runs [0, 4), y and z are planned at 4 and 6. A 1-tick job w arrives
    # at 1: every order ends at 9, and with a stability weight only w after z keeps y
    # and z in place.
    pool = {"resources": [{"name": "gpu", "capacity": 1}]}
    task = {"modes": [{"segments": [seg("g", 2, gpu=1)]}]}
    problem = Problem.model_validate(
        {
            **pool,
            "tasks": [
                {"name": "x", "modes": [{"segments": [seg("g", 4, gpu=1)]}]},
                {"name": "y", **task},
                {"name": "z", **task},
            ],
        }
    )
    plan = Schedule(modes=dict.fromkeys("xyz", "1"), starts={"x": 0, "y": 4, "z": 6})
    late = Problem.model_validate(
        {
            **pool,
            "tasks": [{"name": "w", "release": 1, "modes": [{"segments": [seg("g", 1, gpu=1)]}]}],
        }
    )
    result = replan(problem, plan, 1, [Arrival(late, "w.json")], "cpsat", stability=1.0)
    assert result.objective == 9
    assert result.stats["replan"]["shift"] == 0
    assert result.schedule.starts["w"] == 8  # type: ignore[union-attr]


def test_arrival_before_t_is_refused() -> None:
    late = Problem.model_validate(
        {
            "nodes": [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")],
            "jobs": [{"name": "D"}],
            "tasks": [{**gpu_task("d1", "D", 2), "release": 3}],
        }
    )
    with pytest.raises(InputError) as err:
        prepare(two_nodes(), old_plan(), 5, [Arrival(late, "late.json")])
    assert str(err.value) == (
        "event arrive:late.json: job 'D' arrives at tick 3, before the re-planning time 5"
    )


def test_arrival_is_planned() -> None:
    new = Problem.model_validate(
        {
            "nodes": [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")],
            "jobs": [{"name": "D"}],
            "tasks": [{**gpu_task("d1", "D", 2), "release": 5}],
        }
    )
    # n2 is free from 8 (c1 ends there): d1 at 8, makespan 10
    result = replan(two_nodes(), old_plan(), 5, [Arrival(new, "d.json")], "cpsat")
    assert result.objective == 10


def test_state_from_a_realized_run_is_the_plan_undisturbed() -> None:
    problem = two_nodes()
    run = simulate(problem, old_plan()).to_json()
    state = state_from_run(problem, json.loads(json.dumps(run)), 5)
    a = prepare(problem, old_plan(), 5, [parse_event("fail:n1+3")], state)
    b = prepare(problem, old_plan(), 5, [parse_event("fail:n1+3")])
    assert a.frozen == b.frozen
    assert a.instance.tasks == b.instance.tasks
    assert a.solve("cpsat").objective == 12


def test_online_without_arrivals_is_the_offline_plan() -> None:
    problem = two_nodes()
    offline = solve(problem, "sgs").schedule
    assert offline is not None
    run = simulate_online(problem, "sgs")
    assert run.events == [0]
    assert run.execution.report.ok
    assert run.execution.schedule.starts == offline.starts
    assert run.makespan == offline.makespan(problem)


def test_online_arrivals_and_baselines() -> None:
    data = two_nodes().model_dump(mode="json")
    data["tasks"][2]["release"] = 3  # b1 arrives at 3, c1 at 9
    data["tasks"][3]["release"] = 9
    problem = Problem.model_validate(data)
    for solver in ("sgs", "exclusive-srtf", "exclusive-fifo"):
        run = simulate_online(problem, solver)
        assert run.events == [0, 3, 9]
        assert run.execution.report.ok
        # hand-computed: a1, a2 on one node [0, 8), b1 [3, 9) and c1 [9, 11) on the other
        assert run.makespan == 11
        assert run.mean_jct == pytest.approx((8 + 6 + 2) / 3)
        assert run.mean_queueing == 0


def muri_job(name: str, release: int, data: int, gpu: int, sync: int) -> dict[str, Any]:
    """A one-block job of the Muri import: data (io), gpu, sync (net) on one whole node."""
    segments = [seg("data", data, io=8), seg("gpu", gpu, gpu=8), seg("sync", sync, net=8)]
    return {
        "name": name,
        "job": name,
        "release": release,
        "modes": [{"nodes": 1, "segments": segments}],
    }


MURI_NODE = [{"name": "n1", "capacity": {"gpu": 8, "io": 8, "net": 8}}]


def test_running_rests_that_overlap_after_a_slowdown_wait() -> None:
    # One node; A (data 2, gpu 10, sync 4) runs at 0 and B (data 10, gpu 2, sync 4) at 4,
    # as the serial SGS plans them. Interleaved from 4 under Muri's slowdown (1.33 / 1.015
    # for two), A's gpu ends at 15 and B's data at 18. At 14 both have overrun their
    # planned segment: A has its sync left, [14, 18); B its gpu, [14, 16), then its sync,
    # which must wait for A's: [18, 22). C (1, 1, 1) arrives at 14: its gpu after 16, its
    # sync after 22, so C starts at 20: makespan 23.
    problem = Problem.model_validate(
        {
            "nodes": MURI_NODE,
            "jobs": [{"name": "A"}, {"name": "B"}],
            "tasks": [muri_job("A", 0, 2, 10, 4), muri_job("B", 0, 10, 2, 4)],
        }
    )
    plan = solve(problem, "sgs").schedule
    assert plan is not None and plan.starts == {"A": 0, "B": 4}
    run = simulate(problem, plan, Disturbances.parse(slowdown="muri"))
    state = state_from_run(problem, run.to_json(), 14)
    late = Problem.model_validate(
        {"nodes": MURI_NODE, "jobs": [{"name": "C"}], "tasks": [muri_job("C", 14, 1, 1, 1)]}
    )
    built = prepare(problem, plan, 14, [Arrival(late, "c.json")], state)
    b = built.instance.task("B")
    assert [(s.name, s.duration) for s in b.modes[0].segments] == [
        ("data", 10),
        ("data", 0),
        ("gpu", 2),
        ("wait", 2),
        ("sync", 4),
    ]
    assert (b.release, b.deadline) == (4, 22)
    assert built.instance.task("A").deadline == 18
    result = built.solve("sgs")
    assert result.schedule is not None and result.valid
    assert result.schedule.starts["C"] == 20 and result.objective == 23


def test_online_under_muri_slowdown_on_one_node() -> None:
    # The jobs above, B and C arriving at 0 and 14: the re-plan at 14 has a valid frozen part.
    problem = Problem.model_validate(
        {
            "nodes": MURI_NODE,
            "jobs": [{"name": j} for j in "ABC"],
            "tasks": [
                muri_job("A", 0, 2, 10, 4),
                muri_job("B", 0, 10, 2, 4),
                muri_job("C", 14, 1, 1, 1),
            ],
        }
    )
    dist = Disturbances.parse(slowdown="muri")
    for solver in ("sgs", "exclusive-srtf", "exclusive-fifo"):
        run = simulate_online(problem, solver, "arrival", dist)
        assert run.events == [0, 14]
        assert run.execution.report.ok


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    inst, plan = tmp_path / "inst.json", tmp_path / "plan.json"
    save_instance(two_nodes(), inst)
    old_plan().save(plan, two_nodes())
    return inst, plan


def test_cli_replan_writes_a_valid_complete_schedule(files: tuple[Path, Path]) -> None:
    inst, plan = files
    out, again = inst.parent / "new.json", inst.parent / "replanned.json"
    args = ["replan", str(inst), str(plan), "--at", "5", "--event", "fail:n1+3"]
    result = runner.invoke(
        app, [*args, "--solver", "cpsat", "-o", str(out), "--instance-out", str(again)]
    )
    assert result.exit_code == 0, result.output
    assert "makespan       12 (old plan 8)" in result.output
    assert "total shift    4 ticks" in result.output
    check = runner.invoke(app, ["validate", str(again), str(out)])
    assert check.exit_code == 0, check.output


@pytest.mark.parametrize(
    ("event", "message"),
    [
        # not an event kind
        (
            "boom",
            "event 'boom': expected fail:NODE[+DOWN], overrun:TASK:FACTOR, "
            "arrive:FILE or cancel:JOB",
        ),
        # DOWN not a whole number
        (
            "fail:n1+x",
            "event 'fail:n1+x': DOWN: 'x' is not a time: give whole ticks (600) or a duration "
            "with a unit (90s, 30min, 2h, 1d)",
        ),
        # a node the instance lacks
        ("fail:n9", "event fail:n9: no node 'n9' (nodes: n1, n2)"),
        # overrun without a factor
        ("overrun:a1", "event 'overrun:a1': expected overrun:TASK:FACTOR"),
        # a factor that is not positive
        ("overrun:b1:0", "event 'overrun:b1:0': FACTOR must be a number > 0 and <= 100"),
        # a task that finished before T
        (
            "overrun:a1:2",
            "event overrun:a1:2: task 'a1' finished at tick 4, by the re-planning time 5",
        ),
        # an unknown task
        ("overrun:zz:2", "event overrun:zz:2: no task 'zz' in the instance"),
        # an unknown job
        ("cancel:Z", "event cancel:Z: no job 'Z' in the instance"),
        # an arrival file that does not exist
        ("arrive:nowhere.json", "nowhere.json: no such file"),
    ],
)
def test_cli_bad_events(files: tuple[Path, Path], event: str, message: str) -> None:
    inst, plan = files
    result = runner.invoke(app, ["replan", str(inst), str(plan), "--at", "5", "--event", event])
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"


def test_cli_arrival_before_t(files: tuple[Path, Path]) -> None:
    inst, plan = files
    late = inst.parent / "late.json"
    late.write_text(
        json.dumps(
            {
                "nodes": [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")],
                "jobs": [{"name": "D"}],
                "tasks": [{**gpu_task("d1", "D", 2), "release": 3}],
            }
        )
    )
    result = runner.invoke(
        app, ["replan", str(inst), str(plan), "--at", "5", "--event", f"arrive:{late}"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: event arrive:{late}: job 'D' arrives at tick 3, before the re-planning time 5\n"
    )


def test_cli_online_no_schedule(files: tuple[Path, Path]) -> None:
    inst, plan = files
    result = runner.invoke(app, ["online", str(inst), str(plan)])
    assert result.exit_code == 2
    assert result.stderr == f"error: Got unexpected extra argument(s) ({plan})\n"
    result = runner.invoke(app, ["online", str(inst), "--baseline", "exclusive-srtf"])
    assert result.exit_code == 0, result.output
    assert "validator: valid, valid (realized runs)" in result.output


def three_arrivals() -> Problem:
    """One 8-GPU node: x runs over [0, 5); A (10 ticks) and B (2) arrive at 1."""
    return Problem.model_validate(
        {
            "nodes": [{"name": "n1", "capacity": {"gpu": 8}}],
            "jobs": [{"name": j} for j in ("X", "A", "B")],
            "tasks": [
                gpu_task("x", "X", 5),
                {**gpu_task("a", "A", 10), "release": 1},
                {**gpu_task("b", "B", 2), "release": 1},
            ],
        }
    )


def test_online_solver_options_reach_every_replan(tmp_path: Path) -> None:
    # shortest first: B [5, 7), A [7, 17): JCTs 5, 6, 16; the LFT rule ties and takes A
    # first: A [5, 15), B [15, 17): 5, 14, 16
    problem = three_arrivals()
    assert simulate_online(problem, "sgs", rule="spt").mean_jct == pytest.approx(9)
    assert simulate_online(problem, "sgs").mean_jct == pytest.approx(35 / 3)
    inst = tmp_path / "three.json"
    inst.write_text(problem.model_dump_json())
    args = ["online", str(inst), "--slowdown", "none"]
    result = runner.invoke(app, [*args, "--option", "rule=spt"])
    assert result.exit_code == 0, result.output
    assert re.search(r"\bsgs\s+3\s+2\s+9\.0\s", result.stdout), result.output
    result = runner.invoke(app, [*args, "--option", "rule"])
    assert result.exit_code == 2
    assert result.stderr == "error: --option 'rule': expected KEY=VALUE, e.g. rule=spt\n"
    result = runner.invoke(app, [*args, "--option", "rules=spt"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: solver 'sgs' has no option 'rules'")

"""The fluid training block: one segment of per-GPU shares at speeds 1 to 1/4, the
compiler's default; ``interleave: phases`` keeps the stages back to back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner import solve
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.loop import run_policy
from planner.executor.model.jobs import jobs_from_instance, plan_of
from planner.interleave import Interleave, Stages, fluid_rates, fluid_stretch
from planner.io.instance import problem_from_data
from planner.metrics import schedule_metrics
from planner.model import Problem
from planner.schedule import Schedule
from planner.validate import validate

DATA_HEAVY = {"data": 0.6, "gpu": 0.4}
GPU_HEAVY = {"data": 0.4, "gpu": 0.6}


def pairs(interleave: str = "fluid", **extra: Any) -> Problem:
    """Two nodes of one GPU; two data-heavy and two GPU-heavy jobs of 100 s alone.

    Only a data-heavy job beside a GPU-heavy one on each node fills both the data slot
    and the GPU (0.6 + 0.4 of each): all four finish at 100 s. Two alike jobs on a node
    ask 1.2 of one resource and cannot both run at full speed.
    """
    jobs = [
        {"name": name, "gpus": 1, "iterations": 100, "stages": stages}
        for name, stages in (
            ("a1", DATA_HEAVY),
            ("a2", DATA_HEAVY),
            ("b1", GPU_HEAVY),
            ("b2", GPU_HEAVY),
        )
    ]
    return problem_from_data(
        {
            "time_unit": "1s",
            "placement": "node",
            "interleave": interleave,
            "cluster": {"nodes": [{"name": "n", "count": 2, "gpu": 1, "io": 1, "net": 1}]},
            "jobs": jobs,
            **extra,
        }
    )


def test_a_fluid_block_is_one_segment_of_shares_at_four_speeds() -> None:
    p = pairs()
    modes = p.task("a1/block1").modes
    assert [m.name for m in modes] == ["base", "base@1/2", "base@1/3", "base@1/4"]
    assert [(m.nodes, [(s.name, s.duration, s.demand) for s in m.segments]) for m in modes] == [
        (1, [("train", 100, {"gpu": 400, "io": 600, "resident": 1})]),
        (1, [("train", 200, {"gpu": 200, "io": 300, "resident": 1})]),
        (1, [("train", 300, {"gpu": 134, "io": 200, "resident": 1})]),
        (1, [("train", 400, {"gpu": 100, "io": 150, "resident": 1})]),
    ]
    # thousandths of a GPU, a data slot and a network slot; four jobs per GPU at most
    assert [(n.name, n.capacity) for n in p.nodes] == [
        ("n1", {"gpu": 1000, "io": 1000, "net": 1000, "resident": 4}),
        ("n2", {"gpu": 1000, "io": 1000, "net": 1000, "resident": 4}),
    ]
    assert p.units == {"gpu": 1000, "io": 1000, "net": 1000}


def test_data_slots_and_max_colocated_set_the_capacities() -> None:
    p = pairs(data_slots=2, max_colocated=2)
    assert p.nodes[0].capacity == {"gpu": 1000, "io": 2000, "net": 1000, "resident": 2}
    assert [m.name for m in p.task("a1/block1").modes] == ["base", "base@1/2"]


def test_max_colocated_above_four_is_refused() -> None:
    with pytest.raises(InputError, match="max_colocated: Input should be less than or equal to 4"):
        pairs(max_colocated=5)


@pytest.mark.parametrize("solver", ["cpsat", "milp", "portfolio"])
def test_only_pairing_a_data_heavy_job_with_a_gpu_heavy_one_reaches_the_optimum(
    solver: str,
) -> None:
    p = pairs()
    r = solve(p, solver, time_limit=30)
    assert (r.status.value, r.objective) == ("optimal", 100)
    assert validate(p, r.schedule).ok
    on = {job: r.schedule.nodes[f"{job}/block1"] for job in ("a1", "a2", "b1", "b2")}
    assert on["a1"] != on["a2"] and on["b1"] != on["b2"]


def test_phases_cannot_interleave_within_an_iteration() -> None:
    # the same jobs as phases: a data stage waits for the other's, 140 s at best
    p = pairs("phases")
    r = solve(p, "cpsat", time_limit=30)
    assert (r.status.value, r.objective) == ("optimal", 140)
    assert [s.name for s in p.task("a1/block1").modes[0].segments] == ["data", "gpu", "sync"]


def test_an_exclusive_baseline_holds_whole_gpus() -> None:
    p = pairs()
    r = solve(p, "exclusive-fifo")
    assert r.objective == 200  # two jobs a GPU, one after the other
    assert validate(p, r.schedule).ok


def test_energy_counts_shares_in_whole_gpus() -> None:
    # one data-heavy job alone for 100 s: its GPU computes 0.4 of the time (300 W busy,
    # 60 W idle), its data slot loads 0.6 of it (15 W and 5 W), its network slot rests (8 W)
    p = problem_from_data(
        {
            "time_unit": "1s",
            "cluster": {"nodes": [{"name": "n", "gpu": 1, "io": 1, "net": 1}]},
            "jobs": [{"name": "a", "gpus": 1, "iterations": 100, "stages": DATA_HEAVY}],
        }
    )
    schedule = Schedule(modes={"a/block1": "base"}, starts={"a/block1": 0})
    assert validate(p, schedule).ok
    joules = (300 * 0.4 + 60 * 0.6 + 15 * 0.6 + 5 * 0.4 + 8) * 100
    assert schedule_metrics(p, schedule).energy_kwh == pytest.approx(joules / 3.6e6)


def test_units_must_name_a_resource() -> None:
    data = {
        "resources": [{"name": "gpu", "capacity": 1000}],
        "units": {"gpus": 1000},
        "tasks": [{"name": "t", "modes": [{"segments": [{"duration": 1}]}]}],
    }
    with pytest.raises(InputError, match=r"units\.gpus: no resource or node kind 'gpus'"):
        problem_from_data(data)


def test_shares_follow_the_weights_of_a_plan() -> None:
    a = Stages(0.0, 0.8, 0.2)
    # alike, the two slow alike: 1.6 of the GPU asked
    assert fluid_rates([a, a], [1.0, 1.0]) == pytest.approx([1 / 1.6, 1 / 1.6])
    assert fluid_rates([a, a], [1.0, 1.0]) == pytest.approx([1 / fluid_stretch([a, a])] * 2)
    # weighted 1 and 1/4: 0.8 + 0.2 of the GPU, and the network 0.2 + 0.05
    assert fluid_rates([a, a], [1.0, 0.25]) == pytest.approx([1.0, 0.25])
    # a member alone runs at full speed whatever its weight
    assert fluid_rates([a], [0.25]) == (1.0,)
    # two data slots: the data-heavy pair fits
    d = Stages(0.7, 0.3, 0.0)
    assert fluid_rates([d, d], [1.0, 1.0], data_slots=2) == (1.0, 1.0)


def test_the_executor_divides_a_gpu_as_the_plan_does(tmp_path: Path) -> None:
    # two GPU-heavy jobs of 100 s on one GPU: the plan runs a at full speed and b at a
    # quarter beside it (0.8 + 0.2 of the GPU); executed, a ends at 100 s as planned and
    # b, a quarter done by then, runs alone for the other 75 s
    stages = {"data": 0.0, "gpu": 0.8, "sync": 0.2}
    data = {
        "time_unit": "1s",
        "placement": "node",
        "cluster": {"nodes": [{"name": "n", "gpu": 1, "io": 1, "net": 1}]},
        "jobs": [{"name": j, "gpus": 1, "iterations": 100, "stages": stages} for j in "ab"],
    }
    p = problem_from_data(data)
    plan = Schedule(
        modes={"a/block1": "base", "b/block1": "base@1/4"},
        starts={"a/block1": 0, "b/block1": 0},
        nodes={"a/block1": ("n",), "b/block1": ("n",)},
    )
    assert validate(p, plan).ok
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(data))
    workload = jobs_from_instance(path)
    jobs, placed = plan_of(p, plan, workload.jobs)
    assert [j.share for j in jobs] == [1.0, 0.25]
    run = run_policy(
        jobs, "plan", 1, 1, Interleave("fluid", factors=None), restart=False, plan=placed
    )
    assert run.finish == {"a": pytest.approx(100.0), "b": pytest.approx(175.0)}
    assert audit(run, jobs, 1) == []


def two_on_one_gpu() -> dict[str, Any]:
    """One GPU; a, 100 s of GPU work alone in two blocks, and b, 50 s in one."""
    gpu_only = {"data": 0.0, "gpu": 1.0, "sync": 0.0}
    return {
        "time_unit": "1s",
        "placement": "node",
        "cluster": {"nodes": [{"name": "n", "gpu": 1}]},
        "jobs": [
            {"name": "a", "gpus": 1, "iterations": 100, "blocks": 2, "stages": gpu_only},
            {"name": "b", "gpus": 1, "iterations": 50, "stages": gpu_only},
        ],
    }


def test_a_job_pauses_where_its_plan_leaves_a_gap(tmp_path: Path) -> None:
    # one GPU: a's first block (50 s), then b (50 s), then a's second block: executed as
    # written, a pauses at 50 s and resumes at 100 s; run back to back it would share
    # the GPU with b from 50 s and both would slow
    data = two_on_one_gpu()
    p = problem_from_data(data)
    tasks = {"a/block1": 0, "b/block1": 50, "a/block2": 100}
    plan = Schedule(
        modes=dict.fromkeys(tasks, "base"),
        starts=tasks,
        nodes=dict.fromkeys(tasks, ("n",)),
    )
    assert validate(p, plan).ok
    path = tmp_path / "gap.json"
    path.write_text(json.dumps(data))
    workload = jobs_from_instance(path)
    jobs, placed = plan_of(p, plan, workload.jobs)
    assert jobs[0].holds == ((50.0, 100.0),)
    run = run_policy(
        jobs, "plan", 1, 1, Interleave("fluid", factors=None), restart=False, plan=placed
    )
    assert run.finish == {"a": pytest.approx(150.0), "b": pytest.approx(100.0)}
    assert audit(run, jobs, 1) == []
    rows = [(r["job"], r["start"], r["end"]) for r in run.residences()]
    assert rows == [("a", 0.0, 50.0), ("b", 50.0, 100.0), ("a", 100.0, 150.0)]
    # work-conserving: no pauses, the plan gives the order only
    jobs, placed = plan_of(p, plan, workload.jobs, work_conserving=True)
    assert jobs[0].holds == ()


def test_a_job_takes_the_speed_of_each_block_of_its_plan(tmp_path: Path) -> None:
    # one GPU: a's first block at half speed beside b at half speed (0 to 100 s), then
    # a's second block at full speed alone (100 to 150 s). Weighted by its mean speed
    # (2/3) a would take more of the GPU than planned and b would end late; weighted by
    # each block's speed both end their half-speed blocks at 100 s, as planned.
    data = two_on_one_gpu()
    p = problem_from_data(data)
    plan = Schedule(
        modes={"a/block1": "base@1/2", "b/block1": "base@1/2", "a/block2": "base"},
        starts={"a/block1": 0, "b/block1": 0, "a/block2": 100},
        nodes={"a/block1": ("n",), "b/block1": ("n",), "a/block2": ("n",)},
    )
    assert validate(p, plan).ok
    path = tmp_path / "speeds.json"
    path.write_text(json.dumps(data))
    jobs, placed = plan_of(p, plan, jobs_from_instance(path).jobs)
    assert (jobs[0].share, jobs[0].reweights) == (0.5, ((50.0, 1.0),))
    assert (jobs[0].share_at(100.0), jobs[0].share_at(50.0), jobs[0].share_at(10.0)) == (
        0.5,
        1.0,
        1.0,
    )
    for work_conserving in (False, True):
        # work-conserving, a would not pause at 87.5 s but go on beside b at 2/3
        jobs, placed = plan_of(p, plan, jobs_from_instance(path).jobs, work_conserving)
        run = run_policy(
            jobs, "plan", 1, 1, Interleave("fluid", factors=None), restart=False, plan=placed
        )
        assert run.finish == {"a": pytest.approx(150.0), "b": pytest.approx(100.0)}
        assert audit(run, jobs, 1) == []

"""``placement: gpu``: every GPU a node of the problem, so that a plan's shares fit on
each GPU, as a co-locating runtime runs them, and its plans run as planned."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import solve
from planner.app.cli import app
from planner.app.gantt import save_gantt
from planner.app.gantt_layout import chart_layout
from planner.dl.workloads import import_muri
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.loop import run_policy
from planner.executor.model.jobs import jobs_from_instance, plan_of
from planner.executor.runs import Setting, dispatch_of
from planner.interleave import Interleave
from planner.io.instance import load_instance, problem_from_data
from planner.schedule import Schedule, load_schedule
from planner.validate import validate

TRACE = Path(__file__).parent.parent / "instances" / "muri_trace3_40.csv"
X = {"data": 0.4, "gpu": 0.6, "sync": 0.0}
Y = {"data": 0.8, "gpu": 0.2, "sync": 0.0}


def quartet(placement: str) -> dict[str, Any]:
    """One machine of two GPUs; three jobs of 0.6 GPU and 0.4 data slot, one of 0.2 GPU
    and 0.8 data slot, 100 s alone each.

    Summed over the machine the four fit at full speed (2.0 of each), but no two of them
    fit on one GPU at full speed, and each GPU must hold two: on single GPUs the best
    plan runs two after two, 200 s.
    """
    jobs = [
        {"name": name, "gpus": 1, "iterations": 100, "stages": stages}
        for name, stages in (("x1", X), ("x2", X), ("x3", X), ("y", Y))
    ]
    return {
        "time_unit": "1s",
        "placement": placement,
        "cluster": {"nodes": [{"name": "n", "gpu": 2, "io": 2, "net": 2}]},
        "jobs": jobs,
    }


def executed(data: dict[str, Any], schedule: Schedule, tmp_path: Path) -> dict[str, float]:
    """The finish of every job when the plan runs job by job under ``fluid``."""
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(data))
    w = jobs_from_instance(path)
    jobs, placed = plan_of(problem_from_data(data), schedule, w.jobs)
    nodes, per_node = w.nodes or 1, w.gpus_per_node or 1
    run = run_policy(
        jobs, "plan", nodes, per_node, Interleave("fluid", factors=None), restart=False, plan=placed
    )
    assert audit(run, jobs, nodes * per_node) == []
    return run.finish


def test_every_gpu_is_a_node_with_its_share_of_the_machine() -> None:
    data = quartet("gpu")
    data["cluster"]["nodes"] = [
        {"name": "n", "count": 2, "gpu": 2, "cpu": 9, "mem": 64, "io": 2, "net": 2}
    ]
    data["jobs"].append({"name": "wide", "gpus": 3, "iterations": 10, "stages": X})
    p = problem_from_data(data)
    assert [(n.name, n.host) for n in p.nodes] == [
        ("n1/gpu0", "n1"),
        ("n1/gpu1", "n1"),
        ("n2/gpu0", "n2"),
        ("n2/gpu1", "n2"),
    ]
    # shares in thousandths; 9 cores over 2 GPUs rounded down; memory halved
    assert p.nodes[0].capacity == {
        "gpu": 1000,
        "cpu": 4500,
        "mem": 32,
        "io": 1000,
        "net": 1000,
        "resident": 4,
    }
    # a job of 3 GPUs runs on 3 of them, each asking for one GPU's share
    mode = p.task("wide/block1").modes[0]
    assert mode.nodes == 3
    assert mode.segments[0].demand == {"gpu": 600, "io": 400, "resident": 1}


def test_a_job_larger_than_the_cluster_is_refused() -> None:
    data = quartet("gpu")
    data["jobs"][0]["gpus"] = 3
    with pytest.raises(InputError, match=r"^jobs\[0\].gpus: job 'x1' needs 3 GPUs; the cluster"):
        problem_from_data(data)


def test_a_plan_on_machines_promises_what_no_gpu_keeps(tmp_path: Path) -> None:
    data = quartet("node")
    plan = solve(problem_from_data(data), "cpsat", time_limit=20)
    assert plan.status == "optimal"
    assert plan.schedule.makespan(problem_from_data(data)) == 100
    finish = executed(data, plan.schedule, tmp_path)
    assert max(finish.values()) > 110


def test_a_plan_on_single_gpus_runs_as_planned(tmp_path: Path) -> None:
    data = quartet("gpu")
    p = problem_from_data(data)
    plan = solve(p, "cpsat", time_limit=20)
    assert plan.status == "optimal"
    assert plan.schedule.makespan(p) == 200
    assert validate(p, plan.schedule).ok
    finish = executed(data, plan.schedule, tmp_path)
    # no job ends later than planned (one that shares a GPU with a slower job may end
    # sooner: it takes what the other leaves), and the run ends when the plan does
    planned = {t.job: plan.schedule.finish(p, t.name) for t in p.tasks}
    assert all(finish[j] <= end + 1e-9 for j, end in planned.items())
    assert max(finish.values()) == pytest.approx(200.0)


def test_the_plan_names_the_gpus_the_executor_takes(tmp_path: Path) -> None:
    data = quartet("gpu")
    data["cluster"]["nodes"] = [{"name": "n", "count": 2, "gpu": 2, "io": 2, "net": 2}]
    data["jobs"] = [{"name": "pair", "gpus": 2, "iterations": 100, "stages": X}]
    p = problem_from_data(data)
    plan = Schedule(
        modes={"pair/block1": "base"},
        starts={"pair/block1": 0},
        nodes={"pair/block1": ("n1/gpu1", "n2/gpu0")},
    )
    assert validate(p, plan).ok
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(data))
    workload = jobs_from_instance(path)
    jobs, placed = plan_of(p, plan, workload.jobs)
    assert placed == {"pair": (0, 1)}
    assert jobs[0].on == ((0, (1,)), (1, (0,)))
    run = run_policy(
        jobs, "plan", 2, 2, Interleave("fluid", factors=None), restart=False, plan=placed
    )
    assert [r["gpus"] for r in run.residences(["n1", "n2"])] == ["n1:1+n2:0"]
    assert run.finish == {"pair": pytest.approx(100.0)}
    # under Muri's model a job gets GPU sets of machines: those holding most of its GPUs
    run = run_policy(
        jobs, "plan", 2, 2, Interleave("muri", factors=None), restart=False, plan=placed
    )
    assert run.finish == {"pair": pytest.approx(100.0)}


@pytest.mark.parametrize("blocks", [1, 4])
def test_plans_of_a_trace_on_single_gpus_run_as_planned(blocks: int, tmp_path: Path) -> None:
    # 40 jobs of Muri's trace3' on 8 x 8 GPUs, in minutes: every job of the plan ends by
    # its planned end (up to the rounding of its shares to thousandths), and the run
    # ends when the plan does
    data = import_muri(TRACE, blocks=blocks, placement="gpu")
    p = problem_from_data(data)
    plan = solve(p, "sgs", rule="lpt", chains=True).schedule
    finish = executed(data, plan, tmp_path)
    planned: dict[str, float] = {}
    for t in p.tasks:
        planned[t.job] = max(planned.get(t.job, 0.0), 60.0 * plan.finish(p, t.name))
    late = {j: finish[j] - end for j, end in planned.items() if finish[j] > end * 1.001}
    assert late == {}
    assert max(finish.values()) == pytest.approx(60.0 * plan.makespan(p), rel=1e-3)


def test_a_chart_by_node_has_a_row_per_gpu_idle_ones_too(tmp_path: Path) -> None:
    data = quartet("gpu")
    data["jobs"] = data["jobs"][:1]
    p = problem_from_data(data)
    plan = solve(p, "sgs").schedule
    layout = chart_layout(p, plan, "node")
    assert layout.rows == ["n/gpu0", "n/gpu1"]
    assert {b.row for b in layout.bars} == {0}
    save_gantt(p, plan, tmp_path / "gpus.png", by="node")
    assert (tmp_path / "gpus.png").read_bytes().startswith(b"\x89PNG")


def test_solve_prints_the_plan_on_single_gpus_executed_as_planned(tmp_path: Path) -> None:
    out = tmp_path / "gpus.json"
    runner = CliRunner()
    args = ["import", "muri", str(TRACE), "--placement", "gpu", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    plan = tmp_path / "plan.json"
    solve = ["solve", str(out), "-s", "sgs", "--rule", "lpt", "--static", "-o", str(plan)]
    result = runner.invoke(app, solve)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("executed"))
    executed, planned = (float(v.replace(",", "")) for v in re.findall(r"([\d,]+) s", line))
    assert "Muri's slowdown factors, restart overheads" in line
    assert executed > planned  # the default model slows groups down; the plan's does not
    # in the model it was planned in (fluid, no slowdown, no restart), it runs as planned
    problem = load_instance(out)
    setting = Setting(slowdown="none", restart=False)
    dispatch = dispatch_of(jobs_from_instance(out), setting, plan=(problem, load_schedule(plan)))
    assert planned - 60 <= dispatch.run().makespan <= planned
    assert json.loads(out.read_text())["placement"] == "gpu"

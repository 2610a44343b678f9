"""A power cap in the cluster form: a resource every solver respects."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from planner.dl.cluster import compile_cluster
from planner.dl.specs import ClusterInstance
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.energy import run_energy
from planner.executor.loop import run_policy
from planner.executor.model.grouping import mix_bound
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance
from planner.interleave import Interleave, Stages
from planner.io.instance import load_instance, problem_from_data
from planner.metrics import power_profile, schedule_metrics
from planner.model import validated
from planner.schedule import Schedule
from planner.solvers import solve
from planner.validate import validate
from tests.conftest import lines

TWO_JOBS = {
    "time_unit": "1s",
    "cluster": {"nodes": [{"name": "node", "gpu": 2, "cpu": 8, "io": 2, "net": 2}]},
    "jobs": [
        {"name": name, "gpus": 1, "iterations": 100, "stages": {"data": 0, "gpu": 1, "sync": 0}}
        for name in ("a", "b")
    ],
}


def _makespan(power: dict[str, object], placement: str = "pooled") -> int:
    inst = validated(ClusterInstance, {**TWO_JOBS, "power": power, "placement": placement})
    problem = compile_cluster(inst)
    result = solve(problem, "cpsat", time_limit=10)
    assert result.status.value == "optimal"
    assert validate(problem, result.schedule).ok
    return int(result.objective)


@pytest.mark.parametrize("placement", ["pooled", "node"])
def test_only_delaying_a_job_keeps_the_plan_under_the_cap(placement: str) -> None:
    # two 1-GPU jobs of 100 s of pure compute: both GPUs idle draw 120 W; computing
    # adds 240 W per GPU, so a 400 W cap lets one compute at a time, 700 W both
    assert _makespan({"cap": 400}, placement) == 200
    assert _makespan({"cap": 700}, placement) == 100
    assert _makespan({}, placement) == 100


def test_a_window_of_a_lower_cap_delays_one_job_through_it() -> None:
    # 400 W over [0, 50) s, 700 W after: one job computes from 0, the other from 50
    power = {"cap": 700, "windows": [{"start": 0, "end": 50, "cap": 400}]}
    assert _makespan(power) == 150


@pytest.mark.parametrize(
    ("power", "message"),
    [
        ({"cap": 100}, "power.cap: 100 W is below the idle draw of the cluster's GPUs, 120 W"),
        (
            {"cap": 700, "windows": [{"start": 0, "end": 5, "cap": 50}]},
            "power.windows[0].cap: 50 W is below the idle draw of the cluster's GPUs, 120 W",
        ),
        (
            {"windows": [{"start": 0, "end": 5, "cap": 500}]},
            "power.windows: a window changes the cap; give 'cap'",
        ),
        (
            {"gpu_busy": 50, "gpu_idle": 60, "cap": 500},
            "power.gpu_busy: 50 W is below gpu_idle, 60 W",
        ),
        ({"gpu_busy": 50, "cap": 500}, "power: GPU type 'v100': 50 W busy is below 60 W idle"),
        (
            {"gpus": {"v100": {"busy": 50, "idle": 60}}},
            "power.gpus.v100.busy: 50 W is below idle, 60 W",
        ),
        (
            {"switch_off": True, "cap": 500},
            "power.switch_off: a cap counts every GPU's idle draw; drop one of them",
        ),
        (
            {"cap": 500, "windows": [{"start": 9, "end": 5, "cap": 500}]},
            "power.windows[0].end: 5 s is not after the start, 9 s",
        ),
    ],
)
def test_bad_power_is_one_clear_error(power: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as caught:
        compile_cluster(validated(ClusterInstance, {**TWO_JOBS, "power": power}))
    assert str(caught.value) == message


def test_the_power_example_in_the_readme_solves(tmp_path: Path) -> None:
    path = tmp_path / "capped.yaml"
    path.write_text(
        "cluster:\n  nodes: [{name: node, count: 2, gpu: 4, cpu: 32, io: 4, net: 4}]\n"
        "power: {cap: 2000}\n"
        "jobs:\n  - {name: r18, model: resnet18, gpus: 4, duration: 3600}\n"
        "  - {name: bert, model: bert, gpus: 4, duration: 3600}\n"
    )
    problem = load_instance(path)
    assert [r.name for r in problem.resources][-1] == "power"
    assert problem.resources[-1].capacity == 2000 - 8 * 60


def test_a_cap_slows_every_running_job_alike_job_by_job() -> None:
    # two 1-GPU jobs of pure compute on 2 GPUs: both computing draw 2 x 300 W; a 360 W
    # cap (120 W idle + 240 W) leaves them half their speed: both end at 200 s
    compute = Stages(data=0.0, gpu=1.0, sync=0.0)
    jobs = [ExecutorJob(name, 1, 100, compute, 1.0, 100.0) for name in ("a", "b")]
    model = Interleave("fluid", factors=None)
    run = run_policy(jobs, "srtf", 1, 2, model, restart=False, power_cap=360.0)
    assert run.finish == {"a": pytest.approx(200.0), "b": pytest.approx(200.0)}
    assert run.throttle[0] == pytest.approx(0.5)
    assert audit(run, jobs, 2) == []
    energy = run_energy(run, jobs, 2)
    assert energy.peak_kw == pytest.approx(0.36)
    assert energy.kwh == pytest.approx(360 * 200 / 3.6e6)
    # the audit recomputes the cap's speed: a run whose trace broke it is caught

    assert audit(replace(run, power_cap=600.0), jobs, 2)[0].startswith("job 'a' finished")


def test_simulate_takes_the_instance_cap_and_refuses_windows(tmp_path: Path) -> None:
    inst = tmp_path / "capped.json"
    data = {**TWO_JOBS, "power": {"cap": 360}}
    inst.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["policy", str(inst), "srtf"])
    assert result.exit_code == 0, result.output
    shown = lines(result.stdout)
    assert shown["power cap"] == "360 W"
    # the cap sets the pace, not the jobs' speed alone (1.015 s per iteration here)
    assert shown["makespan"].startswith("200 s (")
    data["power"] = {"cap": 700, "windows": [{"start": 0, "end": 50, "cap": 400}]}
    inst.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["policy", str(inst), "srtf"])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {inst}: power.windows: job-level runs take a constant power cap: plan with "
        "the windows, or drop them\n",
    )


def test_the_mix_bound_under_a_cap_is_the_power_the_work_needs() -> None:
    # 200 GPU-seconds of compute at 240 W above idle, 240 W of budget: 200 s at least,
    # whatever the grouping; without the cap the two jobs fit side by side in 100 s
    compute = Stages(data=0.0, gpu=1.0, sync=0.0)
    jobs = [ExecutorJob(name, 1, 100, compute, 1.0, 100.0) for name in ("a", "b")]
    model = Interleave("fluid", factors=None)
    assert mix_bound(jobs, model, 2) == pytest.approx(100.0)
    assert mix_bound(jobs, model, 2, (240.0, (300.0, 60.0))) == pytest.approx(200.0)
    run = run_policy(jobs, "lp-groups", 1, 2, model, restart=False, power_cap=360.0)
    assert run.makespan == pytest.approx(200.0)
    assert audit(run, jobs, 2) == []


def test_energy_and_power_of_a_three_job_plan_by_hand() -> None:
    # two GPUs at 300 W busy, 60 W idle: a (1 GPU, 0-10 s) beside c (1 GPU, 0-4 s), then
    # b (2 GPUs, 10-15 s): 600 W for 4 s, 360 W for 6 s, 600 W for 5 s

    def task(name: str, gpus: int, ticks: int) -> dict[str, object]:
        segment = {"duration": ticks, "demand": {"gpu": gpus}}
        return {"name": name, "job": name, "modes": [{"segments": [segment]}]}

    problem = problem_from_data(
        {
            "time_unit": "1s",
            "resources": [{"name": "gpu", "capacity": 2}],
            "watts": {"gpu": [300, 60]},
            "jobs": [{"name": j} for j in "abc"],
            "tasks": [task("a", 1, 10), task("b", 2, 5), task("c", 1, 4)],
        }
    )
    schedule = Schedule(modes={t: "1" for t in "abc"}, starts={"a": 0, "b": 10, "c": 0})
    assert validate(problem, schedule).ok
    assert power_profile(problem, schedule) == ([0, 4, 10, 15], [600.0, 360.0, 600.0, 120.0])
    m = schedule_metrics(problem, schedule)
    joules = 600 * 4 + 360 * 6 + 600 * 5
    assert m.energy_kwh == pytest.approx(joules / 3.6e6)
    assert m.mean_kw == pytest.approx(joules / 15 / 1000)
    assert m.peak_kw == pytest.approx(0.6)
    assert m.kwh_per_job == pytest.approx(joules / 3 / 3.6e6)


def test_solve_prints_the_peak_under_the_cap(tmp_path: Path) -> None:
    # a 360 W cap on 2 GPUs idling at 60 W leaves 240 W above idle: one job computes at
    # full speed (240 W), or both at half speed
    path = tmp_path / "capped.json"
    path.write_text(json.dumps({**TWO_JOBS, "power": {"cap": 360}}))
    result = CliRunner().invoke(app, ["solve", str(path), "-s", "cpsat", "--static"])
    assert result.exit_code == 0, result.output
    out = lines(result.stdout)
    assert out["makespan"] == "200 s (200 ticks of 1s)"
    assert out["power cap"] == "peak 0.24 kW of 0.24 kW above the GPUs' idle draw"
    # the GPUs' 360 W, and the node's 8 cores, 2 data and 2 network slots idle (3, 5, 8 W)
    assert out["power"] == "mean 0.41 kW, peak 0.41 kW"


def test_the_cost_of_a_plan_under_a_tariff_by_hand() -> None:
    # the three-job plan above (600 W for 4 s, 360 W for 6 s, 600 W for 5 s) at 0.2 per
    # kWh, 0.1 in the first 5 s; with a period of 10 s, also in seconds 10-14

    def task(name: str, gpus: int, ticks: int) -> dict[str, object]:
        segment = {"duration": ticks, "demand": {"gpu": gpus}}
        return {"name": name, "job": name, "modes": [{"segments": [segment]}]}

    def cost(tariff: dict[str, object]) -> float | None:
        problem = problem_from_data(
            {
                "time_unit": "1s",
                "resources": [{"name": "gpu", "capacity": 2}],
                "watts": {"gpu": [300, 60]},
                "tariff": tariff,
                "tasks": [task("a", 1, 10), task("b", 2, 5), task("c", 1, 4)],
                "jobs": [{"name": j} for j in "abc"],
            }
        )
        plan = Schedule(modes=dict.fromkeys("abc", "1"), starts={"a": 0, "b": 10, "c": 0})
        return schedule_metrics(problem, plan).cost

    cheap = {"price": 0.2, "windows": [{"start": 0, "end": 5, "price": 0.1}]}
    per_tick = 600 * 4 * 0.1 + 360 * (0.1 + 5 * 0.2) + 600 * 5 * 0.2
    assert cost(cheap) == pytest.approx(per_tick / 3.6e6)
    daily = {**cheap, "period": 10}
    per_tick = 600 * 4 * 0.1 + 360 * (0.1 + 5 * 0.2) + 600 * 5 * 0.1
    assert cost(daily) == pytest.approx(per_tick / 3.6e6)
    with pytest.raises(InputError, match=r"tariff\.windows: two windows overlap at tick 3"):
        cost({"price": 1, "windows": [{"start": 0, "end": 5, "price": 0}, {"start": 3,
             "end": 6, "price": 2}]})  # fmt: skip
    with pytest.raises(InputError, match=r"tariff\.windows: a window ends at 12, after the period"):
        cost({"price": 1, "period": 10, "windows": [{"start": 8, "end": 12, "price": 0}]})


def test_a_cluster_tariff_is_compiled_to_ticks() -> None:
    tariff = {"price": 0.3, "period": 86400, "windows": [{"start": 0, "end": 21600, "price": 0.1}]}
    data = {**TWO_JOBS, "time_unit": "1min", "power": {"tariff": tariff}}
    problem = compile_cluster(validated(ClusterInstance, data))
    assert problem.tariff is not None
    assert problem.tariff.model_dump() == {
        "price": 0.3,
        "windows": [{"start": 0, "end": 360, "price": 0.1}],
        "period": 1440,
    }


def test_a_job_level_run_prices_its_energy(tmp_path: Path) -> None:
    # one GPU computing for 100 s at 300 W: 50 s at 0.1 per kWh, 50 s at 0.2

    tariff = {"price": 0.2, "windows": [{"start": 0, "end": 50, "price": 0.1}]}
    data = {
        "time_unit": "1s",
        "power": {"tariff": tariff},
        "cluster": {"nodes": [{"name": "n", "gpu": 1}]},
        "jobs": [{"name": "a", "gpus": 1, "iterations": 100, "stages": {"data": 0, "gpu": 1}}],
    }
    path = tmp_path / "priced.yaml"
    path.write_text(yaml.safe_dump(data))
    workload = jobs_from_instance(path)
    run = run_policy(workload.jobs, "srtf", 1, 1, Interleave("fluid", factors=None), restart=False)
    energy = run_energy(run, workload.jobs, 1, workload.tariff)
    assert energy.kwh == pytest.approx(300 * 100 / 3.6e6)
    assert energy.cost == pytest.approx(300 * (50 * 0.1 + 50 * 0.2) / 3.6e6)
    assert run_energy(run, workload.jobs, 1).cost is None

"""One plan, one number: every path that says what a DL plan delivers runs it in the
job-level executor, with one set of defaults; the objectives energy and cost survive
every path; options that do not apply are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from planner.app.compare import run_study
from planner.disturbances import Noise
from planner.executor.model.jobs import jobs_from_instance
from planner.executor.runs import Setting, dispatch_of, judge
from planner.io.instance import load_instance
from planner.replay.job_state import RAN, state_from_job_run
from planner.replay.replan import prepare
from planner.schedule import load_schedule
from planner.solvers import solve
from tests.conftest import INSTANCES, lines

runner = CliRunner()

COST = yaml.safe_load("""
name: costdemo
time_unit: 10min
objective: cost
cluster:
  nodes:
    - {name: node, count: 2, gpu_type: v100, gpu: 4, cpu: 32, io: 4, net: 4}
power:
  switch_off: true
  tariff: {price: 0.30, period: 86400, windows: [{start: 0, end: 21600, price: 0.10}]}
jobs:
  - {name: a, gpus: 4, stages: {data: 0.05, gpu: 0.4, sync: 0.1}, duration: 7200, release: 28800}
  - {name: b, gpus: 4, model: resnet18, duration: 14400, release: 30000}
  - {name: c, gpus: 8, stages: {data: 0.1, gpu: 0.3, sync: 0.1}, duration: 3600, release: 30000}
""")
"""The instance of the issue that broke execution under ``objective: cost``."""


def run(*args: object) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``planner ARGS``."""
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def power(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``cost.yaml`` and ``energy.yaml`` (a cap of 1,500 W for ``switch_off``), each with
    its ``sgs`` plan."""
    folder = tmp_path_factory.mktemp("power")
    energy = {**COST, "objective": "energy", "power": {**COST["power"], "cap": 1500}}
    del energy["power"]["switch_off"]
    files = {}
    for name, data in (("cost", COST), ("energy", energy)):
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        plan = folder / f"{name}-plan.json"
        assert run("solve", path, "-s", "sgs", "-o", plan)[0] == 0
        files[name], files[f"{name}-plan"] = path, plan
    return files


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The shipped Muri trace placed on nodes, its ``sgs`` plan, and its run where node3
    fails at tick 2000 for 600 ticks."""
    folder = tmp_path_factory.mktemp("placed")
    files = {n: folder / f"{n}.json" for n in ("placed", "plan", "run")}
    trace = INSTANCES / "muri_trace.csv"
    assert run("import", "muri", trace, "--placement", "node", "-o", files["placed"])[0] == 0
    assert run("solve", files["placed"], "-s", "sgs", "-o", files["plan"])[0] == 0
    code, _, err = run("run", files["placed"], files["plan"], "--fail",
                       "node3@2000+600", "-o", files["run"])  # fmt: skip
    assert code == 0, err
    return files


# One number for one plan.


def test_one_plan_has_one_makespan_on_every_path(placed: dict[str, Path], tmp_path: Path) -> None:
    instance, plan = placed["placed"], placed["plan"]
    problem = load_instance(instance)
    schedule = load_schedule(plan, problem)
    library = dispatch_of(jobs_from_instance(instance), Setting(), plan=(problem, schedule))
    makespan = library.run().makespan
    # solve prints it as the plan's makespan, under the model it states
    code, out, _ = run("solve", instance, "-s", "sgs")
    assert code == 0
    assert lines(out)["makespan"] == f"{makespan:,.0f} s"
    assert lines(out)["model"].startswith("fluid, 1 data slot per GPU, Muri's slowdown")
    # in the static block model (--static) as its executed line, the model on the same line
    code, out, _ = run("solve", instance, "-s", "sgs", "--static")
    assert code == 0
    executed = lines(out)["executed"]
    assert executed.startswith(f"{makespan:,.0f} s (fluid, 1 data slot per GPU, Muri's slowdown")
    # simulate runs the plan in the executor by default, and says so
    code, out, _ = run("run", instance, plan)
    assert code == 0
    rows = lines(out)
    assert rows["makespan"].startswith(f"{makespan:,.0f} s")
    assert rows["model"] == (
        "fluid, 1 data slot per GPU, Muri's slowdown factors, restart overheads "
        "(job-level executor)"
    )
    # compare --simulate too, in seconds as every command prints them
    table = run_study([instance], ["sgs"], tmp_path / "r.csv", simulation="runs=1",
                      progress=False)  # fmt: skip
    assert table["unit"].item() == "s"
    assert table["realized_makespan_mean"].item() == pytest.approx(makespan)
    assert judge(library)["makespan_mean"] == makespan


def test_a_task_graph_without_training_jobs_says_it_replays_task_by_task(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    j30 = INSTANCES / "psplib" / "j301_1.sm"
    assert run("solve", j30, "-s", "sgs", "-o", plan)[0] == 0
    code, out, _ = run("run", j30, plan)
    assert code == 0
    assert out.splitlines()[0] == f"task-level replay: {j30} is a task graph without training jobs"
    code, _, err = run("run", j30, plan, "--interleave", "fluid")
    assert code == 2
    assert err == (
        f"error: --interleave runs job by job; {j30} is a task graph without training jobs "
        "(task-level replay)\n"
    )


def test_noisy_runs_stream_in_the_executor(placed: dict[str, Path], tmp_path: Path) -> None:
    out_file = tmp_path / "mc.json"
    args = ["--noise", "lognormal:0.1", "--runs", "4", "--jobs", "2", "-o", out_file]
    code, out, err = run("study", placed["placed"], placed["plan"], *args)
    assert code == 0, err
    study = json.loads(out_file.read_text())["monte_carlo"]
    problem = load_instance(placed["placed"])
    schedule = load_schedule(placed["plan"], problem)
    dispatch = dispatch_of(
        jobs_from_instance(placed["placed"]),
        Setting(),
        plan=(problem, schedule),
        noise=Noise.parse("lognormal:0.1"),
    )
    assert study["per_run"]["makespan"] == pytest.approx([dispatch(s).makespan for s in range(4)])
    assert all(study["per_run"]["valid"])
    assert "4 runs (seconds)" in out


# Re-planning from the executor's state.


def test_a_replan_from_a_job_level_run_keeps_every_iteration_done(
    placed: dict[str, Path],
) -> None:
    instance = placed["placed"]
    problem = load_instance(instance)
    schedule = load_schedule(placed["plan"], problem)
    data = json.loads(placed["run"].read_text())
    at = 2300
    state = state_from_job_run(instance, problem, schedule, data, at)
    assert state.outages == {"node3": 2600}
    dispatch = dispatch_of(jobs_from_instance(instance), Setting(), plan=(problem, schedule),
                           outages=[(2, 2000 * 60.0, 2600 * 60.0)])  # fmt: skip
    stopped = dispatch.run(until=at * 60.0)
    built = prepare(problem, schedule, at, [], state)
    for job in {t.job for t in problem.tasks}:
        done = stopped.done[job] / next(j.iterations for j in dispatch.jobs if j.name == job)
        tasks = [t for t in problem.tasks if t.job == job]
        work = sum(t.min_duration for t in tasks)
        left = 0.0
        for t in built.instance.tasks:
            if t.job != job or t.name not in problem.task_index:
                continue
            if t.name not in built.frozen:
                left += t.min_duration
            else:  # frozen: what is left of it runs from T in its planned mode
                rest = sum(s.duration for s in t.modes[0].segments if s.name not in (RAN, "wait"))
                old = problem.task(t.name)
                left += rest * old.min_duration / old.mode(schedule.modes[t.name]).duration
        # the work left is the share of iterations not done, rounded up per segment
        assert left == pytest.approx((1 - done) * work, abs=len(tasks)), job
    # nothing new starts on node3 before it is back at 2600
    result = built.solve("sgs")
    assert result.schedule is not None
    for t in built.instance.tasks:
        if t.name in built.frozen:
            continue
        nodes = result.schedule.nodes.get(t.name, ())
        if "node3" in nodes:
            assert result.schedule.starts[t.name] >= 2600, t.name


def test_a_job_level_run_of_another_plan_is_refused(
    placed: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other.json"
    assert run("solve", placed["placed"], "-s", "sgs", "--rule", "spt", "-o", other)[0] == 0
    code, _, err = run("replan", placed["placed"], other, "--at", "100", "--executed",
                       placed["run"], "-s", "sgs")  # fmt: skip
    assert code == 2
    assert "give the plan the run executed" in err and err.count("\n") == 1


def test_a_replayed_replan_keeps_its_past_as_it_ran(
    placed: dict[str, Path], tmp_path: Path
) -> None:
    new, inst = tmp_path / "new.json", tmp_path / "inst.json"
    code, _, err = run("replan", placed["placed"], placed["plan"], "--at", "2300", "-s", "sgs",
                       "-o", new, "--instance-out", inst)  # fmt: skip
    assert code == 0, err
    code, out, _ = run("run", inst, new)
    assert code == 0
    assert "after their deadline" not in out


# Energy and cost on every path (each of these failed before).


def test_a_cost_plan_runs_and_reports_its_energy_cost(power: dict[str, Path]) -> None:
    code, out, err = run("run", power["cost"], power["cost-plan"])
    assert code == 0, err
    rows = lines(out)
    assert rows["audit"].startswith("valid")
    assert rows["energy cost"].endswith("(the instance's tariff)")
    assert "idle ones off" in rows["energy"]


@pytest.mark.parametrize("name", ["cost", "energy"])
def test_power_objectives_survive_a_replan(power: dict[str, Path], name: str) -> None:
    code, out, err = run("replan", power[name], power[f"{name}-plan"], "--at", "50", "-s", "sgs")
    assert code == 0, err
    assert lines(out)["validator"] == "valid (instance plus events)"


def test_a_replan_under_power_limits_scores_its_energy(tmp_path: Path) -> None:
    limits, plan = INSTANCES / "power_limits.yaml", tmp_path / "plan.json"
    assert run("solve", limits, "-s", "sgs", "-o", plan)[0] == 0
    code, _, err = run("replan", limits, plan, "--at", "3", "-s", "sgs")
    assert code == 0, err


@pytest.mark.parametrize("name", ["cost", "energy"])
def test_power_objectives_survive_online_planning(power: dict[str, Path], name: str) -> None:
    code, out, err = run("online", power[name])
    assert code == 0, err
    assert "audit: valid" in out


def test_power_objectives_survive_compare_with_a_simulation(
    power: dict[str, Path], tmp_path: Path
) -> None:
    table = run_study([power["cost"], power["energy"]], ["sgs"], tmp_path / "r.csv",
                      simulation="runs=2", progress=False)  # fmt: skip
    assert list(table["status"]) == ["feasible", "feasible"], list(table["error"])
    assert table["realized_makespan_mean"].notna().all()


def test_the_energy_of_a_run_counts_no_idle_draw_with_switch_off(power: dict[str, Path]) -> None:
    from planner.executor.energy import run_energy

    workload = jobs_from_instance(power["cost"])
    assert workload.switch_off
    problem = load_instance(power["cost"])
    schedule = load_schedule(power["cost-plan"], problem)
    dispatch = dispatch_of(workload, Setting(), plan=(problem, schedule))
    done = dispatch.run()
    on = run_energy(done, dispatch.jobs, 8, workload.tariff, switch_off=False)
    off = run_energy(done, dispatch.jobs, 8, workload.tariff, switch_off=True)
    # jobs a and b hold 4 GPUs each, c 8: while a runs alone, 4 GPUs idle at 60 W
    assert off.kwh < on.kwh
    assert off.cost is not None and on.cost is not None and off.cost < on.cost


# Options that do not apply are refused.


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "{plan}", "--option", "rule=spt"], "No such option: --option"),
        (["run", "{plan}", "--solver", "ga"], "No such option: --solver"),
        (["run", "{plan}", "--nodes", "4"], "No such option: --nodes"),
        (["run", "{plan}", "--runs", "4"], "No such option: --runs"),
        (["online", "--work-conserving"],
         "--work-conserving dispatches a plan; planner online plans as jobs arrive"),
        (["policy", "srtf", "--time-limit", "1"],
         "--time-limit is the planner's search per event; srtf has none"),
        (["study", "{plan}", "--policy", "srtf"],
         "give the plan (PLAN) or --policy NAME, one of them"),
    ],
)  # fmt: skip
def test_an_option_that_does_not_apply_is_refused(
    placed: dict[str, Path], args: list[str], message: str
) -> None:
    command, *rest = args
    given = [str(placed["plan"]) if a == "{plan}" else a for a in rest]
    code, _, err = run(command, placed["placed"], *given)
    assert code == 2
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_a_repeated_cancel_is_refused(placed: dict[str, Path]) -> None:
    code, _, err = run("replan", placed["placed"], placed["plan"], "--at", "10",
                       "--event", "cancel:job3", "--event", "cancel:job3")  # fmt: skip
    assert (code, err) == (
        2,
        "error: event cancel:job3: job 'job3' is cancelled once (a repeated event)\n",
    )


# Groups keep to max_colocated in every report.


def test_groups_on_shared_gpus_keep_to_max_colocated(tmp_path: Path) -> None:
    from planner.dl.workloads import generate_batch
    from planner.executor.audit import audit

    batch = tmp_path / "gpus.json"
    data = generate_batch(40, seed=3, nodes=2, gpus_per_node=8, placement="gpu")
    batch.write_text(json.dumps(data))
    problem = load_instance(batch)
    schedule = solve(problem, "sgs").schedule
    assert schedule is not None
    workload = jobs_from_instance(batch)
    assert any(j.gpus > 1 for j in workload.jobs)
    dispatch = dispatch_of(workload, Setting(slowdown="none"), plan=(problem, schedule))
    done = dispatch.run()
    assert done.shared
    assert max(done.groups) <= dispatch.model.max_colocated
    assert not audit(done, dispatch.jobs, 16)
    assert math.isfinite(done.makespan)


def test_a_pooled_plan_runs_in_the_executor_with_one_number(tmp_path: Path) -> None:
    batch, plan = tmp_path / "batch.json", tmp_path / "plan.json"
    assert run("import", "muri", INSTANCES / "muri_trace.csv", "-o", batch)[0] == 0
    code, out, _ = run("solve", batch, "-s", "sgs", "--static", "-o", plan)
    assert code == 0
    executed = lines(out)["executed"].split(" s (")[0]
    code, out, _ = run("run", batch, plan)
    assert code == 0
    rows = lines(out)
    assert rows["makespan"].startswith(f"{executed} s (")
    assert rows["audit"].startswith("valid")

"""Plans in the executor's model: ``planner solve`` of an instance with training jobs
returns a dispatch the executor runs, its figures are the run's, and ``optimal`` means
proven against the executor's bound."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pulp
import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.dispatch import DispatchPlan
from planner.executor.model.grouping import executor_bound, longest_job, mix_bound
from planner.executor.model.jobs import ExecutorJob, Workload, jobs_from_instance, read_trace
from planner.executor.runs import Dispatch, Setting, dispatch_of
from planner.interleave import Interleave, Stages
from planner.solvers.dispatch_search import STAGES, search_dispatch
from tests.conftest import INSTANCES

runner = CliRunner()

PAIRS = yaml.safe_load("""
name: pairs
time_unit: 1min
cluster:
  nodes:
    - {name: node, count: 1, gpu_type: V100, gpu: 2, cpu: 32, io: 4, net: 4}
jobs:
  - {name: load1, gpus: 1, iterations: 6000, stages: {data: 0.40, gpu: 0.10, sync: 0.0}}
  - {name: load2, gpus: 1, iterations: 6000, stages: {data: 0.40, gpu: 0.10, sync: 0.0}}
  - {name: calc1, gpus: 1, iterations: 6000, stages: {data: 0.10, gpu: 0.40, sync: 0.0}}
  - {name: calc2, gpus: 1, iterations: 6000, stages: {data: 0.10, gpu: 0.40, sync: 0.0}}
""")
"""Two data-heavy and two compute-heavy jobs on 2 GPUs: pairs of one of each keep both
stages busy, as the bound says."""

BATCH = yaml.safe_load("""
name: five
time_unit: 1min
placement: gpu
cluster:
  nodes:
    - {name: node, count: 1, gpu: 2, io: 2, net: 2}
jobs:
  - {name: job0, model: a2c, batch_size: 64, gpus: 1, iterations: 40173}
  - {name: job1, model: shufflenet_v2_x1_0, batch_size: 128, gpus: 2, iterations: 14839}
  - {name: job2, model: vgg19, batch_size: 16, gpus: 1, iterations: 1975}
  - {name: job3, model: vgg16, batch_size: 16, gpus: 1, iterations: 85291}
  - {name: job4, model: dqn, batch_size: 128, gpus: 1, iterations: 20354}
""")
"""Five catalog jobs on single GPUs (a generated batch): CP-SAT proves its static plan
optimal in the static block model, and the executor runs a better dispatch."""

FLUID = ("--interleave", "fluid", "--slowdown", "none", "--no-restart")
"""The executor's model of the tests that need exact figures."""


def run(*args: object) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``planner ARGS``."""
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def field(out: str, name: str) -> str:
    """The value of the printed line ``name``."""
    match = re.search(rf"^{re.escape(name)}\s+(.*)$", out, re.M)
    assert match is not None, out
    return match.group(1)


def seconds(text: str) -> float:
    """The first figure of ``text`` (``1,234 s ...``)."""
    return float(text.split()[0].replace(",", ""))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`BATCH` as a file."""
    path = tmp_path_factory.mktemp("batch") / "five.yaml"
    path.write_text(yaml.safe_dump(BATCH))
    return path


@pytest.mark.parametrize("policy", ["lp-groups", "muri-s", "srsf-pack", "tiresias", "srtf"])
@pytest.mark.parametrize("interleave", ["muri", "fluid"])
def test_a_dispatch_file_replays_its_run_to_the_second(policy: str, interleave: str) -> None:
    workload = jobs_from_instance(INSTANCES / "example.yaml")
    setting = Setting(interleave)
    first = dispatch_of(workload, setting, policy).run()
    plan = DispatchPlan.of_run(first, setting, policy)
    again = DispatchPlan.from_data(json.loads(json.dumps(plan.to_data(first))))
    replay = again.dispatch(workload)
    second = replay.run()
    assert second.finish == first.finish
    assert second.makespan == plan.makespan
    assert audit(second, replay.jobs, 8) == []


def test_the_search_beats_the_static_plan_called_optimal_in_its_own_model(batch: Path) -> None:
    # CP-SAT's static plan, optimal in the block model (622 ticks of 1 min), runs longer
    # in the executor than the search's dispatch under the same model
    code, out, err = run("solve", batch, "-s", "cpsat", "--static", "-t", "5")
    assert code == 0, err
    assert field(out, "status") == "optimal"
    executed = seconds(field(out, "executed"))
    assert field(out, "executed").endswith("planned 37,320 s in the static block model)")
    code, out, err = run("solve", batch, "-t", "3")
    assert code == 0, err
    assert seconds(field(out, "makespan")) < executed
    # -s cpsat plans in the executor's model: its plan is a run, proven optimal there
    code, out, err = run("solve", batch, "-s", "cpsat", "-t", "5", *FLUID)
    assert code == 0, err
    assert field(out, "status") == "optimal"
    assert field(out, "lower bound") == f"{field(out, 'makespan')} (configuration program)"
    static = executed
    code, out, err = run("solve", batch, "-t", "3", *FLUID)
    assert code == 0, err
    assert seconds(field(out, "makespan")) < 0.95 * static
    # the configuration program proves its plan: 5 jobs, 41 configurations
    assert field(out, "status") == "optimal"
    assert field(out, "lower bound") == f"{field(out, 'makespan')} (configuration program)"
    assert field(out, "plan") == "configuration program (41 configurations)"
    assert field(out, "audit").startswith("valid")


def test_optimal_where_the_bound_proves_it(tmp_path: Path) -> None:
    path = tmp_path / "pairs.yaml"
    path.write_text(yaml.safe_dump(PAIRS))
    code, out, err = run("solve", path, "-t", "2", *FLUID)
    assert code == 0, err
    # two pairs, each data 0.5 s and compute 0.5 s per iteration pair: 6,000 x 0.5 s
    assert seconds(field(out, "makespan")) == pytest.approx(3000.0)
    assert seconds(field(out, "lower bound")) == pytest.approx(3000.0)
    assert field(out, "status") == "optimal"
    assert field(out, "gap") == "0.00%"


@pytest.mark.parametrize(
    "solver", ["portfolio", "sgs", "cpsat", "ga", "pso", "milp", "exclusive-srtf"]
)
def test_the_printed_makespan_is_the_executors_replay_of_the_plan(
    solver: str, tmp_path: Path
) -> None:
    instance = INSTANCES / "example.yaml"
    plan = tmp_path / "plan.json"
    limit = () if solver in ("sgs", "exclusive-srtf") else ("-t", "2")
    code, out, err = run("solve", instance, "-s", solver, *limit, "-o", plan)
    assert code == 0, err
    printed = field(out, "makespan")
    code, replay, err = run("run", instance, plan)
    assert code == 0, err
    assert field(replay, "makespan").split()[0] == printed.split()[0]
    assert field(replay, "mean JCT") == field(out, "mean JCT")
    assert field(replay, "optimism").startswith("1.000") or solver != "portfolio"
    code, _verdict, err = run("validate", instance, plan)
    assert code == 0, err


def test_a_job_alone_is_optimal_at_its_period() -> None:
    job = ExecutorJob("a", 1, 100, Stages(0.1, 0.2, 0.0), 0.3, 30.0)
    model = Interleave("fluid", factors=None)
    dispatch = dispatch_of_jobs([job], model)
    result = search_dispatch(dispatch, Setting("fluid", slowdown="none", restart=False),
                             time_limit=0)  # fmt: skip
    assert result.value == pytest.approx(30.0)
    assert result.status == "optimal"


def dispatch_of_jobs(jobs: list[ExecutorJob], model: Interleave, nodes: int = 1) -> Dispatch:
    """A dispatch of ``jobs`` on ``nodes`` nodes of 8 GPUs under ``model`` without
    overheads."""
    return Dispatch(jobs=jobs, policy="lp-groups", nodes=nodes, gpus_per_node=8, model=model,
                    restart=False)  # fmt: skip


def test_each_stage_runs_alone_and_the_objectives_pick_their_policies() -> None:
    jobs = read_trace(INSTANCES / "muri_trace3_40.csv")
    dispatch = dispatch_of_jobs(jobs, Interleave("muri", factors=None), nodes=8)
    setting = Setting("muri", slowdown="none", restart=False)
    only = search_dispatch(dispatch, setting, stages=("policies",), time_limit=60)
    assert {c.stage for c in only.tried} == {"policies"}
    assert only.tried[0].source == "lp-groups"
    jct = search_dispatch(dispatch, setting, "weighted_completion", stages=("policies",),
                          time_limit=60)  # fmt: skip
    assert jct.tried[0].source == "jct-groups"
    assert jct.best is not None
    assert jct.best.value == pytest.approx(jct.best.run.mean_jct)
    assert jct.bound <= jct.best.value
    with pytest.raises(InputError, match="unknown stage 'lns'"):
        search_dispatch(dispatch, setting, stages=("lns",))
    with pytest.raises(InputError, match="stage tune tunes lp-groups, srsf-pack, ftf-groups, "
                       "not 'muri-s'"):  # fmt: skip
        search_dispatch(dispatch, setting, tuned="muri-s")
    # the caller's policies, and the tuned one's draws
    mine = search_dispatch(dispatch, setting, "weighted_completion", stages=("policies", "tune"),
                           time_limit=60, policies=("muri-s",), tuned="ftf-groups")  # fmt: skip
    assert mine.tried[0].source == "muri-s"
    assert {c.source.split(" (")[0] for c in mine.tried[1:]} == {"ftf-groups"}
    with pytest.raises(InputError, match="plans for makespan or weighted_completion, not 'energy'"):
        search_dispatch(dispatch, setting, "energy")
    assert STAGES == ("exact", "policies", "static", "tune", "recombine", "evolve")


def test_the_executors_bound_under_muri_takes_a_jobs_measured_period() -> None:
    fast = ExecutorJob("a", 1, 100, Stages(0.2, 0.2, 0.1), 0.25, 25.0)
    assert longest_job([fast], Interleave("muri", factors=None)) == pytest.approx(25.0)
    assert longest_job([fast], Interleave("fluid", factors=None)) == pytest.approx(50.0)
    bound, kind = executor_bound([fast], Interleave("muri", factors=None), 8)
    assert bound == pytest.approx(25.0)
    assert mix_bound([fast], Interleave("muri", factors=None), 8) == pytest.approx(25.0)
    assert kind in ("group mix", "longest job")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--interleave", "fluid", INSTANCES / "psplib" / "j3013_1.sm"),
         "--interleave: the executor's model plans instances with training jobs"),
        (("--rule", "lft", INSTANCES / "example.yaml"),
         "--rule: the search in the executor's model does not take it"),
        (("-o", "plan.csv", INSTANCES / "example.yaml"), "--output: a dispatch file is .json"),
        (("--static", "--slowdown", "none", INSTANCES / "example.yaml"),
         "--slowdown: the executor's model plans instances without --static"),
        (("--interleave", "muri", "--data-slots", "2", INSTANCES / "example.yaml"),
         "--data-slots: data slots are fluid's; muri loads over two of four slots"),
    ],
)  # fmt: skip
def test_options_that_do_not_apply_are_refused(
    args: tuple[object, ...], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("solve", "-t", "1", *args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_dispatch_runs_in_its_own_model_and_of_its_own_jobs(tmp_path: Path, batch: Path) -> None:
    instance = INSTANCES / "example.yaml"
    plan = tmp_path / "plan.json"
    code, _, err = run("solve", instance, "-t", "1", "-o", plan, *FLUID)
    assert code == 0, err
    code, _, err = run("run", instance, plan, "--slowdown", "muri")
    assert code == 2
    assert "--slowdown muri: the dispatch was planned with none" in err
    code, _, err = run("run", instance, plan, "--noise", "lognormal:0.1")
    assert code == 2
    assert "--noise does not apply to a dispatch" in err
    code, _, err = run("run", batch, plan)
    assert code == 2
    assert "which the instance does not have" in err
    code, _, err = run("replan", instance, plan, "--at", "30")
    assert (code, err) == (
        2,
        f"error: {plan}: a dispatch, planned in the executor's model: re-plan a static plan "
        "(planner solve INSTANCE --static -o PLAN), or let the planner re-plan at every event "
        "(planner online INSTANCE)\n",
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "dispatch", "events": []}))
    code, _, err = run("validate", instance, bad)
    assert code == 2
    assert "a malformed dispatch file" in err


def test_the_configuration_program_proves_the_optimum_known_by_enumeration() -> None:
    # four jobs on one GPU under muri: every subset of them a group; the least makespan
    # of a run that regroups at will is the LP over subsets, solved here with PuLP
    jobs = [
        ExecutorJob("a", 1, 3000, Stages(0.30, 0.10, 0.05), 0.45, 0.0),
        ExecutorJob("b", 1, 2000, Stages(0.05, 0.30, 0.10), 0.45, 0.0),
        ExecutorJob("c", 1, 2500, Stages(0.10, 0.15, 0.20), 0.45, 0.0),
        ExecutorJob("d", 1, 1500, Stages(0.20, 0.20, 0.02), 0.42, 0.0),
    ]
    model = Interleave("muri", factors=None)
    lp = pulp.LpProblem("subsets", pulp.LpMinimize)
    subsets = [s for k in range(1, 5) for s in itertools.combinations(range(4), k)]
    time = {s: pulp.LpVariable("d" + "".join(map(str, s)), lowBound=0) for s in subsets}
    lp += pulp.lpSum(time.values())
    for j, job in enumerate(jobs):
        speed = []
        for s in subsets:
            if j in s:
                members = [jobs[k] for k in s]
                periods = model.periods([m.stages for m in members],
                                        alone=[m.iteration_time for m in members])  # fmt: skip
                speed.append(time[s] / periods[s.index(j)])
        lp += pulp.lpSum(speed) == job.iterations
    lp.solve(pulp.HiGHS(msg=False))
    known = pulp.value(lp.objective)
    assert known == pytest.approx(1700.0)
    dispatch = Dispatch(jobs=jobs, policy="lp-groups", nodes=1, gpus_per_node=1, model=model,
                        restart=False)  # fmt: skip
    result = search_dispatch(dispatch, Setting("muri", slowdown="none", restart=False))
    assert result.status == "optimal"
    assert result.bound_kind == "configuration program"
    assert result.value == pytest.approx(known, rel=1e-6)
    assert result.best is not None
    assert audit(result.best.run, jobs, 1) == []
    # the group-mix bound alone would not prove it
    assert executor_bound(jobs, model, 1)[0] < 0.96 * known


def test_recombined_runs_are_a_dispatch_the_executor_audits_and_replays() -> None:
    jobs = read_trace(INSTANCES / "muri_trace3_40.csv")
    dispatch = dispatch_of_jobs(jobs, Interleave("muri", factors=None), nodes=8)
    setting = Setting("muri", slowdown="none", restart=False)
    result = search_dispatch(dispatch, setting, stages=("policies", "recombine"), time_limit=60)
    best = result.stage_best()
    assert set(best) == {"policies", "recombine"}
    mixed = best["recombine"]
    assert mixed.source.startswith("recombined (")
    assert audit(mixed.run, jobs, 64) == []
    assert result.value == min(best["policies"].value, mixed.value)
    # the dispatch file of the mix replays it
    plan = result.plan(setting)
    assert plan is not None
    assert plan.dispatch(Workload(jobs, 8, 8)).run().makespan == result.value


def test_validate_gives_a_static_plan_of_training_jobs_the_executors_audit(tmp_path: Path) -> None:
    instance = INSTANCES / "example.yaml"
    plan = tmp_path / "plan.json"
    assert run("solve", instance, "-s", "sgs", "-o", plan)[0] == 0
    code, out, err = run("validate", instance, plan)
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith("executor's audit: valid, its run ")
    assert last.endswith("(fluid, 1 data slot per GPU, Muri's slowdown factors, restart overheads)")


def test_the_static_block_model_says_so(tmp_path: Path) -> None:
    code, out, err = run("solve", INSTANCES / "example.yaml", "--static", "-s", "sgs")
    assert code == 0, err
    assert field(out, "model").startswith("static block model (--static; each block at one")
    assert field(out, "executed").endswith("planned 8,160 s in the static block model)")


def test_the_genetic_algorithm_decodes_keys_in_the_executor() -> None:
    jobs = read_trace(INSTANCES / "muri_trace3_40.csv")
    dispatch = dispatch_of_jobs(jobs, Interleave("muri", factors=None), nodes=8)
    setting = Setting("muri", slowdown="none", restart=False)
    result = search_dispatch(dispatch, setting, stages=("tune", "evolve"), time_limit=4)
    evolved = [c for c in result.tried if c.stage == "evolve"]
    assert evolved
    assert all(c.genes is not None and c.genes[0] is not None for c in evolved)
    assert all(c.source.startswith("lp-groups, evolved priorities (") for c in evolved)
    best = min(evolved, key=lambda c: c.value)
    assert best.run is not None
    assert audit(best.run, jobs, 64) == []
    assert result.value == min(c.value for c in result.tried)

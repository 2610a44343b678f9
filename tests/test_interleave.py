"""The interleaving model (hand-computed periods) and the peer schedulers in its executor."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.configurations import strongest_bound
from planner.executor.loop import run_policy
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance, read_trace
from planner.executor.runs import Setting
from planner.interleave import (
    MURI_GROUP_FACTORS,
    Interleave,
    Stages,
    fluid_stretch,
    model_bound,
    muri_period,
)
from tests.conftest import INSTANCES, lines

RESNET18 = Stages(data=0.723, gpu=0.113, sync=0.073)  # 4 GPUs, Muri's profile (s)
GPT2 = Stages(data=0.0006, gpu=0.413, sync=0.020)
SLICE = INSTANCES / "muri_trace3_40.csv"  # the first 40 jobs of Muri's trace3'


def test_four_resnet18_under_muri_load_data_two_at_a_time() -> None:
    period, _ = muri_period([RESNET18] * 4)
    assert period == pytest.approx(4 * max(0.073, 0.113, 0.723 / 2))


def test_a_pair_takes_the_best_rotation_or_the_pair_formula() -> None:
    a, b = Stages(4, 1, 1), Stages(1, 3, 2)
    # the pair formula: max(d_a, g_b + s_b) + max(d_b, g_a + s_a) = 5 + 2 = 7; the
    # rotation (a, b): f = 0, 2, 4, 5, 8, 10: period 8; (b, a): f = 0, 1, 1, 5, 7, 8:
    # period 7, found first, so Muri keeps that order
    assert muri_period([a, b]) == (pytest.approx(7), (1, 0))


def test_the_order_muri_picks_for_a_data_heavy_and_a_gpu_heavy_job() -> None:
    # (resnet18, gpt2): f = 0, .020, .723, .836, 1.249, 1.269: period 1.249;
    # (gpt2, resnet18): f = 0, .073, .0006, .796, .909, .982: period .909, as the pair
    # formula max(.723, .433) + max(.0006, .186) = .909: gpt2 computes while resnet18 loads
    assert muri_period([RESNET18, GPT2]) == (pytest.approx(0.909), (1, 0))
    assert muri_period([RESNET18, GPT2])[0] < RESNET18.total + GPT2.total


def test_muri_runs_a_job_alone_at_its_measured_iteration_time() -> None:
    model = Interleave("muri", factors=MURI_GROUP_FACTORS)
    assert model.periods([RESNET18], alone=[0.921]) == [pytest.approx(0.921 * 1.015)]
    assert model.periods([RESNET18] * 4) == [pytest.approx(1.446 * 1.37 / 1.015)] * 4


def test_fluid_shares_fit_then_slow_in_proportion() -> None:
    data_heavy, gpu_heavy = Stages(3, 1, 0), Stages(0, 3, 1)  # shares 3/4+1/4 and 0+3/4+1/4
    # data: 3/4, gpu: 1/4 + 3/4 = 1, network: 1/4: everything fits at full speed
    assert fluid_stretch([data_heavy, gpu_heavy]) == pytest.approx(1.0)
    assert Interleave("fluid", factors=None).periods([data_heavy, gpu_heavy]) == [4, 4]
    # two data-heavy jobs: data 3/4 + 3/4 = 1.5 of one slot, so both slow by 1.5
    assert Interleave("fluid", factors=None).periods([data_heavy, data_heavy]) == [6, 6]
    # with Muri's two data slots they fit again
    assert Interleave("fluid", data_slots=2, factors=None).periods([data_heavy, data_heavy]) == [
        4,
        4,
    ]


def test_bad_models_are_refused() -> None:
    with pytest.raises(InputError, match="interleave 'lru' is not one of fluid, muri, table"):
        Interleave("lru", factors=None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="5 jobs on one GPU set: at most 4"):
        Interleave("muri", factors=None).periods([RESNET18] * 5)


def test_bounds_per_model_on_the_slice() -> None:
    jobs = read_trace(SLICE)
    work = [(j.gpus, j.iterations, j.stages) for j in jobs]
    fluid, muri = (
        model_bound(work, 64, Interleave("fluid", factors=None)),
        model_bound(work, 64, Interleave("muri", factors=None)),
    )
    assert fluid["data"] == pytest.approx(2 * muri["data"])  # one data slot against two
    assert fluid["gpu"] == muri["gpu"]
    assert muri["bound"] == max(muri["data"], muri["gpu"], muri["network"], muri["longest"])


def test_a_hand_made_group_timeline() -> None:
    # four 1-GPU jobs of 100 iterations on one GPU: Muri-S groups all four (4 GPUs asked,
    # 1 GPU there) and they finish together after 100 periods of the group
    jobs = [
        ExecutorJob(f"j{k}", 1, 100, RESNET18, iteration_time=0.909, duration=90.9)
        for k in range(4)
    ]
    ideal = Interleave("muri", factors=None)
    run = run_policy(jobs, "muri-s", nodes=1, gpus_per_node=1, interleave=ideal, restart=False)
    assert run.finished and run.groups == {4: 4}
    assert run.finish == {f"j{k}": pytest.approx(100 * 1.446) for k in range(4)}
    # SRTF runs them one after another at their own iteration time
    run = run_policy(jobs, "srtf", nodes=1, gpus_per_node=1, interleave=ideal, restart=False)
    assert sorted(run.finish.values()) == pytest.approx([90.9 * k for k in (1, 2, 3, 4)])


def test_restart_overheads_are_charged_on_intervals_between_events() -> None:
    # two 1-GPU jobs on one GPU under SRTF: the second waits; an interval that ends a job
    # is not charged, so only an interval cut by another event costs the overhead
    jobs = [
        ExecutorJob("a", 1, 10, RESNET18, iteration_time=1.0, duration=10, model="resnet18"),
        ExecutorJob("b", 1, 10, RESNET18, iteration_time=1.0, duration=10, model="resnet18",
                release=5.0),
    ]  # fmt: skip
    run = run_policy(jobs, "srtf", 1, 1, Interleave("muri", factors=None), restart=True)
    # at 5, a has run 5 s minus its 4 s overhead: 1 iteration, 9 left -> ends at 14;
    # b (10 left) waits, then runs alone to 24
    assert run.finish == {"a": pytest.approx(14.0), "b": pytest.approx(24.0)}


# The reproduced figures on the 40-job slice of trace3' (8 x 8 GPUs), pinned.
PINNED = {
    ("srtf", True): 1_232_236,
    ("srtf", False): 1_213_522,
    ("srsf", True): 1_239_401,
    ("srsf", False): 1_220_895,
    ("tiresias", True): 946_868,
    ("tiresias", False): 932_524,
    ("muri-s", True): 1_063_944,
    ("muri-s", False): 996_049,
    ("muri-l", True): 1_091_821,
    ("muri-l", False): 1_004_430,
}


@pytest.mark.parametrize(("policy", "real"), list(PINNED))
def test_the_policies_on_the_slice(policy: str, real: bool) -> None:
    jobs = read_trace(SLICE)
    model = Interleave("muri", factors=MURI_GROUP_FACTORS if real else None)
    run = run_policy(jobs, policy, interleave=model, restart=real)
    assert round(run.makespan) == PINNED[policy, real]
    again = run_policy(jobs, policy, interleave=model, restart=real)
    assert again.finish == run.finish  # deterministic


def test_cli_policy_on_a_cluster_form_instance(tmp_path: Path) -> None:
    runner = CliRunner()
    inst, out = tmp_path / "tr.json", tmp_path / "p.json"
    assert runner.invoke(app, ["import", "muri", str(SLICE), "-o", str(inst)]).exit_code == 0
    workload = jobs_from_instance(inst)
    assert (len(workload.jobs), workload.nodes, workload.gpus_per_node) == (40, 8, 8)
    assert workload.interleave == "fluid"  # import muri's default
    assert workload.jobs == [
        ExecutorJob(j.name, j.gpus, j.iterations, j.stages, j.iteration_time, j.iterations *
                j.iteration_time, j.model)
        for j in read_trace(SLICE)
    ]  # fmt: skip
    result = runner.invoke(
        app, ["policy", str(inst), "srtf", "--slowdown", "none", "--no-restart",
              "-o", str(out), "--interleave", "muri"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = lines(result.stdout)
    assert info["makespan"].startswith("1,213,522 s")
    assert info["model"] == "muri, no slowdown, no restart overhead (job-level executor)"
    assert json.loads(out.read_text())["makespan"] == pytest.approx(1_213_522, abs=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lifo"], "unknown policy 'lifo'; choose one of fifo, srtf, srsf, tiresias, muri-s, "
         "muri-l, lp-groups, srsf-pack, jct-groups, ftf-groups, fair-groups, "
        "het-srpt, het-makespan, grid-srtf, grid-srtf-events, batch-lpt, batch-srtf, batch-fifo, "
        "pollux-tiresias, pollux-optimus, pollux, goodput, goodput-pack; Gavel's gavel-fifo, "
        "gavel-max-min-fairness, "
        "gavel-min-total-duration, gavel-finish-time-fairness, each also -perf or -packed, and "
        "gavel-gandiva; Synergy's synergy-fifo, synergy-srtf and synergy-las, each -fair, "
        "-greedy or -tune; or FILE.py:CLASS"),
        (["srtf", "--interleave", "lru"], "interleave 'lru' is not one of fluid, muri, table"),
        (["srtf", "--nodes", "1", "--gpus-per-node", "2"], "job 'job0' needs 4 GPUs; "
         "the cluster has 2"),
        (["srtf", "--data-slots", "0"], "Invalid value for '--data-slots': Input "
         "should be greater than or equal to 0.1"),
        (["srtf", "--runs", "3"], "No such option: --runs (Possible options: --nodes, --noise)"),
    ],
)  # fmt: skip
def test_cli_policy_bad_input(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["policy", str(SLICE), *args])
    assert (result.exit_code, result.stderr) == (2, f"error: {message}\n")


def test_info_prints_the_bound_solve_and_run_print(tmp_path: Path) -> None:
    runner = CliRunner()
    inst = tmp_path / "slice.json"
    assert runner.invoke(app, ["import", "muri", str(SLICE), "-o", str(inst)]).exit_code == 0
    info = lines(runner.invoke(app, ["info", str(inst)]).stdout)
    workload = jobs_from_instance(inst)
    model = Setting().model(workload)
    bound, name = strongest_bound(workload.jobs, model, 8, 8)
    assert info["bound"] == (
        f"{bound:,.0f} s ({name}; in the executor's model: {Setting().line(model)}, planner "
        "solve's and run's)"
    )
    assert info["static bound"].endswith("the static block model, each block at one speed to "
                                         "its end)")  # fmt: skip
    ran = lines(runner.invoke(app, ["policy", str(inst), "lp-groups"]).stdout)
    assert ran["bound"] == f"{bound:,.0f} s ({name}, in this model)"


def test_a_plan_runs_job_by_job_on_its_gpu_sets() -> None:
    # three 8-GPU jobs planned on node 0 at 0 and one 4-GPU job on node 1 at 10 s: the first
    # takes node 0's GPUs, the next two join its set (a group of three under Muri's
    # rotation); the 4-GPU job runs alone on node 1 from its planned start
    jobs = [ExecutorJob(f"j{k}", 8, 100, RESNET18, 0.909, 90.9) for k in range(3)]
    jobs.append(ExecutorJob("k", 4, 100, GPT2, 0.4336, 43.36, release=10.0))
    plan = {"j0": (0,), "j1": (0,), "j2": (0,), "k": (1,)}
    model = Interleave("muri", factors=None)
    run = run_policy(jobs, "plan", 2, 8, model, restart=False, plan=plan)
    trio = muri_period([RESNET18] * 3)[0]
    assert run.finish == {
        "j0": pytest.approx(100 * trio),
        "j1": pytest.approx(100 * trio),
        "j2": pytest.approx(100 * trio),
        "k": pytest.approx(10 + 43.36),
    }
    # under fluid the trio shares node 0 at data 3 x 0.795 of one slot: 2.39 x slower each
    fluid = run_policy(
        jobs, "plan", 2, 8, Interleave("fluid", factors=None), restart=False, plan=plan
    )
    stretch = fluid_stretch([RESNET18] * 3)
    assert fluid.finish["j0"] == pytest.approx(100 * RESNET18.total * stretch)
    assert stretch == pytest.approx(3 * 0.723 / 0.909)


def test_a_fluid_plan_shares_single_gpus_across_gpu_counts() -> None:
    # a 2-GPU job (data 0.5, compute 0.5) and a 1-GPU job (0.2, 0.8) planned on one node
    # of 2 GPUs: the small job joins the GPU its shares fit best beside the big one's, and
    # that GPU's compute is asked 0.5 + 0.8 = 1.3: both slow 1.3x (the big one by its most
    # loaded GPU); under muri a set holds one GPU count, so the small job waits
    big = ExecutorJob("big", 2, 100, Stages(0.5, 0.5, 0.0), 1.0, 100.0)
    small = ExecutorJob("small", 1, 100, Stages(0.2, 0.8, 0.0), 1.0, 100.0)
    plan = {"big": (0,), "small": (0,)}
    run = run_policy(
        [big, small], "plan", 1, 2, Interleave("fluid", factors=None), restart=False, plan=plan
    )
    assert run.shared
    assert run.finish == {"big": pytest.approx(130.0), "small": pytest.approx(130.0)}
    rows = run.residences(["n"])
    assert [(r["job"], r["gpus"], r["partners"]) for r in rows] == [
        ("big", "n:0-1", ["small"]),
        ("small", "n:0", ["big"]),
    ]
    assert audit(run, [big, small], 2) == []
    muri = run_policy(
        [big, small], "plan", 1, 2, Interleave("muri", factors=None), restart=False, plan=plan
    )
    assert muri.finish["small"] == pytest.approx(200.0)
    # the audit recomputes the co-residents from the GPUs alone
    (t, entries), *rest = run.trace
    (names, cost, where), other = entries
    alone = [((names[0],), cost, where), other]
    wrong = audit(replace(run, trace=[(t, alone), *rest]), [big, small], 2)
    assert wrong[0] == "at 0 s: 'big' is not with the jobs on its GPUs"
    crowded = [(("big", "small"), cost, ((0, (0, 1, 2)),)), other]
    wrong = audit(replace(run, trace=[(t, crowded), *rest]), [big, small], 2)
    assert wrong[0] == "at 0 s: 'big' on GPUs 0:0-2, taken, down or outside the cluster"


def test_a_plan_on_nodes_the_cluster_lacks_is_refused() -> None:
    jobs = [ExecutorJob("j", 16, 10, RESNET18, 0.909, 9.09)]
    with pytest.raises(InputError, match=r"^job 'j': the plan puts it on nodes \[0\]; it needs 2 "):
        run_policy(jobs, "plan", 2, 8, Interleave("muri", factors=None), plan={"j": (0,)})


def test_cli_executes_a_placed_plan_under_a_model(tmp_path: Path) -> None:
    runner = CliRunner()
    inst, plan = tmp_path / "placed.json", tmp_path / "plan.json"
    args = ["import", "muri", str(SLICE), "--placement", "node", "-o", str(inst)]
    assert runner.invoke(app, args).exit_code == 0
    solved = runner.invoke(app, ["solve", str(inst), "-s", "sgs", "--static", "-o", str(plan)])
    assert solved.exit_code == 0
    result = runner.invoke(
        app, ["run", str(inst), str(plan), "--interleave", "muri", "--slowdown", "none",
              "--no-restart"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = lines(result.stdout)
    assert info["model"] == "muri, no slowdown, no restart overhead (job-level executor)"
    assert info["makespan"].endswith("x bound)")
    executed = float(info["makespan"].split()[0].replace(",", ""))
    # solve prints the plan's execution as simulate runs it by default
    fluid = runner.invoke(app, ["run", str(inst), str(plan)])
    assert lines(solved.stdout)["executed"].startswith(
        f"{lines(fluid.stdout)['makespan'].split()[0]} s (fluid, 1 data slot per GPU, Muri's "
    )
    planned = float(info["plan"].split("(makespan ")[1].split()[0].replace(",", ""))
    assert info["optimism"] == f"{executed / planned:.3f} (executed / planned makespan)"
    bad = runner.invoke(app, ["run", str(inst), "--interleave", "muri"])
    assert bad.stderr == "error: Missing argument 'plan'.\n"


def test_the_instance_names_its_model_and_the_option_overrides_it(tmp_path: Path) -> None:
    runner = CliRunner()
    inst = tmp_path / "muri.json"
    args = ["import", "muri", str(SLICE), "--interleave", "muri", "-o", str(inst)]
    assert runner.invoke(app, args).exit_code == 0
    assert lines(runner.invoke(app, ["info", str(inst)]).stdout)["interleave"] == "muri"
    own = lines(runner.invoke(app, ["policy", str(inst), "muri-l"]).stdout)
    assert own["model"] == "muri, Muri's slowdown factors, restart overheads (job-level executor)"
    other = runner.invoke(
        app, ["policy", str(inst), "muri-l", "--interleave", "fluid",
              "--data-slots", "2"],
    )  # fmt: skip
    model = (
        "fluid, 2 data slots per GPU, Muri's slowdown factors, restart overheads "
        "(job-level executor)"
    )
    assert lines(other.stdout)["model"] == model
    assert lines(other.stdout)["makespan"] != own["makespan"]
    plain = tmp_path / "plain.json"  # import muri's default model: fluid
    assert runner.invoke(app, ["import", "muri", str(SLICE), "-o", str(plain)]).exit_code == 0
    default = lines(runner.invoke(app, ["policy", str(plain), "muri-l"]).stdout)
    assert default["model"] == (
        "fluid, 1 data slot per GPU, Muri's slowdown factors, restart overheads "
        "(job-level executor)"
    )


def test_the_audit_passes_every_run_and_catches_a_wrong_one() -> None:
    from planner.executor.policies import where_label

    jobs = read_trace(SLICE)
    for policy in ("srtf", "tiresias", "muri-s", "muri-l"):
        run = run_policy(jobs, policy)
        assert audit(run, jobs, 64) == []
    run = run_policy(jobs, "muri-s")
    early = dict(run.finish, job0=run.finish["job0"] - 1000)
    assert any("job 'job0'" in w for w in audit(replace(run, finish=early), jobs, 64))
    t, groups = run.trace[0]
    crowded = [(tuple(n for names, _, _ in groups for n in names)[:5], 0.0, ()), *groups]
    wrong = audit(replace(run, trace=[(t, crowded), *run.trace[1:]]), jobs, 64)
    assert any("5 jobs share one GPU set" in w for w in wrong)
    assert any(w.startswith("at 0 s: groups hold ") for w in audit(run, jobs, 8))
    (a, cost, where), (b, cost_b, _), *rest = groups
    stacked = [(a, cost, where), (b, cost_b, where), *rest]
    wrong = audit(replace(run, trace=[(t, stacked), *run.trace[1:]]), jobs, 64)
    label = where_label(where)
    assert wrong[0] == f"at 0 s: {list(b)} on GPUs {label}, taken, down or outside the cluster"


def test_policies_refuse_what_is_not_a_training_workload() -> None:
    sm = INSTANCES / "psplib" / "j301_1.sm"
    result = CliRunner().invoke(app, ["policy", str(sm), "srtf"])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {sm}: peer policies and plans under a model run training jobs: give a Muri "
        "trace (.csv) or a cluster-form instance (.json, .yaml)\n",
    )


def test_noise_scales_each_job_by_one_seeded_factor() -> None:
    from planner.disturbances import Noise
    from planner.executor.model.jobs import with_noise

    jobs = read_trace(SLICE)
    noisy = with_noise(jobs, Noise("uniform", 0.3), seed=4)
    assert noisy == with_noise(jobs, Noise("uniform", 0.3), seed=4)
    assert noisy != with_noise(jobs, Noise("uniform", 0.3), seed=5)
    for j, n in zip(jobs, noisy, strict=True):
        f = n.iteration_time / j.iteration_time
        assert 0.7 <= f <= 1.3
        assert n.stages.total == pytest.approx(j.stages.total * f)
    result = CliRunner().invoke(
        app, ["policy", str(SLICE), "muri-s", "--noise", "uniform:0.3", "--seed", "4"]
    )
    assert result.exit_code == 0, result.output
    assert lines(result.stdout)["noise"] == "uniform:0.3, seed 4 (one factor per job)"
    run = run_policy(noisy, "muri-s")
    assert lines(result.stdout)["makespan"].startswith(f"{run.makespan:,.0f} s")


ONE = Stages(data=0.2, gpu=0.6, sync=0.2)  # 1 s per iteration alone


@pytest.mark.parametrize(
    ("nodes", "finish", "stays"),
    [
        (1, 1050.0, [("node1:0-7", 0.0), ("node1:0-7", 150.0)]),
        (2, 1000.0, [("node1:0-7", 0.0), ("node2:0-7", 100.0), ("node1:0-7", 150.0)]),
    ],
)
def test_a_failure_stops_the_jobs_of_its_node_and_srtf_moves_them(
    nodes: int, finish: float, stays: list[tuple[str, float]]
) -> None:
    # node 0 is down over [100, 150): alone, the job waits for it; with a second node it
    # moves there at 100 s, keeping its 100 iterations, and back at 150 s (first-fit
    # places every job anew at every event, as Muri's simulator does)
    jobs = [ExecutorJob("j", 8, 1000, ONE, 1.0, 1000.0)]
    model = Interleave("fluid", factors=None)
    run = run_policy(jobs, "srtf", nodes, 8, model, restart=False, outages=[(0, 100.0, 150.0)])
    assert run.finish == {"j": pytest.approx(finish)}
    rows = run.residences(("node1", "node2"))
    assert [(r["gpus"], r["start"]) for r in rows] == stays
    from planner.executor.audit import audit

    assert audit(run, jobs, nodes * 8) == []


def test_a_plan_waits_for_its_node_and_names_its_gpus() -> None:
    # two 4-GPU jobs planned on node 0: each on its own four GPUs; node 0 fails at 100 s
    # for 50 s, and the plan keeps both there, so they end 50 s late; a restart costs
    # each job its overhead (10 s, a model the catalog does not know) on every interval
    jobs = [ExecutorJob(f"j{k}", 4, 1000, ONE, 1.0, 1000.0) for k in range(2)]
    plan = {"j0": (0,), "j1": (0,)}
    model = Interleave("fluid", factors=None)
    run = run_policy(jobs, "plan", 2, 8, model, False, plan=plan, outages=[(0, 100.0, 150.0)])
    assert run.finish == {"j0": pytest.approx(1050.0), "j1": pytest.approx(1050.0)}
    assert [(r["job"], r["gpus"], r["start"], r["end"]) for r in run.residences()] == [
        ("j0", "0:0-3", 0.0, 100.0),
        ("j1", "0:4-7", 0.0, 100.0),
        ("j0", "0:0-3", 150.0, pytest.approx(1050.0)),
        ("j1", "0:4-7", 150.0, pytest.approx(1050.0)),
    ]
    paid = run_policy(jobs, "plan", 2, 8, model, True, plan=plan, outages=[(0, 100.0, 150.0)])
    assert paid.finish["j0"] == pytest.approx(1050.0 + 10.0)


def test_the_audit_refuses_a_group_on_a_node_down() -> None:
    from dataclasses import replace

    from planner.executor.audit import audit

    jobs = [ExecutorJob("j", 8, 1000, ONE, 1.0, 1000.0)]
    run = run_policy(jobs, "srtf", 1, 8, Interleave("fluid", factors=None), restart=False)
    down = replace(run, outages=((0, 0.0, 20.0),))
    assert audit(down, jobs, 8) == [
        "at 0 s: ['j'] on GPUs 0:0-7, taken, down or outside the cluster",
        "at 0 s: groups hold 8 GPUs of 8, 1 nodes down",
    ]


def test_cli_fails_nodes_of_a_job_level_run(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    args = ["policy", str(SLICE), "srtf", "--fail", "node3@1000+5000", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert lines(result.stdout)["failures"] == "node3@1000+5000"
    run = json.loads(out.read_text())
    assert run["failures"] == ["node3@1000+5000"]
    during = [r for r in run["residences"] if r["gpus"].startswith("node3:")]
    assert during and all(r["end"] <= 1000 or r["start"] >= 6000 for r in during)
    bad = ["policy", str(SLICE), "srtf", "--fail", "node9@10"]
    result = CliRunner().invoke(app, bad)
    assert (result.exit_code, result.stderr) == (
        2,
        "error: failure node9@10: no node 'node9'; the nodes are node1 .. node8\n",
    )


def test_solve_says_why_a_plan_cannot_run_job_by_job(tmp_path: Path) -> None:
    # the only job is faster in its 8-GPU alternative, which spans both nodes: the
    # job-level executor runs a job in its base configuration (4 GPUs, one node)
    inst = tmp_path / "alt.yaml"
    inst.write_text(
        "time_unit: 1min\nplacement: node\ncluster:\n  nodes:\n"
        "    - {name: node, count: 2, gpu: 4, cpu: 32, io: 4, net: 4}\njobs:\n"
        "  - {name: big, gpus: 4, iterations: 1000, stages: {data: 1, gpu: 4, sync: 0.1},\n"
        "     alternatives: [{gpus: 8, stages: {data: 0.5, gpu: 2, sync: 0.1}}]}\n"
    )
    result = CliRunner().invoke(app, ["solve", str(inst), "-s", "cpsat", "--static"])
    assert result.exit_code == 0, result.output
    assert lines(result.stdout)["executed"] == (
        "- (the executor cannot run the plan: job 'big': the plan puts it on nodes [0, 1]; it "
        "needs 1 of the cluster's 2)"
    )


def test_the_models_defaults_are_the_same_whichever_way_they_are_reached() -> None:
    # Interleave("muri") carries Muri's factors, as run_policy's default and the CLI do
    jobs = read_trace(SLICE)
    assert Interleave("muri").factors == MURI_GROUP_FACTORS
    default = run_policy(jobs, "muri-s")
    explicit = run_policy(jobs, "muri-s", interleave=Interleave("muri"))
    assert explicit.makespan == default.makespan
    ideal = run_policy(jobs, "muri-s", interleave=Interleave("muri", factors=None))
    assert ideal.makespan < default.makespan

"""Elastic jobs (issue 55): Pollux's job model, ``planner import pollux``, elastic jobs in
the executor and its audit, and Pollux's Tiresias in 60-second rounds."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.dl.pollux import GoodputModel, application, fit_perf_params
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.model.elastic import Elastic, Hybrid, Plan, elastic_figures
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance
from planner.interleave import Interleave, Stages
from tests.conftest import INSTANCES, lines

CATALOG = Path(planner.__file__).parent / "dl" / "catalog" / "pollux"
WORKLOAD = INSTANCES / "pollux" / "workload-6.csv"
"""Pollux's workload-6 (160 jobs), as its artifact ships it."""
ALONE = Interleave("fluid", max_colocated=1, factors=None)


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def rows(name: str, **match: str) -> list[dict[str, str]]:
    with (CATALOG / name).open() as f:
        return [r for r in csv.DictReader(f) if all(r[k] == v for k, v in match.items())]


def test_goodput_by_hand_for_one_batch_size() -> None:
    # cifar10 on one node of 4 GPUs at local batch 64 (total 256) in epoch 3: the measured
    # step, and the gain from the gradient statistics measured at batch size 256
    app = application("cifar10")
    (row,) = rows("profiles_placements.csv", model="cifar10", placement="4", local_bsz="64")
    stats = rows("profiles_validation.csv", model="cifar10", batch_size="256", epoch="3")[0]
    sqr, var = float(stats["grad_sqr"]), float(stats["grad_var"])
    gain = (var + sqr) / (var / (256 / 128) + sqr)
    assert app.gain(256, 3) == pytest.approx(gain, rel=1e-12)
    step, sync = float(row["step_time"]), float(row["sync_time"])
    assert app.step_times((4,), 64) == pytest.approx((step, sync))
    assert app.goodput((4,), 64, 0, 3) == pytest.approx(gain / step)
    # two accumulation steps: the step's compute thrice, its synchronisation once
    gain3 = app.gain(3 * 256, 3)
    assert app.goodput((4,), 64, 2, 3) == pytest.approx(gain3 / (step + 2 * (step - sync)))


def test_gradient_statistics_are_linear_between_validated_batch_sizes() -> None:
    app = application("cifar10")
    lo = rows("profiles_validation.csv", model="cifar10", batch_size="256", epoch="10")[0]
    hi = rows("profiles_validation.csv", model="cifar10", batch_size="512", epoch="10")[0]
    mid = [(float(lo[c]) + float(hi[c])) / 2 for c in ("grad_sqr", "grad_var")]
    assert app.grad_stats(384, 10) == pytest.approx(tuple(mid))
    with pytest.raises(InputError) as err:
        app.grad_stats(8192, 0)
    assert str(err.value) == "cifar10: batch size 8192 outside the validated 128..4096"


def test_a_fixed_batch_config_is_pollux_simulators() -> None:
    app = application("cifar10")  # local batch at most 1024
    assert app.config(6, 2048) == (342, 0)  # ceil(2048 / 6)
    assert app.config(1, 2048) == (1024, 1)  # 2 steps of 1024 on one GPU
    assert app.config(1, 128) == (128, 0)
    assert application("bert").config(1, 384) == (12, 31)  # 32 steps of 12


def one(app: str, gpus: int, batch: int, release: float = 0.0) -> ExecutorJob:
    model = application(app)
    return ExecutorJob(f"{app}-{gpus}", gpus, model.target_progress, Stages(0, 1, 0), 1.0, 1.0,  # type: ignore[arg-type]
                   release=release, restart=model.rescale_time,
                   elastic=Elastic(app, batch))  # fmt: skip


def test_a_job_alone_runs_its_epochs_at_their_goodput() -> None:
    # Pollux's Tiresias starts it at the round after its release (60 s), it rescales 30 s,
    # then runs every epoch at that epoch's goodput on its 4 GPUs of one node
    job = one("cifar10", 4, 512, release=10.0)
    result = planner.run_policy([job], "pollux-tiresias", nodes=1, gpus_per_node=4,
                                interleave=ALONE)  # fmt: skip
    assert audit(result, [job], 4) == []
    app = application("cifar10")
    atomic, accum = app.config(4, 512)
    seconds = sum(
        (app.progress_at(e + 1) - app.progress_at(e)) / app.goodput((4,), atomic, accum, e)
        for e in range(app.max_epochs)
    )
    assert result.finish[job.name] == pytest.approx(60 + 30 + seconds)
    first = next(k for k, c in enumerate(result.configs) if c)
    assert result.trace[first][0] == 60.0  # it waited from 10 s to the round at 60 s
    assert result.configs[first] == {job.name: (128, 0)}


def test_the_audit_refuses_a_run_at_another_configuration() -> None:
    job = one("bert", 2, 48)
    result = planner.run_policy([job], "pollux-tiresias", nodes=1, gpus_per_node=4,
                                interleave=ALONE)  # fmt: skip
    assert audit(result, [job], 4) == []
    tampered = dataclasses.replace(result, configs=[{job.name: (12, 0)}] * len(result.configs))
    (wrong,) = audit(tampered, [job], 4)
    assert wrong.startswith(f"job {job.name!r} finished at ")


def test_pollux_tiresias_demotes_after_16_gpu_hours_and_places_on_the_freest_node() -> None:
    # imagenet on 4 GPUs passes 16 GPU-hours after 4 hours; a later job of one GPU then
    # goes first (the first queue) and takes GPUs of the freest node
    long = one("imagenet", 4, 800)
    short = one("cifar10", 1, 128, release=4.5 * 3600)
    result = planner.run_policy([long, short], "pollux-tiresias", nodes=2, gpus_per_node=4,
                                interleave=ALONE)  # fmt: skip
    assert audit(result, [long, short], 8) == []
    first = next(groups for t, groups in result.trace if any(short.name in g[0] for g in groups))
    where = dict((g[0][0], g[2]) for g in first)
    assert where[long.name] == ((0, (0, 1, 2, 3)),)
    assert where[short.name] == ((1, (0,)),)


def test_import_pollux_writes_elastic_jobs(tmp_path: Path) -> None:
    out = tmp_path / "w6.yaml"
    code, said, err = run("import", "pollux", WORKLOAD, "-o", out)
    assert (code, err) == (0, "")
    assert said == f"{WORKLOAD} -> {out} (160 elastic jobs, 160 tasks)\n"
    workload = jobs_from_instance(out)
    first = workload.jobs[0]
    assert (first.name, first.gpus, first.release, first.restart) == ("cifar10-0", 6, 53.0, 30.0)
    assert first.elastic == Elastic("cifar10", 2048)
    assert first.iterations == application("cifar10").target_progress
    assert (workload.nodes, workload.gpus_per_node) == (16, 4)


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("name,time,application\nx,0,cifar10\n", (), "not a Pollux workload: no column "
         "'num_replicas' (columns: name, time, application, num_replicas, batch_size)"),
        ("name,time,application,num_replicas,batch_size\nx,0,gpt3,1,8\n", (),
         "unknown application 'gpt3'; Pollux's: bert, cifar10, deepspeech2, imagenet, ncf, "
         "yolov3"),
        ("name,time,application,num_replicas,batch_size\nx,0,cifar10,1,8\n", ("--workload",
         "workload-1"), "--workload: the file holds one workload"),
        ("set,workload,name,time,application,num_replicas,batch_size\n"
         "workloads,workload-1,x,0,cifar10,1,128\n", (), "a file of several workloads: pick "
         "one with --workload"),
        ("set,workload,name,time,application,num_replicas,batch_size\n"
         "workloads,workload-1,x,0,cifar10,1,128\n", ("--workload", "workload-2"),
         "no workload 'workload-2' in the file"),
        ("name,time,application,num_replicas,batch_size\nx,0,cifar10,1,99999\n", (),
         "elastic.batch_size 99999: cifar10 runs at 128 to 4096"),
    ],
)  # fmt: skip
def test_bad_pollux_workloads_are_one_line(
    tmp_path: Path, text: str, extra: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "w.csv"
    path.write_text(text)
    code, _, err = run("import", "pollux", path, "-o", tmp_path / "out.yaml", *extra)
    assert code == 2 and err.startswith("error: ") and message in err, err
    assert not (tmp_path / "out.yaml").exists()


def test_solve_runs_the_elastic_policies_on_pollux_jobs(tmp_path: Path) -> None:
    out = tmp_path / "w6.yaml"
    assert run("import", "pollux", WORKLOAD, "-o", out)[0] == 0
    code, said, err = run("solve", out, "--slowdown", "none", "--time-limit", 5)
    assert code == 0, err
    rows = lines(said)  # the first policy runs to its end, the others while time is left
    assert rows["solver"].startswith("portfolio (elastic jobs, their policies in the "
                                     "executor's model: goodput-pack")  # fmt: skip
    assert rows["audit"].startswith("valid")
    mixed = tmp_path / "mixed.json"
    data = _hybrid_instance([_plan(4, 1, 0.3, 12)])
    data["jobs"].append({"name": "fixed", "gpus": 1, "stages": {"data": 0, "gpu": 1},
                         "iterations": 10})  # fmt: skip
    mixed.write_text(json.dumps(data))
    code, _, err = run("solve", mixed)
    assert (code, err) == (2, "error: elastic and fixed jobs together: their policies run "
                              "elastic jobs only\n")  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "mean", "makespan"),
    [("pollux-tiresias", 3469.7, 78556), ("pollux-optimus", 5301.9, 66246)],
)
def test_pollux_baselines_on_workload_6_are_pollux_simulators(
    tmp_path: Path, policy: str, mean: float, makespan: float
) -> None:
    # Pollux's simulator (its README: Tiresias run here, Optimus the authors'): within 1%
    out = tmp_path / "w6.yaml"
    assert run("import", "pollux", WORKLOAD, "-o", out)[0] == 0
    code, said, _ = run("policy", out, policy, "--slowdown", "none")
    assert code == 0
    got = lines(said)
    assert got["audit"].startswith("valid")
    assert math.isclose(float(got["mean JCT"].split()[0].replace(",", "")), mean, rel_tol=0.01)
    assert math.isclose(float(got["makespan"].split()[0].replace(",", "")), makespan,
                        rel_tol=0.01)  # fmt: skip
    assert got["bound"] == "- (elastic jobs: their speed is the policy's choice; not bounded)"


def test_the_elastic_policies_refuse_fixed_jobs() -> None:
    fixed = ExecutorJob("a", 1, 10, Stages(0, 1, 0), 1.0, 10.0)
    for policy in ("pollux-tiresias", "pollux-optimus", "goodput"):
        with pytest.raises(InputError) as err:
            planner.run_policy([fixed], policy, nodes=1, gpus_per_node=4, interleave=ALONE)
        assert str(err.value) == (f"policy {policy} runs elastic jobs (planner import pollux "
                                  "writes them); job 'a' is not")  # fmt: skip


def test_only_resizing_reaches_the_best_mean_jct_of_two_jobs() -> None:
    # a cifar10 and a bert job on one node of 4 GPUs: every fixed GPU count of each (run
    # together where they fit, else one after the other) against goodput, which gives
    # the GPUs to the shorter job first and all four to the other once it ends
    def job(app: str, gpus: int) -> ExecutorJob:
        model = application(app)
        return ExecutorJob(f"{app}", gpus, model.target_progress, Stages(0, 1, 0), 1.0, 1.0,  # type: ignore[arg-type]
                       restart=model.rescale_time, elastic=Elastic(app))  # fmt: skip

    fixed = []
    for n in range(1, 5):
        for m in range(1, 5):
            jobs = [job("cifar10", n), job("bert", m)]
            result = planner.run_policy(jobs, "pollux-tiresias", nodes=1, gpus_per_node=4,
                                        interleave=ALONE)  # fmt: skip
            assert audit(result, jobs, 4) == []
            fixed.append(result.mean_jct)
    jobs = [job("cifar10", 1), job("bert", 1)]
    elastic = planner.run_policy(jobs, "goodput", nodes=1, gpus_per_node=4, interleave=ALONE)
    assert audit(elastic, jobs, 4) == []
    assert elastic.mean_jct < 0.9 * min(fixed)
    figures = elastic_figures(elastic.trace, {"cifar10", "bert"})
    assert figures is not None and figures.resizes["bert"] >= 1 and figures.most == 4


def test_pollux_goodput_function_against_hand_computed_values() -> None:
    # T = s (a_c + b_c b) + ((a_c + b_c b)^g + T_net^g)^(1/g); 2 nodes, 8 replicas, local
    # batch 32, 1 accumulation step: T_net = a_n + b_n (8 - 2)
    params = (0.01, 0.001, 0.05, 0.002, 0.02, 0.001, 2.0)
    model = GoodputModel(params, sqr=1.0, var=3.0, init=128)
    compute = 0.01 + 0.001 * 32
    network = 0.05 + 0.002 * 6
    step = 1 * compute + math.sqrt(compute**2 + network**2)
    batch = 8 * 32 * 2
    assert model.throughput(np.array(2), np.array(8), np.array(32), np.array(1)) == \
        pytest.approx(batch / step)  # fmt: skip
    gain = (3.0 + 1.0) / (3.0 / (batch / 128) + 1.0)
    assert model.efficiency(np.array(batch)) == pytest.approx(gain / (batch / 128))
    # within a node: the intra-node terms; one replica: no network to speak of
    assert model.throughput(np.array(1), np.array(4), np.array(32), np.array(0)) == \
        pytest.approx(4 * 32 / math.sqrt(compute**2 + (0.02 + 0.001 * 2) ** 2))  # fmt: skip
    goodput, atomic, accum = model.optimize(np.array([1]), np.array([1]), 4096, (32, 1024))
    assert 32 <= atomic[0] <= 1024 and accum[0] >= 0 and goodput[0] > 0


def test_a_fit_recovers_the_parameters_of_its_points() -> None:
    params = (0.02, 0.0005, 0.08, 0.004, 0.03, 0.002, 1.5)
    truth = GoodputModel(params, 1.0, 1.0, 128)
    points = {}
    for nodes, replicas, local in [(1, 1, 64), (1, 2, 64), (1, 4, 128), (2, 8, 64), (4, 16, 32),
                                   (1, 3, 256), (2, 6, 128)]:  # fmt: skip
        compute = params[0] + params[1] * local
        optim = replicas * local / truth.throughput(np.array(nodes), np.array(replicas),
                                                    np.array(local), np.array(0))  # fmt: skip
        points[(nodes, replicas, local)] = (float(optim), float(optim - compute))
    fitted = GoodputModel(fit_perf_params(points), 1.0, 1.0, 128)
    for (nodes, replicas, local), (step, _) in points.items():
        got = replicas * local / fitted.throughput(np.array(nodes), np.array(replicas),
                                                   np.array(local), np.array(0))  # fmt: skip
        assert got == pytest.approx(step, rel=0.05)


def test_pollux_learns_and_runs_elastic_jobs_audited() -> None:
    jobs = [one("cifar10", 1, 128), one("bert", 1, 12, release=30.0), one("ncf", 1, 32768)]
    result = planner.run_policy(jobs, "pollux", nodes=2, gpus_per_node=4, interleave=ALONE)
    assert result.finished and audit(result, jobs, 8) == []
    configs = {c[jobs[0].name] for c in result.configs if jobs[0].name in c}
    assert len(configs) > 1  # it chose other batches as it learned
    ncf = [c[jobs[2].name] for c in result.configs if jobs[2].name in c]
    assert all(atomic * (accum + 1) == 32768 for atomic, accum in ncf)  # on one GPU


def test_info_and_online_say_what_they_do_with_elastic_jobs(tmp_path: Path) -> None:
    out = tmp_path / "w6.yaml"
    assert run("import", "pollux", WORKLOAD, "-o", out)[0] == 0
    code, said, _ = run("info", out)
    got = lines(said)
    assert code == 0 and "bound" not in got
    assert got["elastic"] == ("160 jobs: GPUs and batch sizes are their policy's choice (no "
                              "bound under the interleaving models)")  # fmt: skip
    assert got["static bound"].endswith(
        "ticks; of the static block model, each job on its own GPUs at its stages, a Pollux "
        "job at its first epoch's speed; not of elastic runs)"
    )
    code, _, err = run("online", out)
    assert (code, err) == (2, "error: elastic jobs are run by the executor's policies (planner "
                              "policy INSTANCE goodput); the online planner does not plan them "
                              "yet\n")  # fmt: skip


HYBRID = INSTANCES / "hybrid" / "gpt.yaml"


def _plan(data: int, pipeline: int, gpu: float, mem: int) -> dict[str, object]:
    return {"data": data, "pipeline": pipeline, "stages": {"data": 0, "gpu": gpu},
            "gpu_mem_per_gpu": mem}  # fmt: skip


def _hybrid_job(plans: list[dict[str, object]], gpus: int = 4) -> dict[str, object]:
    return {"name": "gpt", "gpus": gpus, "stages": {"data": 0, "gpu": 1, "sync": 0},
            "iterations": 1000, "restart": 30, "parallel_plans": plans}  # fmt: skip


def _hybrid_instance(plans: list[dict[str, object]], gpus: int = 4) -> dict[str, object]:
    return {"interleave": "fluid",
            "cluster": {"nodes": [{"name": "n", "count": 2, "gpu": 4, "gpu_mem": 64}]},
            "jobs": [_hybrid_job(plans, gpus)]}  # fmt: skip


def test_a_plan_that_does_not_fit_in_memory_is_refused(tmp_path: Path) -> None:
    # 16 GB GPUs: the job's only plans on its 4 GPUs need 22 and 18 GB per GPU
    plans = [_plan(4, 1, 0.4, 22), _plan(2, 2, 0.6, 18), _plan(1, 2, 1.8, 13)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_hybrid_instance(plans)))
    with pytest.raises(InputError) as err:
        jobs_from_instance(path)
    assert str(err.value) == (
        f"{path}: jobs[0].parallel_plans: job 'gpt': no parallel plan on its 4 GPUs fits a "
        "GPU's 16 GB (the least needs 18 GB per GPU)"
    )
    code, _, err_text = run("policy", path, "goodput")
    assert code == 2 and err_text.strip().endswith("(the least needs 18 GB per GPU)")


def test_parallel_plans_are_checked_where_they_are_read(tmp_path: Path) -> None:
    path = tmp_path / "none.json"
    path.write_text(json.dumps(_hybrid_instance([{"data": 2, "stages": {"data": 0, "gpu": 1}}])))
    code, _, err = run("policy", path, "goodput")
    assert code == 2
    assert "parallel_plans: none has the job's 4 GPUs (data x pipeline x tensor: 2x1x1 (2))" in err


def test_goodput_chooses_plan_and_gpus_together_within_memory(tmp_path: Path) -> None:
    # alone on 2 x 4 GPUs of 16 GB: the fastest plan (4x1x1, 0.3 s) needs 22 GB, so the
    # job runs 4x2x1 on all eight GPUs (0.35 s, 12 GB) from the start: its 30 s of
    # restart where it is first placed, then 1000 x 0.35 s
    plans = [_plan(4, 1, 0.3, 22), _plan(2, 2, 0.6, 12), _plan(4, 2, 0.35, 12)]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_hybrid_instance(plans)))
    jobs = jobs_from_instance(path).jobs
    result = planner.run_policy(jobs, "goodput", nodes=2, gpus_per_node=4, interleave=ALONE)
    assert audit(result, jobs, 8) == []
    assert result.finish["gpt"] == pytest.approx(30 + 350.0)
    assert {c["gpt"] for c in result.configs if c} == {(2, 0)}
    fixed = planner.run_policy(jobs, "fifo", nodes=2, gpus_per_node=4, interleave=ALONE)
    assert fixed.finish["gpt"] == pytest.approx(30 + 600.0)  # its own 4 GPUs: 2x2x1 fits


def test_the_audit_refuses_a_plan_off_its_gpus_or_its_memory() -> None:
    jobs = jobs_from_instance(HYBRID).jobs
    model = Interleave("fluid", max_colocated=1, factors=None, gpu_memory=16.0)
    result = planner.run_policy(jobs, "goodput", nodes=2, gpus_per_node=4, interleave=model)
    assert audit(result, jobs, 8) == []
    k = next(i for i, c in enumerate(result.configs) if "gpt-1b" in c)
    at = result.trace[k][0]
    gpus = next(sum(len(ids) for _, ids in w) for names, _, w in result.trace[k][1]
                if "gpt-1b" in names)  # fmt: skip
    spec = jobs[0].elastic
    too_big = next(i for i, p in enumerate(spec.plans) if p.label == "4x1x1")  # 22 GB
    other = next(i for i, p in enumerate(spec.plans) if p.gpus != gpus and spec.fits(p))
    memory = "need 22 GB of each GPU's memory with their plans; a GPU has 16 GB"
    for plan, wrong in ((too_big, memory), (other, f"runs plan {spec.plans[other].label}")):
        configs = [dict(c) for c in result.configs]
        configs[k]["gpt-1b"] = (plan, 0)
        found = audit(dataclasses.replace(result, configs=configs), jobs, 8)
        assert any(line.startswith(f"at {at:g} s:") and wrong in line for line in found)


def test_info_says_a_hybrid_jobs_plan_is_its_policys_choice() -> None:
    code, said, _ = run("info", HYBRID)
    assert code == 0 and lines(said)["elastic"] == (
        "4 jobs: GPUs and parallel plans are their policy's choice (no bound under the "
        "interleaving models)"
    )


def test_hybrid_jobs_under_goodput_beat_their_fixed_plans() -> None:
    jobs = jobs_from_instance(HYBRID).jobs
    model = Interleave("fluid", max_colocated=1, factors=None, gpu_memory=16.0)
    results = {p: planner.run_policy(jobs, p, nodes=2, gpus_per_node=4, interleave=model)
               for p in ("goodput", "fifo", "srtf")}  # fmt: skip
    for result in results.values():
        assert audit(result, jobs, 8) == []
    assert results["goodput"].mean_jct < min(
        r.mean_jct for p, r in results.items() if p != "goodput"
    )
    with pytest.raises(InputError) as err:
        planner.run_policy(jobs, "pollux", nodes=2, gpus_per_node=4, interleave=model)
    assert str(err.value) == ("policy pollux runs Pollux's elastic jobs; job 'gpt-1b' is "
                              "hybrid-parallel (run it with goodput)")  # fmt: skip
    with pytest.raises(InputError) as err:
        planner.run_policy(jobs, "tiresias", nodes=2, gpus_per_node=4, interleave=model)
    assert str(err.value).startswith("policy tiresias counts GPUs without placing them")


def test_generate_hybrid_writes_jobs_whose_own_plan_fits(tmp_path: Path) -> None:
    out = tmp_path / "h.yaml"
    code, text, _ = run("generate", "--hybrid", "--jobs", 12, "--seed", 3, "--nodes", 2,
                        "--gpus-per-node", 8, "--gpu-memory", 16, "-o", out)  # fmt: skip
    assert code == 0 and text == f"wrote {out} (12 hybrid-parallel jobs, 12 tasks)\n"
    workload = jobs_from_instance(out)
    assert len(workload.jobs) == 12 and workload.gpu_memory == 16
    for job in workload.jobs:
        spec = job.elastic
        assert isinstance(spec, Hybrid) and spec.best(job.gpus)[1] >= 0
    too_big = [p for j in workload.jobs for p in j.elastic.plans if not j.elastic.fits(p)]
    assert too_big  # memory decides: some plans never run
    again = tmp_path / "again.yaml"
    run("generate", "--hybrid", "--jobs", 12, "--seed", 3, "--nodes", 2, "--gpus-per-node", 8,
        "-o", again)  # fmt: skip
    assert again.read_text() == out.read_text()
    result = planner.run_policy(list(workload.jobs), "goodput", nodes=2, gpus_per_node=8,
                                interleave=Interleave("fluid", max_colocated=1, factors=None,
                                                      gpu_memory=16.0))  # fmt: skip
    assert audit(result, list(workload.jobs), 16) == [] and len(result.finish) == 12


def test_generate_hybrid_refuses_what_it_cannot_honour(tmp_path: Path) -> None:
    code, _, err = run("generate", "--hybrid", "--blocks", 2, "-o", tmp_path / "h.yaml")
    assert code == 2
    assert err == "error: --hybrid: the jobs are elastic; give no --blocks nor --placement\n"
    code, _, err = run("generate", "--hybrid", "--nodes", 1, "--gpus-per-node", 1,
                       "--gpu-memory", 4, "-o", tmp_path / "h.yaml")  # fmt: skip
    assert code == 2 and err == (
        "error: no generated model fits GPUs of 4 GB on 1 x 1 GPUs (the smallest, 0.35B "
        "parameters, needs more memory or GPUs)\n"
    )


def _one_plan_job(name: str, data: float, gpu: float) -> ExecutorJob:
    stages = Stages(data, gpu, 0.0)
    return ExecutorJob(name=name, gpus=1, iterations=100, stages=stages,
                       iteration_time=stages.total, duration=100 * stages.total,
                       elastic=Hybrid((Plan("1x1x1", 1, stages),), 1))  # fmt: skip


def test_goodput_pack_colocates_what_goodput_runs_one_after_the_other() -> None:
    # one GPU; a job that loads data and one that computes, 100 s each alone: under
    # processor sharing they share it at full speed (each resource at 0.9 + 0.1 = 1)
    jobs = [_one_plan_job("loader", 0.9, 0.1), _one_plan_job("trainer", 0.1, 0.9)]
    model = Interleave("fluid", factors=None)
    alone = planner.run_policy(jobs, "goodput", nodes=1, gpus_per_node=1, interleave=model)
    packed = planner.run_policy(jobs, "goodput-pack", nodes=1, gpus_per_node=1, interleave=model)
    for result in (alone, packed):
        assert audit(result, jobs, 1) == []
    assert alone.finish == {"loader": 100.0, "trainer": 200.0}
    assert packed.finish == {"loader": pytest.approx(100.0), "trainer": pytest.approx(100.0)}
    shared = elastic_figures(packed.trace, {"loader", "trainer"})
    assert shared is not None and shared.gpu_hours == pytest.approx(100 / 3600)
    # two jobs that only compute gain nothing together: the second waits
    both = [_one_plan_job("a", 0.0, 1.0), _one_plan_job("b", 0.0, 1.0)]
    result = planner.run_policy(both, "goodput-pack", nodes=1, gpus_per_node=1, interleave=model)
    assert result.finish == {"a": pytest.approx(100.0), "b": pytest.approx(200.0)}


def test_import_muri_elastic_lists_its_models_scaling_plans(tmp_path: Path) -> None:
    out = tmp_path / "elastic.json"
    code, said, _ = run("import", "muri", INSTANCES / "muri_trace.csv", "--elastic", "-o", out)
    assert code == 0, said
    job = json.loads(out.read_text())["jobs"][0]  # gpt2 on 8 GPUs, 0.437 s an iteration
    plans = {p["data"]: p["stages"] for p in job["parallel_plans"]}
    assert sorted(plans) == [1, 2, 4, 8, 16, 32]
    assert sum(plans[8].values()) == pytest.approx(0.437)
    # one global batch: 1/8 of the GPU stage per GPU on 64 GPUs' worth of 8; sync per
    # the catalog's profile of gpt2 (49 ms on 8 GPUs, 216 ms on 32)
    assert plans[1]["gpu"] == pytest.approx(8 * plans[8]["gpu"])
    assert plans[1]["sync"] == 0.0
    assert plans[32]["sync"] == pytest.approx(plans[8]["sync"] * 216 / 49)
    jobs = jobs_from_instance(out).jobs
    result = planner.run_policy(jobs, "goodput-pack", interleave=Interleave("muri"))
    assert audit(result, jobs, 64) == []
    figures = elastic_figures(result.trace, {j.name for j in jobs})
    assert figures is not None and figures.most == 32 and sum(figures.resizes.values()) > 0
    assert any(len(names) > 1 for _, groups in result.trace for names, _, _ in groups)


def test_a_model_without_a_catalog_profile_is_not_made_elastic(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    text = (INSTANCES / "muri_trace.csv").read_text().splitlines()
    trace.write_text("\n".join([text[0], text[1].replace("gpt2", "mystery")]) + "\n")
    code, _, err = run("import", "muri", trace, "--elastic", "--restart", 30, "-o",
                       tmp_path / "o.json")  # fmt: skip
    assert code == 2
    assert err.strip().endswith(
        "model 'mystery': the catalog has no stage profile of it to make it elastic (it knows "
        "a2c, bert, dqn, gpt2, resnet18, shufflenet_v2_x1_0, vgg16, vgg19)"
    )


def test_solve_plans_elastic_jobs_by_their_policies_and_run_replays_it(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    code, said, err = run("solve", HYBRID, "--slowdown", "none", "--time-limit", 5, "-o", plan)
    assert code == 0, err
    rows = lines(said)
    assert rows["solver"] == ("portfolio (elastic jobs, their policies in the executor's model: "
                              "goodput-pack, goodput)")  # fmt: skip
    assert rows["lower bound"] == (
        "- (elastic jobs: their speed is their policy's choice; not bounded)"
    )
    assert rows["status"] == "feasible" and rows["audit"].startswith("valid")
    data = json.loads(plan.read_text())
    assert len(data["configs"]) == len(data["overheads"]) == len(data["events"])
    code, again, err = run("run", HYBRID, plan)
    assert code == 0, err
    replay = lines(again)
    assert replay["makespan"] == rows["makespan"] and replay["mean JCT"] == rows["mean JCT"]
    assert replay["audit"].startswith("valid")
    # a replay at another plan of a job is refused by the audit
    data["configs"][0] = {name: [0, 0] for name in data["configs"][0]}
    plan.write_text(json.dumps(data))
    code, _, _ = run("validate", HYBRID, plan)
    assert code == 1
    code, _, err = run("solve", HYBRID, "-s", "cpsat")
    assert (code, err) == (2, "error: solver cpsat: elastic jobs are planned by their policies' "
                              "search (the default solver, with --time-limit only)\n")  # fmt: skip

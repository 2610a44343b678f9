"""Elastic jobs (issue 55): Pollux's job model, ``planner import pollux``, elastic jobs in
the executor and its audit, and Pollux's Tiresias in 60-second rounds."""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.dl.pollux import GoodputModel, application, fit_perf_params
from planner.errors import InputError
from planner.execution.audit import audit
from planner.execution.elastic import Elastic, elastic_figures
from planner.execution.jobs import PeerJob, jobs_from_instance
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


def one(app: str, gpus: int, batch: int, release: float = 0.0) -> PeerJob:
    model = application(app)
    return PeerJob(f"{app}-{gpus}", gpus, model.target_progress, Stages(0, 1, 0), 1.0, 1.0,  # type: ignore[arg-type]
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


def test_elastic_jobs_are_policies_not_plans(tmp_path: Path) -> None:
    out = tmp_path / "w6.yaml"
    assert run("import", "pollux", WORKLOAD, "-o", out)[0] == 0
    code, _, err = run("solve", out)
    assert (code, err) == (
        2,
        "error: elastic jobs are run by the executor's policies (planner policy INSTANCE "
        "pollux-tiresias); solve does not plan them yet\n",
    )


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
    fixed = PeerJob("a", 1, 10, Stages(0, 1, 0), 1.0, 10.0)
    for policy in ("pollux-tiresias", "pollux-optimus", "goodput"):
        with pytest.raises(InputError) as err:
            planner.run_policy([fixed], policy, nodes=1, gpus_per_node=4, interleave=ALONE)
        assert str(err.value) == (f"policy {policy} runs elastic jobs (planner import pollux "
                                  "writes them); job 'a' is not")  # fmt: skip


def test_only_resizing_reaches_the_best_mean_jct_of_two_jobs() -> None:
    # a cifar10 and a bert job on one node of 4 GPUs: every fixed GPU count of each (run
    # together where they fit, else one after the other) against goodput, which gives
    # the GPUs to the shorter job first and all four to the other once it ends
    def job(app: str, gpus: int) -> PeerJob:
        model = application(app)
        return PeerJob(f"{app}", gpus, model.target_progress, Stages(0, 1, 0), 1.0, 1.0,  # type: ignore[arg-type]
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
    assert code == 0 and "bound fluid" not in got
    assert got["elastic"] == ("160 jobs: GPUs and batch sizes are their policy's choice (no "
                              "bound under the interleaving models)")  # fmt: skip
    assert got["lower bound"].endswith(
        "(of the static block model, each job at its trace's GPUs and its first epoch's "
        "speed; not of elastic runs)"
    )
    code, _, err = run("online", out)
    assert (code, err) == (2, "error: elastic jobs are run by the executor's policies (planner "
                              "policy INSTANCE goodput); the online planner does not plan them "
                              "yet\n")  # fmt: skip

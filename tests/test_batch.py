"""Plans a batch cluster runs (issue 57): ``solve --no-preempt`` and the ``batch-*``
policies, every job once, start to end, on one GPU set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.executor.audit import audit
from planner.executor.loop import ExecutorRun
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance
from planner.interleave import Interleave, Stages
from tests.conftest import INSTANCES, lines

EXAMPLE = INSTANCES / "example.yaml"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def spans(run_: ExecutorRun) -> dict[str, tuple[list[int], set[object]]]:
    """Per job, the events it ran in and the GPU sets it ran on."""
    out: dict[str, tuple[list[int], set[object]]] = {}
    for k, (_, groups) in enumerate(run_.trace):
        for names, _, where in groups:
            for n in names:
                events, sets = out.setdefault(n, ([], set()))
                events.append(k)
                sets.add(where)
    return out


def test_no_preempt_plans_every_job_once_to_its_end(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    code, out, err = run("solve", EXAMPLE, "-t", "5", "--no-preempt", "-o", plan)
    assert code == 0, err
    assert lines(out)["plan"].startswith("batch-")
    workload = jobs_from_instance(EXAMPLE)
    data = json.loads(plan.read_text())
    seen: dict[str, list[int]] = {}
    where: dict[str, str] = {}
    for k, (_, groups) in enumerate(data["events"]):
        for names, gpus in groups:
            for n in names:
                seen.setdefault(n, []).append(k)
                assert where.setdefault(n, json.dumps(gpus)) == json.dumps(gpus), n
    assert sorted(seen) == sorted(j.name for j in workload.jobs)
    for n, events in seen.items():  # from its start to its end, without a pause
        assert events == list(range(events[0], events[-1] + 1)), n
    code, again, err = run("run", EXAMPLE, plan)
    assert code == 0, err
    assert lines(again)["makespan"].startswith(lines(out)["makespan"])


def test_no_preempt_is_the_searchs(tmp_path: Path) -> None:
    code, _, err = run("solve", EXAMPLE, "--no-preempt", "--static")
    assert (code, err) == (
        2,
        "error: --no-preempt with --static: plans without preemption are made in the "
        "executor's model by the search (the default solver, without --static)\n",
    )
    code, _, err = run("solve", EXAMPLE, "--no-preempt", "-s", "sgs")
    assert code == 2 and err.startswith("error: --no-preempt with solver sgs:")


def job(name: str, stages: Stages, iterations: int = 1000) -> ExecutorJob:
    return ExecutorJob(name, 1, iterations, stages, stages.total, iterations * stages.total,
                   restart=0.0)  # fmt: skip


@pytest.mark.parametrize("policy", ["batch-lpt", "batch-srtf", "batch-fifo"])
def test_a_waiting_job_joins_a_set_where_interleaving_pays(policy: str) -> None:
    # one GPU: a waits on data 0.6 s of every 1 s; b computes all along. Together each
    # runs at a period of 1.4 s (the GPU computes 0.4 + 1.0 s of every 1.4 s), 1.43 x
    # their speed one after the other
    jobs = [job("a", Stages(0.6, 0.4, 0.0)), job("b", Stages(0.0, 1.0, 0.0))]
    model = Interleave("fluid", data_slots=2, max_colocated=2, factors=None)
    result = planner.run_policy(jobs, policy, nodes=1, gpus_per_node=1, interleave=model,
                                restart=False)  # fmt: skip
    assert audit(result, jobs, 1) == []
    assert result.finish == {"a": pytest.approx(1400), "b": pytest.approx(1400)}
    alone = planner.run_policy(jobs, policy, nodes=1, gpus_per_node=1,
                               interleave=Interleave("fluid", max_colocated=1, factors=None),
                               restart=False)  # fmt: skip
    assert sorted(alone.finish.values()) == pytest.approx([1000, 2000])
    for events, sets in spans(alone).values():
        assert len(sets) == 1 and events == list(range(events[0], events[-1] + 1))


def test_jobs_of_several_gpus_hold_them_whole() -> None:
    # as in Slurm, which shares a GPU only through shards of one GPU: the same two jobs on
    # two GPUs each run one after the other
    jobs = [ExecutorJob(n, 2, 1000, s, s.total, 1000 * s.total, restart=0.0)
            for n, s in (("a", Stages(0.6, 0.4, 0.0)), ("b", Stages(0.0, 1.0, 0.0)))]  # fmt: skip
    model = Interleave("fluid", data_slots=2, max_colocated=2, factors=None)
    result = planner.run_policy(jobs, "batch-lpt", nodes=1, gpus_per_node=2, interleave=model,
                                restart=False)  # fmt: skip
    assert audit(result, jobs, 2) == []
    assert sorted(result.finish.values()) == pytest.approx([1000, 2000])


def test_a_plan_without_preemption_exports_to_slurm(tmp_path: Path) -> None:
    plan, folder = tmp_path / "plan.json", tmp_path / "slurm"
    assert run("solve", EXAMPLE, "-t", "5", "--no-preempt", "-o", plan)[0] == 0
    code, out, err = run("export", "slurm", EXAMPLE, plan, "-o", folder, "--time-scale", 0.01,
                         "--command", "python train.py --job {job} --gpus {gpus}")  # fmt: skip
    assert (code, err) == (0, "")
    assert out == f"{plan} -> {folder}: 5 batch scripts and submit.sh\n"
    data = json.loads(plan.read_text())
    start, gpus = min(
        (t, gpus) for t, groups in data["events"] for names, gpus in groups if "gpt2" in names
    )
    script = (folder / "jobs" / "gpt2.sh").read_text().splitlines()
    head = ["#!/bin/bash", "#SBATCH -J gpt2", f"#SBATCH -w node{gpus[0][0] + 1}", "#SBATCH -N 1",
            "#SBATCH --gres=gpu:4", f"#SBATCH --begin=now+{int(start * 0.01)}"]  # fmt: skip
    assert script[:6] == head
    assert script[-1] == "python train.py --job gpt2 --gpus 4"
    assert (folder / "submit.sh").read_text().count("sbatch --parsable jobs/") == 5


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--time-scale", 0), "--time-scale 0: give a factor > 0"),
        (("--command", "run {model}"), "--command 'run {model}': a template may use {job}, "
         "{gpus} and {seconds} (KeyError: 'model')"),
    ],
)  # fmt: skip
def test_bad_exports_are_one_line(tmp_path: Path, extra: tuple[object, ...], message: str) -> None:
    plan = tmp_path / "plan.json"
    assert run("solve", EXAMPLE, "-t", "2", "--no-preempt", "-o", plan)[0] == 0
    code, _, err = run("export", "slurm", EXAMPLE, plan, "-o", tmp_path / "s", *extra)
    assert (code, err) == (2, f"error: {message}\n")


def test_a_plan_that_preempts_does_not_export(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run("solve", EXAMPLE, "-t", "2", "-o", plan)[0] == 0
    code, _, err = run("export", "slurm", EXAMPLE, plan, "-o", tmp_path / "s")
    assert code == 2
    assert err.endswith(
        "moves or pauses in this plan: a batch cluster runs each job once, on one GPU set "
        "(plan with planner solve --no-preempt)\n"
    )

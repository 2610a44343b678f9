"""Every resource of a node in the executor (issue 54, a first step): a GPU's memory,
which co-resident jobs share, and ``max_colocated`` hold on every path (policies, the
search of ``planner solve``, plans run by ``planner run``), and the audit refuses a
run that exceeds them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from tests.conftest import lines

runner = CliRunner()

MEMORY = {
    "name": "memory",
    "time_unit": "1min",
    "cluster": {"nodes": [{"name": "node", "count": 1, "gpu": 4, "cpu": 32, "gpu_mem": 128}]},
    "jobs": [
        {"name": "a", "gpus": 4, "iterations": 2000, "stages": {"data": 0.3, "gpu": 0.3},
         "gpu_mem_per_gpu": 30},
        {"name": "b", "gpus": 4, "iterations": 2000, "stages": {"data": 0.3, "gpu": 0.3},
         "gpu_mem_per_gpu": 30},
        {"name": "c", "gpus": 4, "iterations": 2000, "stages": {"data": 0.3, "gpu": 0.3},
         "gpu_mem_per_gpu": 2},
    ],
}  # fmt: skip
"""Three 4-GPU jobs on one node of four 32 GB GPUs: ``a`` and ``b`` (30 GB per GPU each)
never fit together; either fits beside ``c`` (2 GB)."""


def run(*args: object) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``planner ARGS``."""
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, data: dict, name: str = "inst.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def groups_of(result: planner.executor.loop.ExecutorRun) -> set[frozenset[str]]:
    """Every set of jobs that shared GPUs at some event of ``result``."""
    out = set()
    for _, groups in result.trace:
        for names, _, _ in groups:
            out.add(frozenset(names))
    return out


@pytest.mark.parametrize("policy", ["muri-s", "muri-l", "srsf-pack", "lp-groups", "jct-groups"])
def test_jobs_whose_memory_exceeds_a_gpus_never_share_it(tmp_path: Path, policy: str) -> None:
    workload = jobs_from_instance(write(tmp_path, MEMORY))
    assert workload.gpu_memory == 32.0
    result = planner.run_policy(workload, policy)
    assert result.finished
    assert all(not {"a", "b"} <= g for g in groups_of(result))
    assert audit(result, workload.jobs, 4) == []


def crowded(path: Path, names: tuple[str, ...]) -> list[str]:
    """The audit of an ``srtf`` run of ``path`` whose first event runs ``names`` together
    on the GPUs of its first group."""
    workload = jobs_from_instance(path)
    result = planner.run_policy(workload, "srtf")
    t, groups = result.trace[0]
    crowd = [(names, 0.0, groups[0][2])]
    return audit(replace(result, trace=[(t, crowd), *result.trace[1:]]), workload.jobs, 4)


def test_the_audit_refuses_a_group_over_a_gpus_memory(tmp_path: Path) -> None:
    wrong = crowded(write(tmp_path, MEMORY), ("a", "b"))
    assert "at 0 s: ['a', 'b'] hold 60 GB of each GPU's memory; a GPU has 32 GB" in wrong


def test_a_job_needing_more_memory_than_a_gpu_has_is_bad_input(tmp_path: Path) -> None:
    data = {**MEMORY, "jobs": [{**MEMORY["jobs"][0], "gpu_mem_per_gpu": 64}]}
    path = write(tmp_path, data)
    code, _, err = run("policy", path, "muri-s")
    assert (code, err) == (
        2, f"error: {path}: job 'a' needs 64 GB per GPU; a GPU of the cluster has 32 GB\n"
    )  # fmt: skip
    with pytest.raises(InputError, match=r"job 'a' needs 64 GB per GPU"):
        jobs_from_instance(path)


def test_solve_and_run_keep_to_a_gpus_memory(tmp_path: Path) -> None:
    path = write(tmp_path, MEMORY)
    plan = tmp_path / "plan.json"
    code, out, err = run("solve", path, "-t", "2", "-o", plan)
    assert code == 0, err
    assert lines(out)["audit"].startswith("valid")
    code, out, _ = run("run", path, plan, "-o", tmp_path / "run.json")
    assert code == 0
    assert lines(out)["audit"].startswith("valid")
    table = (tmp_path / "run.json").read_text()
    assert '"partners": ["b"]' not in table and '"partners": ["a"]' not in table


def test_max_colocated_holds_on_every_path(tmp_path: Path) -> None:
    data = yaml.safe_load((Path(__file__).parents[1] / "instances" / "example.yaml").read_text())
    data["max_colocated"] = 1
    path = write(tmp_path, data)
    workload = jobs_from_instance(path)
    for policy in ("muri-s", "lp-groups", "srsf-pack"):
        result = planner.run_policy(workload, policy)
        assert max(len(g) for g in groups_of(result)) == 1, policy
    plan = tmp_path / "plan.json"
    code, out, err = run("solve", path, "-t", "2", "-o", plan)
    assert code == 0, err
    code, out, _ = run("run", path, plan, "-o", tmp_path / "run.json")
    assert code == 0
    assert '"partners": []' in (tmp_path / "run.json").read_text()
    assert '"partners": ["' not in (tmp_path / "run.json").read_text()
    code, out, _ = run("policy", path, "muri-s")
    assert code == 0 and lines(out)["groups"] == "1: 100.0% of job-intervals by group size"


def test_the_audit_refuses_a_shared_set_under_max_colocated_one(tmp_path: Path) -> None:
    wrong = crowded(write(tmp_path, {**MEMORY, "max_colocated": 1}), ("a", "c"))
    assert "at 0 s: 2 jobs share one GPU set" in wrong


def test_the_instances_restart_cost_is_the_executors(tmp_path: Path) -> None:
    data = {**MEMORY, "jobs": [{**j, "restart": 123.0} for j in MEMORY["jobs"]]}
    workload = jobs_from_instance(write(tmp_path, data))
    assert {j.restart for j in workload.jobs} == {123.0}


def test_a_pooled_plans_jobs_spread_over_the_nodes_before_they_share(tmp_path: Path) -> None:
    instance = Path(__file__).parents[1] / "instances" / "example.yaml"
    plan = tmp_path / "plan.json"
    assert run("solve", instance, "-s", "exclusive-fifo", "-o", plan)[0] == 0
    code, out, _ = run("run", instance, plan, "-o", tmp_path / "run.json")
    assert code == 0
    assert lines(out)["audit"].startswith("valid")
    table = (tmp_path / "run.json").read_text()
    assert '"gpus": "node2:' in table  # before: every job on node1, four on one GPU
    assert float(lines(out)["optimism"].split()[0]) < 1.2  # before: 1.780


def test_an_exclusive_baseline_holds_every_gpu_of_a_block_whole() -> None:
    from planner.solvers.exclusive import exclusive_problem

    problem = planner.load_instance(Path(__file__).parents[1] / "instances" / "example.yaml")
    exclusive = exclusive_problem(problem)
    unit = problem.unit("gpu")
    for task in exclusive.tasks:
        for mode in task.modes:
            if mode.peak("resident"):  # a training block: its GPUs, each whole
                assert mode.peak("gpu") == mode.peak("resident") * unit, task.name
    # resnet50 on 4 GPUs at a share of 1/2 each asked for 2 GPUs' worth before
    block = next(t for t in exclusive.tasks if t.name == "resnet50/block1")
    assert block.modes[0].peak("gpu") == 4 * unit


def test_info_says_how_jobs_share_a_gpu(tmp_path: Path) -> None:
    code, out, _ = run("info", write(tmp_path, {**MEMORY, "max_colocated": 2}))
    assert code == 0
    assert lines(out)["GPU sharing"] == (
        "at most 2 jobs on a GPU set, 32 GB of memory per GPU, which they share (jobs ask 2 to "
        "30 GB per GPU)"
    )

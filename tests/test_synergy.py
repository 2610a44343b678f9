"""Synergy's job streams in the executor (issue 54): ``planner import synergy`` and the
``fifo`` policy, Synergy's FIFO with GPU-proportional CPU and memory (its ``+fair``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.model.jobs import ExecutorJob, jobs_from_instance
from planner.interleave import Interleave, Stages
from tests.conftest import INSTANCES, lines

runner = CliRunner()
STREAM = INSTANCES / "synergy" / "stream_head.csv"
"""The first 300 jobs of Synergy's artifact stream (9 jobs an hour, seed 42)."""


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_a_stream_becomes_jobs_on_synergys_cluster(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    code, text, err = run("import", "synergy", STREAM, "-o", out)
    assert code == 0, err
    assert text == f"{STREAM} -> {out} (300 jobs, 300 tasks)\n"
    data = json.loads(out.read_text())
    assert data["cluster"]["nodes"] == [
        {"name": "server", "count": 16, "gpu": 8, "cpu": 24, "mem": 500}
    ]
    assert data["max_colocated"] == 1
    first = data["jobs"][0]  # job 0: alexnet, 1 GPU, 3,447 iterations of 0.6 s at 409 s
    # its GPU stage is its iteration at alexnet's best speed-up (2.94), the rest data
    gpu = 0.6 / 2.94
    assert first == {
        "name": "job0", "model": "alexnet", "gpus": 1, "iterations": 3447,
        "stages": {"data": pytest.approx(0.6 - gpu), "gpu": pytest.approx(gpu), "sync": 0.0},
        "release": 409.0, "restart": 0.0,
    }  # fmt: skip
    grid = data["resource_profiles"]["alexnet"]
    assert (grid["cpu"][2], grid["mem"][1], grid["speedup"][2][1]) == (3, 62.5, 1.0)
    assert sorted(data["resource_profiles"]) == sorted({j["model"] for j in data["jobs"]})


def test_an_unknown_synergy_cluster_is_bad_input(tmp_path: Path) -> None:
    code, _, err = run("import", "synergy", STREAM, "--cluster", "huge", "-o", tmp_path / "s.json")
    assert (code, err) == (
        2,
        "error: unknown Synergy cluster 'huge'; choose one of default, cluster_4, cluster_5, "
        "cluster_6, deployment, philly, static_trace\n",
    )


def test_a_stream_runs_under_fifo_alone_on_gpus(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert run("import", "synergy", STREAM, "-o", out)[0] == 0
    code, text, err = run("policy", out, "fifo", "--slowdown", "none")
    assert code == 0, err
    assert lines(text)["groups"] == "1: 100.0% of job-intervals by group size"
    assert lines(text)["audit"].startswith("valid")
    workload = jobs_from_instance(out)
    result = planner.run_policy(workload, "fifo", interleave=Interleave("fluid", factors=None))
    assert audit(result, workload.jobs, 128) == []
    # on an idle cluster a job starts at its arrival and runs at its fair-share speed
    job0 = workload.jobs[0]
    assert result.finish["job0"] == pytest.approx(409 + 3447 * 0.6)
    assert job0.restart == 0.0


def job(name: str, gpus: int, seconds: float, release: float) -> ExecutorJob:
    stages = Stages(0.0, 1.0, 0.0)
    return ExecutorJob(name, gpus, int(seconds), stages, 1.0, seconds, release=release, restart=0.0)


def test_fifo_serves_by_arrival_and_backfills() -> None:
    # 2 GPUs: a (2 GPUs) holds both to 100 s; b (2 GPUs) came before c and d, so it runs
    # next, although srtf would take the shorter c and d first
    jobs = [job("a", 2, 100, 0), job("b", 2, 50, 1), job("c", 1, 10, 2), job("d", 1, 10, 3)]
    model = Interleave("fluid", max_colocated=1, factors=None)
    fifo = planner.run_policy(jobs, "fifo", nodes=1, gpus_per_node=2, interleave=model,
                              restart=False)  # fmt: skip
    assert fifo.finish == pytest.approx({"a": 100, "b": 150, "c": 160, "d": 160})
    srtf = planner.run_policy(jobs, "srtf", nodes=1, gpus_per_node=2, interleave=model,
                              restart=False)  # fmt: skip
    assert srtf.finish["c"] < fifo.finish["c"]
    # a later job that fits runs before an earlier one that does not (backfilling)
    jobs = [job("a", 1, 100, 0), job("big", 2, 10, 1), job("small", 1, 10, 2)]
    fifo = planner.run_policy(jobs, "fifo", nodes=1, gpus_per_node=2, interleave=model,
                              restart=False)  # fmt: skip
    assert fifo.finish["small"] == pytest.approx(12)
    assert fifo.finish["big"] == pytest.approx(110)


def test_a_stream_needing_more_gpus_than_the_cluster_is_bad_input(tmp_path: Path) -> None:
    lines_ = STREAM.read_text().splitlines()
    header = lines_[0].split(",")
    cells = lines_[1].split(",")
    cells[header.index("gpus")] = "512"
    path = tmp_path / "big.csv"
    path.write_text("\n".join([lines_[0], ",".join(cells)]) + "\n")
    with pytest.raises(InputError, match=r"line 2: column 'gpus': 512 GPUs; the cluster has 128"):
        from planner.dl.synergy import import_synergy

        import_synergy(path)

"""The planner online inside the executor: re-plans at arrivals with any solver, beside
the policies in one model and one table; every run passes the audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.dl.workloads import generate_batch
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance
from planner.executor.runs import Setting, dispatch_of, workload_problem
from planner.replay.planner_policy import online_planner
from tests.conftest import INSTANCES, lines

runner = CliRunner()


@pytest.fixture(scope="module")
def arrivals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 generated jobs arriving over time, placed on 2 nodes of 8 GPUs."""
    path = tmp_path_factory.mktemp("online") / "arrivals.json"
    data = generate_batch(30, seed=2, nodes=2, gpus_per_node=8, placement="node", arrival_rate=20)
    path.write_text(json.dumps(data))
    return path


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("model", ["fluid", "muri"])
def test_the_planner_replans_at_every_arrival_and_passes_the_audit(
    arrivals: Path, model: str
) -> None:
    workload = jobs_from_instance(arrivals)
    releases = {j.release for j in workload.jobs}
    assert len(releases) > 1  # jobs do arrive over time
    dispatch = dispatch_of(workload, Setting(interleave=model), "planner")
    dispatch.make = online_planner(workload_problem(arrivals), "sgs")
    done = dispatch.run()
    assert done.finished and len(done.finish) == len(workload.jobs)
    assert len(done.planning) == len(releases)  # one re-plan per arrival time
    assert audit(done, dispatch.jobs, 16) == []
    # no job starts before it arrives
    assert all(done.started[j] >= done.release[j] - 1e-9 for j in done.started)


def test_online_runs_the_planner_beside_the_policies_in_one_table(
    arrivals: Path, tmp_path: Path
) -> None:
    out = tmp_path / "online.json"
    args = ["--interleave", "muri", "--baseline", "muri-s", "--baseline", "srsf-pack"]
    code, stdout, err = run("online", arrivals, *args, "-o", out)
    assert code == 0, err
    rows = lines(stdout)
    assert rows["model"] == "muri, Muri's slowdown factors, restart overheads (job-level executor)"
    table = [r for r in map(str.split, stdout.splitlines()) if len(r) == 9 and r[1].isdigit()]
    assert [r[0] for r in table] == ["planner", "muri-s", "srsf-pack"]
    assert "audit: valid, valid, valid" in stdout
    figures = json.loads(out.read_text())["online"]
    assert [f["policy"] for f in figures] == ["planner", "muri-s", "srsf-pack"]
    assert figures[0]["replans"] > 1 and figures[1]["replans"] == 0
    # the same policy alone gives the same figures: one executor
    code, stdout, _ = run("policy", arrivals, "muri-s", "--interleave", "muri")
    assert lines(stdout)["mean JCT"] == f"{figures[1]['mean_jct']:,.0f} s"


def test_the_planner_runs_online_with_its_solver_and_as_a_policy(arrivals: Path) -> None:
    code, stdout, err = run("online", arrivals, "--solver", "sgs", "--option", "rule=spt")
    assert code == 0, err
    assert "audit: valid (GPUs, groups and every job's work)" in stdout
    code, stdout, err = run("policy", arrivals, "planner", "--time-limit", "0.2")
    assert code == 0, err
    assert lines(stdout)["audit"].startswith("valid")
    assert lines(stdout)["re-plans"].endswith("(wall time)")


def test_the_planner_plans_a_trace_compiled_on_nodes() -> None:
    trace = INSTANCES / "muri_trace.csv"
    code, stdout, err = run("online", trace, "--baseline", "srtf")
    assert code == 0, err
    assert "audit: valid, valid" in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["online", "--baseline", "exclusive-srtf"],
         "unknown policy 'exclusive-srtf'; choose one of fifo, srtf, srsf, tiresias, muri-s, "
         "muri-l, lp-groups, srsf-pack, jct-groups, ftf-groups, fair-groups, "
        "het-srpt, het-makespan, grid-srtf, grid-srtf-events, batch-lpt, batch-srtf, batch-fifo, "
        "pollux-tiresias, pollux-optimus, pollux, goodput, goodput-pack; "
        "Gavel's gavel-fifo, "
        "gavel-max-min-fairness, "
        "gavel-min-total-duration, gavel-finish-time-fairness, each also -perf or -packed, and "
        "gavel-gandiva; Synergy's synergy-fifo, synergy-srtf and synergy-las, each -fair, "
        "-greedy or -tune; or FILE.py:CLASS"),
        (["online", "--replan-every", "2h"],
         "--replan-every: job by job the planner re-plans at every arrival"),
        (["online", "--runs", "3"], "No such option: --runs"),
        (["online", "--solver", "nope"], "unknown solver 'nope'"),
        (["policy", "srtf", "--solver", "ga"], "No such option: --solver"),
    ],
)  # fmt: skip
def test_online_misuse_is_one_line(arrivals: Path, args: list[str], message: str) -> None:
    command, *rest = args
    code, _, err = run(command, arrivals, *rest)
    assert code == 2
    assert err.startswith(f"error: {message}") and err.count("\n") == 1

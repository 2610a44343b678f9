"""Grouping as a decision: the group-mix program, its bound, and the ``lp-groups`` dispatch."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.executor.audit import audit
from planner.executor.loop import run_policy
from planner.executor.model.grouping import GroupMix, job_types, mix_bound
from planner.executor.model.jobs import ExecutorJob, read_trace
from planner.executor.policies import POLICIES
from planner.interleave import MURI_GROUP_FACTORS, Interleave, Stages
from tests.conftest import INSTANCES, lines

SLICE = INSTANCES / "muri_trace3_40.csv"
DATA = Stages(data=0.8, gpu=0.1, sync=0.05)  # loads data most of its iteration
COMPUTE = Stages(data=0.01, gpu=0.8, sync=0.05)  # computes most of its iteration


def _four() -> list[ExecutorJob]:
    jobs = []
    for name, stages, n in (("a0", DATA, 100), ("a1", DATA, 60), ("b0", COMPUTE, 100),
                            ("b1", COMPUTE, 60)):  # fmt: skip
        jobs.append(ExecutorJob(name, 1, n, stages, stages.total, n * stages.total, model=name[0]))
    return jobs


def _partitions(items: list[int]) -> list[list[list[int]]]:
    """Every partition of ``items`` into at most two non-empty blocks."""
    out = [[list(items)]]
    for mask in range(1, 2 ** (len(items) - 1)):
        left = [x for k, x in enumerate(items) if mask >> k & 1]
        right = [x for x in items if x not in left]
        out.append([left, right])
    return out


def test_the_dispatch_finds_the_best_grouping_of_four_jobs_by_enumeration() -> None:
    # four jobs on two single-GPU sets: enumerate every static grouping (at most two
    # groups), each group running to its longest member's end; the best pairs each
    # data-heavy job with a compute-heavy one of its length
    jobs = _four()
    model = Interleave("muri", factors=None)
    best = float("inf")
    best_groups: list[list[int]] = []
    for blocks in _partitions(list(range(4))):
        ends = []
        for block in blocks:
            period = model.periods([jobs[k].stages for k in block],
                                   alone=[jobs[k].iteration_time for k in block])[0]  # fmt: skip
            ends.append(max(jobs[k].iterations for k in block) * period)
        if max(ends) < best:
            best, best_groups = max(ends), blocks
    assert sorted(sorted(jobs[k].name for k in b) for b in best_groups) == [
        ["a0", "b0"],
        ["a1", "b1"],
    ]
    run = run_policy(jobs, "lp-groups", 2, 1, model, restart=False)
    assert run.makespan == pytest.approx(best)
    first = sorted(sorted(names) for names, _, _ in run.trace[0][1])
    assert first == [["a0", "b0"], ["a1", "b1"]]
    assert audit(run, jobs, 2) == []
    # Muri's matching pairs them too; a policy that never groups cannot
    assert run_policy(jobs, "srtf", 2, 1, model, restart=False).makespan > best


def test_the_mix_bound_holds_for_every_policy_on_the_slice() -> None:
    jobs = read_trace(SLICE)
    for factors, restart in ((None, False), (MURI_GROUP_FACTORS, True)):
        model = Interleave("muri", factors=factors)
        bound = mix_bound(jobs, model, 64)
        for policy in [p for p, c in POLICIES.items() if not c.needs_types | c.needs_elastic]:
            run = run_policy(jobs, policy, interleave=model, restart=restart)
            assert run.makespan >= bound * (1 - 1e-9), policy
            assert audit(run, jobs, 64) == [], policy


def test_lp_groups_on_the_slice_is_pinned() -> None:
    jobs = read_trace(SLICE)
    ideal = run_policy(
        jobs, "lp-groups", interleave=Interleave("muri", factors=None), restart=False
    )
    muri = run_policy(jobs, "lp-groups")  # Muri's factors and restart overheads
    assert (ideal.makespan, muri.makespan) == (
        pytest.approx(926358.392, rel=1e-6),
        pytest.approx(941581.664, rel=1e-6),
    )
    # beside Muri in the same executor: 996,049 s (muri-s) and 1,063,944 s
    assert ideal.makespan < run_policy(jobs, "muri-s", interleave=Interleave("muri", factors=None),
                                       restart=False).makespan  # fmt: skip


def test_types_merge_to_the_limit_and_columns_enumerate_multisets() -> None:
    jobs = [
        ExecutorJob(f"j{k}", 1, 10 + k, Stages(0.1 * (k + 1), 0.5, 0.1), 1.0, 10.0)
        for k in range(6)
    ]
    assert len(set(job_types(jobs, most=3))) == 3
    assert len(set(job_types(jobs))) == 6  # no model: one type per stage profile
    mix = GroupMix(jobs[:3], Interleave("muri", factors=None))
    # 3 types, multisets of size 1..4: 3 + 6 + 10 + 15
    assert len(mix.columns) == 34


def test_cli_runs_lp_groups_and_writes_its_co_location_table(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    args = ["policy", str(SLICE), "lp-groups", "--slowdown", "none",
            "--no-restart", "-o", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    shown = lines(result.stdout)
    assert shown["makespan"].startswith("926,358 s (")
    assert shown["audit"].startswith("valid")
    rows = json.loads(out.read_text())["residences"]
    assert {r["job"] for r in rows} == {f"job{k}" for k in range(40)}
    assert all(len(r["partners"]) <= 3 for r in rows)
    for a, b in itertools.combinations(rows[:50], 2):
        overlap = a["start"] < b["end"] and b["start"] < a["end"]
        if overlap and a["gpus"] == b["gpus"]:
            assert a["job"] in b["partners"]


def test_srsf_pack_groups_complementary_jobs_when_gpus_run_out() -> None:
    # one GPU: the data-heavy job (smaller service) opens the set, the compute-heavy
    # one joins it (its progress adds to the group's), and both end with the pair's period
    a = ExecutorJob("a", 1, 100, DATA, DATA.total, 100 * DATA.total)
    b = ExecutorJob("b", 1, 100, COMPUTE, COMPUTE.total + 0.2, 100 * (COMPUTE.total + 0.2))
    model = Interleave("muri", factors=None)
    run = run_policy([a, b], "srsf-pack", 1, 1, model, restart=False)
    pair = model.periods([DATA, COMPUTE])[0]
    assert run.finish == {"a": pytest.approx(100 * pair), "b": pytest.approx(100 * pair)}
    assert [sorted(names) for names, _, _ in run.trace[0][1]] == [["a", "b"]]
    # exclusive SRSF runs them one after the other
    srsf = run_policy([a, b], "srsf", 1, 1, model, restart=False)
    assert srsf.finish["b"] == pytest.approx(100 * DATA.total + 100 * (COMPUTE.total + 0.2))


def test_srsf_pack_is_deterministic_and_audited_on_the_testbed_slice() -> None:
    jobs = read_trace(SLICE)
    model = Interleave("muri", factors=None)
    runs = [run_policy(jobs, "srsf-pack", interleave=model, restart=False) for _ in range(2)]
    assert runs[0].finish == runs[1].finish
    assert audit(runs[0], jobs, 64) == []


def test_gantt_draws_a_job_level_run_by_gpu_set(tmp_path: Path) -> None:
    run, chart = tmp_path / "run.json", tmp_path / "sets.png"
    args = ["policy", str(SLICE), "lp-groups", "-o", str(run)]
    assert CliRunner().invoke(app, args).exit_code == 0
    data = json.loads(run.read_text())
    gpus = len(data["cluster"]["nodes"]) * data["cluster"]["gpus_per_node"]
    jobs = len({r["job"] for r in data["residences"]})
    result = CliRunner().invoke(app, ["gantt", str(run), "-o", str(chart)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"chart written to {chart} (job-level run, {gpus} GPUs, {jobs} jobs)\n"
    assert chart.read_bytes()[:4] == b"\x89PNG"
    bad = CliRunner().invoke(app, ["gantt", str(run), "--by", "job", "-o", str(chart)])
    assert (bad.exit_code, bad.stderr) == (
        2,
        "error: a job-level run is drawn by GPU set (--by node), not by job\n",
    )
    html = CliRunner().invoke(app, ["gantt", str(run), "-o", str(tmp_path / "x.html")])
    assert html.exit_code == 0  # the interactive chart
    assert (tmp_path / "x.html").read_text().count('<rect data-job="') > 0
    gif = CliRunner().invoke(app, ["gantt", str(run), "-o", str(tmp_path / "x.gif")])
    assert gif.exit_code == 2
    assert gif.stderr.endswith("drawn as .png, .svg, .pdf, .html, not '.gif'\n")


def test_a_job_level_run_writes_its_co_location_table_as_csv(tmp_path: Path) -> None:
    import csv

    table, run = tmp_path / "table.csv", tmp_path / "run.json"
    for out in (table, run):
        args = ["policy", str(SLICE), "lp-groups", "-o", str(out)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    assert lines(result.stdout)["makespan"].startswith("941,582 s (")
    rows = list(csv.DictReader(table.open()))
    residences = json.loads(run.read_text())["residences"]
    assert len(rows) == len(residences)
    first = residences[0]
    assert rows[0] == {
        "job": first["job"],
        "gpus": first["gpus"],
        "start": f"{first['start']:.3f}",
        "end": f"{first['end']:.3f}",
        "partners": ";".join(first["partners"]),
    }


def test_the_energy_of_a_run_by_hand() -> None:
    from planner.executor.energy import run_energy

    # one 8-GPU job alone for 1,000 iterations of 1 s, computing 0.6 s of each: the 8
    # GPUs idle at 60 W all along and compute 60% of the time at 300 W
    stages = Stages(data=0.3, gpu=0.6, sync=0.1)
    jobs = [ExecutorJob("j", 8, 1000, stages, 1.0, 1000.0)]
    run = run_policy(jobs, "srtf", 1, 8, Interleave("fluid", factors=None), restart=False)
    energy = run_energy(run, jobs, 8)
    watts = 8 * 60 + 8 * 0.6 * (300 - 60)
    assert energy.kwh == pytest.approx(watts * 1000 / 3.6e6)
    assert (energy.mean_kw, energy.peak_kw) == (pytest.approx(watts / 1000),) * 2
    # on a 16-GPU cluster the 8 GPUs left idle draw 60 W each as well
    assert run_energy(run, jobs, 16).kwh == pytest.approx((watts + 8 * 60) * 1000 / 3.6e6)


def test_an_abnormal_end_of_glop_is_solved_again_by_clp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ortools.linear_solver import pywraplp

    jobs = read_trace(INSTANCES / "muri_trace3_40.csv")
    model = Interleave("muri", factors=None)
    mix = GroupMix(jobs, model)
    first = mix._solve
    calls = []

    def abnormal_once(*args: object) -> int:
        calls.append(args)
        status = first(*args)  # type: ignore[arg-type]
        return pywraplp.Solver.ABNORMAL if len(calls) == 1 else status

    monkeypatch.setattr(mix, "_solve", abnormal_once)
    left = [0.0] * len(mix.gpus)
    count = [0] * len(mix.gpus)
    for j, t in zip(jobs, mix.type_of, strict=True):
        left[t] += j.iterations
        count[t] += 1
    makespan, _ = mix.solve(left, count, 64)
    assert len(calls) == 2
    assert mix.backend == "CLP"
    assert makespan == pytest.approx(GroupMix(jobs, model).solve(left, count, 64)[0], rel=1e-6)

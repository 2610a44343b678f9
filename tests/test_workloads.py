"""Muri traces, synthetic workloads, metrics and the import / generate commands."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.dl.workloads import generate_batch, import_muri
from planner.errors import InputError
from planner.io.instance import load_instance, problem_from_data
from planner.metrics import schedule_metrics
from planner.model import Problem
from planner.schedule import Schedule
from tests.conftest import ROOT

TRACE = ROOT / "tests" / "data" / "muri_small.csv"


def test_muri_trace_becomes_stage_demands_per_gpu() -> None:
    data = import_muri(TRACE)
    assert data["time_unit"] == "1min"
    assert data["cluster"]["nodes"] == [{"name": "node", "count": 8, "gpu": 8, "io": 8, "net": 8}]
    p = problem_from_data(data)
    assert len(p.tasks) == 12
    # shares in thousandths of a GPU, data slot and network slot; four jobs per GPU
    capacity = {r.name: r.capacity for r in p.resources}
    assert capacity == {"gpu": 64000, "io": 64000, "net": 64000, "resident": 256}
    # job 0: 4 GPUs, 1,046,811 iterations of 703 / 62 / 17 ms (a 782 ms period), in
    # minutes rounded up; its 4 GPUs' shares: 703 / 782 of a data slot each, ...
    first = p.task("job0/block1").modes[0].segments
    assert [(s.name, s.duration, s.demand) for s in first] == [
        ("train", 13644, {"gpu": 318, "io": 3596, "net": 87, "resident": 4}),
    ]
    data["interleave"] = "phases"
    first = problem_from_data(data).task("job0/block1").modes[0].segments
    assert [(s.name, s.duration, s.demand) for s in first] == [
        ("data", 12266, {"io": 4}),
        ("gpu", 1082, {"gpu": 4}),
        ("sync", 297, {"net": 4}),
    ]


def test_muri_import_rejects_a_trace_without_columns(tmp_path: Path) -> None:
    bad = tmp_path / "t.csv"
    bad.write_text("num_gpu,iterations\n1,2\n")
    with pytest.raises(InputError) as err:
        import_muri(bad)
    assert str(err.value) == (
        f"{bad}: line 1: missing column(s) model_name, batch_size, resource_time_0, "
        "resource_time_1, resource_time_2"
    )


def test_muri_import_names_the_bad_line(tmp_path: Path) -> None:
    rows = TRACE.read_text().splitlines()
    fields = rows[3].split(",")
    fields[1] = "2.5"  # num_gpu
    bad = tmp_path / "t.csv"
    bad.write_text("\n".join([*rows[:3], ",".join(fields), *rows[4:]]))
    with pytest.raises(InputError) as err:
        import_muri(bad)
    assert str(err.value) == (
        f"{bad}: line 4: column 'num_gpu': expected a whole number from 1 to 2**40, got '2.5'"
    )


HEADER = "num_gpu,iterations,model_name,batch_size,resource_time_0,resource_time_1,resource_time_2"
ROW = "1,100,resnet18,128,1,2,3"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        # two extra fields on line 3 (issue 15, row 12)
        (
            [HEADER, ROW, ROW + ",extra,more"],
            "line 3: column 8: 2 field(s) more than the 7 columns of the header ('extra', 'more')",
        ),
        # on the first row, where a reader that guesses would take them for an index
        (
            [HEADER, ROW + ",extra,more", ROW],
            "line 2: column 8: 2 field(s) more than the 7 columns of the header ('extra', 'more')",
        ),
        # a row too short, after a blank line that still counts as a line
        (
            [HEADER, "", ROW, "1,100,resnet18,128,1"],
            "line 4: column 6: only 5 of the 7 fields of the header (no 'resource_time_1')",
        ),
        # a time that is not a number
        (
            [HEADER, "1,100,resnet18,128,1,soon,3"],
            "line 2: column 'resource_time_1': expected a finite time >= 0 (ms), got 'soon'",
        ),
    ],
)
def test_muri_import_names_the_line_and_the_column(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    bad = tmp_path / "t.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        import_muri(bad)
    assert str(err.value) == f"{bad}: {message}"


@pytest.mark.parametrize("placement", ["pooled", "node"])
def test_workloads_write_the_placement(placement: str) -> None:
    for data in (
        import_muri(TRACE, placement=placement),
        generate_batch(12, seed=4, nodes=2, gpus_per_node=4, placement=placement),
    ):
        assert data["placement"] == placement
        p = problem_from_data(data)
        if placement == "node":
            assert [n.name for n in p.nodes][:2] == ["node1", "node2"]
            assert not p.resources
            assert all(m.nodes >= 1 for t in p.tasks for m in t.modes)
        else:
            assert not p.nodes
            assert {r.name for r in p.resources} >= {"gpu", "io", "net"}


def test_workloads_refuse_an_unknown_placement() -> None:
    for make in (
        lambda: import_muri(TRACE, placement="rack"),
        lambda: generate_batch(3, placement="rack"),
    ):
        with pytest.raises(InputError) as err:
            make()
        assert str(err.value) == "placement 'rack' is not one of pooled, node, gpu"


def test_generate_is_seeded_and_follows_the_gpu_mix() -> None:
    a, b = generate_batch(400, seed=7), generate_batch(400, seed=7)
    assert a == b
    assert a != generate_batch(400, seed=8)
    mix = Counter(j["gpus"] for j in a["jobs"])
    assert set(mix) <= {1, 2, 4, 8, 16, 32}
    assert 0.6 < mix[8] / 400 < 0.8  # 70% of the published trace's jobs use 8 GPUs
    p = problem_from_data(a)
    assert len(p.tasks) == 400


def test_generate_with_arrivals_and_blocks() -> None:
    data = generate_batch(20, seed=1, arrival_rate=10, blocks=2, nodes=2, gpus_per_node=4)
    assert all(j["gpus"] <= 8 for j in data["jobs"])
    releases = [j.get("release", 0) for j in data["jobs"]]
    assert releases == sorted(releases) and releases[-1] > 0
    assert len(problem_from_data(data).tasks) == 40


def test_metrics_by_hand(two_jobs: Problem) -> None:
    interleaved = Schedule(modes={"a": "1", "b": "1"}, starts={"a": 2, "b": 0})
    m = schedule_metrics(two_jobs, interleaved)
    assert m.makespan == 8
    assert m.mean_jct == 7.0  # A ends at 8, B at 6
    assert m.p99_jct == pytest.approx(7.98)
    assert m.utilisation == {"io": 0.5, "gpu": 1.0}  # 4 of 8 io ticks, 8 of 8 gpu ticks
    assert m.energy_kwh is None  # a tick without a length
    timed = two_jobs.model_copy(update={"time_unit": "1h"})
    # gpu busy 8 h at 300 W; io busy 4 h at 15 W and idle 4 h at 5 W
    assert schedule_metrics(timed, interleaved).energy_kwh == pytest.approx((2400 + 60 + 20) / 1000)


def test_import_and_generate_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "muri.json"
    result = runner.invoke(app, ["import", "muri", str(TRACE), "-o", str(out), "--blocks", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"{TRACE} -> {out} (12 jobs, 24 tasks)"
    assert len(load_instance(out).tasks) == 24
    gen = tmp_path / "g.yaml"
    result = runner.invoke(app, ["generate", "--jobs", "30", "--seed", "2", "-o", str(gen)])
    assert result.exit_code == 0
    assert json.dumps(load_instance(gen).model_dump())  # loads back
    bad = runner.invoke(app, ["import", "muri", str(tmp_path / "none.csv"), "-o", str(out)])
    assert bad.exit_code == 2
    assert bad.stderr.strip() == f"error: {tmp_path / 'none.csv'}: no such file"

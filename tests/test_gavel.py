"""Gavel's data read as Gavel reads it: a 3-line trace, hand-computed durations per GPU
type from a small throughputs file, and bad lines as one error each."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from planner.dl.gavel import GavelJob, read_gavel_trace, read_throughputs
from planner.errors import InputError

TRACE = (
    "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1"
    "\t1000\t1\t1\t-1.000000\t0\n"
    "Transformer (batch size 128)\tpython3 train.py\ttranslation\t-step\t1\t600\t2\t5"
    "\t3600.0\t120.5\n"
    "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1"
    "\t50\t1\t1\t-1\t7200\n"
)
R18, TR = "('ResNet-18 (batch size 64)', 1)", "('Transformer (batch size 128)', 2)"
THROUGHPUTS = {
    "v100": {R18: {"null": 20.0, R18: [12.0, 12.0]}, TR: {"null": 6.0}},
    "k80": {R18: {"null": 4.0}, TR: {"null": 0.0}},
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    trace, rates = tmp_path / "three.trace", tmp_path / "rates.json"
    trace.write_text(TRACE)
    rates.write_text(json.dumps(THROUGHPUTS))
    return trace, rates


def test_a_three_line_trace_reads_as_gavel_reads_it(files: tuple[Path, Path]) -> None:
    jobs = read_gavel_trace(files[0])
    assert jobs == [
        GavelJob("ResNet-18 (batch size 64)", 1000, 1, 1.0, None, 0.0),
        GavelJob("Transformer (batch size 128)", 600, 2, 5.0, 3600.0, 120.5),
        GavelJob("ResNet-18 (batch size 64)", 50, 1, 1.0, None, 7200.0),
    ]
    assert jobs[1].key == ("Transformer (batch size 128)", 2)


def test_durations_per_type_are_steps_over_the_rate_alone(files: tuple[Path, Path]) -> None:
    jobs, rates = read_gavel_trace(files[0]), read_throughputs(files[1])
    assert rates.types == ["v100", "k80"]
    # 1000 / 20 and 1000 / 4; 600 / 6, and the k80 measures 0
    assert rates.seconds(jobs[0].key, jobs[0].steps) == {"v100": 50.0, "k80": 250.0}
    assert rates.seconds(jobs[1].key, jobs[1].steps) == {"v100": 100.0, "k80": math.inf}
    key = jobs[0].key
    assert rates.pairs["v100"][key, key] == (12.0, 12.0)
    assert rates.rate("k80", key) == 4.0
    with pytest.raises(InputError, match="GPU type 'a100' is not measured"):
        rates.rate("a100", key)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a\tb\tc", "line 1: 3 tab-separated fields, a Gavel trace line has 10"),
        ("a\tb\tc\td\te\tmany\t1\t1\t-1\t0", "line 1: steps, scale factor, weight, SLO and "
         "arrival must be numbers"),
        ("a\tb\tc\td\te\t10\t0\t1\t-1\t0", "line 1: steps and scale factor must be at least 1, "
         "arrival a time >= 0"),
        ("a\tb\tc\td\te\t10\t1\t0\t-1\t0", "line 1: the priority weight must be a number > 0"),
    ],
)  # fmt: skip
def test_a_bad_trace_line_is_one_error_naming_it(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.trace"
    path.write_text(line + "\n")
    with pytest.raises(InputError) as caught:
        read_gavel_trace(path)
    assert str(caught.value) == f"{path}: {message}"


def test_a_throughputs_file_of_another_shape_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"v100": {"ResNet": {"null": 1.0}}}))
    with pytest.raises(InputError, match="'ResNet' is not a job key"):
        read_throughputs(path)


def imported(files: tuple[Path, Path], tmp_path: Path) -> tuple[CliRunner, Path]:
    """The 3-line trace imported on 2 V100s and a K80: a runner and the instance."""
    trace, rates = files
    out = tmp_path / "three.yaml"
    runner = CliRunner()
    got = runner.invoke(app, ["import", "gavel", str(trace), "--throughputs", str(rates),
                              "--cluster", "2:0:1", "-o", str(out)])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "(3 jobs on 2:0:1 V100:P100:K80, table model)" in got.output
    return runner, out


def test_import_gavel_writes_an_instance_the_policies_run(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    runner, out = imported(files, tmp_path)
    data = yaml.safe_load(out.read_text())
    assert data["interleave"] == "table" and data["throughputs"] == "rates.json"
    assert [n["gpu_type"] for n in data["cluster"]["nodes"]] == ["v100", "k80"]
    assert data["jobs"][1] == {"name": "job1", "gpus": 2, "model": "Transformer (batch size 128)",
                               "iterations": 600, "release": 120.5, "weight": 5.0,
                               "restart": 0.0}  # fmt: skip
    run = runner.invoke(app, ["policy", str(out), "gavel-fifo-perf"])
    assert run.exit_code == 0, run.output
    assert "audit         valid" in run.output
    # job0 alone on a V100 at 20/s: 1000 steps in 50 s; job1 on both V100s from the next
    # round at 120.5 s: 600 / 6 = 100 s
    assert "mean JCT      " in run.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["import", "gavel", "-o", "x.yaml"],
            "give a Gavel trace, or --jobs N for a batch of Gavel's job mix",
        ),
        (
            ["import", "gavel", "TRACE", "--jobs", "5", "-o", "x.yaml"],
            "give a Gavel trace or --jobs N (a generated batch), not both",
        ),
        (
            ["import", "gavel", "TRACE", "--seed", "3", "-o", "x.yaml"],
            "--seed and --arrival-rate go with --jobs, not with a trace",
        ),
        (
            ["import", "gavel", "TRACE", "--cluster", "8:16", "-o", "x.yaml"],
            "cluster '8:16': expected V100:P100:K80 GPU counts, e.g. 8:16:24",
        ),
        (
            ["import", "gavel", "TRACE", "--cluster", "3:0:0", "--per-server", "2", "-o", "x.yaml"],
            "cluster '3:0:0': every count must be a multiple of 2 GPUs per server",
        ),
        (
            ["import", "gavel", "TRACE", "--cluster", "0:0:1", "-o", "x.yaml"],
            "job 'job1' (Transformer (batch size 128), 2 GPUs): no GPU type of the cluster has "
            "a measured rate for it and as many GPUs",
        ),
    ],
)
def test_import_gavel_bad_input_is_one_line(
    files: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    trace, rates = files
    args = [str(trace) if a == "TRACE" else a for a in args]
    args = [str(tmp_path / a) if a == "x.yaml" else a for a in args]
    got = CliRunner().invoke(app, [*args, "--throughputs", str(rates)])
    assert got.exit_code == 2
    assert got.output.strip().splitlines() == [f"error: {message}"]
    assert not (tmp_path / "x.yaml").exists()


def test_the_table_bound_counts_pairs_by_hand() -> None:
    from planner.rates import Throughputs, table_bound

    a, b = ("a", 1), ("b", 1)
    # both at 1 step/s alone and 0.8 each side by side, on one V100: 100 steps each take
    # 125 s as a pair, 200 s one after the other; the longest alone is 100 s
    table = Throughputs({"v100": {a: 1.0, b: 1.0}}, {"v100": {(a, b): (0.8, 0.8)}})
    work = [(a, 100.0, 0.0), (b, 100.0, 0.0)]
    bound = table_bound(work, {"v100": 1}, table)
    assert bound == {"lp": pytest.approx(125.0, rel=1e-6), "longest": 100.0,
                     "bound": pytest.approx(125.0, rel=1e-6)}  # fmt: skip
    alone = table_bound(work, {"v100": 1}, Throughputs(table.alone, {"v100": {}}))
    assert alone["bound"] == pytest.approx(200.0, rel=1e-6)


def test_solve_on_gpu_types_searches_the_policies_in_the_executor(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    runner, out = imported(files, tmp_path)
    got = runner.invoke(app, ["solve", str(out), "-t", "5"])
    assert got.exit_code == 0, got.output
    # job0 alone on a V100 at 20/s: 50 s; job1 (2 GPUs, no K80 rate) on the two V100s
    # from its arrival at 120.5 s at 6/s: 100 s; job2 at 7,200 s: 50 / 20 = 2.5 s. The
    # first policy meets the bound (the last job from its release): proven optimal.
    lines = dict(line.split(None, 1) for line in got.output.splitlines()[1:] if line)
    assert lines["status"] == "optimal"
    assert lines["makespan"] == "7,202 s"
    assert lines["lower"] == "bound   7,202 s (longest job from its release)"
    assert lines["mean"] == "JCT      51 s"
    assert lines["audit"] == "valid (the executor's audit of the plan's run)"
    for extra, message in [
        (["--static"], "--static: the table model's jobs have measured rates, not stages; "
                       "the portfolio plans them in the executor"),
        (["-s", "cpsat"], "solver cpsat: the table model's jobs have measured rates, not "
                          "stages; the portfolio plans them in the executor"),
        (["--workers", "2"], "--workers: the search on GPU types takes --time-limit and "
                             "--seed only"),
    ]:  # fmt: skip
        bad = runner.invoke(app, ["solve", str(out), *extra])
        assert bad.exit_code == 2
        assert bad.output.strip() == f"error: {message}"


def test_a_cluster_sees_only_its_types_of_the_table() -> None:
    from planner.rates import Throughputs

    a = ("a", 2)
    # Gavel's files also measure e.g. v100_unconsolidated: not a type of the cluster
    table = Throughputs({"v100": {a: 3.0}, "v100_unconsolidated": {a: 5.0}}, {})
    assert table.best(a) == ("v100_unconsolidated", 5.0)
    assert table.only(["v100", "v100"]).best(a) == ("v100", 3.0)


def test_stage_options_are_refused_on_gpu_types(files: tuple[Path, Path], tmp_path: Path) -> None:
    runner, out = imported(files, tmp_path)
    for extra, message in [
        (["--slowdown", "none"], "--slowdown: the table model's pairs run at their measured rates"),
        (["--data-slots", "2"], "--data-slots: the table model has no stages to load data for"),
        (["--interleave", "muri"], "interleave 'muri': the file's jobs have measured rates only"),
    ]:
        got = runner.invoke(app, ["policy", str(out), "het-srpt", *extra])
        assert got.exit_code == 2
        assert got.output.strip().splitlines()[-1] == f"error: {message}"


def test_info_of_an_instance_on_gpu_types(files: tuple[Path, Path], tmp_path: Path) -> None:
    runner, out = imported(files, tmp_path)
    got = runner.invoke(app, ["info", str(out)])
    assert got.exit_code == 0, got.output
    rows = dict(line.split(None, 1) for line in got.output.splitlines())
    assert rows["GPUs"] == "2 v100, 1 k80"
    # the last job from its release: 7,200 + 50 / 20 s; every job alone on its fastest
    # type: (1000 / 20 + 600 / 6 + 50 / 20) / 3
    assert rows["makespan"] == "bound  7,202 s (longest job from its release)"
    assert rows["JCT"] == "bound       51 s mean (every job alone on its fastest type)"

"""Gavel's data read as Gavel reads it: a 3-line trace, hand-computed durations per GPU
type from a small throughputs file, and bad lines as one error each."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

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

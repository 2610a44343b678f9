"""Instance files: native forms, PSPLIB formats, conversion round trips, the shipped schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from planner.bounds import horizon
from planner.errors import InputError
from planner.io.instance import load_instance, save_instance
from planner.io.schema import instance_schema, schema_text, shipped_schema
from tests.conftest import INSTANCES

ALL_INSTANCES = [
    INSTANCES / "psplib" / "j301_1.sm",
    INSTANCES / "psplib" / "j1201_1.sm",
    INSTANCES / "mm" / "j102_2.mm",
    INSTANCES / "patterson" / "small.rcp",
    INSTANCES / "example.yaml",
    INSTANCES / "interleave.yaml",
]


def test_psplib_sm_is_read_with_its_numbers() -> None:
    p = load_instance(INSTANCES / "psplib" / "j301_1.sm")
    assert p.name == "j301_1"
    assert len(p.tasks) == 32
    assert [(r.name, r.capacity) for r in p.resources] == [
        ("R1", 12),
        ("R2", 13),
        ("R3", 4),
        ("R4", 12),
    ]
    task2 = p.task("2")
    assert task2.modes[0].duration == 8
    assert task2.modes[0].segments[0].demand == {"R1": 4}
    assert {q.after for q in p.precedences if q.before == "1"} == {"2", "3", "4"}


def test_psplib_mm_has_modes_and_budgets() -> None:
    p = load_instance(INSTANCES / "mm" / "j102_2.mm")
    assert [r.kind for r in p.resources] == ["renewable"] * 2 + ["nonrenewable"] * 2
    assert [r.capacity for r in p.nonrenewables] == [29, 40]
    assert max(len(t.modes) for t in p.tasks) == 3
    assert p.multi_mode


def test_patterson_rcp() -> None:
    p = load_instance(INSTANCES / "patterson" / "small.rcp")
    assert [t.min_duration for t in p.tasks] == [0, 3, 2, 2, 4, 0]
    assert {(q.before, q.after) for q in p.precedences} == {
        ("1", "2"),
        ("1", "3"),
        ("2", "4"),
        ("3", "5"),
        ("4", "6"),
        ("5", "6"),
    }


def test_cluster_form_compiles_to_block_chains() -> None:
    p = load_instance(INSTANCES / "example.yaml")
    bert = [t for t in p.tasks if t.job == "bert"]
    assert [t.name for t in bert] == ["bert/block1", "bert/block2"]
    # a fluid block: 4,000 iterations of 0.05 / 0.40 / 0.15 s on 2 GPUs, one segment of
    # per-GPU shares in thousandths (data 1/12, compute 2/3, sync 1/4 of the 0.6 s period),
    # 40 one-minute ticks at full speed; at speed 1/k the shares / k and the ticks * k
    modes = bert[0].modes
    assert [m.name for m in modes] == ["base", "base@1/2", "base@1/3", "base@1/4"]
    assert [[(s.name, s.duration) for s in m.segments] for m in modes] == [
        [("train", 40 * k)] for k in (1, 2, 3, 4)
    ]
    assert modes[0].segments[0].demand == {
        "gpu": 1334,
        "io": 167,
        "cpu": 334,
        "net": 500,
        "gpu_mem": 48,
        "resident": 2,
    }
    assert modes[3].segments[0].demand["gpu"] == 334
    capacity = {r.name: r.capacity for r in p.resources}
    assert (capacity["gpu"], capacity["io"], capacity["resident"]) == (8000, 8000, 32)
    assert p.units == {"gpu": 1000, "net": 1000, "io": 1000, "cpu": 1000}
    gpt2 = [t.name for t in p.tasks if t.job == "gpt2"]
    assert gpt2 == ["gpt2/block1", "gpt2/block2", "gpt2/checkpoint"]
    assert ("gpt2/block2", "gpt2/checkpoint") in {(q.before, q.after) for q in p.precedences}
    assert p.job_weight("gpt2") == 2


@pytest.mark.parametrize("path", ALL_INSTANCES, ids=lambda p: p.name)
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_convert_and_load_back_gives_the_same_problem(
    path: Path, suffix: str, tmp_path: Path
) -> None:
    original = load_instance(path)
    out = tmp_path / f"converted{suffix}"
    save_instance(original, out)
    again = load_instance(out)
    assert again == original
    assert again.model_dump() == original.model_dump()


@pytest.mark.parametrize("path", ALL_INSTANCES, ids=lambda p: p.name)
def test_converted_files_follow_the_shipped_schema(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    save_instance(load_instance(path), out)
    jsonschema.validate(json.loads(out.read_text()), instance_schema())


def test_cluster_form_file_follows_the_schema() -> None:
    data = yaml.safe_load((INSTANCES / "example.yaml").read_text())
    jsonschema.validate(data, instance_schema())


def test_schema_rejects_what_the_loader_rejects() -> None:
    data = yaml.safe_load((INSTANCES / "interleave.yaml").read_text())
    data["tasks"][0]["modes"][0]["segments"][0]["duration"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, instance_schema())


def test_shipped_schema_is_the_generated_one() -> None:
    assert shipped_schema() == schema_text()


def test_save_refuses_unknown_extension(tmp_path: Path) -> None:
    p = load_instance(INSTANCES / "interleave.yaml")
    with pytest.raises(InputError, match=r"cannot write '\.txt'"):
        save_instance(p, tmp_path / "x.txt")


def test_schema_has_the_integer_bound() -> None:
    # issue 15, row 7: what the loader refuses above 2**40, the schema refuses too
    data = yaml.safe_load((INSTANCES / "interleave.yaml").read_text())
    data["resources"][0]["capacity"] = 2**40 + 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, instance_schema())


def test_psplib_horizon_above_the_bound_is_refused(tmp_path: Path) -> None:
    # issue 15, row 8: two durations of 2**40 each fit, their sum does not
    text = (INSTANCES / "psplib" / "j301_1.sm").read_text()
    for old in ("  2      1     8       4", "  3      1     4      10"):
        text = text.replace(old, old.replace(old.split()[2], "1099511627776", 1), 1)
    path = tmp_path / "long.sm"
    path.write_text(text)
    ticks = horizon(load_instance(INSTANCES / "psplib" / "j301_1.sm")) - 8 - 4 + 2 * 2**40
    with pytest.raises(InputError) as err:
        load_instance(path)
    assert str(err.value) == (
        f"{path}: the horizon (every task back to back, with the latest release and all lags) "
        f"is {ticks} ticks, above the limit of 2**40 = 1099511627776; divide every duration, "
        "lag, release, deadline and window bound by a common factor (fewer, longer ticks)"
    )

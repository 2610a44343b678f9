"""Schedules: objectives, JSON and CSV files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.errors import InputError
from planner.model import Problem
from planner.schedule import Schedule, load_schedule


@pytest.fixture
def interleaved() -> Schedule:
    return Schedule(modes={"a": "1", "b": "1"}, starts={"a": 2, "b": 0}, meta={"solver": "hand"})


def test_objectives(two_jobs: Problem, interleaved: Schedule) -> None:
    assert interleaved.makespan(two_jobs) == 8
    assert interleaved.finish(two_jobs, "b") == 6
    assert interleaved.weighted_completion(two_jobs) == 1 * 8 + 2 * 6
    weighted = two_jobs.model_copy(update={"objective": "weighted_completion"})
    assert interleaved.objective(weighted) == 20


def test_json_has_makespan_and_segments(
    two_jobs: Problem, interleaved: Schedule, tmp_path: Path
) -> None:
    out = tmp_path / "s.json"
    interleaved.save(out, two_jobs)
    data = json.loads(out.read_text())
    assert data["makespan"] == 8
    assert data["instance"] == "two-jobs"
    assert data["solver"] == "hand"
    assert data["tasks"][0]["segments"] == [
        {"name": "load", "start": 2, "finish": 4},
        {"name": "train", "start": 4, "finish": 8},
    ]
    back = load_schedule(out)
    assert (back.modes, back.starts) == (interleaved.modes, interleaved.starts)


def test_csv_round_trip(two_jobs: Problem, interleaved: Schedule, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    interleaved.save(out, two_jobs)
    assert out.read_text().splitlines() == [
        "task,job,mode,start,finish",
        "a,A,1,2,8",
        "b,B,1,0,6",
    ]
    back = load_schedule(out)
    assert (back.modes, back.starts) == (interleaved.modes, interleaved.starts)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        # CSV start that is not a number, on the second data line
        (
            "s.csv",
            "task,mode,start\na,1,0\nb,1,soon\n",
            "line 3: start must be an integer >= 0, got 'soon'",
        ),
        # JSON entry without a mode
        (
            "s.json",
            '{"tasks": [{"task": "a", "start": 0}]}',
            "tasks[0]: each entry needs 'task', 'mode' and 'start'",
        ),
        # a task listed twice
        ("d.csv", "task,mode,start\na,1,0\na,1,3\n", "line 3: task 'a' appears twice"),
        # JSON that is not a schedule
        ("x.json", "[1, 2]", "expected an object with a list 'tasks'"),
        # broken JSON
        ("b.json", "{", "line 1: invalid JSON: Expecting property name enclosed in double quotes"),
        # an unknown format
        ("s.txt", "a", "unknown schedule format '.txt' (use .json or .csv)"),
        # a start of 10**30 ticks, above the bound of every tick (issue 15, row 7)
        (
            "big.csv",
            "task,mode,start\na,1,1000000000000000000000000000000\n",
            "line 2: start 1000000000000000000000000000000 is above the limit of "
            "2**40 = 1099511627776",
        ),
    ],
)
def test_bad_schedule_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_schedule(path)
    assert str(err.value) == f"{path}: {message}"


def test_stated_times_are_checked_against_the_problem(
    two_jobs: Problem, interleaved: Schedule, tmp_path: Path
) -> None:
    for suffix in (".json", ".csv"):
        out = tmp_path / f"s{suffix}"
        interleaved.save(out, two_jobs)
        back = load_schedule(out, two_jobs)
        assert (back.modes, back.starts) == (interleaved.modes, interleaved.starts)


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        # a JSON finish that contradicts the start (issue 15, row 17)
        (
            "f.json",
            lambda d: d["tasks"][0].update(finish=99),
            "tasks[0]: finish 99 contradicts the start: task 'a' (mode '1') starts at 2 and "
            "runs 6 ticks, so it finishes at 8",
        ),
        # a JSON segment moved on its own (issue 15, row 17)
        (
            "g.json",
            lambda d: d["tasks"][1]["segments"][1].update(start=5),
            "tasks[1].segments: segments contradict the start: task 'b' (mode '1') starts at 0, "
            "so its segments run 0 to 4, 4 to 6",
        ),
    ],
)
def test_json_times_that_contradict_the_start_are_refused(
    two_jobs: Problem,
    interleaved: Schedule,
    tmp_path: Path,
    name: str,
    change: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    path = tmp_path / name
    data = interleaved.to_dict(two_jobs)
    change(data)
    path.write_text(json.dumps(data))
    assert load_schedule(path).starts == interleaved.starts  # without the problem: not read
    with pytest.raises(InputError) as err:
        load_schedule(path, two_jobs)
    assert str(err.value) == f"{path}: {message}"


def test_csv_finish_that_contradicts_the_start_is_refused(
    two_jobs: Problem, tmp_path: Path
) -> None:
    # issue 15, row 17, in CSV: b runs 6 ticks from 0
    path = tmp_path / "s.csv"
    path.write_text("task,job,mode,start,finish\na,A,1,2,8\nb,B,1,0,7\n")
    with pytest.raises(InputError) as err:
        load_schedule(path, two_jobs)
    assert str(err.value) == (
        f"{path}: line 3: finish '7' contradicts the start: task 'b' (mode '1') starts at 0 and "
        "runs 6 ticks, so it finishes at 6"
    )

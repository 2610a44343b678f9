"""Schedules: objectives, JSON and CSV files."""

from __future__ import annotations

import json
from pathlib import Path

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
    ],
)
def test_bad_schedule_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_schedule(path)
    assert str(err.value) == f"{path}: {message}"

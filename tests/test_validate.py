"""The independent validator reports every kind of violation, with its numbers."""

from __future__ import annotations

from planner.model import Problem
from planner.schedule import Schedule
from planner.validate import validate


def sched(starts: dict[str, int], modes: dict[str, str] | None = None) -> Schedule:
    return Schedule(modes=modes or dict.fromkeys(starts, "1"), starts=starts)


def kinds(problem: Problem, schedule: Schedule) -> list[str]:
    return [str(v) for v in validate(problem, schedule).violations]


def test_interleaved_schedule_is_valid(two_jobs: Problem) -> None:
    report = validate(two_jobs, sched({"a": 2, "b": 0}))
    assert report.ok
    assert str(report) == "valid"
    assert sched({"a": 2, "b": 0}).makespan(two_jobs) == 8


def test_capacity_violation_names_resource_tick_load_and_capacity(two_jobs: Problem) -> None:
    # a trains on the gpu in [2, 6), b in [1, 5): both at tick 2
    assert kinds(two_jobs, sched({"a": 0, "b": 1})) == [
        "capacity: resource 'gpu' at tick 2: load 2 > capacity 1",
    ]


def test_capacity_window_is_respected(two_jobs_data: dict) -> None:
    two_jobs_data["resources"][1]["windows"] = [{"start": 0, "end": 3, "capacity": 0}]
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0})) == [
        "capacity: resource 'gpu' at tick 0: load 1 > capacity 0",
    ]
    assert validate(p, sched({"a": 1, "b": 7})).ok  # a trains 3-7, after the window


def test_precedence_and_lag(two_jobs_data: dict) -> None:
    two_jobs_data["precedences"] = [{"before": "a", "after": "b", "lag": 1}]
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 0, "b": 6})) == [
        "precedence: FS 'a' -> 'b' lag 1: 'b' starts at 6, earliest allowed 7"
    ]
    assert validate(p, sched({"a": 0, "b": 7})).ok


def test_start_to_start(two_jobs_data: dict) -> None:
    two_jobs_data["precedences"] = [{"before": "b", "after": "a", "kind": "SS", "lag": 3}]
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0})) == [
        "precedence: SS 'b' -> 'a' lag 3: 'a' starts at 2, earliest allowed 3"
    ]


def test_release_and_deadline(two_jobs_data: dict) -> None:
    two_jobs_data["tasks"][0].update(release=3)
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0})) == [
        "window: task 'a' starts at 2 before its release 3"
    ]
    two_jobs_data["tasks"][0].update(release=0, deadline=7)
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0})) == [
        "window: task 'a' finishes at 8 after its deadline 7"
    ]


def test_budget(two_jobs_data: dict) -> None:
    two_jobs_data["resources"].append({"name": "cash", "capacity": 5, "kind": "nonrenewable"})
    for t in two_jobs_data["tasks"]:
        t["modes"][0]["consumes"] = {"cash": 3}
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0})) == ["budget: 'cash': modes use 6, budget 5"]


def test_colocation(two_jobs_data: dict) -> None:
    two_jobs_data["jobs"] = [{"name": "A", "colocate": True}]
    two_jobs_data["tasks"][1]["job"] = "A"
    for t in two_jobs_data["tasks"]:
        first = t["modes"][0]
        t["modes"] = [
            {**first, "name": "n1", "placement": "n1"},
            {**first, "name": "n2", "placement": "n2"},
        ]
    p = Problem.model_validate(two_jobs_data)
    assert kinds(p, sched({"a": 2, "b": 0}, {"a": "n1", "b": "n2"})) == [
        "colocation: job 'A' is placed on ['n1', 'n2']",
    ]
    assert validate(p, sched({"a": 2, "b": 0}, {"a": "n2", "b": "n2"})).ok


def test_unknown_and_missing_tasks_and_modes(two_jobs: Problem) -> None:
    s = Schedule(modes={"a": "9", "zz": "1"}, starts={"a": 0, "zz": 0})
    assert kinds(two_jobs, s) == [
        "unknown: task 'a' has no mode '9'",
        "unknown: task 'zz' is not in the instance",
        "missing: task 'b' is not scheduled",
    ]


def test_every_violation_is_reported(two_jobs_data: dict) -> None:
    two_jobs_data["precedences"] = [{"before": "a", "after": "b"}]
    two_jobs_data["tasks"][1]["deadline"] = 5
    p = Problem.model_validate(two_jobs_data)
    report = validate(p, sched({"a": 0, "b": 2}))
    assert [v.kind for v in report.violations] == ["precedence", "window", "capacity"]
    assert str(report) == "invalid (3 violations)"

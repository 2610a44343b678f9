"""The problem model: defaults, derived values, array and graph views, infeasibility checks."""

from __future__ import annotations

import numpy as np
import pytest

from planner.checks import check_feasibility
from planner.errors import InfeasibleError
from planner.graph import task_graph
from planner.model import Problem, Resource


def test_modes_get_default_names_and_durations(two_jobs: Problem) -> None:
    a = two_jobs.task("a")
    assert [m.name for m in a.modes] == ["1"]
    assert a.min_duration == 6
    assert a.modes[0].peak("gpu") == 1
    assert a.modes[0].energy("io") == 2


def test_capacity_windows() -> None:
    r = Resource(name="gpu", capacity=8, windows=[{"start": 5, "end": 10, "capacity": 2}])
    assert [r.capacity_at(t) for t in (0, 5, 9, 10)] == [8, 2, 2, 8]
    assert r.max_capacity == 8
    with pytest.raises(ValueError, match="window end 3 must be after its start 3"):
        Resource(name="gpu", capacity=8, windows=[{"start": 3, "end": 3, "capacity": 2}])
    with pytest.raises(ValueError, match="capacity windows apply to renewable resources only"):
        Resource(
            name="b",
            capacity=8,
            kind="nonrenewable",
            windows=[{"start": 0, "end": 3, "capacity": 2}],
        )


def test_arrays_view(two_jobs_data: dict) -> None:
    two_jobs_data["resources"][1]["windows"] = [{"start": 1, "end": 3, "capacity": 0}]
    a = Problem.model_validate(two_jobs_data).arrays
    assert a.resource_names == ["io", "gpu"]
    assert a.mode_start.tolist() == [0, 1, 2]
    assert a.seg_start.tolist() == [0, 2, 4]
    assert a.seg_offset.tolist() == [0, 2, 0, 4]
    assert a.seg_demand.tolist() == [[1, 0], [0, 1], [0, 1], [1, 0]]
    assert a.mode_duration.tolist() == [6, 6]
    assert a.task_job.tolist() == [0, 1]
    assert np.array_equal(a.capacity_profile(4), [[1, 1, 1, 1], [1, 0, 0, 1]])


def test_graph_view(two_jobs_data: dict) -> None:
    two_jobs_data["precedences"] = [{"before": "a", "after": "b", "kind": "SS", "lag": 2}]
    g = task_graph(Problem.model_validate(two_jobs_data))
    assert list(g.edges(data="lag")) == [("a", "b", 2)]
    assert g.edges["a", "b"]["kind"] == "SS"


def test_colocated_job_without_a_common_placement_is_infeasible(two_jobs_data: dict) -> None:
    two_jobs_data["jobs"] = [{"name": "A", "colocate": True}]
    two_jobs_data["tasks"][1]["job"] = "A"
    two_jobs_data["tasks"][0]["modes"][0]["placement"] = "n1"
    two_jobs_data["tasks"][1]["modes"][0]["placement"] = "n2"
    with pytest.raises(
        InfeasibleError, match="job 'A' must be colocated but its tasks share no placement key"
    ):
        check_feasibility(Problem.model_validate(two_jobs_data))


def test_feasible_instance_passes_the_checks(two_jobs: Problem) -> None:
    check_feasibility(two_jobs)

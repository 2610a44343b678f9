"""Lower bounds: critical path (lags, releases, shortest modes) and energy."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.bounds import (
    critical_path_bound,
    earliest_starts,
    energy_bound,
    horizon,
    latest_starts,
    lower_bound,
)
from planner.io.instance import load_instance
from planner.io.psplib_io import mpm_time
from planner.model import Problem
from tests.conftest import INSTANCES

PSPLIB = sorted((INSTANCES / "psplib").glob("*.sm"))


@pytest.mark.parametrize("path", PSPLIB, ids=lambda p: p.name)
def test_critical_path_equals_psplib_mpm_time(path: Path) -> None:
    assert critical_path_bound(load_instance(path)) == mpm_time(path)


def test_mpm_time_of_j301_1() -> None:
    assert mpm_time(INSTANCES / "psplib" / "j301_1.sm") == 38


def _chain(**extra: object) -> Problem:
    """a (3 ticks) -> b (2 ticks), each demanding 2 of a capacity-2 resource."""
    data = {
        "resources": [{"name": "r", "capacity": 2}],
        "tasks": [
            {"name": "a", "modes": [{"segments": [{"duration": 3, "demand": {"r": 2}}]}]},
            {
                "name": "b",
                "modes": [
                    {"segments": [{"duration": 2, "demand": {"r": 2}}]},
                    {"segments": [{"duration": 1, "demand": {"r": 2}}, {"duration": 4}]},
                ],
            },
            {"name": "c", "release": 4, "modes": [{"segments": [{"duration": 1}]}]},
        ],
        "precedences": [{"before": "a", "after": "b", "lag": 1}],
    }
    data.update(extra)
    return Problem.model_validate(data)


def test_critical_path_uses_lags_releases_and_shortest_modes() -> None:
    p = _chain()
    assert earliest_starts(p) == {"a": 0, "b": 4, "c": 4}
    assert critical_path_bound(p) == 6  # a 0-3, lag 1, b's shortest mode is 2 ticks


def test_start_to_start_precedence() -> None:
    p = _chain(precedences=[{"before": "a", "after": "b", "kind": "SS", "lag": 2}])
    assert earliest_starts(p)["b"] == 2
    assert critical_path_bound(p) == 5  # c: release 4 + 1; b: 2 + 2; a: 3


def test_energy_bound_counts_least_work_per_resource() -> None:
    # least work on r: a 3*2 = 6, b min(2*2, 1*2) = 2 -> 8 units over capacity 2 = 4 ticks
    assert energy_bound(_chain()) == 4


def test_energy_bound_sees_capacity_windows() -> None:
    p = _chain(
        resources=[{"name": "r", "capacity": 2, "windows": [{"start": 0, "end": 3, "capacity": 0}]}]
    )
    assert energy_bound(p) == 7  # nothing in [0, 3), then 8 units at 2 per tick


def test_latest_starts_follow_deadlines_backwards() -> None:
    p = _chain()
    p = p.model_copy(
        update={"tasks": [p.tasks[0], p.tasks[1].model_copy(update={"deadline": 10}), p.tasks[2]]}
    )
    ls = latest_starts(p)
    assert ls["b"] == 8
    assert ls["a"] == 4  # b starts by 8, lag 1, a's 3 ticks
    assert ls["c"] is None
    assert latest_starts(p, horizon=9)["c"] == 8


def test_lower_bound_and_horizon() -> None:
    p = _chain()
    assert lower_bound(p) == 6
    assert horizon(p) == 4 + 3 + 5 + 1 + 1  # latest release, longest modes, lags

"""Node placement in the exact models: gangs, per-node capacity, colocated node sets, node
types and warm starts, on hand-solved instances of two 8-GPU nodes."""

from __future__ import annotations

from typing import Any

import pytest

from planner import Problem, Status, validate
from planner.models.cpsat import solve_cpsat
from planner.models.milp import BACKENDS, solve_milp
from planner.result import Result
from planner.schedule import Schedule
from planner.solvers import solve


def mode(duration: int, gpu: int, nodes: int = 1, **fields: Any) -> dict[str, Any]:
    """A one-segment mode on ``nodes`` nodes that takes ``gpu`` GPUs on each."""
    return {"segments": [{"duration": duration, "demand": {"gpu": gpu}}], "nodes": nodes, **fields}


def two_nodes(tasks: list[dict[str, Any]], **extra: Any) -> Problem:
    """``tasks`` on nodes n1 and n2 of 8 GPUs each."""
    nodes = [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")]
    return Problem.model_validate({"nodes": nodes, "tasks": tasks, **extra})


def gang(with_gang: bool = True) -> Problem:
    """G needs 16 GPUs: a gang on both nodes for 4 ticks, or one node for 12 ticks; three
    5-GPU jobs of 3 ticks, no two of which share a node.

    With the gang, nothing runs beside G, and s1..s3 take two rounds: 4 + 3 + 3 = 10. On
    one node, G alone takes 12 (s1..s3 run on the other node meanwhile).
    """
    modes = [mode(4, 8, 2, name="gang")] if with_gang else []
    small = [{"name": f"s{i}", "modes": [mode(3, 5)]} for i in (1, 2, 3)]
    return two_nodes([{"name": "G", "modes": [*modes, mode(12, 8, name="one")]}, *small])


def colocated(colocate: bool) -> Problem:
    """P holds a node over [0, 4), Q the other over [2, 6); job J's blocks b1 -> b2 take
    a whole node for 2 ticks each.

    Apart: b1 in [0, 2) on Q's node, b2 in [4, 6) on P's: 6. Colocated, the blocks share
    one node: b1 [0, 2) and b2 [6, 8) on Q's, or b1 [4, 6) and b2 [6, 8) on P's: 8.
    """
    return two_nodes(
        [
            {"name": "P", "modes": [mode(4, 8)], "deadline": 4},
            {"name": "Q", "modes": [mode(4, 8)], "release": 2, "deadline": 6},
            {"name": "b1", "job": "J", "modes": [mode(2, 8)]},
            {"name": "b2", "job": "J", "modes": [mode(2, 8)]},
        ],
        jobs=[{"name": "J", "colocate": colocate}],
        precedences=[{"before": "b1", "after": "b2"}],
    )


def gang_sizes(colocate: bool) -> Problem:
    """b1 runs as a gang of two nodes for 2 ticks or on one node for 4; then b2 runs on one
    node for 1 tick. Apart: 2 + 1 = 3; colocated, b1 must run on b2's single node: 4 + 1 = 5.
    """
    return two_nodes(
        [
            {"name": "b1", "job": "J", "modes": [mode(2, 8, 2), mode(4, 8)]},
            {"name": "b2", "job": "J", "modes": [mode(1, 8)]},
        ],
        jobs=[{"name": "J", "colocate": colocate}],
        precedences=[{"before": "b1", "after": "b2"}],
    )


CASES = {
    "gang": (gang(), 10),
    "no gang": (gang(with_gang=False), 12),
    "colocated": (colocated(True), 8),
    "apart": (colocated(False), 6),
    "colocated gang sizes": (gang_sizes(True), 5),
    "gang sizes apart": (gang_sizes(False), 3),
}


def checked(problem: Problem, result: Result, optimum: float) -> Schedule:
    """Assert a proven ``optimum`` and a schedule the validator accepts; return it."""
    assert result.status is Status.OPTIMAL
    assert result.objective == optimum
    assert result.schedule is not None
    assert validate(problem, result.schedule).ok
    return result.schedule


@pytest.mark.parametrize("case", list(CASES))
def test_cpsat_optimum(case: str) -> None:
    problem, optimum = CASES[case]
    result = solve(problem, "cpsat", time_limit=30)
    checked(problem, result, optimum)
    # the core's bound ignores nodes: the optimum is CP-SAT's own proof
    assert result.solver_bound == optimum


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_milp_optimum(case: str, backend: str) -> None:
    problem, optimum = CASES[case]
    checked(problem, solve_milp(problem, time_limit=60, workers=1, backend=backend), optimum)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_gang_takes_both_nodes_at_once(solver: str) -> None:
    problem = gang()
    s = checked(problem, solve(problem, solver, time_limit=60, workers=1), 10)
    assert (s.modes["G"], sorted(s.nodes["G"])) == ("gang", ["n1", "n2"])
    # nothing runs beside the gang
    assert all(s.finish(problem, t) <= s.starts["G"] or s.starts[t] >= 4 for t in ("s1", "s2"))
    assert all(len(s.nodes[t]) == 1 for t in ("s1", "s2", "s3"))


def test_per_node_capacity_is_not_a_pool() -> None:
    # the same jobs on one pool of 16 GPUs: s1..s3 run at once (15 GPUs), then G: 3 + 4
    one = {"name": "gpu", "capacity": 16}
    pooled = Problem.model_validate(
        {
            "resources": [one],
            "tasks": [
                {"name": "G", "modes": [{"segments": [{"duration": 4, "demand": {"gpu": 16}}]}]},
                *(
                    {
                        "name": f"s{i}",
                        "modes": [{"segments": [{"duration": 3, "demand": {"gpu": 5}}]}],
                    }
                    for i in (1, 2, 3)
                ),
            ],
        }
    )
    checked(pooled, solve(pooled, "cpsat", time_limit=30), 7)


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_colocated_blocks_share_one_node(solver: str) -> None:
    for colocate, optimum in ((True, 8), (False, 6)):
        problem = colocated(colocate)
        s = checked(problem, solve(problem, solver, time_limit=60, workers=1), optimum)
        assert (s.nodes["b1"] == s.nodes["b2"]) is colocate
        assert s.nodes["P"] != s.nodes["Q"]


def test_colocated_job_takes_the_common_gang_size() -> None:
    problem = gang_sizes(True)
    s = checked(problem, solve(problem, "cpsat", time_limit=30), 5)
    assert len(s.nodes["b1"]) == 1 and s.nodes["b1"] == s.nodes["b2"]


def test_node_type() -> None:
    # two nodes of type a100 and one v100; the a100 job runs on the a100 nodes only, so
    # its two 3-tick tasks run side by side: 3, while the v100 node stays idle
    nodes = [
        {"name": "v", "capacity": {"gpu": 8}, "type": "v100"},
        {"name": "a1", "capacity": {"gpu": 8}, "type": "a100"},
        {"name": "a2", "capacity": {"gpu": 8}, "type": "a100"},
    ]
    tasks = [{"name": n, "modes": [mode(3, 8, node_type="a100")]} for n in ("x", "y")]
    problem = Problem.model_validate({"nodes": nodes, "tasks": tasks})
    for solver in ("cpsat", "milp"):
        s = checked(problem, solve(problem, solver, time_limit=60, workers=1), 3)
        assert sorted(s.nodes["x"] + s.nodes["y"]) == ["a1", "a2"]


def hand_made() -> Schedule:
    """An optimal schedule of ``colocated(True)`` with P on n2, the second of two identical
    nodes: the symmetry break wants the first task on n1, so the hint must be renamed."""
    return Schedule(
        modes=dict.fromkeys(("P", "Q", "b1", "b2"), "1"),
        starts={"P": 0, "Q": 2, "b1": 4, "b2": 6},
        nodes={"P": ("n2",), "Q": ("n1",), "b1": ("n2",), "b2": ("n2",)},
    )


def test_cpsat_accepts_a_placed_initial_solution() -> None:
    problem, initial = colocated(True), hand_made()
    assert validate(problem, initial).ok
    # with every variable fixed to its hint, only a complete and consistent hint is feasible
    fixed = {"fix_variables_to_their_hinted_value": True}
    result = solve_cpsat(problem, time_limit=30, initial_solution=initial, parameters=fixed)
    s = checked(problem, result, 8)
    assert result.reason is None and s is not initial
    assert s.starts == initial.starts
    assert s.nodes == {"P": ("n1",), "Q": ("n2",), "b1": ("n1",), "b2": ("n1",)}
    free = solve(problem, "cpsat", time_limit=30, initial_solution=initial)
    checked(problem, free, 8)
    assert free.stats["hint_makespan"] == 8


def hand_made_gang() -> Schedule:
    """An optimal schedule of ``gang()``: G first on both nodes, then two rounds of s1..s3."""
    return Schedule(
        modes={"G": "gang", "s1": "1", "s2": "1", "s3": "1"},
        starts={"G": 0, "s1": 4, "s2": 4, "s3": 7},
        nodes={"G": ("n2", "n1"), "s1": ("n2",), "s2": ("n1",), "s3": ("n2",)},
    )


@pytest.mark.parametrize(
    ("problem", "initial", "optimum"),
    [(colocated(True), hand_made(), 8), (gang(), hand_made_gang(), 10)],
    ids=["colocated", "gang"],
)
def test_milp_warm_start_from_a_placed_schedule(
    problem: Problem, initial: Schedule, optimum: int
) -> None:
    assert validate(problem, initial).ok
    result = solve_milp(problem, time_limit=60, workers=1, backend="cbc", initial_solution=initial)
    # CBC's MIP start takes the schedule, its nodes renamed into the symmetry-broken form
    assert result.stats["warm_start"] is True
    checked(problem, result, optimum)

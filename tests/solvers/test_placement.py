"""Node placement in the decoders (sgs, ga, pso, exclusive baselines) and the registry:
nodes chosen as tasks are scheduled, gangs with one start, colocated node sets, pinned
nodes, and the same schedules on both capacity profiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from planner import Problem, validate
from planner.errors import InputError
from planner.io.instance import problem_from_data
from planner.metrics import schedule_metrics
from planner.schedule import Schedule
from planner.solvers import solve
from planner.solvers.capacity_numba import SKYLINE, TICKS
from planner.solvers.encoding import compile_problem
from planner.solvers.ga import segment_use
from planner.solvers.sgs import Decoder, priorities

HEURISTICS = [("sgs", {}), ("ga", {"schedules": 300}), ("pso", {"schedules": 300})]


def mode(duration: int, gpu: int, nodes: int = 1, **fields: Any) -> dict[str, Any]:
    """A one-segment mode on ``nodes`` nodes that takes ``gpu`` GPUs on each."""
    return {"segments": [{"duration": duration, "demand": {"gpu": gpu}}], "nodes": nodes, **fields}


def two_nodes(tasks: list[dict[str, Any]], **extra: Any) -> Problem:
    """``tasks`` on nodes n1 and n2 of 8 GPUs each."""
    nodes = [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")]
    return Problem.model_validate({"nodes": nodes, "tasks": tasks, **extra})


def gang_first() -> Problem:
    """G needs both nodes for 4 ticks (a gang); three 5-GPU tasks of 3 ticks, no two of
    which share a node. The optimum is 10: G, then the small ones in two rounds."""
    small = [{"name": f"s{i}", "modes": [mode(3, 5)]} for i in (1, 2, 3)]
    return two_nodes([{"name": "G", "modes": [mode(4, 8, 2)]}, *small])


@pytest.mark.parametrize(("solver", "options"), HEURISTICS)
def test_a_gang_takes_both_nodes_at_one_start(solver: str, options: dict[str, Any]) -> None:
    p = gang_first()
    r = solve(p, solver, **options)
    assert validate(p, r.schedule).ok
    assert sorted(r.schedule.nodes["G"]) == ["n1", "n2"]
    assert r.objective == 10
    assert {len(r.schedule.nodes[f"s{i}"]) for i in (1, 2, 3)} == {1}


def test_colocated_job_keeps_its_node_and_free_job_does_not() -> None:
    """P holds n1 over [0, 4); J's blocks b1 -> b2 take a whole node for 2 ticks each and
    a filler F holds n2 over [2, 6). Colocated, b2 must follow b1 on n2: after F, 8."""
    tasks = [
        {"name": "P", "modes": [mode(4, 8, on=["n1"])]},
        {"name": "F", "modes": [mode(4, 8, on=["n2"])], "release": 2},
        {"name": "b1", "job": "J", "modes": [mode(2, 8)]},
        {"name": "b2", "job": "J", "modes": [mode(2, 8)]},
    ]
    precs = [{"before": "b1", "after": "b2"}]
    for colocate, makespan in ((True, 8), (False, 6)):
        p = two_nodes(tasks, jobs=[{"name": "J", "colocate": colocate}], precedences=precs)
        dec = Decoder(p)
        dec.run(dec.order(np.arange(4.0)))  # P, F, b1, b2
        s = dec.schedule()
        assert validate(p, s).ok
        assert s.makespan(p) == makespan
        assert s.nodes["P"] == ("n1",) and s.nodes["F"] == ("n2",)
        assert (s.nodes["b1"] == s.nodes["b2"]) is colocate


def test_pinned_modes_run_where_they_are_pinned() -> None:
    p = two_nodes([{"name": f"t{i}", "modes": [mode(2, 8, on=["n2"])]} for i in range(3)])
    r = solve(p, "sgs")
    assert validate(p, r.schedule).ok
    assert r.objective == 6
    assert set(r.schedule.nodes.values()) == {("n2",)}


def test_the_validator_names_a_broken_pin_gang_and_node_capacity() -> None:
    p = two_nodes(
        [
            {"name": "a", "modes": [mode(2, 8, on=["n2"])]},
            {"name": "g", "modes": [mode(2, 8, 2)]},
            {"name": "b", "modes": [mode(2, 5)]},
            {"name": "c", "modes": [mode(2, 5)]},
        ]
    )
    s = Schedule(
        modes={t: "1" for t in "agbc"},
        starts={"a": 0, "g": 2, "b": 4, "c": 4},
        nodes={"a": ("n1",), "g": ("n1",), "b": ("n2",), "c": ("n2",)},
    )
    assert [str(v) for v in validate(p, s).violations] == [
        "node: task 'a' is pinned to ['n2'], runs on ['n1']",
        "node: task 'g' needs 2 distinct nodes, the schedule names ['n1']",
        "capacity: node 'n2' resource 'gpu' at tick 4: load 10 > capacity 8",
    ]


@pytest.mark.parametrize("parallel", [False, True])
def test_skyline_and_per_tick_profiles_place_alike(parallel: bool) -> None:
    """A placed batch from the cluster form: both capacity forms give one schedule."""
    jobs = [
        {"name": f"j{k}", "gpus": g, "iterations": 40 + 7 * k, "blocks": 2}
        | {"stages": {"data": 0.5 + 0.1 * (k % 3), "gpu": 0.4, "sync": 0.1}}
        for k, g in enumerate([2, 4, 8, 16, 4, 2, 8, 1, 16, 4])
    ]
    p = problem_from_data(
        {
            "time_unit": "1s",
            "placement": "node",
            "cluster": {"nodes": [{"name": "n", "count": 3, "gpu": 8, "io": 8, "net": 8}]},
            "jobs": jobs,
        }
    )
    out = []
    for kind in (TICKS, SKYLINE):
        dec = Decoder(p, kind)
        dec.run(dec.order(priorities(p, "grw")), parallel=parallel)
        dec.justify()
        out.append(dec.schedule())
        assert validate(p, out[-1]).ok
    assert (out[0].starts, out[0].nodes) == (out[1].starts, out[1].nodes)


def test_a_job_larger_than_the_cluster_is_refused_before_any_solver() -> None:
    with pytest.raises(InputError, match=r"jobs\[0\]\.gpus: job 'huge' needs 32 GPUs"):
        problem_from_data(
            {
                "placement": "node",
                "cluster": {"nodes": [{"name": "n", "count": 2, "gpu": 8}]},
                "jobs": [
                    {"name": "huge", "gpus": 32, "iterations": 5, "stages": {"data": 1, "gpu": 1}}
                ],
            }
        )


@pytest.mark.parametrize("policy", ["fifo", "srtf", "srsf"])
def test_exclusive_baselines_hold_the_peak_on_their_nodes(policy: str) -> None:
    """Two jobs of two 2-tick segments (GPUs 8 then 0) on one node: interleaved they
    overlap, exclusive each holds the node for its whole run: 4 + 4 = 8."""
    seg = [{"duration": 2, "demand": {"gpu": 8}}, {"duration": 2, "demand": {"gpu": 0}}]
    p = Problem.model_validate(
        {
            "nodes": [{"name": "n1", "capacity": {"gpu": 8}}],
            "tasks": [
                {"name": f"t{k}", "job": f"J{k}", "modes": [{"segments": seg, "nodes": 1}]}
                for k in (1, 2)
            ],
            "jobs": [{"name": "J1"}, {"name": "J2"}],
        }
    )
    r = solve(p, f"exclusive-{policy}")
    assert validate(p, r.schedule).ok
    assert r.objective == 8
    assert solve(p, "sgs").objective == 6


def test_metrics_count_node_work_per_node_and_over_all_nodes() -> None:
    p = gang_first()
    s = Schedule(
        modes={t: "1" for t in ("G", "s1", "s2", "s3")},
        starts={"G": 0, "s1": 4, "s2": 4, "s3": 7},
        nodes={"G": ("n1", "n2"), "s1": ("n1",), "s2": ("n2",), "s3": ("n1",)},
    )
    assert validate(p, s).ok
    m = schedule_metrics(p, s)
    assert m.node_utilisation == {"n1": {"gpu": (32 + 15 + 15) / 80}, "n2": {"gpu": 47 / 80}}
    assert m.utilisation == {"gpu": (32 + 32 + 45) / 160}


def test_resource_weights_count_node_resources() -> None:
    """grw and the GA's segment weights see node work (a gang's on all its nodes)."""
    p = gang_first()
    # G: 4 ticks x 8 GPUs x 2 nodes over 16 GPUs; s_i: 3 x 5 x 1 over 16
    assert priorities(p, "grw").tolist() == [-4.0, -15 / 16, -15 / 16, -15 / 16]
    d = compile_problem(p)
    assert segment_use(d).tolist() == [8 * 2 / 16, 5 * 2 / 16, 5 * 2 / 16, 5 * 2 / 16]

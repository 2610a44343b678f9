"""Migration: a job with ``migrate: true`` may run each block on other nodes than the
previous one, paying its restart cost there; every solver handles the modes that keep
a predecessor's nodes (``same_nodes_as``) and the validator checks them."""

from __future__ import annotations

from typing import Any

import pytest

from planner import Problem, validate
from planner.disturbances import MURI_FACTORS, Disturbances, Slowdown
from planner.errors import InputError
from planner.io.instance import problem_from_data
from planner.replay.events import parse_event
from planner.replay.replan import replan
from planner.replay.simulate import simulate
from planner.schedule import Schedule
from planner.solvers import solve

SOLVERS: list[tuple[str, dict[str, Any]]] = [
    ("sgs", {}),
    ("sgs", {"scheme": "parallel"}),
    ("ga", {"schedules": 300}),
    ("pso", {"schedules": 300}),
    ("portfolio", {"time_limit": 20}),
    ("milp", {"time_limit": 60}),
    ("exclusive-fifo", {}),
    ("exclusive-srtf", {}),
]


def cluster(migrate: bool, restart: float = 1.0) -> dict[str, Any]:
    """Two 4-GPU nodes; job a: two 10 s blocks of 4 GPUs; jobs b and c: 15 s of 4 GPUs.

    Without migration a job keeps one node: a (20 s) alone on one node and b + c (30 s)
    on the other, or a with b or c (35 s): the optimum is 30. With migration a's first
    block runs on one node, then b there; c on the other node, then a's second block
    moves there and restarts for 1 s: 10 + 15 = 25 on one node, 15 + 1 + 10 = 26 on the
    other, which the energy bound (50 s of node work on 2 nodes plus the restart) meets.
    """
    gpu = {"data": 0, "gpu": 10}
    a: dict[str, Any] = {"name": "a", "gpus": 4, "iterations": 2, "blocks": 2, "stages": gpu}
    if migrate:
        a.update(migrate=True, restart=restart)
    long = {"data": 0, "gpu": 15}
    return {
        "name": "migration",
        "time_unit": "1s",
        "placement": "node",
        "cluster": {"nodes": [{"name": "n", "count": 2, "gpu": 4}]},
        "jobs": [
            a,
            {"name": "b", "gpus": 4, "iterations": 1, "stages": long},
            {"name": "c", "gpus": 4, "iterations": 1, "stages": long},
        ],
    }


def test_the_compiler_gives_later_blocks_a_staying_and_a_moving_mode() -> None:
    p = problem_from_data(cluster(True))
    block2 = p.task("a/block2")
    # per speed of the fluid block, a staying mode and a moving one
    stay, moved, *slower = block2.modes
    assert (stay.name, stay.same_nodes_as, stay.duration) == ("base", "a/block1", 10)
    assert (moved.name, moved.same_nodes_as, moved.duration) == ("base-moved", None, 11)
    assert [m.name for m in slower[-2:]] == ["base@1/4", "base@1/4-moved"]
    # the restart holds the whole GPUs (4,000 thousandths) and their residency
    held = {"gpu": 4000, "resident": 4}
    assert (moved.segments[0].name, moved.segments[0].demand) == ("restart", held)
    assert slower[-1].segments[0].demand == held
    assert slower[-1].segments[1].demand == {"gpu": 1000, "resident": 4}
    assert [m.same_nodes_as for m in p.task("a/block1").modes] == [None] * 4
    jobs = {j.name: j for j in p.jobs}
    assert (jobs["a"].colocate, jobs["a"].restart) == (False, 1)
    assert (jobs["b"].colocate, jobs["b"].restart) == (True, 0)


@pytest.mark.parametrize(("migrate", "optimum"), [(True, 26), (False, 30)])
def test_only_migration_reaches_the_optimum(migrate: bool, optimum: int) -> None:
    p = problem_from_data(cluster(migrate))
    r = solve(p, "cpsat", time_limit=30)
    assert (r.status.value, r.objective) == ("optimal", optimum)
    assert validate(p, r.schedule).ok
    if migrate:
        s = r.schedule
        assert s.modes["a/block2"] == "base-moved"
        assert s.nodes["a/block1"] != s.nodes["a/block2"]


@pytest.mark.parametrize(("solver", "options"), SOLVERS)
def test_every_solver_gives_a_valid_schedule_with_migration(
    solver: str, options: dict[str, Any]
) -> None:
    p = problem_from_data(cluster(True))
    r = solve(p, solver, **options)
    s = r.schedule
    assert s is not None and validate(p, s).ok
    stays = s.modes["a/block2"] == "base"
    assert (s.nodes["a/block2"] == s.nodes["a/block1"]) or not stays
    if solver == "milp":
        assert (r.status.value, r.objective) == ("optimal", 26)


def test_a_block_stays_when_its_node_is_free() -> None:
    data = cluster(True)
    data["jobs"] = data["jobs"][:1]
    p = problem_from_data(data)
    for solver in ("sgs", "cpsat"):
        s = solve(p, solver).schedule
        assert (s.modes["a/block2"], s.nodes["a/block2"]) == ("base", s.nodes["a/block1"])
        assert s.makespan(p) == 20


def test_the_validator_names_a_staying_block_on_other_nodes() -> None:
    p = problem_from_data(cluster(True))
    s = solve(p, "cpsat", time_limit=30).schedule
    other = "n1" if s.nodes["a/block1"] == ("n2",) else "n2"
    bad = Schedule(
        modes={**s.modes, "a/block2": "base"},
        starts={**s.starts, "a/block2": 40},
        nodes={**s.nodes, "a/block2": (other,)},
    )
    report = validate(p, bad)
    kept = "+".join(s.nodes["a/block1"])
    assert [str(v) for v in report.violations] == [
        f"node: task 'a/block2' in mode 'base' keeps the nodes of 'a/block1' ({kept}), "
        f"runs on {other}"
    ]


def test_migration_needs_node_placement() -> None:
    data = cluster(True)
    data["placement"] = "pooled"
    with pytest.raises(InputError) as err:
        problem_from_data(data)
    assert (
        "jobs[0].migrate: migration moves a job between nodes; it needs 'placement: node' or "
        "'placement: gpu'" in (str(err.value))
    )


def test_the_restart_cost_defaults_to_the_catalog() -> None:
    data = cluster(True)
    job = data["jobs"][0]
    del job["restart"]
    job.update(model="resnet18", batch_size=128, gpus=4)
    del job["stages"]
    p = problem_from_data(data)
    # the catalog's resnet18 restarts in 5 s on 4 GPUs
    assert p.jobs[0].restart == 5
    assert p.task("a/block2").modes[1].segments[0].duration == 5


def nodes_problem(**mode_fields: Any) -> dict[str, Any]:
    nodes = [{"name": n, "capacity": {"gpu": 8}} for n in ("n1", "n2")]
    one = {"segments": [{"duration": 2, "demand": {"gpu": 8}}], "nodes": 1}
    return {
        "nodes": nodes,
        "tasks": [
            {"name": "x", "modes": [one]},
            {"name": "y", "modes": [{**one, **mode_fields}]},
            {"name": "z", "modes": [one]},
        ],
        "precedences": [{"before": "x", "after": "y"}],
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"same_nodes_as": "w"}, "tasks[1].modes[0].same_nodes_as: unknown task 'w'"),
        (
            {"same_nodes_as": "z"},
            "tasks[1].modes[0].same_nodes_as: task 'z' must be a direct predecessor of 'y' "
            "(its nodes are chosen first)",
        ),
        (
            {"same_nodes_as": "x", "nodes": 2},
            "tasks[1].modes[0].same_nodes_as: no mode of task 'x' runs on 2 nodes",
        ),
        (
            {"same_nodes_as": "x", "nodes": 0, "segments": [{"duration": 1}]},
            "a mode that runs on no node (nodes: 0) keeps no nodes",
        ),
    ],
)
def test_a_bad_same_nodes_as_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as err:
        problem_from_data(nodes_problem(**fields))
    assert message in str(err.value)


def test_a_kept_node_set_in_the_problem_form() -> None:
    p = Problem.model_validate(nodes_problem(same_nodes_as="x"))
    for solver in ("sgs", "ga", "cpsat"):
        s = solve(p, solver).schedule
        assert validate(p, s).ok and s.nodes["y"] == s.nodes["x"]


def test_a_replan_after_a_node_is_gone_moves_the_next_block() -> None:
    p = problem_from_data(cluster(True))
    plan = solve(p, "cpsat", time_limit=30).schedule
    first = plan.nodes["a/block1"][0]
    at = plan.finish(p, "a/block1")
    # a/block1 is done; its node goes for good: a/block2 can only move, restarting
    r = replan(p, plan, at, [parse_event(f"fail:{first}")], "cpsat", time_limit=30)
    s = r.schedule
    assert s is not None and r.status.value == "optimal"
    assert s.modes["a/block2"] == "base-moved" and first not in s.nodes["a/block2"]
    assert s.starts["a/block1"] == plan.starts["a/block1"]


def test_a_migrating_plan_replays_valid() -> None:
    p = problem_from_data(cluster(True))
    plan = solve(p, "cpsat", time_limit=30).schedule
    ex = simulate(p, plan, Disturbances(slowdown=Slowdown(MURI_FACTORS)))
    assert ex.report.ok and ex.makespan >= 26


def test_the_problem_form_keeps_kept_nodes_and_restart_costs(tmp_path) -> None:
    from planner.io.instance import load_instance, save_instance

    p = problem_from_data(cluster(True))
    path = tmp_path / "migration.json"
    save_instance(p, path)
    again = load_instance(path)
    assert again.task("a/block2").modes[0].same_nodes_as == "a/block1"
    assert [j.restart for j in again.jobs] == [1, 0, 0]
    assert again == p

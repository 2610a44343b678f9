"""A job's chain of blocks merged into one task (``solvers.coarse``), placed at once."""

from __future__ import annotations

from typing import Any

import pytest

from planner import solve
from planner.io.instance import problem_from_data
from planner.model import Problem
from planner.solvers import portfolio
from planner.solvers.coarse import coarsen, refine
from planner.solvers.sgs import priorities, serial_sgs
from planner.validate import validate

GPU_ONLY = {"data": 0.0, "gpu": 1.0, "sync": 0.0}


def waiting(**extra: Any) -> Problem:
    """Two GPUs of one machine: c (100 s) from 60 s, and a in two blocks of 50 s.

    The longest first, c takes GPU 0 from 60 s; a's first block fits there before it
    (both GPUs are free at 0 s, the lower one wins the tie), and a's second block, kept
    on a's GPU, waits for c: 210 s. Placed as one, a's blocks go to GPU 1: 160 s.
    """
    return problem_from_data(
        {
            "time_unit": "1s",
            "placement": "gpu",
            "cluster": {"nodes": [{"name": "n", "gpu": 2}]},
            "jobs": [
                {"name": "c", "gpus": 1, "iterations": 100, "release": 60, "stages": GPU_ONLY},
                {"name": "a", "gpus": 1, "iterations": 100, "blocks": 2, "stages": GPU_ONLY},
            ],
            **extra,
        }
    )


def test_a_job_placed_block_by_block_waits_for_its_gpu() -> None:
    p = waiting()
    fine, _ = serial_sgs(p, priorities(p, "lpt"))
    assert fine is not None
    assert fine.makespan(p) == 210
    assert fine.nodes["a/block2"] == ("n/gpu0",)
    merged = solve(p, "sgs", rule="lpt", chains=True)
    assert merged.schedule.makespan(p) == 160
    assert merged.stats["merged"] == 1
    assert merged.schedule.nodes["a/block1"] == merged.schedule.nodes["a/block2"] == ("n/gpu1",)
    assert validate(p, merged.schedule).ok


def test_chains_merge_with_their_modes_back_to_back() -> None:
    p = waiting()
    coarse = coarsen(p)
    assert coarse is not None
    assert coarse.chains == {"a/block1": ["a/block1", "a/block2"]}
    assert [t.name for t in coarse.problem.tasks] == ["c/block1", "a/block1"]
    merged = coarse.problem.task("a/block1")
    for mode in merged.modes:
        parts = [p.task(f"a/block{b}").mode(mode.name) for b in (1, 2)]
        assert mode.segments == [*parts[0].segments, *parts[1].segments]
        assert mode.nodes == 1
    schedule, _ = serial_sgs(coarse.problem, priorities(coarse.problem, "lpt"))
    assert schedule is not None
    fine = refine(coarse, p, schedule)
    assert fine.starts["a/block2"] == fine.finish(p, "a/block1")
    assert fine.modes["a/block1"] == fine.modes["a/block2"]


def test_a_stage_in_and_a_checkpoint_keep_their_places() -> None:
    p = problem_from_data(
        {
            "time_unit": "1s",
            "placement": "node",
            "cluster": {"nodes": [{"name": "n", "gpu": 1, "io": 1}]},
            "jobs": [
                {
                    "name": "a",
                    "gpus": 1,
                    "iterations": 90,
                    "blocks": 3,
                    "stage_in": 5,
                    "checkpoint": 7,
                    "stages": GPU_ONLY,
                }
            ],
        }
    )
    coarse = coarsen(p)
    assert coarse is not None
    # the stage-in and the checkpoint have other modes: only the blocks merge
    assert coarse.chains == {"a/block1": ["a/block1", "a/block2", "a/block3"]}
    pairs = [(q.before, q.after) for q in coarse.problem.precedences]
    assert pairs == [("a/stage-in", "a/block1"), ("a/block1", "a/checkpoint")]
    result = solve(p, "sgs", rule="lpt", chains=True)
    assert result.schedule.makespan(p) == 5 + 90 + 7
    assert validate(p, result.schedule).ok


def test_nothing_merges_without_chains() -> None:
    p = waiting()
    one = problem_from_data(
        {
            "time_unit": "1s",
            "placement": "gpu",
            "cluster": {"nodes": [{"name": "n", "gpu": 2}]},
            "jobs": [{"name": "c", "gpus": 1, "iterations": 100, "stages": GPU_ONLY}],
        }
    )
    assert coarsen(one) is None
    assert solve(one, "sgs", chains=True).stats["merged"] == 0
    # a release on a later block would be lost in a merged task: it does not merge
    data = p.model_dump()
    for task in data["tasks"]:
        if task["name"] == "a/block2":
            task["release"] = 70
    assert coarsen(Problem.model_validate(data)) is None


def test_the_portfolio_places_chains_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # on a placed problem the serial passes on merged chains run first: a parallel pass on
    # many nodes can take minutes, and a pass already started is not cut short
    calls: list[tuple[str, int]] = []

    def recorded(kind: str, real: Any) -> Any:
        def run(problem: Problem, priority: Any) -> Any:
            calls.append((kind, len(problem.tasks)))
            return real(problem, priority)

        return run

    monkeypatch.setattr(portfolio, "serial_sgs", recorded("serial", portfolio.serial_sgs))
    monkeypatch.setattr(portfolio, "parallel_sgs", recorded("parallel", portfolio.parallel_sgs))
    p = waiting()
    best = portfolio.heuristic_schedule(p)
    assert calls[:2] == [("serial", 2), ("serial", 2)]  # lpt and grw on the merged chains
    assert calls[2:4] == [("serial", 3), ("serial", 3)]
    assert ("parallel", 3) in calls[4:]
    assert best is not None and best.makespan(p) == 160
    # once the passes' deadline has passed, only the first runs
    calls.clear()
    portfolio.heuristic_schedule(p, deadline=0.0)
    assert calls == [("serial", 2)]


def test_a_portfolio_too_large_to_search_returns_its_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p = waiting()
    # c and a's two blocks, four speeds each, on either GPU
    assert portfolio.node_choices(p) == 3 * 4 * 2
    monkeypatch.setattr(portfolio, "MAX_NODE_CHOICES", 23)
    monkeypatch.setattr(portfolio, "_meets", lambda *_: False)  # the size check alone
    result = solve(p, "portfolio", time_limit=10)
    # the core bound (c released at 60 s, 100 s long) proves the passes' plan optimal
    assert (result.stages, result.objective, result.status.value) == (0, 160, "optimal")
    assert result.reason == (
        "24 choices of a node: above 23, no search runs; the SGS passes' schedule is "
        "returned; its makespan meets the lower bound 160: proven optimal"
    )
    assert validate(p, result.schedule).ok

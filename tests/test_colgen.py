"""The configuration program by column generation with CP-SAT pricing (issue 56), and
``planner solve -s cpsat`` planning training jobs in the executor's model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.executor.audit import audit
from planner.executor.configurations import NodeRoom, configuration_plan
from planner.executor.dispatch import TablePolicy
from planner.executor.model.jobs import ExecutorJob
from planner.interleave import Interleave, Stages
from planner.solvers.colgen import Pricing, column_generation
from planner.solvers.restarts import restart_plan
from tests.conftest import INSTANCES

ALONE = Interleave("fluid", max_colocated=1, factors=None)
"""Every job alone on its GPUs, at its period alone."""


def job(name: str, gpus: int, seconds: float) -> ExecutorJob:
    """A job of ``seconds`` alone: ``seconds`` iterations of 1 s."""
    return ExecutorJob(name, gpus, int(seconds), Stages(0, 1, 0), 1.0, seconds)


def test_four_jobs_whose_optimum_is_hand_computed() -> None:
    # one node of 2 GPUs, jobs of 1 GPU alone for 300, 100, 100 and 100 s: the least
    # makespan of any dispatch that regroups at will is max(600 / 2, 300) = 300 s
    jobs = [job("a", 1, 300), job("b", 1, 100), job("c", 1, 100), job("d", 1, 100)]
    found = column_generation(jobs, ALONE, 1, 2, time_limit=30)
    assert found is not None and found.converged
    assert found.plan.makespan == pytest.approx(300.0)
    assert found.bound == pytest.approx(300.0, rel=1e-6) and found.bound <= 300.0 + 1e-6
    # the enumerated program agrees
    enumerated = configuration_plan(jobs, ALONE, 1, 2)
    assert enumerated is not None and enumerated.makespan == pytest.approx(300.0)
    # a proof the executor's run attains: the phases run without restart overheads
    run = planner.run_policy(jobs, TablePolicy(found.plan.events(jobs)), nodes=1,
                             gpus_per_node=2, interleave=ALONE, restart=False)  # fmt: skip
    assert audit(run, jobs, 2) == []
    assert run.makespan == pytest.approx(300.0, rel=1e-6)


def test_cpsat_pricing_finds_the_column_greedy_pricing_misses() -> None:
    # 4 GPUs; nine jobs of 3 GPUs worth 0.9 each (0.3 a GPU) and two of 2 GPUs worth
    # 0.55 each (0.275 a GPU): every greedy packing starts from a 3-GPU job (the best per
    # GPU) and then nothing fits (0.9 <= 1: no improving column), while the two 2-GPU
    # jobs together are worth 1.1
    # (the 3-GPU jobs of nine stage profiles: nine patterns, each a greedy start)
    periods = [1 + 0.01 * k for k in range(9)]
    jobs = [ExecutorJob(f"x{k}", 3, 10, Stages(0, p, 0), p, 10 * p) for k, p in enumerate(periods)]
    jobs += [job("y", 2, 10), job("z", 2, 10)]
    pricing = Pricing(jobs, ALONE, 1, 4)
    y = np.array([0.9 * p for p in periods] + [0.55, 0.55])
    greedy = pricing.greedy(y, starts=8)
    assert greedy and max(value for value, _ in greedy) == pytest.approx(0.9)
    value, upper, config = pricing.exact(y, seconds=10, threads=1)
    assert value == pytest.approx(1.1) and upper == pytest.approx(1.1, rel=1e-6)
    assert config is not None and sorted(m for g, _ in config for m in g) == [9, 10]


def test_column_generation_converges_to_the_enumerated_optimum() -> None:
    # ten jobs of 1, 2 and 4 GPUs sharing GPUs under Muri's slowdown factors on 2 x 4
    # GPUs: column generation reaches the program the enumeration solves
    rng = np.random.default_rng(3)
    draws = zip(rng.choice([1, 2, 4], 10), rng.integers(500, 3000, 10),
                rng.uniform(0.05, 0.5, (10, 3)), strict=True)  # fmt: skip
    jobs = [ExecutorJob(f"j{k}", int(g), int(n), Stages(*s), sum(s), n * sum(s))
            for k, (g, n, s) in enumerate(draws)]  # fmt: skip
    model = Interleave("fluid")
    enumerated = configuration_plan(jobs, model, 2, 4)
    assert enumerated is not None
    for room in (None, NodeRoom(jobs, (), (), 4)):  # nodes without CPU or memory limits
        found = column_generation(jobs, model, 2, 4, time_limit=60, room=room)
        assert found is not None and found.converged and found.greedy_columns > 0
        assert found.plan.makespan == pytest.approx(enumerated.makespan, rel=1e-6)
        assert found.bound <= enumerated.makespan * (1 + 1e-9)
        assert found.bound >= enumerated.makespan * (1 - 1e-6)


def test_column_generation_takes_jobs_released_at_0_only() -> None:
    late = ExecutorJob("late", 1, 10, Stages(0, 1, 0), 1.0, 10.0, release=5.0)
    assert column_generation([job("a", 1, 10), late], ALONE, 1, 2, time_limit=5) is None


def table(out: str) -> dict[str, str]:
    """The rows of a command's table: label, then its text after two spaces or more."""
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines()
                if line and line[0] != " " and "  " in line)  # fmt: skip


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_solve_cpsat_plans_training_jobs_in_the_executors_model(tmp_path: Path) -> None:
    code, out, _ = run("solve", INSTANCES / "example.yaml", "-s", "cpsat", "--time-limit", 10)
    assert code == 0
    rows = table(out)
    assert rows["solver"].startswith("cpsat (in the executor's model: configuration program")
    assert rows["audit"].startswith("valid")
    assert rows["columns"].startswith("converged in")
    # the example's five jobs hold at most 32 GB of a GPU together and their nodes 32 CPU
    # cores each: the program's optimum within both (6,205 s beyond the cores), which the
    # plan's run comes within 1% of
    assert rows["lower bound"] == "7,374 s (configuration program)"
    assert float(rows["gap"].rstrip("%")) < 1.0
    code, _, err = run("solve", INSTANCES / "example.yaml", "-s", "cpsat", "--backend", "numba")
    assert code == 2 and err.startswith("error: --backend: solver cpsat plans training jobs in the")


def test_a_tiny_batch_is_proven_optimal_by_solve_cpsat(tmp_path: Path) -> None:
    data = {
        "interleave": "fluid",
        "max_colocated": 1,
        "cluster": {"nodes": [{"name": "n", "gpu": 2}]},
        "jobs": [{"name": n, "gpus": 1, "stages": {"data": 0, "gpu": 1}, "iterations": k,
                  "restart": 0} for n, k in (("a", 300), ("b", 100), ("c", 100), ("d", 100))],
    }  # fmt: skip
    path = tmp_path / "four.json"
    path.write_text(json.dumps(data))
    code, out, _ = run("solve", path, "-s", "cpsat", "--slowdown", "none", "--no-restart",
                       "--time-limit", 10)  # fmt: skip
    rows = table(out)
    assert code == 0 and rows["status"] == "optimal" and rows["makespan"] == "300 s"


def test_configurations_keep_within_the_nodes_cpu_cores() -> None:
    # 2 nodes x 2 GPUs of 4 cores: two jobs of 3 cores a GPU cannot share a node; first-fit
    # puts them together, the search apart
    jobs = [ExecutorJob(name=n, gpus=1, iterations=100, stages=Stages(0.0, 1.0, 0.0),
                        iteration_time=1.0, duration=100.0, cpu=c)
            for n, c in (("a", 3.0), ("b", 3.0), ("c", 1.0), ("d", 1.0))]  # fmt: skip
    room = NodeRoom(jobs, (4.0, 4.0), (), 2)
    first_fit = (((0,), ((0, (0,)),)), ((1,), ((0, (1,)),)), ((2,), ((1, (0,)),)),
                 ((3,), ((1, (1,)),)))  # fmt: skip
    assert room.limited and room.binding and not room(first_fit)
    placed = room.place([(0,), (1,), (2,), (3,)], 2, 2)
    assert placed is not None and room(placed)
    assert {k for members, where in placed if members in ((0,), (1,)) for k, _ in where} == {0, 1}
    assert room.place([(0, 1)], 2, 2) is None  # a group of both: 6 cores a GPU
    model = Interleave("fluid", factors=None)
    plan = configuration_plan(jobs, model, 2, 2, room)
    assert plan is not None and all(room(config) for _, config in plan.phases)
    assert plan.bound == plan.makespan == pytest.approx(100.0)


def test_the_restart_model_charges_each_phase_its_groups_overhead() -> None:
    # one GPU, two jobs of 100 s alone that share it at full speed: one phase of both
    # (100 s + a charge of 10 + 10 s) beats two phases alone (200 s + 2 x 10 s)
    jobs = [ExecutorJob(name=n, gpus=1, iterations=100, stages=Stages(d, g, 0.0),
                        iteration_time=1.0, duration=100.0, restart=10.0)
            for n, d, g in (("a", 0.9, 0.1), ("b", 0.1, 0.9))]  # fmt: skip
    where = ((0, (0,)),)
    configs = [(((0,), where),), (((1,), where),), (((0, 1), where),)]
    model = Interleave("fluid", factors=None)
    solved = restart_plan(jobs, model, configs, [10.0, 10.0], [0.0, 0.0, 100.0], 5.0, 1)
    assert solved is not None
    plan, optimal = solved
    assert optimal and plan.makespan == pytest.approx(120.0)
    assert [config for _, config in plan.phases] == [configs[2]]
    assert plan.phases[0][0] == pytest.approx(120.0)
    run = planner.run_policy(jobs, TablePolicy(plan.events(jobs)), nodes=1, gpus_per_node=1,
                             interleave=model)  # fmt: skip
    assert run.makespan == pytest.approx(100.0)  # a job's last interval is charged nothing

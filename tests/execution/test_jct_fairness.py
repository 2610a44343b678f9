"""Online job completion time: fairness figures, priorities and weights (issue 43)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.executor.fairness import fairness
from planner.executor.loop import run_policy
from planner.executor.model.jobs import ExecutorJob, read_trace
from planner.interleave import MURI_GROUP_FACTORS, Interleave, Stages

PLAIN = Interleave("muri", factors=None)
"""Muri's model without factors: a job alone runs at its iteration time."""


def _job(
    name: str, iterations: int, release: float = 0.0, gpus: int = 1, **kw: object
) -> ExecutorJob:
    return ExecutorJob(name, gpus, iterations, Stages(0.4, 0.4, 0.2), 1.0, float(iterations),
                   release=release, **kw)  # fmt: skip


def test_fairness_figures_by_hand_on_three_jobs() -> None:
    # one GPU, srtf: a runs 0-10, c (arrives at 10, 50 left) 10-60, a 60-150, b 150-350
    jobs = [_job("a", 100), _job("b", 200), _job("c", 50, release=10.0)]
    run = run_policy(jobs, "srtf", nodes=1, gpus_per_node=1, interleave=PLAIN, restart=False)
    assert run.finish == {"c": 60.0, "a": 150.0, "b": 350.0}
    fair = fairness(run, jobs, 1)
    o = fair.overall
    assert o.mean_jct == pytest.approx((150 + 350 + 50) / 3)
    assert o.longest_wait == pytest.approx(150.0)  # b waits for a and c
    # jobs in the system: 2 on [0, 10), 3 on [10, 60), 2 on [60, 150), 1 on [150, 350)
    crowd = {"a": 350 / 150, "b": 550 / 350, "c": 3.0}
    alone = {"a": 100.0, "b": 200.0, "c": 50.0}
    jct = {"a": 150.0, "b": 350.0, "c": 50.0}
    rho = {j: jct[j] / (alone[j] * crowd[j]) for j in jct}
    assert fair.ftf == pytest.approx(rho)
    assert o.ftf_max == pytest.approx(350 * 350 / (200 * 550))
    assert o.ftf_over == pytest.approx(1 / 3)
    x = [1 / r for r in rho.values()]
    assert o.jain == pytest.approx(sum(x) ** 2 / (3 * sum(v * v for v in x)))
    assert list(fair.classes) == [0]


def test_a_fair_share_larger_than_a_gang_does_not_speed_it_up() -> None:
    # two 1-GPU jobs alone on 4 GPUs: each has 2 GPUs as its fair share, uses 1: rho = 1
    jobs = [_job("a", 100), _job("b", 100)]
    run = run_policy(jobs, "srtf", nodes=1, gpus_per_node=4, interleave=PLAIN, restart=False)
    fair = fairness(run, jobs, 4)
    assert fair.ftf == pytest.approx({"a": 1.0, "b": 1.0})
    assert fair.overall.jain == pytest.approx(1.0)
    assert fair.overall.ftf_over == 0.0


@pytest.mark.parametrize("policy", ["srtf", "srsf", "tiresias", "muri-s", "muri-l", "srsf-pack",
                                    "lp-groups"])  # fmt: skip
def test_a_higher_class_starts_before_any_lower_class_job_waiting(policy: str) -> None:
    # a full cluster of 2 GPUs; at 5 a long high-class job arrives: it starts at once,
    # before the short low-class jobs that have not started
    low = [_job(f"low{k}", 20 + k, gpus=2) for k in range(6)]  # at most 4 share a set
    high = _job("high", 500, release=5.0, gpus=2, priority=1)
    jobs = [*low, high]
    run = run_policy(jobs, policy, nodes=1, gpus_per_node=2, interleave=PLAIN, restart=False)
    waiting = [j.name for j in low if run.started[j.name] > 5.0]
    assert waiting, "some low-class job had not started at 5"
    assert run.started["high"] == pytest.approx(5.0)
    assert all(run.started[name] > run.started["high"] for name in waiting)
    # without the class the same job waits behind the short ones under every JCT policy
    plain = run_policy([*low, replace(high, priority=0)], policy, nodes=1, gpus_per_node=2,
                       interleave=PLAIN, restart=False)  # fmt: skip
    if policy not in ("lp-groups", "tiresias", "muri-l"):
        assert plain.started["high"] > 5.0


def test_per_class_figures() -> None:
    jobs = [_job("a", 100), _job("b", 100, priority=2), _job("c", 100, priority=2)]
    run = run_policy(jobs, "srtf", nodes=1, gpus_per_node=1, interleave=PLAIN, restart=False)
    fair = fairness(run, jobs, 1)
    assert list(fair.classes) == [2, 0]
    assert fair.classes[2].jobs == 2 and fair.classes[0].jobs == 1
    assert run.finish["a"] == pytest.approx(300.0)  # the low class runs last
    assert fair.classes[0].mean_jct == pytest.approx(300.0)
    assert fair.classes[2].mean_jct == pytest.approx(150.0)


def test_weights_order_the_jct_policies_by_smiths_rule() -> None:
    # b is twice as long as a but weighs three times as much: it goes first
    jobs = [_job("a", 100), _job("b", 200, weight=3.0)]
    for policy in ("srtf", "srsf"):
        run = run_policy(jobs, policy, nodes=1, gpus_per_node=1, interleave=PLAIN, restart=False)
        assert run.finish["b"] < run.finish["a"], policy
    # muri-s and srsf-pack group up to four: b is among them only by its weight
    many = [_job(f"a{k}", 100) for k in range(5)]
    for policy in ("muri-s", "srsf-pack"):
        for weight, first in ((3.0, True), (1.0, False)):
            b = _job("b", 200, weight=weight)
            run = run_policy([*many, b], policy, nodes=1, gpus_per_node=1, interleave=PLAIN,
                             restart=False)  # fmt: skip
            assert (run.started["b"] == 0.0) is first, (policy, weight)
    run = run_policy(jobs, "srtf", nodes=1, gpus_per_node=1, interleave=PLAIN, restart=False)
    assert fairness(run, jobs, 1).overall.weighted_jct == pytest.approx((3 * 200 + 300) / 4)


def test_a_trace_gives_classes_and_weights_in_its_own_columns(tmp_path: Path) -> None:
    head = "num_gpu,iterations,model_name,batch_size,resource_time_0,resource_time_1," \
        "resource_time_2,priority"  # fmt: skip
    (tmp_path / "t.csv").write_text(f"{head},class,weight\n1,10,vgg16,32,10,20,5,1,2,0.5\n")
    (job,) = read_trace(tmp_path / "t.csv")
    # Muri's own 'priority' column is not a class: its simulator does not schedule by it
    assert (job.priority, job.weight) == (2, 0.5)
    (tmp_path / "m.csv").write_text(f"{head}\n1,10,vgg16,32,10,20,5,1\n")
    (job,) = read_trace(tmp_path / "m.csv")
    assert (job.priority, job.weight) == (0, 1.0)
    (tmp_path / "bad.csv").write_text(f"{head},class\n1,10,vgg16,32,10,20,5,1,-1\n")
    with pytest.raises(InputError, match=r"column 'class': expected a whole number from 0"):
        read_trace(tmp_path / "bad.csv")


def _least_total_flow(sizes: list[int], releases: list[int]) -> int:
    """The least sum of completion - release on one machine, by enumerating every job
    each unit of time could run (preemption at whole times)."""
    from functools import cache

    @cache
    def best(t: int, left: tuple[int, ...]) -> int:
        if not any(left):
            return 0
        ready = [k for k, r in enumerate(left) if r and releases[k] <= t]
        if not ready:
            return best(t + 1, left)
        out = None
        for k in ready:
            after = list(left)
            after[k] -= 1
            flow = t + 1 - releases[k] if after[k] == 0 else 0
            value = flow + best(t + 1, tuple(after))
            out = value if out is None else min(out, value)
        return out

    return best(0, tuple(sizes))


def test_the_online_planner_finds_the_least_mean_jct_known_by_enumeration() -> None:
    from planner.replay.planner_policy import SearchPlanner

    # one GPU, GPU-bound jobs under Muri's factors: a group is slower than its members one
    # after another, so the best dispatch runs one job at a time; each iteration takes 1 s
    # alone (the factor 1.015 included)
    sizes, releases = [10, 4, 1, 6, 2], [0, 2, 3, 5, 6]
    gpu = Stages(0.0, 1.0, 0.0)
    jobs = [ExecutorJob(f"j{k}", 1, n, gpu, 1 / 1.015, n / 1.015, release=float(r))
            for k, (n, r) in enumerate(zip(sizes, releases, strict=True))]  # fmt: skip
    least = _least_total_flow(sizes, releases)
    model = Interleave("muri", factors=MURI_GROUP_FACTORS)
    planner = SearchPlanner(time_limit=5.0)
    run = run_policy(jobs, planner, nodes=1, gpus_per_node=1, interleave=model, restart=False)
    assert run.mean_jct == pytest.approx(least / len(jobs))
    assert planner.fallbacks == 0 and len(run.planning) == run.events - 1  # the last: no job
    # least attained service first is not it
    assert run_policy(jobs, "tiresias", nodes=1, gpus_per_node=1, interleave=model,
                      restart=False).mean_jct > least / len(jobs) + 1  # fmt: skip


def test_the_online_planner_falls_back_when_its_budget_is_spent() -> None:
    from planner.replay.planner_policy import SearchPlanner

    jobs = [_job(f"j{k}", 50 + 10 * k, release=5.0 * k) for k in range(6)]
    planner = SearchPlanner(time_limit=0.0)
    run = run_policy(jobs, planner, nodes=1, gpus_per_node=2, interleave=PLAIN, restart=False)
    alone = run_policy(jobs, "jct-groups", nodes=1, gpus_per_node=2, interleave=PLAIN,
                       restart=False)  # fmt: skip
    assert planner.fallbacks == len(run.planning) == run.events - 1  # the last: no job left
    assert run.finish == alone.finish


def test_the_online_planner_keeps_the_classes() -> None:
    from planner.replay.planner_policy import SearchPlanner

    low = [_job(f"low{k}", 20 + k, gpus=2) for k in range(6)]
    high = _job("high", 500, release=5.0, gpus=2, priority=1)
    run = run_policy([*low, high], SearchPlanner(time_limit=1.0), nodes=1, gpus_per_node=2,
                     interleave=PLAIN, restart=False)  # fmt: skip
    waiting = [j.name for j in low if run.started[j.name] > 5.0]
    assert waiting and run.started["high"] == pytest.approx(5.0)
    assert all(run.started[name] > 5.0 for name in waiting)


def test_compare_ranks_policies_on_jct_and_fairness_and_draws_them(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from planner.app.cli import app
    from planner.app.compare import load_table
    from planner.app.compare_jct import read_jobs, summarize_jct
    from planner.dl.workloads import generate_batch
    from planner.executor.model.jobs import jobs_from_instance
    from planner.executor.runs import Setting, dispatch_of

    batch = tmp_path / "batch.json"
    data = generate_batch(8, seed=3, nodes=1, gpus_per_node=4, arrival_rate=2.0, placement="node")
    batch.write_text(json.dumps(data))
    out = tmp_path / "r.csv"
    policies = ["muri-s", "srsf-pack", "tiresias", "planner"]
    args = ["compare", str(batch), *[x for p in policies for x in ("-s", p)]]
    result = CliRunner().invoke(app, [*args, "--simulate", "runs=1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "policies and planners by mean realized JCT (runs=1; seconds):" in result.stdout
    for name in ("r_jct.png", "r_fairness.png", "r_jobs.csv"):
        assert (tmp_path / name).stat().st_size > 0
    table = load_table(out)
    summary = summarize_jct(table)
    assert sorted(summary["solver"]) == sorted(policies)
    assert list(summary["mean_jct"]) == sorted(summary["mean_jct"])
    assert summary["rank_mean_jct"].iloc[0] == 1
    # the figures are those of the same run, made directly
    workload = jobs_from_instance(batch)
    dispatch = dispatch_of(workload, Setting(), "muri-s")
    run = dispatch.run()
    fair = fairness(run, workload.jobs, 4).overall
    (row,) = table[table["solver"] == "muri-s"].itertuples(index=False)
    assert row.unit == "s"  # the executor counts seconds
    assert row.realized_jct_mean == pytest.approx(run.mean_jct)
    assert row.realized_jct_p99 == pytest.approx(run.p99_jct)
    assert row.realized_ftf_max == pytest.approx(fair.ftf_max)
    assert row.realized_jain == pytest.approx(fair.jain)
    assert row.realized_wait_max == pytest.approx(fair.longest_wait)
    jobs = read_jobs(tmp_path / "r_jobs.csv")
    assert len(jobs) == len(policies) * 8
    mine = jobs[jobs["solver"] == "muri-s"].set_index("job")
    assert mine["jct"].mean() == pytest.approx(run.mean_jct)


def test_fair_groups_keeps_a_job_out_of_a_group_that_would_pass_its_cap() -> None:
    # one GPU: a GPU-bound job and a data-bound one with a long period; in a pair the first
    # runs at the second's period (5.1 s, not 1 s), its projected fairness 2.55 > 2
    short = ExecutorJob("short", 1, 10, Stages(0.0, 1.0, 0.0), 1.0, 10.0)
    long = ExecutorJob("long", 1, 100, Stages(5.0, 0.1, 0.0), 5.1, 510.0)
    jobs = [short, long]
    grouped = run_policy(jobs, "ftf-groups", nodes=1, gpus_per_node=1, interleave=PLAIN,
                         restart=False)  # fmt: skip
    fair = run_policy(jobs, "fair-groups", nodes=1, gpus_per_node=1, interleave=PLAIN,
                      restart=False)  # fmt: skip
    assert grouped.groups.get(2, 0) > 0 and fair.groups.get(2, 0) == 0
    assert fairness(fair, jobs, 1).overall.ftf_max <= 2.0
    assert fairness(grouped, jobs, 1).overall.ftf_max > 2.0

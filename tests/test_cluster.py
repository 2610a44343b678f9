"""The cluster form: catalog profiles, GPU types, per-node placement, alternatives."""

from __future__ import annotations

from typing import Any

import pytest

from planner.dl.catalog import GAVEL_FAMILY, models, speed_factor, stage_profiles
from planner.errors import InputError
from planner.io.instance import problem_from_data
from planner.model import Problem


def cluster(
    *jobs: dict[str, Any], placement: str = "pooled", interleave: str = "phases", **nodes: Any
) -> Problem:
    """A cluster-form instance of ``jobs`` on two nodes of 8 GPUs (or ``nodes``), its
    training blocks as phases unless ``interleave`` says otherwise."""
    node_list = nodes.get("nodes") or [{"name": "n", "count": 2, "gpu": 8, "io": 8, "net": 8}]
    return problem_from_data(
        {
            "time_unit": "1s",
            "placement": placement,
            "interleave": interleave,
            "cluster": {"nodes": node_list},
            "jobs": list(jobs),
        }
    )


def segs(problem: Problem, task: str, mode: int = 0) -> list[tuple[str, int, dict[str, int]]]:
    return [(s.name, s.duration, s.demand) for s in problem.task(task).modes[mode].segments]


def test_catalog_has_the_muri_models_and_takes_the_slower_variant() -> None:
    assert models() == sorted(GAVEL_FAMILY)
    slow = stage_profiles()[("resnet18", 128, 32)]
    assert (slow.data, slow.gpu, slow.sync) == (0.712, 0.111, 0.093)


def test_speed_factors_follow_gavel_throughputs() -> None:
    # A3C single GPU: 7.1758 steps/s on V100, 3.4388 on K80
    assert speed_factor("k80", "A3C") == pytest.approx(7.1758 / 3.4388)
    assert speed_factor("V100", "A3C") == 1.0
    with pytest.raises(ValueError, match="unknown GPU type 'a100'"):
        speed_factor("a100", None)


def test_catalog_model_compiles_to_measured_stage_times() -> None:
    # resnet18, 4 GPUs: 723 / 113 / 73 ms per iteration; 1,000 iterations; 1 s ticks
    p = cluster({"name": "r", "model": "resnet18", "gpus": 4, "iterations": 1000})
    assert segs(p, "r/block1") == [
        ("data", 723, {"io": 4}),
        ("gpu", 113, {"gpu": 4}),
        ("sync", 73, {"net": 4}),
    ]


def test_duration_sets_the_iterations() -> None:
    # bert on 8 GPUs: 0.5 + 167 + 59 ms = 0.2265 s per iteration; 1 hour -> 15,895 iterations
    p = cluster({"name": "b", "model": "bert", "gpus": 8, "duration": 3600, "blocks": 2})
    first, second = segs(p, "b/block1"), segs(p, "b/block2")
    assert [s[1] for s in first] == [4, 1328, 469]  # 7,948 iterations
    assert [s[1] for s in second] == [4, 1328, 469]  # 7,947 iterations


def test_heterogeneous_pool_gives_a_mode_per_gpu_type() -> None:
    nodes = [
        {"name": "v", "gpu_type": "v100", "gpu": 8, "io": 8, "net": 8},
        {"name": "k", "gpu_type": "k80", "gpu": 8, "io": 8, "net": 8},
    ]
    p = cluster({"name": "a", "model": "a2c", "gpus": 1, "iterations": 100}, nodes=nodes)
    assert {r.name: r.capacity for r in p.resources} == {
        "gpu.v100": 8,
        "gpu.k80": 8,
        "io": 16,
        "net": 16,
    }
    modes = p.task("a/block1").modes
    assert [m.name for m in modes] == ["base-v100", "base-k80"]
    # a2c on 1 GPU: 14 ms GPU stage; on K80 A3C is 7.1758 / 3.4388 times slower
    assert segs(p, "a/block1", 0)[1] == ("gpu", 2, {"gpu.v100": 1})
    assert segs(p, "a/block1", 1)[1] == ("gpu", 3, {"gpu.k80": 1})  # 100 * 0.014 * 2.087 = 2.9


def test_node_placement_names_nodes_and_colocates_jobs() -> None:
    p = cluster(
        {
            "name": "j",
            "gpus": 4,
            "iterations": 10,
            "stages": {"data": 1, "gpu": 2},
            "blocks": 2,
            "checkpoint": 5,
        },
        placement="node",
    )
    assert p.resources == []
    assert [(n.name, n.capacity) for n in p.nodes] == [
        ("n1", {"gpu": 8, "io": 8, "net": 8}),
        ("n2", {"gpu": 8, "io": 8, "net": 8}),
    ]
    block = p.task("j/block1")
    assert [(m.name, m.nodes) for m in block.modes] == [("base", 1)]
    assert segs(p, "j/block1")[0] == ("data", 5, {"io": 4})
    assert [(m.nodes, m.segments[0].demand) for m in p.task("j/checkpoint").modes] == [
        (1, {"io": 4})
    ]
    assert p.jobs[0].colocate


def test_a_job_larger_than_a_node_is_a_gang_with_its_demand_split() -> None:
    p = cluster(
        {"name": "big", "gpus": 12, "iterations": 5, "stages": {"data": 1, "gpu": 1}},
        placement="node",
    )
    (mode,) = p.task("big/block1").modes
    assert mode.nodes == 2
    assert [s.demand for s in mode.segments] == [{"io": 6}, {"gpu": 6}, {"net": 6}]


def test_a_job_too_big_for_the_cluster_is_refused_with_its_gpus() -> None:
    with pytest.raises(
        InputError,
        match=r"jobs\[0\]\.gpus: job 'big' needs 24 GPUs on whole nodes; the cluster has 16 GPUs",
    ):
        cluster(
            {"name": "big", "gpus": 24, "iterations": 5, "stages": {"data": 1, "gpu": 1}},
            placement="node",
        )


def test_alternatives_become_modes() -> None:
    p = cluster(
        {
            "name": "g",
            "model": "gpt2",
            "gpus": 8,
            "iterations": 100,
            "alternatives": [
                {"gpus": 4},
                {"name": "pipeline", "stages": {"data": 0.001, "gpu": 0.3, "sync": 0.01}},
            ],
        }
    )
    modes = p.task("g/block1").modes
    assert [m.name for m in modes] == ["base", "4gpu", "pipeline"]
    # gpt2: 8 GPUs 0.6/419/49 ms, 4 GPUs 0.6/413/20 ms
    assert segs(p, "g/block1", 0) == [
        ("data", 1, {"io": 8}),
        ("gpu", 42, {"gpu": 8}),
        ("sync", 5, {"net": 8}),
    ]
    assert segs(p, "g/block1", 1) == [
        ("data", 1, {"io": 4}),
        ("gpu", 42, {"gpu": 4}),
        ("sync", 2, {"net": 4}),
    ]
    assert segs(p, "g/block1", 2) == [
        ("data", 1, {"io": 8}),
        ("gpu", 30, {"gpu": 8}),
        ("sync", 1, {"net": 8}),
    ]


def test_user_profiles_extend_the_catalog() -> None:
    data = {
        "time_unit": "1s",
        "interleave": "phases",
        "cluster": {"nodes": [{"name": "n", "gpu": 8, "io": 8}]},
        "profiles": [{"model": "mine", "gpus": 2, "data": 0.5, "gpu": 1.5}],
        "jobs": [{"name": "m", "model": "mine", "gpus": 2, "iterations": 4}],
    }
    p = problem_from_data(data)
    assert segs(p, "m/block1") == [("data", 2, {"io": 2}), ("gpu", 6, {"gpu": 2}), ("sync", 0, {})]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        # a model nobody knows
        (
            {"model": "llama", "gpus": 1, "iterations": 1},
            "jobs[0].model: unknown model 'llama' (not in the catalog or 'profiles')",
        ),
        # a GPU count the catalog did not measure
        (
            {"model": "vgg16", "gpus": 3, "iterations": 1},
            "jobs[0]: no profile of 'vgg16' on 3 GPUs; known GPU counts: [1, 2, 4, 8, 16, 32]",
        ),
        # neither iterations nor duration
        ({"model": "vgg16", "gpus": 1}, "jobs[0]: give exactly one of 'iterations' and 'duration'"),
        # neither stages nor model
        ({"gpus": 1, "iterations": 3}, "jobs[0]: give 'stages' or a catalog 'model'"),
        # an alternative GPU count without a model to look it up
        (
            {
                "gpus": 1,
                "iterations": 3,
                "stages": {"data": 1, "gpu": 1},
                "alternatives": [{"gpus": 2}],
            },
            "jobs[0].alternatives[0]: give 'stages' for 2 GPUs: the job has no catalog model",
        ),
        # a GPU type no node has
        (
            {"model": "vgg16", "gpus": 1, "iterations": 1, "gpu_type": "p100"},
            "jobs[0]: no node has GPU type 'p100'",
        ),
    ],
)
def test_bad_jobs(job: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as err:
        cluster({"name": "x", **job})
    assert str(err.value) == message

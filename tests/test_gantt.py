"""Gantt charts: layout, thin-bar merging, load profiles, file formats, a real browser, the CLI."""

from __future__ import annotations

import json
import random
import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.app.gantt import draw_gantt, new_figure, plotly_gantt, save_gantt
from planner.app.gantt_layout import Bar, chart_layout, gantt_layout, merge_thin, resource_profiles
from planner.dl.cluster import compile_cluster
from planner.dl.specs import ClusterInstance
from planner.errors import InputError
from planner.io.instance import load_instance, save_instance
from planner.model import Problem
from planner.schedule import Schedule, load_schedule
from planner.solvers import solve
from planner.validate import validate
from tests.conftest import INSTANCES, chromium

J301 = INSTANCES / "psplib" / "j301_1.sm"
runner = CliRunner()


def cluster_problem(n_jobs: int, blocks: int, seed: int = 1, interleave: str = "fluid") -> Problem:
    """A generated cluster-form batch of training jobs, compiled."""
    rng = random.Random(seed)
    jobs = [
        {
            "name": f"job{i + 1}",
            "gpus": rng.choice([1, 2, 4, 8]),
            "iterations": rng.randint(200, 2000),
            "blocks": blocks,
            "stages": {
                "data": round(rng.uniform(0.05, 0.4), 3),
                "gpu": round(rng.uniform(0.1, 0.6), 3),
                "sync": round(rng.uniform(0.0, 0.2), 3),
            },
            "cpu_per_gpu": 2,
            "stage_in": rng.choice([0, 20]),
        }
        for i in range(n_jobs)
    ]
    node = {"name": "n", "count": 8, "gpu": 8, "cpu": 64, "io": 16, "net": 16}
    spec = {
        "name": f"batch{n_jobs}",
        "interleave": interleave,
        "cluster": {"nodes": [node]},
        "jobs": jobs,
    }
    return compile_cluster(ClusterInstance.model_validate(spec))


@pytest.fixture(scope="module")
def j301() -> tuple[Problem, Schedule]:
    problem = load_instance(J301)
    return problem, solve(problem, "sgs").schedule


@pytest.fixture(scope="module")
def batch() -> tuple[Problem, Schedule]:
    problem = cluster_problem(40, 3)
    return problem, solve(problem, "sgs").schedule


def test_small_instance_gets_one_row_per_task_with_exact_bars(j301) -> None:
    problem, schedule = j301
    layout = gantt_layout(problem, schedule)
    assert not layout.by_job
    # The two dummy tasks of PSPLIB take no time and get no row.
    timed = [t.name for t in problem.tasks if t.min_duration > 0]
    assert sorted(layout.rows) == sorted(timed)
    assert len(layout.bars) == len(timed)
    for bar in layout.bars:
        assert layout.rows[bar.row] == bar.task
        assert bar.start == schedule.starts[bar.task]
        assert bar.finish == schedule.finish(problem, bar.task)
    assert layout.makespan == schedule.makespan(problem)
    firsts = [min(b.start for b in layout.bars if b.row == i) for i in range(len(layout.rows))]
    assert firsts == sorted(firsts)


def test_large_instance_gets_one_row_per_job_coloured_by_stage(batch) -> None:
    problem, schedule = batch
    layout = gantt_layout(problem, schedule)
    assert layout.by_job
    assert sorted(layout.rows) == sorted(j.name for j in problem.jobs)
    assert set(layout.keys) == {"stage-in", "train"}
    for job in problem.jobs:
        row = layout.rows.index(job.name)
        busy = sum(b.finish - b.start for b in layout.bars if b.row == row)
        mine = [t for t in problem.tasks if t.job == job.name]
        assert busy == sum(t.mode(schedule.modes[t.name]).duration for t in mine)


def test_schedule_of_another_instance_is_refused(j301, two_jobs) -> None:
    _, schedule = j301
    with pytest.raises(InputError, match="not in instance"):
        gantt_layout(two_jobs, schedule)


def bar(row: int, start: int, finish: int, key: str) -> Bar:
    return Bar(row, start, finish, key, "t", "", "1", "1")


def test_merge_thin_merges_only_touching_thin_bars_of_one_row() -> None:
    bars = [
        bar(0, 0, 1, "data"),
        bar(0, 1, 3, "gpu"),
        bar(0, 3, 4, "sync"),  # 0..4: thin bars merged, gpu covers most
        bar(0, 10, 30, "gpu"),  # wide: kept
        bar(0, 40, 41, "data"),  # thin but alone after a gap: kept
        bar(1, 0, 2, "sync"),  # another row: not merged with row 0
    ]
    merged = merge_thin(bars, min_width=5)
    assert [(b.row, b.start, b.finish, b.key, b.merged) for b in merged] == [
        (0, 0, 4, "gpu", 3),
        (0, 10, 30, "gpu", 1),
        (0, 40, 41, "data", 1),
        (1, 0, 2, "sync", 1),
    ]
    assert merge_thin(bars, 0) == bars


def brute_load(problem: Problem, schedule: Schedule, resource: str, tick: int) -> int:
    load = 0
    for name, start in schedule.starts.items():
        at = start
        for seg in problem.task(name).mode(schedule.modes[name]).segments:
            if at <= tick < at + seg.duration:
                load += seg.demand.get(resource, 0)
            at += seg.duration
    return load


def test_resource_profiles_match_a_tick_by_tick_count(j301) -> None:
    problem, schedule = j301
    profiles = resource_profiles(problem, schedule)
    for res in problem.renewables:
        edges, demand, cap = profiles[res.name]
        assert edges[0] == 0 and edges[-1] == schedule.makespan(problem)
        for tick in range(schedule.makespan(problem)):
            i = int(np.searchsorted(edges, tick, side="right")) - 1
            assert demand[i] == brute_load(problem, schedule, res.name, tick)
            assert cap[i] == res.capacity


def test_resource_profiles_show_capacity_windows() -> None:
    problem = load_instance(INSTANCES / "interleave.yaml")
    schedule = solve(problem, "sgs").schedule
    edges, _, cap = resource_profiles(problem, schedule, until=30)["gpu"]
    for tick in range(30):
        i = int(np.searchsorted(edges, tick, side="right")) - 1
        assert cap[i] == (0 if 20 <= tick < 24 else 1)


def test_row_labels_never_overlap_and_thin_bars_merge_on_a_big_chart() -> None:
    problem = cluster_problem(250, 8, interleave="phases")  # three thin bars a block
    schedule = solve(problem, "sgs").schedule
    assert len(problem.tasks) >= 2000
    fig = draw_gantt(new_figure(problem, schedule), problem, schedule)
    ax = fig.axes[0]
    ticks = ax.get_yticks()
    assert 10 <= len(ticks) < 250
    ys = [ax.transData.transform((0, y))[1] for y in ticks]
    font_px = 8 / 72 * fig.dpi
    assert min(abs(a - b) for a, b in pairwise(ys)) >= font_px
    drawn = sum(len(c.get_paths()) for c in ax.collections)
    assert drawn < len(gantt_layout(problem, schedule).bars)
    assert len(fig.axes) == 1 + len(problem.renewables) + 1  # the power panel


@pytest.mark.parametrize(
    ("suffix", "check"),
    [
        (".png", lambda data: data.startswith(b"\x89PNG\r\n\x1a\n")),
        (".pdf", lambda data: data.startswith(b"%PDF-")),
        (".svg", lambda data: ET.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"),
    ],
)
def test_static_formats(j301, tmp_path: Path, suffix: str, check) -> None:
    problem, schedule = j301
    path = tmp_path / f"chart{suffix}"
    save_gantt(problem, schedule, path)
    assert check(path.read_bytes())


def test_html_is_self_contained(j301, tmp_path: Path) -> None:
    problem, schedule = j301
    path = tmp_path / "chart.html"
    save_gantt(problem, schedule, path)
    html = path.read_text()
    assert re.search(r"plotly\.js v\d", html), "plotly.js is not embedded"
    assert len(html) > 1_000_000
    assert not re.search(r"<script[^>]*\bsrc=", html)


def test_unknown_chart_format_is_refused(j301, tmp_path: Path) -> None:
    problem, schedule = j301
    with pytest.raises(InputError, match="unknown chart format"):
        save_gantt(problem, schedule, tmp_path / "chart.jpg")


def test_hover_texts_name_task_job_and_segment(batch) -> None:
    problem, schedule = batch
    fig = plotly_gantt(problem, schedule)
    bars = [t for t in fig.data if t.type == "bar"]
    texts = [text for t in bars for text in t.customdata]
    assert any("task job1/block1" in s and "job job1" in s for s in texts)
    assert all("ticks" in s for s in texts)


def test_html_renders_its_bars_in_a_headless_browser(batch, tmp_path: Path) -> None:
    browser = chromium()
    problem, schedule = batch
    path = tmp_path / "chart.html"
    save_gantt(problem, schedule, path)
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        path.as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    traces = re.findall(r'<g class="trace bars"', dom)
    points = re.findall(r'<g class="point"', dom)
    expected = sum(len(t.x) for t in plotly_gantt(problem, schedule).data if t.type == "bar")
    assert len(traces) == len(gantt_layout(problem, schedule).keys)
    assert len(points) == expected > 0


def test_cli_gantt_draws_a_saved_schedule(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(sched)]).exit_code == 0
    out = tmp_path / "g.svg"
    result = runner.invoke(app, ["gantt", str(sched), "--instance", str(J301), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "chart written" in result.stdout and "valid" in result.stdout
    assert ET.parse(out).getroot().tag.endswith("svg")


def test_cli_gantt_needs_the_instance_file(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(sched)]).exit_code == 0
    assert json.loads(sched.read_text())["instance"] == "j301_1"
    result = runner.invoke(app, ["gantt", str(sched), "-o", str(tmp_path / "g.png")])
    assert result.exit_code == 2
    assert "--instance" in result.stderr and "'j301_1'" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["-o", "g.jpg"],  # unknown chart format
        ["--instance", str(INSTANCES / "interleave.yaml"), "-o", "g.png"],  # other instance
    ],
)
def test_cli_gantt_bad_input_is_one_line(tmp_path: Path, args: list[str]) -> None:
    sched = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(sched)]).exit_code == 0
    args = [str(tmp_path / a) if a.startswith("g.") else a for a in args]
    if "--instance" not in args:
        args += ["--instance", str(J301)]
    result = runner.invoke(app, ["gantt", str(sched), *args])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_gantt_refuses_an_invalid_schedule_unless_forced(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    other = INSTANCES / "psplib" / "j301_2.sm"
    problem = load_instance(other)
    solved = solve(problem, "sgs").schedule
    # every task at tick 0, finishes consistent with the starts: precedences and capacity broken
    replace(solved, starts=dict.fromkeys(solved.starts, 0)).save(sched, problem)
    report = validate(problem, load_schedule(sched, problem))
    assert len(report.violations) > 3
    out = tmp_path / "g.svg"
    args = ["gantt", str(sched), "--instance", str(other), "-o", str(out)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        f"error: {sched}: not a valid schedule of instance 'j301_2' "
        f"({len(report.violations)} violations); not drawn (--force draws it marked INVALID)",
        *[f"  {v}" for v in report.violations[:3]],
        f"  and {len(report.violations) - 3} more ('planner validate' lists them all)",
    ]
    assert not out.exists()
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert forced.stdout == f"chart written to {out} ({report})\n"
    # matplotlib draws text as glyph paths, each text preceded by a comment holding it
    assert "<!-- INVALID — j301_2 — makespan " in out.read_text()


def test_only_the_chart_of_an_invalid_schedule_says_invalid(j301) -> None:
    problem, schedule = j301
    wrong = replace(schedule, starts=dict.fromkeys(schedule.starts, 0))
    assert not validate(problem, wrong).ok
    titles = [plotly_gantt(problem, s).layout.annotations[0].text for s in (schedule, wrong)]
    assert not titles[0].startswith("INVALID")
    assert titles[1] == "INVALID — " + titles[0].replace(
        f"makespan {schedule.makespan(problem):g}", f"makespan {wrong.makespan(problem):g}"
    )


def test_cli_solve_writes_a_chart(tmp_path: Path) -> None:
    out = tmp_path / "g.html"
    result = runner.invoke(app, ["solve", str(J301), "-s", "sgs", "--gantt", str(out)])
    assert result.exit_code == 0, result.output
    assert "chart written" in result.stdout
    assert out.read_text().lower().startswith("<!doctype html>")


def test_cli_solve_refuses_a_bad_chart_name_before_solving(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", str(J301), "--gantt", str(tmp_path / "g.gif")])
    assert result.exit_code == 2
    assert "chart file" in result.stderr
    assert "makespan" not in result.stdout


def placed_task(name: str, train: int, gpus: int, nodes: int) -> dict:
    """A task of its own job on ``nodes`` whole nodes: 2 ticks of loading, then training."""
    segments = [
        {"name": "load", "duration": 2, "demand": {"io": 1}},
        {"name": "train", "duration": train, "demand": {"gpu": gpus}},
    ]
    return {"name": name, "job": name.upper(), "modes": [{"nodes": nodes, "segments": segments}]}


@pytest.fixture
def placed() -> tuple[Problem, Schedule]:
    """Two nodes of 4 GPUs: a gang g on both (2 GPUs each), b beside it on n1, c and d on n2.

    d loads on n2 while g trains there (interleaved), then trains on all 4 GPUs.
    """
    problem = Problem.model_validate(
        {
            "name": "placed",
            "nodes": [
                {"name": "n1", "capacity": {"gpu": 4, "io": 2}},
                {"name": "n2", "capacity": {"gpu": 4, "io": 2}},
            ],
            "jobs": [{"name": j} for j in "GBCD"],
            "tasks": [
                placed_task("g", 4, 2, 2),
                placed_task("b", 4, 2, 1),
                placed_task("c", 3, 1, 1),
                placed_task("d", 4, 4, 1),
            ],
        }
    )
    schedule = Schedule(
        modes=dict.fromkeys("gbcd", "1"),
        starts={"g": 0, "b": 1, "d": 4, "c": 10},
        nodes={"g": ("n1", "n2"), "b": ("n1",), "c": ("n2",), "d": ("n2",)},
    )
    assert validate(problem, schedule).ok
    return problem, schedule


def test_node_rows_stack_tasks_by_gpu_share(placed) -> None:
    problem, schedule = placed
    layout = chart_layout(problem, schedule, "node")
    assert layout.by_node and layout.axis == "node"
    assert layout.rows == ["n1", "n2"]
    got = {
        (layout.rows[b.row], b.task, b.segment): (b.start, b.finish, b.base, b.height)
        for b in layout.bars
    }
    assert got == {
        # n1: the gang's 2 of 4 GPUs on top, b's 2 under it (they overlap from tick 1)
        ("n1", "g", "load"): (0, 2, 0.0, 0.5),
        ("n1", "g", "train"): (2, 6, 0.0, 0.5),
        ("n1", "b", "load"): (1, 3, 0.5, 0.5),
        ("n1", "b", "train"): (3, 7, 0.5, 0.5),
        # n2: g (1/2) and d (4/4) overlap while d loads: 1.5 nodes, scaled to fit the row
        ("n2", "g", "load"): (0, 2, 0.0, pytest.approx(1 / 3)),
        ("n2", "g", "train"): (2, 6, 0.0, pytest.approx(1 / 3)),
        ("n2", "d", "load"): (4, 6, pytest.approx(1 / 3), pytest.approx(2 / 3)),
        ("n2", "d", "train"): (6, 10, pytest.approx(1 / 3), pytest.approx(2 / 3)),
        # c starts when d is done: back at the top, 1 of 4 GPUs (scaled with its row)
        ("n2", "c", "load"): (10, 12, 0.0, pytest.approx(0.25 / 1.5)),
        ("n2", "c", "train"): (12, 15, 0.0, pytest.approx(0.25 / 1.5)),
    }
    assert chart_layout(problem, schedule) == gantt_layout(problem, schedule)  # default: per task


def test_node_chart_files_have_one_row_per_node_and_the_gang_on_both(
    placed, tmp_path: Path
) -> None:
    problem, schedule = placed
    svg = tmp_path / "nodes.svg"
    save_gantt(problem, schedule, svg, by="node")
    text = svg.read_text()
    # matplotlib writes each text as a comment before its glyphs
    assert [text.count(f"<!-- {n} -->") for n in ("n1", "n2")] == [1, 1]
    assert "<!-- node -->" in text  # the axis title
    fig = plotly_gantt(problem, schedule, by="node")
    rows = {
        (y, text.split("<br>")[0])
        for t in fig.data
        if t.type == "bar"
        for y, text in zip(t.y, t.customdata, strict=True)
    }
    assert rows == {("n1", "task g"), ("n2", "task g"), ("n1", "task b")} | {
        ("n2", "task c"),
        ("n2", "task d"),
    }
    assert list(fig.layout.yaxis.categoryarray) == ["n1", "n2"]
    html = tmp_path / "nodes.html"
    save_gantt(problem, schedule, html, by="node")
    assert '"n1"' in html.read_text() and '"n2"' in html.read_text()


def test_rows_by_node_need_a_placed_plan(j301) -> None:
    problem, schedule = j301
    with pytest.raises(InputError) as caught:
        chart_layout(problem, schedule, "node")
    assert str(caught.value) == (
        "rows by node: the plan is pooled (instance 'j301_1' has no nodes); "
        "only a placed plan (placement: node) has nodes to draw"
    )
    with pytest.raises(InputError, match="rows by 'gpu': expected one of task, job, node"):
        chart_layout(problem, schedule, "gpu")


@pytest.mark.parametrize(
    ("by", "message"),
    [
        # a pooled plan has no nodes
        (
            "node",
            "rows by node: the plan is pooled (instance 'j301_1' has no nodes); "
            "only a placed plan (placement: node) has nodes to draw",
        ),
        # no such view
        ("nodes", "rows by 'nodes': expected one of task, job, node"),
    ],
)
def test_cli_gantt_by_node_of_a_pooled_plan_is_one_line(
    tmp_path: Path, by: str, message: str
) -> None:
    sched = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(sched)]).exit_code == 0
    out = tmp_path / "g.png"
    result = runner.invoke(app, ["gantt", str(sched), "-i", str(J301), "--by", by, "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert not out.exists()


def test_cli_gantt_by_node_draws_a_placed_plan(placed, tmp_path: Path) -> None:
    problem, schedule = placed
    instance, sched = tmp_path / "placed.json", tmp_path / "s.json"
    save_instance(problem, instance)
    schedule.save(sched, problem)
    out = tmp_path / "g.svg"
    args = ["gantt", str(sched), "-i", str(instance), "--by", "node", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"chart written to {out} (valid)\n"
    assert [out.read_text().count(f"<!-- {n} -->") for n in ("n1", "n2")] == [1, 1]


def test_cli_gantt_refuses_a_finish_that_contradicts_the_start(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(sched)]).exit_code == 0
    data = json.loads(sched.read_text())
    first = data["tasks"][1]
    first["finish"] += 1
    sched.write_text(json.dumps(data))
    result = runner.invoke(
        app, ["gantt", str(sched), "-i", str(J301), "-o", str(tmp_path / "g.png")]
    )
    assert result.exit_code == 2
    duration = first["finish"] - 1 - first["start"]
    assert result.stderr == (
        f"error: {sched}: tasks[1]: finish {first['finish']} contradicts the start: task "
        f"{first['task']!r} (mode {first['mode']!r}) starts at {first['start']} and runs "
        f"{duration} ticks, so it finishes at {first['finish'] - 1}\n"
    )
    assert not (tmp_path / "g.png").exists()


def test_a_capped_plan_gets_a_power_panel_with_the_gpu_cap(j301) -> None:
    # two 1-GPU jobs that compute all the time, under a cap that lets one compute at once
    # (60 W idle each, 240 W above idle for one): the GPUs draw 360 W, the cap's line
    jobs = [{"name": n, "gpus": 1, "iterations": 10, "stages": {"data": 0, "gpu": 1}} for n in "ab"]
    spec = {
        "time_unit": "1s",
        "power": {"cap": 360},
        "cluster": {"nodes": [{"name": "n", "gpu": 2}]},
        "jobs": jobs,
    }
    problem = compile_cluster(ClusterInstance.model_validate(spec))
    schedule = solve(problem, "cpsat", time_limit=10).schedule
    fig = draw_gantt(new_figure(problem, schedule), problem, schedule)
    panel = fig.axes[-1]
    assert panel.get_ylabel() == "kW"
    assert [t.get_text() for t in panel.get_legend().get_texts()] == [
        "draw",
        "GPU draw",
        "GPU cap",
    ]
    gpu_draw, cap = (line for line in panel.patches[1:])
    assert gpu_draw.get_data().values.max() == pytest.approx(0.36)
    assert cap.get_data().values.max() == pytest.approx(0.36)
    # a PSPLIB instance's resources have no power figure and no tick length: no panel
    problem, schedule = j301
    fig = draw_gantt(new_figure(problem, schedule), problem, schedule)
    assert len(fig.axes) == 1 + len(problem.renewables)

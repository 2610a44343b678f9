"""Placed plans on the command line: --placement, node utilisation, nodes in schedule files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.io.instance import load_instance
from planner.metrics import schedule_metrics
from planner.schedule import load_schedule
from planner.validate import validate
from tests.conftest import INSTANCES, lines

TRACE = INSTANCES / "muri_trace.csv"
runner = CliRunner()


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped Muri trace on 8 nodes of 8 GPUs, placed on nodes."""
    out = tmp_path_factory.mktemp("placed") / "placed.json"
    result = runner.invoke(
        app, ["import", "muri", str(TRACE), "--placement", "node", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_import_muri_places_on_nodes_only_when_asked(placed: Path, tmp_path: Path) -> None:
    assert json.loads(placed.read_text())["placement"] == "node"
    problem = load_instance(placed)
    assert [n.name for n in problem.nodes] == [f"node{k}" for k in range(1, 9)]
    assert problem.resources == []  # every resource is a node's
    pooled = tmp_path / "pooled.json"
    assert runner.invoke(app, ["import", "muri", str(TRACE), "-o", str(pooled)]).exit_code == 0
    assert json.loads(pooled.read_text())["placement"] == "pooled"
    assert load_instance(pooled).nodes == []


def test_generate_places_on_nodes(tmp_path: Path) -> None:
    out = tmp_path / "g.yaml"
    args = ["generate", "--jobs", "6", "--nodes", "2", "--gpus-per-node", "4"]
    result = runner.invoke(app, [*args, "--placement", "node", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {out} (6 jobs, 6 tasks)\n"
    problem = load_instance(out)
    assert [n.name for n in problem.nodes] == ["node1", "node2"]
    assert all(m.nodes >= 1 for t in problem.tasks for m in t.modes)


@pytest.mark.parametrize(
    "command",
    [
        ["import", "muri", str(TRACE)],  # a trace
        ["generate", "--jobs", "3"],  # a synthetic batch
    ],
)
def test_a_bad_placement_is_one_line(tmp_path: Path, command: list[str]) -> None:
    out = tmp_path / "x.json"
    result = runner.invoke(app, [*command, "--placement", "nodes", "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr == "error: placement 'nodes' is not one of pooled, node, gpu\n"
    assert not out.exists()


def test_solve_prints_the_spread_of_node_gpu_use(placed: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["solve", str(placed), "-s", "sgs", "--static", "-o", str(out)])
    assert result.exit_code == 0, result.output
    problem = load_instance(placed)
    use = {
        n: u["gpu"]
        for n, u in schedule_metrics(problem, load_schedule(out, problem)).node_utilisation.items()
    }
    low, high = min(use, key=use.__getitem__), max(use, key=use.__getitem__)
    assert use[low] < use[high]  # the line says something
    assert lines(result.stdout)["node GPU use"] == (
        f"min {use[low]:.2f} ({low})  mean {sum(use.values()) / 8:.2f}  "
        f"max {use[high]:.2f} ({high})"
    )
    keys = list(lines(result.stdout))
    assert keys.index("utilisation") + 1 == keys.index("node GPU use")


def test_solve_prints_no_node_line_for_a_pooled_plan() -> None:
    result = runner.invoke(app, ["solve", str(INSTANCES / "example.yaml"), "-s", "sgs", "--static"])
    assert result.exit_code == 0, result.output
    assert "utilisation" in lines(result.stdout)
    assert "node GPU use" not in result.stdout


def test_solve_writes_the_nodes_of_every_task_in_csv_and_json(placed: Path, tmp_path: Path) -> None:
    problem = load_instance(placed)
    gang = {t.name: t.modes[0].nodes for t in problem.tasks}
    assert max(gang.values()) > 1  # the trace has gangs (jobs on more than 8 GPUs)
    written = {}
    for name in ("s.csv", "s.json"):
        out = tmp_path / name
        result = runner.invoke(app, ["solve", str(placed), "-s", "sgs", "--static", "-o", str(out)])
        assert result.exit_code == 0, result.output
        check = runner.invoke(app, ["validate", str(placed), str(out)])
        assert check.exit_code == 0, check.output
        written[name] = load_schedule(out, problem)
    with (tmp_path / "s.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["task", "job", "mode", "nodes", "start", "finish"]
    for row in rows:
        on = row["nodes"].split("+")
        assert len(on) == gang[row["task"]]
        assert all(n.startswith("node") for n in on)
    tasks = json.loads((tmp_path / "s.json").read_text())["tasks"]
    assert {t["task"]: len(t["nodes"]) for t in tasks} == gang
    assert written["s.csv"].nodes == written["s.json"].nodes
    assert len(written["s.csv"].nodes) == len(problem.tasks)
    assert validate(problem, written["s.csv"]).ok


def test_validate_refuses_a_finish_that_contradicts_the_start(placed: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    args = ["solve", str(placed), "-s", "sgs", "--static", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    header, first, *rest = out.read_text().splitlines()
    cells = first.split(",")
    start, finish = int(cells[4]), int(cells[5])
    cells[5] = str(finish + 1)
    out.write_text("\n".join([header, ",".join(cells), *rest]) + "\n")
    result = runner.invoke(app, ["validate", str(placed), str(out)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: {out}: line 2: finish '{finish + 1}' contradicts the start: task "
        f"{cells[0]!r} (mode {cells[2]!r}) starts at {start} and runs {finish - start} ticks, "
        f"so it finishes at {finish}\n"
    )


def test_import_muri_migrate_and_objective(tmp_path: Path) -> None:
    out = tmp_path / "moving.json"
    args = ["import", "muri", str(TRACE), "--blocks", "2", "-o", str(out)]
    result = runner.invoke(
        app, [*args, "--placement", "node", "--migrate", "--objective", "weighted_completion"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["objective"] == "weighted_completion"
    assert all(job["migrate"] for job in data["jobs"])
    problem = load_instance(out)
    # the catalog's restart time of each job's model, in one-minute ticks: 1
    assert {j.restart for j in problem.jobs} == {1}
    block2 = problem.tasks[1]
    assert [m.name for m in block2.modes][:3] == ["base", "base-moved", "base@1/2"]
    result = runner.invoke(app, [*args, "--migrate"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: jobs[0].migrate: migration moves a job between nodes; it needs "
        "'placement: node' or 'placement: gpu'\n"
    )

"""The command line, through typer's runner and once through real subprocesses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner import __version__
from planner.app.cli import app
from planner.io.instance import load_instance
from tests.conftest import INSTANCES, ROOT, lines

J301 = str(INSTANCES / "psplib" / "j301_1.sm")
runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"planner {__version__}"


def test_solve_prints_the_summary_and_writes_the_schedule(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["solve", J301, "--solver", "sgs", "-o", str(out)])
    assert result.exit_code == 0, result.output
    info = lines(result.stdout)
    assert info["instance"] == "j301_1 (32 tasks)"
    assert info["solver"] == "sgs"
    assert info["status"] == "feasible"
    assert info["lower bound"] == "38"
    assert info["validator"] == "valid"
    makespan = int(info["makespan"])
    assert makespan >= 43  # the proven optimum
    assert info["gap"] == f"{100 * (makespan - 38) / makespan:.2f}%"
    assert json.loads(out.read_text())["makespan"] == makespan


def test_validate_accepts_a_solved_schedule_and_rejects_a_broken_one(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    assert runner.invoke(app, ["solve", J301, "--solver", "sgs", "-o", str(out)]).exit_code == 0
    ok = runner.invoke(app, ["validate", J301, str(out)])
    assert ok.exit_code == 0
    assert ok.stdout.startswith(f"{out}: valid, makespan ")
    rows = out.read_text().splitlines()
    broken = tmp_path / "broken.csv"
    # start every task at tick 0 (its finish its duration): precedences and capacity broken
    cells = [r.split(",") for r in rows[1:]]
    moved = [",".join([*c[:3], "0", str(int(c[4]) - int(c[3]))]) for c in cells]
    broken.write_text("\n".join([rows[0], *moved]) + "\n")
    bad = runner.invoke(app, ["validate", J301, str(broken)])
    assert bad.exit_code == 1
    assert "capacity: resource 'R1' at tick 0" in bad.stdout
    assert "precedence: FS '2' -> '6' lag 0: '6' starts at 0, earliest allowed 8" in bad.stdout
    assert bad.stdout.strip().splitlines()[-1].startswith(f"{broken}: invalid (")


def test_validate_instance_alone() -> None:
    result = runner.invoke(app, ["validate", str(INSTANCES / "example.yaml")])
    assert result.exit_code == 0
    assert result.stdout.strip().endswith("valid instance (11 tasks)")


def test_info_prints_bounds() -> None:
    result = runner.invoke(app, ["info", str(INSTANCES / "psplib" / "j1201_1.sm")])
    assert result.exit_code == 0
    info = lines(result.stdout)
    assert info["tasks"] == "122 (122 modes, 122 segments)"
    assert info["critical path"] == "99"
    assert info["energy bound"] == "97"
    assert info["lower bound"] == "99"
    assert info["resource R1"] == "renewable, capacity 14"


def test_convert_writes_an_equal_problem(tmp_path: Path) -> None:
    out = tmp_path / "j.yaml"
    result = runner.invoke(app, ["convert", J301, "-o", str(out)])
    assert result.exit_code == 0
    assert load_instance(out) == load_instance(J301)


def test_convert_refuses_a_bad_output_name(tmp_path: Path) -> None:
    result = runner.invoke(app, ["convert", J301, "-o", str(tmp_path / "j.sm")])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"error: {tmp_path / 'j.sm'}: the output must end in .json, .yaml or .yml"
    )


def test_unknown_solver_is_a_one_line_error() -> None:
    result = runner.invoke(app, ["solve", J301, "--solver", "magic"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: unknown solver 'magic'; choose one of portfolio, cpsat, milp, ga, pso, sgs, "
        "exclusive-fifo, exclusive-srtf, exclusive-srsf"
    )


def test_real_subprocess_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    solve = subprocess.run(
        ["planner", "solve", J301, "-o", str(out)], capture_output=True, text=True, cwd=ROOT
    )
    assert solve.returncode == 0, solve.stderr
    assert lines(solve.stdout)["validator"] == "valid"
    check = subprocess.run(
        [sys.executable, "-m", "planner", "validate", J301, str(out)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert "valid, makespan" in check.stdout
    bad = subprocess.run(
        ["planner", "info", str(tmp_path / "none.yaml")], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert bad.stderr == f"error: {tmp_path / 'none.yaml'}: no such file\n"
    assert "Traceback" not in bad.stderr


def test_the_interleaving_gain_runs_its_baselines_up_to_a_size_or_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # issue 44: on 5,755 jobs the three exclusive baselines took 19 s past the time limit
    import planner.app.cli as cli

    monkeypatch.setattr(cli, "GAIN_TASKS", 5)  # the example has 11 tasks
    example = str(ROOT / "instances" / "example.yaml")
    args = ["solve", example, "--static", "-s", "sgs"]
    skipped = runner.invoke(app, args)
    assert skipped.exit_code == 0, skipped.output
    gain = next(line for line in skipped.stdout.splitlines() if line.startswith("interleaving"))
    assert gain.split(None, 2)[2] == "- (not figured above 5 tasks; --gain runs its baselines)"
    asked = runner.invoke(app, [*args, "--gain"])
    gain = next(line for line in asked.stdout.splitlines() if line.startswith("interleaving"))
    assert re.fullmatch(r"\d+\.\d\dx over exclusive-(fifo|srtf|srsf)", gain.split(None, 2)[2])

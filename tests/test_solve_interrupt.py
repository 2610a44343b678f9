"""Ctrl-C on ``planner solve`` keeps the plan on every path: in the executor's model
(the default search, or a static engine's plan run in it) and in the static block
model. The table says ``(interrupted)``, ``-o`` and ``--gantt`` are written, and the
exit status is 130. ``planner replan`` keeps its re-plan the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ctrl_c_when, lines


def _solve_interrupted(args: list[str], cwd: Path, command: str = "solve") -> tuple[int, str, str]:
    """Run ``planner COMMAND ARGS``; Ctrl-C it at its first incumbent on stderr; its exit
    status, output and error output."""
    command_line = [sys.executable, "-m", "planner", command, *args]
    code, out, err, _ = ctrl_c_when(command_line, cwd, lambda err: "incumbent" in err)
    return code, out, err


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated batch of 200 training jobs on whole nodes."""
    path = tmp_path_factory.mktemp("batch") / "big.json"
    subprocess.run(
        [sys.executable, "-m", "planner", "generate", "--jobs", "200", "--seed", "1",
         "--placement", "node", "-o", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("extra", "written"),
    [([], "dispatch written to"), (["--solver", "ga"], "plan written to"),
     (["--solver", "ga", "--static"], "schedule written to")],
    ids=["search", "static-engine-in-executor", "static"],
)  # fmt: skip
def test_ctrl_c_on_solve_keeps_the_plan_writes_the_files_and_exits_130(
    batch: Path, tmp_path: Path, extra: list[str], written: str
) -> None:
    plan, chart = tmp_path / "plan.json", tmp_path / "plan.png"
    args = [str(batch), "-t", "120", "-o", str(plan), "--gantt", str(chart), *extra]
    code, out, err = _solve_interrupted(args, tmp_path)
    assert code == 130, err
    assert lines(out)["status"] == "feasible (interrupted)"
    assert json.loads(plan.read_text())
    assert chart.stat().st_size > 0
    assert f"{written} {plan}" in out
    if "--static" not in extra:  # the plan's run in the executor, audited
        assert lines(out)["audit"].startswith("valid")


def test_ctrl_c_on_replan_keeps_the_re_plan(batch: Path, tmp_path: Path) -> None:
    plan, again = tmp_path / "static.json", tmp_path / "again.json"
    subprocess.run(
        [sys.executable, "-m", "planner", "solve", str(batch), "--static", "-s", "sgs", "-o",
         str(plan)],
        check=True, capture_output=True,
    )  # fmt: skip
    args = [str(batch), str(plan), "--at", "100", "-t", "120", "-o", str(again)]
    code, out, err = _solve_interrupted(args, tmp_path, "replan")
    assert code == 130, err
    assert lines(out)["status"].startswith("feasible (interrupted) (stopped by Ctrl-C")
    assert json.loads(again.read_text())

"""The output-path guard: every command refuses an output it cannot write, before any work."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.errors import InputError
from planner.io.instance import load_instance, save_instance
from planner.io.paths import check_output
from tests.conftest import INSTANCES, ROOT

runner = CliRunner()
J301 = INSTANCES / "psplib" / "j301_1.sm"
TRACE = ROOT / "tests" / "data" / "muri_small.csv"


@pytest.fixture
def schedule(tmp_path: Path) -> Path:
    """A schedule of j301_1 in ``tmp_path``."""
    path = tmp_path / "s.json"
    assert runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(path)]).exit_code == 0
    return path


def commands(out: Path, schedule: Path) -> dict[str, list[str]]:
    """Every command that writes a file, writing ``out`` (a name with the right suffix)."""
    stem = out.with_suffix("")
    return {
        "solve": ["solve", str(J301), "-s", "sgs", "-o", f"{stem}.json"],
        "solve --gantt": ["solve", str(J301), "-s", "sgs", "--gantt", f"{stem}.png"],
        "convert": ["convert", str(J301), "-o", f"{stem}.yaml"],
        "generate": ["generate", "--jobs", "3", "-o", f"{stem}.json"],
        "import muri": ["import", "muri", str(TRACE), "-o", f"{stem}.json"],
        "gantt": ["gantt", str(schedule), "--instance", str(J301), "-o", f"{stem}.svg"],
        "compare": ["compare", str(J301), "-s", "sgs", "-o", f"{stem}.csv"],
        "schema": ["schema", "-o", f"{stem}.json"],
    }


COMMANDS = [
    "solve",
    "solve --gantt",
    "convert",
    "generate",
    "import muri",
    "gantt",
    "compare",
    "schema",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_folder_is_refused_before_any_work(
    tmp_path: Path, schedule: Path, command: str
) -> None:
    args = commands(tmp_path / "nodir" / "out.x", schedule)[command]
    out = args[-1]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {out}: folder '{tmp_path / 'nodir'}' does not exist\n"
    assert result.stdout == ""  # nothing solved, printed or written first
    assert not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_as_the_output_is_refused(tmp_path: Path, schedule: Path, command: str) -> None:
    args = commands(tmp_path / "out.x", schedule)[command]
    Path(args[-1]).mkdir()  # a folder that has the output's name, suffix and all
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {args[-1]}: is a folder; give a file name\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["solve", "{inst}", "-s", "sgs", "-o", "{inst}"], "{inst}"),  # schedule over instance
        (["convert", "{yaml}", "-o", "{yaml}"], "{yaml}"),  # convert in place
        (["convert", "{yaml}", "-o", "{link}"], "{link}"),  # another name of the same file
        (["compare", "{sm}", "--reference", "{ref}", "-o", "{ref}"], "{ref}"),  # over the reference
        (["gantt", "{sched}", "--instance", "{sm}", "-o", "{sched_as_svg}"], "{sched_as_svg}"),
    ],
    ids=["solve", "convert", "convert-link", "compare-reference", "gantt"],
)
def test_an_input_is_never_written_over(
    tmp_path: Path, schedule: Path, args: list[str], written: str
) -> None:
    files = {
        "inst": tmp_path / "inst.json",
        "yaml": tmp_path / "il.yaml",
        "link": tmp_path / "link.yaml",
        "sm": tmp_path / "j301_1.sm",
        "ref": tmp_path / "ref.csv",
        "sched": schedule,
        "sched_as_svg": tmp_path / "s.svg",
    }
    shutil.copy(INSTANCES / "interleave.yaml", files["yaml"])
    files["link"].symlink_to(files["yaml"])
    shutil.copy(J301, files["sm"])
    save_instance(load_instance(J301), files["inst"])
    files["ref"].write_text("instance,best_ub\nj301_1,43\n")
    # A schedule readable under a chart's name: the guard, not the suffix, must stop it.
    files["sched_as_svg"].symlink_to(schedule)
    before = {name: path.read_bytes() for name, path in files.items()}
    args = [a.format(**files) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    target = written.format(**files)
    message = "is an input of this command; write the output to another file"
    assert result.stderr == f"error: {target}: {message}\n"
    assert {name: path.read_bytes() for name, path in files.items()} == before


def test_an_existing_output_that_is_no_input_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    out.write_text("old")
    result = runner.invoke(app, ["solve", str(J301), "-s", "sgs", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("{")


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("s.txt", {"suffixes": (".json",)}, "the output must end in .json"),  # wrong suffix
        (
            "s.txt",
            {"suffixes": (".json", ".csv"), "what": "the schedule file"},
            "the schedule file must end in .json or .csv",
        ),  # several suffixes, and what the file is
        ("f/x.json", {}, "'{tmp}/f' is not a folder"),  # a file where the folder should be
        ("none/x.json", {}, "folder '{tmp}/none' does not exist"),  # no folder
        (".", {"suffixes": (".json",)}, "is a folder; give a file name"),  # a folder, checked first
    ],
)
def test_check_output_messages(tmp_path: Path, name: str, options: dict, message: str) -> None:
    (tmp_path / "f").write_text("")
    path = tmp_path / name
    with pytest.raises(InputError) as caught:
        check_output(path, **options)
    assert str(caught.value) == f"{path}: {message.format(tmp=tmp_path)}"


def test_check_output_refuses_a_folder_it_cannot_write_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root every folder is writable, so the refusal is driven through os.access.
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)
    with pytest.raises(InputError) as caught:
        check_output(tmp_path / "x.json")
    assert str(caught.value) == (
        f"{tmp_path / 'x.json'}: cannot write in folder '{tmp_path}' (permission denied)"
    )


def test_check_output_accepts_a_new_file_and_returns_it(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert check_output(path, inputs=[J301], suffixes=(".json",)) == path

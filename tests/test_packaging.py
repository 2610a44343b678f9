"""The package as a user installs it: the built wheel holds every package folder of the
repository (``models/`` and ``solvers/`` as ``planner.models`` and ``planner.solvers``)
and the data files the toolkit reads. CI also installs the wheel into a fresh venv and
runs the README's example from outside the checkout (``.ci/run``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

FOLDERS = {"planner": "planner", "models": "planner/models", "solvers": "planner/solvers"}
"""Each top-level source folder of the repository and where it installs."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The file names inside a wheel built from a copy of the checkout's sources (a copy,
    so that no earlier build's leftovers reach the wheel)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for path in ROOT.glob("*"):
        if path.is_file():
            shutil.copy(path, source / path.name)
    for folder in FOLDERS:
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(source), "-w", str(out)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("planner-*.whl")
    with zipfile.ZipFile(built) as archive:
        return set(archive.namelist())


def source_files() -> dict[str, str]:
    """Every Python file of the package's source folders -> its name inside the wheel."""
    files = {}
    for folder, target in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                relative = path.relative_to(ROOT / folder).as_posix()
                files[path.relative_to(ROOT).as_posix()] = f"{target}/{relative}"
    return files


def test_every_python_file_of_every_package_folder_is_in_the_wheel(wheel: set[str]) -> None:
    files = source_files()
    assert "planner/executor/policies/__init__.py" in files.values()
    missing = sorted(src for src, name in files.items() if name not in wheel)
    assert missing == []


def test_every_package_folder_is_a_package(wheel: set[str]) -> None:
    # a folder of Python files without __init__.py would be left out of the wheel
    folders = {Path(name).parent.as_posix() for name in source_files().values()}
    assert sorted(f for f in folders if f"{f}/__init__.py" not in wheel) == []


def test_the_wheel_holds_the_data_files_the_toolkit_reads(wheel: set[str]) -> None:
    data = {
        f"planner/dl/{p.relative_to(ROOT / 'planner/dl').as_posix()}"
        for p in (ROOT / "planner/dl/catalog").rglob("*")
        if p.is_file()
    } | {f"planner/io/schema/{p.name}" for p in (ROOT / "planner/io/schema").glob("*.json")}
    assert data and sorted(data - wheel) == []


def test_the_version_option_prints_the_package_version() -> None:
    from importlib.metadata import version

    out = subprocess.run(
        [sys.executable, "-m", "planner", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout == f"planner {version('planner')}\n"

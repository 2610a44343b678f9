"""The CP-SAT benchmark command: its CSV, and continuing a stopped run with ``--resume``."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import INSTANCES, ROOT

BENCH = ROOT / "benchmarks" / "bench_cpsat.py"
HEADER = "instance,solver,status,objective,bound,best_known,gap_pct,time_s,time_limit,workers\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A benchmarks folder with one J30 instance (optimum 43) and its best-known file."""
    sm = tmp_path / "psplib_sm"
    (sm / "j30").mkdir(parents=True)
    shutil.copy(INSTANCES / "psplib" / "j301_1.sm", sm / "j30")
    (sm / "bks_j30.csv").write_text("instance,best_ub\nj301_1,43\n")
    return tmp_path


def bench(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the benchmark on the J30 set of ``folder``."""
    cmd = [sys.executable, str(BENCH), "--benchmarks", str(folder), "--set", "j30"]
    return subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=300)


def test_rows_written_and_resumed(folder: Path) -> None:
    out = folder / "runs.csv"
    first = bench(folder, "--time-limit", "5", "--out", str(out))
    assert first.returncode == 0, first.stderr
    [row] = list(csv.DictReader(out.open()))
    assert (row["instance"], row["solver"], row["status"]) == ("j301_1", "portfolio", "optimal")
    assert (float(row["objective"]), float(row["time_limit"]), row["workers"]) == (43, 5, "2")

    again = bench(folder, "--time-limit", "5", "--out", str(out), "--resume")
    assert again.returncode == 0, again.stderr
    assert f"resuming: 1 runs in {out}, 0 to go" in again.stdout
    assert "| portfolio | 1 | 1 | 1 | 0.00 | 0.00 |" in again.stdout
    assert len(list(csv.DictReader(out.open()))) == 1


def test_existing_out_kept_without_resume(folder: Path) -> None:
    out = folder / "runs.csv"
    out.write_text("keep me\n")
    done = bench(folder, "--out", str(out))
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {out} exists; pass --resume to continue it, or choose a new --out\n"
    )
    assert out.read_text() == "keep me\n"


@pytest.mark.parametrize(
    ("row", "limit", "cause"),
    [
        (
            "j301_1,portfolio,optimal,43,43,43,0.0,0.1,10.0,2",
            "5",
            "j301_1 ran with time limit 10 and workers 2, not 5 and 2",
        ),
        (
            "j3013_1,portfolio,optimal,58,58,58,0.0,0.1,10.0,2",
            "10",
            "j3013_1 is not an instance of this run",
        ),
        (
            "j301_1,portfolio,optimal,forty-three,43,43,0.0,0.1,10.0,2",
            "10",
            "line 2: not a row of this benchmark",
        ),
    ],
)
def test_resume_refused(folder: Path, row: str, limit: str, cause: str) -> None:
    out = folder / "runs.csv"
    out.write_text(HEADER + row + "\n")
    done = bench(folder, "--time-limit", limit, "--out", str(out), "--resume")
    assert done.returncode == 2
    assert done.stderr == f"error: {out}: {cause}\n"
    assert out.read_text() == HEADER + row + "\n"

"""Shared fixtures: the compiled kernels, small instances with known optima."""

from __future__ import annotations

import copy
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.model import Problem

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"


def needed(what: str, how: str) -> None:
    """Skip the test for want of ``what`` (installed by ``how``) on a developer's
    machine; fail it in CI, which installs everything the tests need."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI ({how})")
    pytest.skip(f"{what} is not installed ({how})")


def chromium() -> str:
    """The headless browser's command (``needed`` when there is none)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        needed("chromium", "apt-get install -y chromium")
    return browser  # type: ignore[return-value]


def lines(output: str) -> dict[str, str]:
    """``key  value`` lines of a command's output as a dict."""
    out = {}
    for line in output.splitlines():
        key, _, value = line.partition("  ")
        out[key.strip()] = value.strip()
    return out


def ctrl_c_when(
    command: list[str], cwd: Path, ready: Callable[[str], bool]
) -> tuple[int, str, str, float]:
    """Run ``command`` in a process group of its own, Ctrl-C the group once ``ready`` holds
    of what it has written to stderr; its exit status, output, error output and the
    seconds from Ctrl-C to its exit."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    err = ""
    while not ready(err):
        chunk = proc.stderr.read(1)
        assert chunk, f"ended before it was ready: {err}"
        err += chunk
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    out, rest = proc.communicate(timeout=120)
    return proc.returncode, out, err + rest, time.monotonic() - t0


TWO_JOBS: dict[str, Any] = {
    "name": "two-jobs",
    "resources": [{"name": "io", "capacity": 1}, {"name": "gpu", "capacity": 1}],
    "jobs": [{"name": "A"}, {"name": "B", "weight": 2}],
    "tasks": [
        {
            "name": "a",
            "job": "A",
            "modes": [
                {
                    "segments": [
                        {"name": "load", "duration": 2, "demand": {"io": 1}},
                        {"name": "train", "duration": 4, "demand": {"gpu": 1}},
                    ]
                }
            ],
        },
        {
            "name": "b",
            "job": "B",
            "modes": [
                {
                    "segments": [
                        {"name": "train", "duration": 4, "demand": {"gpu": 1}},
                        {"name": "save", "duration": 2, "demand": {"io": 1}},
                    ]
                }
            ],
        },
    ],
}
"""Two tasks with opposite stage orders: 12 ticks back to back, 8 interleaved."""


@pytest.fixture(scope="session", autouse=True)
def kernels() -> None:
    """Compile (first run) or load the decoders' kernels once, before any test runs.

    No test then pays for compiling inside a solver's time limit, whichever runs first.
    """
    from planner.solvers.kernels import load_kernels

    load_kernels()


@pytest.fixture
def two_jobs_data() -> dict[str, Any]:
    """A fresh copy of the two-job instance as plain data."""
    return copy.deepcopy(TWO_JOBS)


@pytest.fixture
def two_jobs(two_jobs_data: dict[str, Any]) -> Problem:
    """The two-job instance as a Problem."""
    return Problem.model_validate(two_jobs_data)

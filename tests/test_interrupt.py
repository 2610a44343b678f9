"""The shared interrupt path (:mod:`planner.interrupt`): the first Ctrl-C stops the work
and keeps what it returns, a second aborts; the heuristics' kernels read the halt flag
between schedules."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from planner.interrupt import Halt, run_interruptibly
from planner.io.instance import load_instance
from planner.result import Status
from planner.solvers import solve
from planner.solvers.ga import initial
from planner.solvers.search import Search
from tests.conftest import INSTANCES


def ctrl_c_on_sleeps(monkeypatch: pytest.MonkeyPatch, count: int) -> list[int]:
    """Make the first ``count`` sleeps of the wait loop raise KeyboardInterrupt."""
    real = time.sleep
    calls: list[int] = []

    def sleep(seconds: float) -> None:
        calls.append(1)
        if len(calls) <= count:
            raise KeyboardInterrupt
        real(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return calls


def test_the_first_ctrl_c_stops_the_work_and_keeps_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctrl_c_on_sleeps(monkeypatch, 1)
    halt = Halt()
    value, interrupted = run_interruptibly(lambda: halt.event.wait(10) and "kept", halt.set, "t")
    assert (value, interrupted, int(halt.flag[0])) == ("kept", True, 1)


def test_a_second_ctrl_c_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    ctrl_c_on_sleeps(monkeypatch, 2)
    release = threading.Event()
    stops: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(lambda: release.wait(10), lambda: stops.append(1), "t")
    release.set()
    assert stops == [1]


def test_an_error_of_the_work_is_raised_in_the_caller() -> None:
    def work() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        run_interruptibly(work, lambda: None, "t")


def test_a_set_halt_flag_ends_the_kernel_before_the_next_schedule() -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    search = Search(problem, "ga", 1000, None, None)
    dec, n = search.decoder, search.decoder.data.n
    pop_o = np.tile(np.arange(n, dtype=np.int64), (10, 1))
    pop_m = np.full((10, n), -1, dtype=np.int64)
    fit = np.full(10, np.inf)
    best = (np.full(1, np.inf), np.zeros(n, np.int64), np.zeros(n, np.int64), dec.placed.copy())
    for flag, spent in ((1, 0), (0, 10)):
        search.stop.flag[0] = flag
        work = (dec.start, dec.mode, dec.placed, dec.nodes, dec.index, search.stop.flag)
        got = initial(dec.data, pop_o, pop_m, np.zeros_like(pop_o), fit, work, best, 10)
        assert got == spent


@pytest.mark.parametrize("solver", ["ga", "pso"])
def test_ctrl_c_during_a_heuristic_keeps_its_best_schedule(
    monkeypatch: pytest.MonkeyPatch, solver: str
) -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    ctrl_c_on_sleeps(monkeypatch, 1)
    res = solve(problem, solver, time_limit=60)
    assert res.interrupted and res.status is Status.FEASIBLE and res.valid
    assert res.reason == "stopped by Ctrl-C; the best schedule so far is returned"

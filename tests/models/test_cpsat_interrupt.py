"""Ctrl-C while CP-SAT searches: the first stops the search, a second aborts."""

from __future__ import annotations

import threading
import time

import pytest
from ortools.sat.python import cp_model

from planner.models import cpsat


class _Search:
    """A stand-in solver whose search runs until it is stopped (or ``release`` is set)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.stops = 0

    def solve(self, model: object, callback: object) -> int:
        self.release.wait(10)
        return cp_model.FEASIBLE

    def stop_search(self) -> None:
        self.stops += 1


def _interrupts(monkeypatch: pytest.MonkeyPatch, count: int, then: _Search | None) -> list[int]:
    """Make the first ``count`` sleeps of the wait loop raise KeyboardInterrupt."""
    real = time.sleep
    calls: list[int] = []

    def sleep(seconds: float) -> None:
        calls.append(1)
        if len(calls) <= count:
            if then is not None and len(calls) == count:
                then.release.set()
            raise KeyboardInterrupt
        real(seconds)

    monkeypatch.setattr(cpsat.time, "sleep", sleep)
    return calls


def test_one_ctrl_c_stops_the_search_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    search = _Search()
    _interrupts(monkeypatch, 1, search)
    status, interrupted = cpsat._run(search, None, None)  # type: ignore[arg-type]
    assert (status, interrupted, search.stops) == (cp_model.FEASIBLE, True, 1)


def test_a_second_ctrl_c_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    search = _Search()
    calls = _interrupts(monkeypatch, 2, None)
    with pytest.raises(KeyboardInterrupt):
        cpsat._run(search, None, None)  # type: ignore[arg-type]
    search.release.set()
    assert (len(calls), search.stops) == (2, 1)

"""The one interrupt path every solver shares.

A solver's work (a CP-SAT search, a MILP backend, a heuristic's loop of compiled
kernels that release the GIL) runs in a helper thread while the main thread waits
in short sleeps, where Ctrl-C reaches it. The first Ctrl-C calls the work's ``stop``
(``CpSolver.stop_search``, a backend's cancel, or a :class:`Halt` that compiled
kernels read between schedules) and waits for the work to return what it has: its
incumbent, reported by the usual progress and :class:`~planner.result.Result`
fields (status ``feasible``, ``interrupted``). A second Ctrl-C aborts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

T = TypeVar("T")

POLL_SECONDS = 0.01
"""How often the waiting main thread wakes (Ctrl-C is handled at the next wake)."""


class Halt:
    """A stop request that threads and compiled kernels share.

    :meth:`set` sets both :attr:`event` (for Python loops and other threads) and
    ``flag[0]`` (an int64 array that kernels read between schedules).
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.flag = np.zeros(1, dtype=np.int64)

    def set(self) -> None:
        """Ask every reader to stop."""
        self.flag[0] = 1
        self.event.set()

    def is_set(self) -> bool:
        """Whether a stop was asked."""
        return self.event.is_set()


class SecondInterrupt(KeyboardInterrupt):
    """A second Ctrl-C, once the first has asked the work to stop: the command aborts."""


_CTRL_C = threading.Event()
"""Set once the first Ctrl-C has reached the main thread's work, until that work returns:
work nested in it on other threads (a solver inside a search) stops too."""
_MAIN_BUSY = threading.Event()
"""Set while the main thread waits in :func:`run_interruptibly`."""


def run_interruptibly(
    work: Callable[[], T], stop: Callable[[], object], name: str
) -> tuple[T, bool]:
    """Run ``work``; the first Ctrl-C calls ``stop`` and waits for ``work`` to return.

    Off the main thread (where Ctrl-C never arrives) ``work`` runs in place, unless the
    main thread is itself waiting in this function on work that this one is part of (a
    static solver inside the search of ``planner solve``): then the main thread's first
    Ctrl-C calls this ``stop`` too.

    Returns
    -------
    tuple
        ``work``'s value and whether Ctrl-C stopped it.

    Raises
    ------
    SecondInterrupt
        On a second Ctrl-C (the work is left to end on its own, in a daemon thread).
    BaseException
        Whatever ``work`` raised, raised again here.
    """
    main = threading.current_thread() is threading.main_thread()
    if not main and not _MAIN_BUSY.is_set():
        return work(), False
    done = threading.Event()
    out: list[tuple[bool, object]] = []

    def target() -> None:
        try:
            out.append((True, work()))
        except BaseException as exc:  # raised again in the calling thread
            out.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=target, name=name, daemon=True).start()
    interrupted = False
    if main:
        _MAIN_BUSY.set()
    try:
        while not done.is_set():
            try:
                # A sleep, not Thread.join or Event.wait: Ctrl-C inside those can leave the
                # thread looking finished, or their lock released twice.
                time.sleep(POLL_SECONDS)
                if not main and not interrupted and _CTRL_C.is_set():
                    interrupted = True
                    stop()
            except KeyboardInterrupt:
                if interrupted:
                    raise SecondInterrupt from None  # a second Ctrl-C aborts
                interrupted = True
                _CTRL_C.set()
                stop()
    finally:
        if main:
            _MAIN_BUSY.clear()
            _CTRL_C.clear()
    ok, value = out[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value, interrupted  # type: ignore[return-value]

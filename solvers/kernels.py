"""Loading the compiled kernels before a solver's clock starts.

The decoders' numba kernels compile on their first call and are cached on disk
(``cache=True``), so only the first run after an install or an upgrade compiles
them. :func:`load_kernels` runs every entry point once on a tiny problem, so that a
solver's time limit never pays for compiling or loading them; on a first run it says
so once ("compiling kernels, first run only").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from planner.model import Mode, Precedence, Problem, Resource, Segment, Task
from planner.result import Progress

log = logging.getLogger(__name__)

COMPILING = "compiling kernels, first run only"
"""What a first run says while the kernels compile."""

_lock = threading.Lock()
_loaded = False


def _tiny() -> Problem:
    """Three tasks, two modes each, a budget and a precedence: every kernel's branch types."""

    def mode(d: int, q: int, c: int) -> Mode:
        return Mode(segments=[Segment(duration=d, demand={"r": q})], consumes={"n": c})

    return Problem(
        name="warm-up",
        resources=[
            Resource(name="r", capacity=2),
            Resource(name="n", capacity=4, kind="nonrenewable"),
        ],
        tasks=[Task(name=f"t{i}", modes=[mode(2, 1, 1), mode(1, 2, 2)]) for i in range(3)],
        precedences=[Precedence(before="t0", after="t1")],
    )


def _cached() -> bool:
    """Whether the disk cache holds every entry point for this source (best effort)."""
    from planner.solvers import ga, passes_numba, pso, sgs_numba

    entries = (
        sgs_numba.serial_pass,
        sgs_numba.parallel_pass,
        passes_numba.justify,
        passes_numba.evaluate,
        passes_numba.keys_to_order,
        ga.generation,
        ga.initial,
        pso.iteration,
    )
    try:
        return all(bool(k._cache._cache_file._load_index()) for k in entries)
    except Exception:  # numba's cache layout is internal: without it, say nothing
        return True


def load_kernels(progress: Callable[[Progress], None] | None = None) -> None:
    """Compile (first run) or load (later runs) every kernel, once per process.

    Parameters
    ----------
    progress
        Told :data:`COMPILING` when the kernels have to compile; without it the
        message is logged.
    """
    global _loaded
    with _lock:
        if _loaded:
            return
        if not _cached():
            if progress is not None:
                progress(Progress(0.0, message=COMPILING))
            else:
                log.warning(COMPILING)
        from planner.solvers.ga import solve_ga
        from planner.solvers.pso import solve_pso
        from planner.solvers.sgs import solve_sgs

        problem = _tiny()
        for scheme in ("serial", "parallel"):
            solve_sgs(problem, scheme=scheme, justify=True)
        solve_ga(problem, schedules=400)
        solve_pso(problem, schedules=200)
        _loaded = True

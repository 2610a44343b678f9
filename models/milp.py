"""The time-indexed MILP solved by CBC or HiGHS through PuLP.

The horizon comes from an optional ``initial_solution`` (its makespan), which is
also CBC's warm start (a MIP start) and the fallback when a backend finds nothing
better. The model is sized before it is built and refused, with a pointer to the
CP-SAT and GA solvers, when it would not fit. The status is ``optimal`` only when
the backend's bound proves it. The registered ``milp`` solver
(:mod:`solvers.warm_milp`) finds the initial solution with SGS passes.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, get_args

import pulp

from planner import bounds
from planner.errors import InputError, PlannerError
from planner.interrupt import run_interruptibly
from planner.model import Problem
from planner.models.milp_model import MilpModel, build_model
from planner.models.milp_windows import (
    Windows,
    estimate_size,
    job_completion_caps,
    start_windows,
)
from planner.result import Progress, Result, Status
from planner.schedule import Schedule

log = logging.getLogger(__name__)

Backend = Literal["cbc", "highs"]
DEFAULT_BACKEND: Backend = "highs"
"""HiGHS proves more of J30 than CBC: 83 against 77 of two stratified samples of 48 at 60 s
(BENCHMARKS.md); CBC takes the warm start as a MIP start, HiGHS only as the horizon and
the fallback."""
BACKENDS: tuple[str, ...] = get_args(Backend)
MAX_VARIABLES = 2_000_000
"""Largest number of start variables the solver builds."""
MAX_MEMORY_GB = 4.0
"""Largest estimated memory the solver builds a model for."""

_CBC_BOUND = re.compile(r"^Lower bound:\s*(\S+)", re.MULTILINE)
_CBC_OPTIMAL = re.compile(r"^Result - Optimal solution found", re.MULTILINE)


def solve_milp(
    problem: Problem,
    *,
    time_limit: float | None = None,
    workers: int | None = None,
    backend: Backend = DEFAULT_BACKEND,
    gap: float = 0.0,
    progress: Callable[[Progress], None] | None = None,
    log: bool = False,
    max_variables: int = MAX_VARIABLES,
    max_memory_gb: float = MAX_MEMORY_GB,
    initial_solution: Schedule | None = None,
    cliques: bool = True,
) -> Result:
    """Solve ``problem`` with the time-indexed MILP.

    Parameters
    ----------
    problem
        The instance.
    time_limit
        Seconds for the whole solve (model building included); ``None`` for no limit.
    workers
        Threads of the backend.
    backend
        ``highs`` (highspy, the default) or ``cbc`` (bundled with PuLP).
    gap
        Relative gap at which the backend may stop; ``0`` proves optimality.
    progress
        Called with the initial solution's objective and with the final objective and bound.
    log
        Show the backend's own log.
    max_variables, max_memory_gb
        Refuse to build a model with more start variables, or a larger estimated memory.
    initial_solution
        A schedule whose makespan sets the horizon; CBC's warm start.
    cliques
        Add clique cuts: at every tick at most one task of a set of tasks no two of which
        fit together runs (:func:`planner.models.milp_model.conflict_cliques`).

    Returns
    -------
    Result
        The best schedule (the backend's, or the initial solution), the backend's
        bound and ``optimal`` only when the bound meets the objective.

    Raises
    ------
    InputError
        For an unknown backend.
    PlannerError
        For a model above the size limits.
    """
    t0 = time.perf_counter()
    if backend not in BACKENDS:
        raise InputError(f"unknown MILP backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    start = initial_solution
    windows = milp_windows(problem, start)
    check_size(problem, windows, max_variables, max_memory_gb)
    if progress is not None and start is not None:
        progress(Progress(time.perf_counter() - t0, start.objective(problem), None, "initial"))
    try:
        return _build_and_solve(
            problem, windows, start, time_limit, t0, workers, backend, gap, progress, log, cliques
        )
    except KeyboardInterrupt:
        return _interrupted(problem, start)


def _build_and_solve(
    problem: Problem,
    windows: Windows,
    start: Schedule | None,
    time_limit: float | None,
    t0: float,
    workers: int | None,
    backend: str,
    gap: float,
    progress: Callable[[Progress], None] | None,
    log: bool,
    cliques: bool,
) -> Result:
    """Build the model over ``windows`` and solve it (see :func:`solve_milp`)."""
    model = build_model(problem, windows, cliques)
    warm = backend == "cbc" and start is not None and model.warm_start(problem, start)
    stats = {
        "backend": backend,
        "horizon": windows.horizon,
        "variables": len(model.lp.variables()),
        "constraints": model.n_constraints,
        "estimated_nonzeros": estimate_size(problem, windows).nonzeros,
        "heuristic": None if start is None else start.objective(problem),
        "warm_start": warm,
        "build_time": time.perf_counter() - t0,
    }
    remaining = None if time_limit is None else max(0.5, time_limit - (time.perf_counter() - t0))
    # an integral objective is proven once the bound is within half a unit (safe from tolerances)
    gap_abs = 0.5 if _integral_objective(problem) else 1e-6
    if backend == "cbc":
        state, bound = _solve_cbc(model, remaining, workers, gap, gap_abs, warm, log)
    else:
        state, bound = _solve_highs(model, remaining, workers, gap, gap_abs, log)
    result = _result(problem, model, start, state, bound, stats)
    if progress is not None:
        progress(Progress(time.perf_counter() - t0, result.objective, result.lower_bound, "done"))
    return result


def check_size(
    problem: Problem, windows: Windows, max_variables: int, max_memory_gb: float
) -> None:
    """Raise :class:`PlannerError` if the model over ``windows`` passes the size limits."""
    size = estimate_size(problem, windows)
    if size.variables > max_variables or size.memory_gb > max_memory_gb:
        raise PlannerError(
            f"the time-indexed MILP is too large for this instance ({size.variables:,} start "
            f"variables, about {size.memory_gb:.1f} GB over a horizon of {windows.horizon} ticks); "
            "use --solver cpsat or --solver ga"
        )


def milp_windows(problem: Problem, schedule: Schedule | None) -> Windows:
    """The start windows that a known ``schedule`` implies (the trivial ones without it).

    A tighter horizon gives narrower windows and a smaller model.
    """
    if schedule is None:
        return start_windows(problem, bounds.horizon(problem))
    if problem.objective == "makespan":
        return start_windows(problem, schedule.makespan(problem))
    if problem.objective == "energy":
        return start_windows(problem, energy_horizon(problem, schedule))
    if problem.objective == "cost":  # a cheaper plan may end later than any known one
        return start_windows(problem, max(bounds.horizon(problem), schedule.makespan(problem)))
    horizon = max(bounds.horizon(problem), schedule.makespan(problem))
    caps = job_completion_caps(problem, schedule.objective(problem))
    return start_windows(problem, horizon, caps)


def energy_horizon(problem: Problem, schedule: Schedule) -> int:
    """The latest makespan a plan can have and use no more energy than ``schedule``: its
    energy less the least the modes draw, over the draw per tick of makespan (the
    schedule's makespan where nothing is drawn per tick)."""
    from planner.metrics import energy_terms

    per, over = energy_terms(problem)
    if over <= 0:
        return max(bounds.horizon(problem), schedule.makespan(problem))
    room = (schedule.objective(problem) - sum(min(row) for row in per)) / over
    return max(schedule.makespan(problem), math.floor(room + 1e-9))


def _integral_objective(problem: Problem) -> bool:
    if problem.objective in ("energy", "cost"):
        return False
    if problem.objective == "makespan":
        return True
    return all(float(j.weight).is_integer() for j in problem.jobs)


def _solve_cbc(
    model: MilpModel,
    time_limit: float | None,
    workers: int | None,
    gap: float,
    gap_abs: float,
    warm: bool,
    show_log: bool,
) -> tuple[int, float | None]:
    """Run CBC in a temporary folder; return PuLP's status and the bound read from its log."""
    with tempfile.TemporaryDirectory(prefix="planner-milp-") as tmp:
        log_path = Path(tmp) / "cbc.log"
        with warnings.catch_warnings():
            # PuLP 3 warns that its bundled CBC leaves in PuLP 4; the dependency stays below 4
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = pulp.PULP_CBC_CMD(
                msg=False,
                timeLimit=time_limit,
                threads=workers,
                gapRel=gap,
                gapAbs=gap_abs,
                warmStart=warm,
                logPath=str(log_path),
            )
        solver.tmpDir = tmp
        try:
            model.lp.solve(solver)
        except pulp.PulpSolverError:
            # the bundled CBC now and then exits abnormally when its time limit strikes
            log.warning("CBC stopped abnormally; keeping the heuristic schedule")
            return pulp.LpStatusNotSolved, None
        text = log_path.read_text() if log_path.exists() else ""
    if show_log:
        sys.stderr.write(text)
    found = _CBC_BOUND.findall(text)
    bound: float | None = None
    if found:
        bound = float(found[-1])
    elif gap == 0 and _CBC_OPTIMAL.search(text):
        # an optimal finish without a bound line: the bound is the objective, up to gap_abs
        bound = pulp.value(model.lp.objective)
    return model.lp.status, bound


class _HiGHS(pulp.HiGHS):  # type: ignore[misc, valid-type]
    """PuLP's HiGHS interface, silent when asked.

    No warm start: HiGHS 1.16 returns a solution set with ``setSolution`` as
    its final one even after it has found a better one.
    """

    def createAndConfigureSolver(self, lp: pulp.LpProblem) -> None:
        # HiGHS prints a banner when constructed, before PuLP can switch its output off
        with contextlib.nullcontext() if self.msg else _silent_stdout():
            super().createAndConfigureSolver(lp)


@contextlib.contextmanager
def _silent_stdout() -> Iterator[None]:
    """Send the process's standard output (file descriptor 1) to the null device."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _solve_highs(
    model: MilpModel,
    time_limit: float | None,
    workers: int | None,
    gap: float,
    gap_abs: float,
    show_log: bool,
) -> tuple[int, float | None]:
    """Run HiGHS; return PuLP's status and HiGHS's dual bound."""
    solver = _HiGHS(msg=show_log, timeLimit=time_limit, threads=workers, gapRel=gap, gapAbs=gap_abs)
    if not solver.available():
        raise PlannerError("the HiGHS backend needs the highspy package: pip install highspy")
    _in_thread(lambda: model.lp.solve(solver), lambda: model.lp.solverModel.cancelSolve())
    info = model.lp.solverModel.getInfo()
    bound = float(info.mip_dual_bound)
    return model.lp.status, bound if math.isfinite(bound) else None


def _in_thread(work: Callable[[], object], cancel: Callable[[], object]) -> None:
    """Run ``work`` on the shared interrupt path (:mod:`planner.interrupt`); on Ctrl-C,
    ``cancel`` it, wait, and raise ``KeyboardInterrupt`` for the caller's interrupted
    result. An in-process backend does not see Ctrl-C while it runs."""
    _, interrupted = run_interruptibly(work, cancel, "milp")
    if interrupted:
        raise KeyboardInterrupt


def _interrupted(problem: Problem, start: Schedule | None) -> Result:
    """The result of a solve stopped by Ctrl-C (model building or the backend)."""
    return interrupted_result(
        problem, start, "stopped by Ctrl-C before the MILP backend finished", "the initial solution"
    )


def interrupted_result(problem: Problem, best: Schedule | None, reason: str, what: str) -> Result:
    """A ``milp`` result stopped by Ctrl-C: ``best`` (``what`` names it), if there is one."""
    if best is None:
        return Result("milp", Status.UNKNOWN, reason=reason, interrupted=True)
    return Result(
        "milp",
        Status.FEASIBLE,
        best,
        objective=best.objective(problem),
        reason=f"{reason}; {what} is returned",
        interrupted=True,
    )


def _result(
    problem: Problem,
    model: MilpModel,
    start: Schedule | None,
    state: int,
    bound: float | None,
    stats: dict,
) -> Result:
    """Pick the best schedule, round the bound and decide the status."""
    stats["backend_status"] = pulp.LpStatus.get(state, str(state))
    solved = model.lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    schedule = model.schedule(problem) if solved else None
    if schedule is None or (
        start is not None and start.objective(problem) < schedule.objective(problem)
    ):
        schedule = start
    if schedule is None:
        status = Status.INFEASIBLE if state == pulp.LpStatusInfeasible else Status.UNKNOWN
        return Result("milp", status, lower_bound=bound, stats=stats)
    objective = schedule.objective(problem)
    if bound is not None:
        if _integral_objective(problem):
            bound = math.ceil(bound - 1e-6)
        bound = min(bound, objective)
    proven = bound is not None and objective <= bound + 1e-6
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    return Result("milp", status, schedule, objective=objective, lower_bound=bound, stats=stats)

"""Monte Carlo studies: runs of a picklable function of the seed (a task-level replay
of :mod:`planner.replay.simulate`, or a job-level dispatch of
:mod:`planner.executor.runs`), streamed into columns of a few figures per run."""

from __future__ import annotations

import math
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.disturbances import MAX_RUNS, MAX_SEED
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.interrupt import Halt


@dataclass(frozen=True)
class RunSummary:
    """The figures of one Monte Carlo run."""

    seed: int
    makespan: float
    """Ticks of a task-level replay, seconds of a job-level run."""
    optimism: float
    mean_jct: float | None
    p99_jct: float | None
    lost_gpu_ticks: int
    valid: bool
    ftf_max: float | None = None
    """The worst finish-time fairness (a job-level run; :mod:`planner.executor.fairness`)."""
    jain: float | None = None
    """Jain's index of the attained service (a job-level run)."""
    longest_wait: float | None = None
    """The longest wait from release to first start (s; a job-level run)."""


class Study:
    """Monte Carlo runs kept as columns: a few numbers per run, never an execution, so
    memory stays small whatever the number of runs (:data:`~planner.disturbances.MAX_RUNS`
    at most: 56 bytes each).

    Rows are in the order they were added; :meth:`figures` sorts them by seed.
    """

    COLUMNS = ("seed", "makespan", "optimism", "mean_jct", "p99_jct", "lost_gpu_ticks", "valid",
               "ftf_max", "jain", "longest_wait")  # fmt: skip

    def __init__(self, capacity: int) -> None:
        self.data = np.full((capacity, len(self.COLUMNS)), np.nan)
        self.size = 0
        self.interrupted = False
        """Whether Ctrl-C stopped the study before its last run."""

    def add(self, run: RunSummary) -> None:
        """Append one run's figures."""
        jct = [math.nan if v is None else v for v in (run.mean_jct, run.p99_jct)]
        fair = [math.nan if v is None else v for v in (run.ftf_max, run.jain, run.longest_wait)]
        row = (run.seed, run.makespan, run.optimism, *jct, run.lost_gpu_ticks, run.valid, *fair)
        self.data[self.size] = row
        self.size += 1

    def __len__(self) -> int:
        return self.size

    def _in_seed_order(self) -> np.ndarray:
        rows = self.data[: self.size]
        return rows[np.argsort(rows[:, 0], kind="stable")]

    def column(self, name: str) -> np.ndarray:
        """The values of column ``name`` of the runs done, in seed order."""
        return self._in_seed_order()[:, self.COLUMNS.index(name)]

    @property
    def invalid(self) -> int:
        """Runs whose realized schedule the validator rejected (0 unless there is a bug)."""
        return int((self.data[: self.size, self.COLUMNS.index("valid")] == 0).sum())

    def figures(self, per_run: bool = True) -> dict[str, Any]:
        """The distributions of the realized makespan and mean JCT, and (``per_run``) the
        runs' figures as one list per column, in seed order."""
        rows = self._in_seed_order()
        jct = rows[:, self.COLUMNS.index("mean_jct")]
        jct = jct[~np.isnan(jct)]
        out: dict[str, Any] = {
            "runs": self.size,
            "interrupted": self.interrupted,
            "makespan": distribution(rows[:, self.COLUMNS.index("makespan")]),
            "mean_jct": distribution(jct) if len(jct) else None,
        }
        if per_run:
            cols: dict[str, Any] = {}
            for k, name in enumerate(self.COLUMNS):
                values = rows[:, k]
                if name in ("seed", "lost_gpu_ticks"):
                    cols[name] = values.astype(np.int64).tolist()
                elif name == "makespan":  # whole ticks, or seconds of a job-level run
                    cols[name] = [int(v) if v.is_integer() else v for v in values.tolist()]
                elif name == "valid":
                    cols[name] = (values == 1).tolist()
                else:
                    cols[name] = [None if math.isnan(v) else v for v in values.tolist()]
            out["per_run"] = cols
        return out


def stream_runs(
    runner: Callable[[int], RunSummary],
    runs: int = 10,
    seed: int = 0,
    jobs: int = 1,
    progress: Callable[[RunSummary], None] | None = None,
    study: Study | None = None,
    halt: Halt | None = None,
) -> Study:
    """Run ``runner`` (a picklable function of the seed: a :class:`TaskReplay`, or a
    job-level :class:`~planner.executor.runs.Dispatch`) with the seeds ``seed .. seed +
    runs - 1``.

    The runs are streamed: each keeps only its figures (:class:`Study`), and at most
    two runs per worker are in flight. The first Ctrl-C (on the main thread) stops the
    study after the runs in flight (within one run's time), and the study is returned
    with :attr:`Study.interrupted` set; a second Ctrl-C aborts.

    Parameters
    ----------
    runner
        One run's figures from its seed.
    runs
        Runs, 1 to :data:`~planner.disturbances.MAX_RUNS`.
    seed
        The first seed.
    jobs
        Worker processes; 1 runs in this process.
    progress
        Called with each run's summary as it ends.
    study
        Runs done before (e.g. the full run of the first seed): the new ones are
        added to it, and its capacity must hold them.
    halt
        The stop request Ctrl-C sets (a new one by default): a caller that shares it
        can tell a first Ctrl-C from a second.

    Raises
    ------
    InputError
        For a bad count or seed.
    """
    from planner.interrupt import Halt, run_interruptibly

    if not 1 <= runs <= MAX_RUNS:
        raise InputError(f"runs must be from 1 to {MAX_RUNS:,}, got {runs}")
    if not 0 <= seed <= MAX_SEED - runs + 1:
        raise InputError(f"the seeds {seed} .. {seed + runs - 1} are not all in 0 .. {MAX_SEED}")
    out = study if study is not None else Study(runs)
    if out.size + runs > len(out.data):
        raise InputError(f"the study holds {len(out.data) - out.size} more runs, not {runs}")
    halt = halt if halt is not None else Halt()

    def note(run: RunSummary) -> None:
        out.add(run)
        if progress:
            progress(run)

    def work() -> None:
        seeds = range(seed, seed + runs)
        if jobs <= 1 or runs <= 1:
            for s in seeds:
                if halt.is_set():
                    return
                note(runner(s))
            return
        with ProcessPoolExecutor(
            min(jobs, runs), initializer=_init_worker, initargs=(runner,)
        ) as pool:
            todo = iter(seeds)
            flying = {pool.submit(_worker_run, s) for s in islice(todo, 2 * jobs)}
            while flying:
                done, flying = wait(flying, return_when=FIRST_COMPLETED)
                for fut in done:
                    note(fut.result())
                if not halt.is_set():
                    flying |= {pool.submit(_worker_run, s) for s in islice(todo, len(done))}

    _, out.interrupted = run_interruptibly(work, halt.set, "monte-carlo")
    out.interrupted = out.interrupted or halt.is_set()
    return out


def distribution(values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Mean, 5th, 50th and 95th percentile and maximum of ``values`` (not empty)."""
    a = np.asarray(values, dtype=float)
    p5, p50, p95 = np.percentile(a, [5, 50, 95])
    return {
        "mean": float(a.mean()),
        "p5": float(p5),
        "p50": float(p50),
        "p95": float(p95),
        "max": float(a.max()),
    }


_WORKER: Callable[[int], RunSummary] | None = None


def _init_worker(runner: Callable[[int], RunSummary]) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent stops the study, the workers
    # finish the run they have.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = runner


def _worker_run(seed: int) -> RunSummary:
    assert _WORKER is not None
    return _WORKER(seed)

"""Solver comparison: every solver on every instance and seed, one table, a summary and a plot.

Each run goes through :func:`solvers.solve` and its schedule through the
independent validator. Rows are appended to a CSV file as runs finish, so an
interrupted study loses nothing: run it again with ``resume=True`` and the
runs already in the file are skipped. A run that Ctrl-C stops is not a
finished run: it is not written, and the study stops with it. An existing
results file is never replaced unless asked (``force=True``). Runs execute in
this process, in local worker processes, or on a Dask distributed cluster (an
existing scheduler or a local cluster started for the study).

Times are in seconds wherever the instance's tick has a length (and in every job-level
run, which counts seconds), in ticks otherwise (PSPLIB): the ``unit`` column says which,
row by row. Columns of the table (:data:`COLUMNS`): ``gap_bound`` is
``(objective - lower_bound) / objective`` (as ``planner solve`` prints it),
``gap_reference`` is ``(objective - reference) / reference``, the relative
deviation from the best known value used in the PSPLIB literature, and
``energy_kwh`` the plan's estimated energy (:func:`planner.metrics.schedule_metrics`;
empty for a problem without power figures, or ticks without a length).

A study may also judge every plan by what it delivers: with a simulation spec
(:func:`planner.disturbances.parse_simulation`, e.g.
``noise=lognormal:0.1,slowdown=muri,runs=20``) each valid schedule is replayed
``runs`` times with the same seeds (:func:`planner.replay.simulate.rank_by_realized`),
and the table gets the columns :data:`REALIZED`: the spec and the mean and 95th
percentile of the realized makespan and the mean realized JCT; for training jobs, run
in the job-level executor, also the p99 JCT, the worst finish-time fairness, Jain's
index and the longest wait (:mod:`planner.executor.fairness`), and every job's JCT and
finish-time fairness in the run of the first seed go to a side table
(:mod:`planner.app.compare_jct`).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import active_children, get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from planner.app.base import progress_bar
from planner.app.compare_run import (
    COLUMNS,
    JOBS_KEY,
    LEGACY,
    REALIZED,
    REALIZED_BEFORE,
    Run,
    columns,
    policy_names,
    run_one,
)
from planner.disturbances import Simulation, parse_simulation
from planner.errors import InputError, OutputError
from planner.files import write_text
from planner.io.instance import load_instance

if TYPE_CHECKING:
    from planner.model import Problem

log = logging.getLogger(__name__)


def plan_runs(
    instances: list[Path],
    solvers: list[str],
    seeds: int,
    simulation: str | None = None,
    pareto: int = 0,
) -> list[Run]:
    """Every (instance, solver, seed) run, instance by instance.

    Instances are named by file stem; each file is loaded once here so that bad
    input stops the study before it starts. With ``pareto`` points, every instance
    is run at that many ``makespan_watts`` under ``objective: energy``
    (:func:`pareto_watts`), named ``STEM@WATTSW``.

    Raises
    ------
    InputError
        If a file cannot be loaded, two files share a stem, a solver is unknown,
        or the ``simulation`` spec is bad for an instance (read with its time unit) or
        names a node failure an instance does not have.
    """
    from planner.solvers import SOLVERS

    policies = policy_names()
    for s in solvers:
        if s in policies and simulation is None:
            raise InputError(
                f"{s!r} is a policy: it runs job by job in the executor; add --simulate "
                "(e.g. --simulate runs=1)"
            )
        if s not in SOLVERS and s not in policies:
            raise InputError(
                f"unknown solver {s!r}; choose from {', '.join(SOLVERS)} (or, under "
                f"--simulate, a policy: {', '.join(policies)})"
            )
    if seeds < 1:
        raise InputError(f"seeds must be at least 1, got {seeds}")
    if pareto and simulation is not None:
        raise InputError("--pareto plans for energy; run it without --simulate")
    names: dict[str, Path] = {}
    sweeps: dict[str, list[float | None]] = {}
    for path in instances:
        problem = load_instance(path, check=True)
        sweeps[path.stem] = pareto_watts(problem, pareto, str(path)) if pareto else [None]
        if simulation is not None:
            _check_failures(problem, parse_simulation(simulation, problem.time_unit), str(path))
        if path.stem in names:
            raise InputError(f"two instance files named {path.stem!r}", str(path))
        names[path.stem] = path
    return [
        Run(name if w is None else f"{name}@{w:g}W", str(path), solver, seed, w)
        for name, path in names.items()
        for w in sweeps[name]
        for solver in dict.fromkeys(solvers)
        for seed in range(seeds)
    ]


def pareto_watts(problem: Problem, points: int, where: str = "") -> list[float]:
    """The ``makespan_watts`` of ``points`` points of a makespan-energy front: 0 (the least
    energy), then from an eighth of the problem's full draw (every unit of every resource
    with a power figure busy) to eight times it, evenly on a log scale, to 3 digits.

    Raises
    ------
    InputError
        If a tick of the problem has no length or no resource has a power figure.
    """
    from planner.metrics import full_watts

    if problem.time_unit == "1":
        raise InputError("--pareto: the instance needs a time_unit (the length of a tick)", where)
    full = full_watts(problem)
    if full <= 0:
        raise InputError("--pareto: no resource of the instance has a power figure", where)
    steps = points - 1
    if steps == 1:
        return [0.0, float(f"{full:.3g}")]
    return [0.0] + [float(f"{full * 64 ** (k / (steps - 1)) / 8:.3g}") for k in range(steps)]


def _check_failures(problem: Problem, simulation: Simulation, name: str) -> None:
    """Refuse failures on nodes that ``problem`` does not have (pooled plans have none)."""
    nodes = [n.name for n in problem.nodes]
    nodes += [m.placement for t in problem.tasks for m in t.modes if m.placement]
    for failure in simulation.disturbances.failures:
        if not nodes:
            raise InputError(
                f"simulation: failure {failure}: the instance is pooled (no nodes); "
                "failures need a placed instance",
                name,
            )
        if failure.node not in nodes:
            raise InputError(f"simulation: failure {failure}: no node {failure.node!r}", name)


def _same_spec(a: str, b: str) -> bool:
    """Whether two simulation specs say the same (read, or as written if they hold times
    with units, which only an instance's time unit resolves)."""
    try:
        return parse_simulation(a) == parse_simulation(b)
    except InputError:
        return a.replace(" ", "") == b.replace(" ", "")


def read_results(path: Path) -> list[dict[str, str]]:
    """Rows of a results file, without a last line cut short by an interruption.

    Raises
    ------
    InputError
        If the file is not a results table (other header).
    """
    return _read(path)[1]


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a results file (see :func:`read_results`)."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        return [], []
    legacy = [c for old in LEGACY for c in (old, old + REALIZED, old + REALIZED_BEFORE)]
    if header not in (columns(False), columns(True), COLUMNS + REALIZED_BEFORE, *legacy):
        raise InputError(
            f"not a results table of a comparison (columns {', '.join(COLUMNS)})", str(path)
        )
    rows = []
    for fields in reader:
        if len(fields) == len(header) and fields[2].isdigit():
            rows.append(dict(zip(header, fields, strict=True)))
    return header, rows


def _refuse_to_replace(output: Path) -> None:
    try:
        runs = len(read_results(output))
    except InputError:
        raise InputError(
            "is not a results table; choose another file, or pass --force to replace it",
            str(output),
        ) from None
    raise InputError(
        f"holds {runs} runs of an earlier study; pass --resume to keep them and add "
        "the missing runs, or --force to start afresh",
        str(output),
    )


def _check_resumed(
    output: Path, header: list[str], rows: list[dict[str, str]], sim: str | None
) -> None:
    """Refuse to resume a study with another simulation than the one its rows were run with."""
    if not rows:
        return
    simulated = "simulation" in header
    if sim is None and simulated:
        raise InputError(
            f"holds runs simulated with {rows[0]['simulation']!r}; resume with --simulate "
            f"{rows[0]['simulation']!r}, or pass --force to start afresh",
            str(output),
        )
    if sim is None:
        return
    if not simulated:
        raise InputError(
            "holds runs of a study without --simulate; resume it without --simulate, "
            "or pass --force to start afresh",
            str(output),
        )
    for row in rows:
        same = _same_spec(row["simulation"], sim)
        if not same:
            raise InputError(
                f"holds runs simulated with {row['simulation']!r}, not {sim!r}; resume with "
                f"--simulate {row['simulation']!r}, or pass --force to start afresh",
                str(output),
            )


def _check_in_ticks(output: Path, rows: list[dict[str, str]], runs: list[Run]) -> None:
    """Rows written before the unit column are in ticks: resume them only where the ticks
    have no length (PSPLIB), whose new rows are in ticks too; mark them so.

    Raises
    ------
    InputError
        If a row's instance has ticks of a length, whose new rows are in seconds.
    """
    paths = {run.instance: run.path for run in runs}
    units: dict[str, str] = {}
    for row in rows:
        path = paths.get(row["instance"])
        if path is not None and path not in units:
            units[path] = load_instance(path).time_unit
        unit = units.get(path, "1") if path is not None else "1"
        if unit != "1":
            raise InputError(
                f"holds runs of {row['instance']} in ticks of {unit}, written before results "
                "tables had a unit column (times are now in seconds); pass --force to start "
                "afresh",
                str(output),
            )
        row["unit"] = "ticks"


def _rewrite(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buffer.getvalue())


def _with_reference(row: dict[str, Any], reference: dict[str, float]) -> dict[str, Any]:
    ref = reference.get(row["instance"].lower())
    row["reference"] = ref
    obj = row["objective"]
    if ref is not None and obj is not None and ref > 0:
        row["gap_reference"] = (obj - ref) / ref
    return row


def execute(
    runs: list[Run],
    *,
    time_limit: float | None = None,
    workers: int | None = None,
    jobs: int = 1,
    dask: str | None = None,
    simulation: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Run ``runs`` and yield each row as soon as its run finishes.

    Parameters
    ----------
    runs
        The runs.
    time_limit, workers
        Passed to every solver.
    jobs
        Local worker processes; 1 runs in this process.
    dask
        ``tcp://HOST:PORT`` of a running Dask scheduler, or ``local:N`` to
        start a local Dask cluster of N worker processes. Overrides ``jobs``.
    simulation
        A simulation spec: every valid schedule is also replayed (:func:`run_one`).

    A Dask scheduler is reached when this is called, before the first run: a
    scheduler out of reach is an :class:`InputError` at once.
    """
    args = (time_limit, workers, simulation)
    if dask is not None:
        return _on_dask(runs, dask, args)
    if jobs <= 1:
        return (run_one(run, *args) for run in runs)
    return _on_processes(runs, jobs, args)


def _on_processes(runs: list[Run], jobs: int, args: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    before = set(active_children())
    # Fresh interpreters: forking a process that runs threads (the progress bar's, a
    # solver's) can leave a lock held in the child forever.
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"))
    try:
        pending = {pool.submit(run_one, r, *args) for r in runs}
        while pending:
            # Waking up now and then lets Ctrl-C through: a signal that lands on
            # another thread would not interrupt an endless wait.
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    except BaseException:
        # Interrupted (or the consumer failed): stop the runs in progress now. The
        # pool's manager thread reaps the stopped workers; waiting for it (rather than
        # joining them here as well, which races it for their exit status) leaves no
        # worker behind.
        for child in set(active_children()) - before:
            child.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def parse_dask(spec: str) -> int | None:
    """Workers of a ``local:N`` Dask spec, or ``None`` for a ``tcp://HOST:PORT`` address.

    Raises
    ------
    InputError
        If ``spec`` is neither.
    """
    if spec.startswith("local:"):
        count = spec.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise InputError(f"--dask local:N needs a number of workers N >= 1, got {spec!r}")
        return int(count)
    if not spec.startswith("tcp://") or ":" not in spec.removeprefix("tcp://"):
        raise InputError(f"--dask takes tcp://HOST:PORT or local:N, got {spec!r}")
    return None


def _on_dask(runs: list[Run], address: str, args: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    """Connect to the Dask scheduler (or start a local cluster) now, and return the rows
    of ``runs`` as they finish there."""
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as completed
    except ImportError as exc:
        raise InputError(
            "--dask needs the 'distributed' package (pip install distributed)"
        ) from exc
    # Dask logs every connection at INFO level: show that only when this module does.
    logging.getLogger("distributed").setLevel(max(logging.WARNING, log.getEffectiveLevel()))
    cluster = None
    count = parse_dask(address)
    if count is not None:
        cluster = LocalCluster(
            n_workers=count,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
        address = cluster.scheduler_address
    try:
        client = Client(address, timeout=20)
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise InputError(f"cannot reach the Dask scheduler at {address} ({exc})") from None

    def rows() -> Iterator[dict[str, Any]]:
        try:
            futures = [client.submit(run_one, r, *args, pure=False) for r in runs]
            for future in completed(futures):
                yield future.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    return rows()


def run_study(
    instances: list[Path],
    solvers: list[str],
    output: Path,
    *,
    seeds: int = 1,
    time_limit: float | None = None,
    workers: int | None = None,
    reference: dict[str, float] | None = None,
    resume: bool = False,
    force: bool = False,
    jobs: int = 1,
    dask: str | None = None,
    simulation: str | None = None,
    pareto: int = 0,
    progress: bool = True,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Run every solver on every instance and seed; append each row to ``output``.

    Parameters
    ----------
    instances
        Instance files; each is named by its file stem.
    solvers
        Registered solver names.
    output
        The results CSV. If it holds rows already, ``resume`` or ``force`` says
        what to do with them.
    seeds
        Seeds ``0 .. seeds - 1`` per instance and solver.
    time_limit, workers
        Passed to every solver.
    reference
        Reference values by lower-case instance name (:func:`planner.io.reference.load_reference`).
    resume
        Keep the rows already in ``output`` and skip their runs.
    force
        Start ``output`` afresh, discarding what it holds.
    jobs, dask
        Where runs execute (:func:`execute`).
    simulation
        A simulation spec (:func:`planner.disturbances.parse_simulation`): every
        valid schedule is replayed and its realized figures fill the
        :data:`REALIZED` columns. A resumed study must use the spec of its rows.
    pareto
        Points of a makespan-energy front per instance (:func:`plan_runs`); 0: none.
    progress
        Show a progress bar with the time left on stderr.
    on_row
        Called with each new row once it is written.

    Returns
    -------
    pandas.DataFrame
        The rows of this study's runs (old and new), in plan order.

    Raises
    ------
    InputError
        If ``output`` is not empty and neither ``resume`` nor ``force`` is
        given (or both are), if a resumed table was run with another simulation,
        or on bad input (:func:`plan_runs`,
        :func:`planner.disturbances.parse_simulation`).
    KeyboardInterrupt
        On Ctrl-C; the rows of the runs finished before it are in ``output``,
        the run it interrupted is not.
    """
    from planner.app.compare_jct import append_jobs, jobs_path

    if resume and force:
        raise InputError(
            "--resume keeps the runs of the results table and --force discards them: pass one"
        )
    if not (resume or force) and output.is_file() and output.stat().st_size > 0:
        _refuse_to_replace(output)
    fresh = not output.is_file() or output.stat().st_size == 0
    runs = plan_runs(instances, solvers, seeds, simulation, pareto)
    if dask is not None:
        parse_dask(dask)
    reference = reference or {}
    fields = columns(simulation is not None)
    kept: list[dict[str, str]] = []
    if resume and output.is_file():
        header, kept = _read(output)
        _check_resumed(output, header, kept, simulation)
        if "unit" not in header:
            _check_in_ticks(output, kept, runs)
    _rewrite(output, kept, fields)
    done = {(r["instance"], r["solver"], int(r["seed"])) for r in kept}
    todo = [r for r in runs if r.key not in done]
    log.info(
        "%d runs planned, %d already done, %d to do", len(runs), len(runs) - len(todo), len(todo)
    )
    side = jobs_path(output)
    if not resume and side.is_file():
        side.unlink()
    written = 0
    try:
        where = {"jobs": jobs, "dask": dask, "simulation": simulation}
        rows = execute(todo, time_limit=time_limit, workers=workers, **where)
        bar = progress_bar(total=len(todo), unit="run", disable=not progress or not todo)
        with output.open("a", newline="") as f, bar:
            writer = csv.DictWriter(f, fieldnames=fields)
            for row in rows:
                row = _with_reference(row, reference)
                per_job = row.pop(JOBS_KEY, None)
                if per_job:
                    append_jobs(side, row, per_job)
                writer.writerow(row)
                f.flush()
                bar.set_postfix_str(
                    f"{row['instance']} {row['solver']} {row['status']}", refresh=False
                )
                bar.update()
                if on_row is not None:
                    on_row(row)
                written += 1
    except BaseException as exc:
        if fresh and not written and not kept:  # nothing ran: leave no header-only table
            output.unlink(missing_ok=True)
        if isinstance(exc, OSError):  # the finished rows stay: --resume goes on from them
            raise OutputError(f"cannot write: {exc.strerror or exc}", str(output)) from None
        raise
    table = load_table(output)
    order = {r.key: i for i, r in enumerate(runs)}
    keys = list(zip(table["instance"], table["solver"], table["seed"], strict=True))
    table = table[[k in order for k in keys]].copy()
    table["_order"] = [order[k] for k in keys if k in order]
    return table.sort_values("_order").drop(columns="_order").reset_index(drop=True)


def load_table(path: Path) -> pd.DataFrame:
    """The results file as a typed table (numbers as floats, ``valid`` as booleans or NA)."""
    header, rows = _read(path)
    table = pd.DataFrame(rows, columns=header or COLUMNS)
    for c in ("energy_kwh", "makespan"):
        if c not in table:
            table.insert(COLUMNS.index(c), c, "")
    if "unit" not in table:  # written before the unit column: in ticks
        table.insert(COLUMNS.index("unit"), "unit", "ticks")
    table["seed"] = table["seed"].astype(int)
    text = ("instance", "solver", "seed", "status", "valid", "error", "unit")
    numbers = [c for c in COLUMNS if c not in text]
    if "simulation" in table:
        for c in REALIZED[4:]:
            if c not in table:
                table[c] = ""
    for c in numbers + [c for c in REALIZED[1:] if c in table]:
        table[c] = pd.to_numeric(table[c], errors="coerce")
    table["valid"] = table["valid"].map({"True": True, "False": False}).astype("boolean")
    table["instance"] = table["instance"].astype(str)
    table["error"] = table["error"].fillna("")
    return table

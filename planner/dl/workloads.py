"""Deep-learning workloads: Muri traces and seeded synthetic batches, as cluster-form data.

Both return the plain data of a cluster-form instance (see
:mod:`planner.dl.cluster`), ready to be written as JSON or YAML and loaded back.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from planner.dl.catalog import (
    models,
    restart_models,
    restart_seconds,
    scaling_plans,
    stage_profiles,
)
from planner.errors import InputError
from planner.files import check_input_file
from planner.model import MAX_INT

MURI_COLUMNS = (
    "num_gpu",
    "iterations",
    "model_name",
    "batch_size",
    "resource_time_0",
    "resource_time_1",
    "resource_time_2",
)
"""Columns a Muri trace must have (times in ms; ``submit_time``, ``job_id``, ``duration``,
``iteration_time``, ``class`` and ``weight`` are optional). Muri's traces also carry a
``priority`` column (0 or 1) that its simulator does not schedule by: it is not read; a
job's class is the ``class`` column."""

PLACEMENTS = ("pooled", "node", "gpu")
"""Placements of the cluster form (:mod:`planner.dl.specs`) the workloads can ask for."""

GPU_MIX = {1: 134, 2: 22, 4: 34, 8: 691, 16: 3, 32: 108}
"""GPU counts of the jobs of Muri's published offline trace (992 jobs): the generator's mix."""

LOG_DURATION = (8.15, 2.87)
"""Mean and standard deviation of ln(job duration in seconds) in the same trace."""

MAX_JOBS = 100_000
"""The most jobs :func:`generate` writes (17x the largest published trace, 5,755 jobs)."""
MAX_NODES = 10_000
MAX_GPUS = 64
"""The most GPUs per node."""
MAX_BLOCKS = 1_000
"""The most training blocks per job."""
MAX_SEED = 2**32 - 1
MIN_RATE, MAX_RATE = 0.01, 1e6
"""The range of :func:`generate`'s arrival rate, in jobs per hour."""


def _check_range(what: str, value: float, least: float, most: float) -> None:
    if not least <= value <= most:
        raise InputError(f"{what} must be from {least:,g} to {most:,g}, got {value:g}")


def _check_cluster(nodes: int, gpus_per_node: int, blocks: int) -> None:
    _check_range("the number of nodes", nodes, 1, MAX_NODES)
    _check_range("the GPUs per node", gpus_per_node, 1, MAX_GPUS)
    _check_range("the blocks per job", blocks, 1, MAX_BLOCKS)


def muri_cluster(nodes: int, gpus_per_node: int) -> dict[str, Any]:
    """A cluster in Muri's model: each GPU brings one data-loading slot and one network slot."""
    node = {"name": "node", "count": nodes, "gpu": gpus_per_node}
    node.update(io=gpus_per_node, net=gpus_per_node)
    return {"nodes": [node]}


def import_muri(
    path: str | Path,
    nodes: int = 8,
    gpus_per_node: int = 8,
    time_unit: str = "1min",
    blocks: int = 1,
    placement: str = "pooled",
    migrate: bool = False,
    restart: float | None = None,
    elastic: bool = False,
) -> dict[str, Any]:
    """Read a Muri trace CSV into cluster-form data.

    Every row becomes a training job with the trace's measured stage times and
    GPU count; ``submit_time`` (ms) becomes the release. One-minute ticks keep
    the horizon of a trace of months small; stage times round up to them.
    ``placement`` (one of :data:`PLACEMENTS`) is the instance's placement;
    ``migrate`` lets every job's blocks change nodes (the restart cost of its
    model from the catalog). A job whose model the catalog has no restart cost of gets
    ``restart`` seconds (refused without it). With ``elastic`` every job lists the
    data-parallel plans of its model's catalog profile on up to the cluster's GPUs
    (:func:`~planner.dl.catalog.scaling_plans`): a policy such as ``goodput`` chooses its
    GPU count.

    Raises
    ------
    InputError
        If the file is missing or not CSV, lacks a column, has a row of another
        width than its header, or holds a value out of range (naming line and column),
        or a count is out of its range (:data:`MAX_NODES`, :data:`MAX_GPUS`,
        :data:`MAX_BLOCKS`), or a model the catalog has no restart cost of without
        ``restart``; with ``elastic``, a model the catalog has no stage profile of.
    """
    _check_placement(placement)
    _check_cluster(nodes, gpus_per_node, blocks)
    rows = read_muri_trace(path)
    unknown = sorted({r.model for r in rows if restart_seconds(r.model, r.gpus) is None})
    if unknown and restart is None:
        raise InputError(
            f"model(s) {', '.join(unknown)}: the catalog has no restart cost of them (it knows "
            f"{', '.join(sorted(restart_models()))}); give one with --restart SECONDS",
            str(path),
        )
    jobs = []
    for row in rows:
        data, gpu, sync = row.stages
        job: dict[str, Any] = {
            "name": row.name,
            "model": row.model,
            "batch_size": row.batch_size,
            "gpus": row.gpus,
            "iterations": row.iterations,
            "blocks": min(blocks, row.iterations),
            "stages": {"data": data, "gpu": gpu, "sync": sync},
        }
        if row.iteration_time:
            job["iteration_time"] = row.iteration_time
        if elastic:
            job["parallel_plans"] = scaling_plans(
                row.model, row.gpus, row.batch_size, row.stages,
                row.iteration_time or sum(row.stages), nodes * gpus_per_node,
            )  # fmt: skip
        if row.model in unknown:
            job["restart"] = restart
        if migrate:
            job["migrate"] = True
        if row.release:
            job["release"] = row.release
        if row.priority:
            job["priority"] = row.priority
        if row.weight != 1:
            job["weight"] = row.weight
        jobs.append(job)
    path = Path(path)
    return {
        "name": path.stem,
        "time_unit": time_unit,
        "placement": placement,
        "cluster": muri_cluster(nodes, gpus_per_node),
        "jobs": jobs,
    }


@dataclass(frozen=True)
class TraceRow:
    """One job of a Muri trace, its times in seconds (the trace's are in ms)."""

    name: str
    model: str
    batch_size: int
    gpus: int
    iterations: int
    stages: tuple[float, float, float]
    """Data loading, GPU compute and synchronisation per iteration."""
    iteration_time: float
    """Measured iteration alone (``iteration_time``); 0 when the trace has no such column."""
    duration: float
    """The trace's ``duration``; 0 when it has none."""
    release: float
    """``submit_time``; 0 when the trace has none."""
    priority: int = 0
    """Its class (column ``class``; higher classes are served first); 0 when the trace has
    none."""
    weight: float = 1.0
    """The weight of its completion time (``weight``); 1 when the trace has none."""


def read_muri_trace(path: str | Path) -> list[TraceRow]:
    """The jobs of a Muri trace CSV, every value checked.

    Raises
    ------
    InputError
        If the file is missing or not CSV, lacks a column of :data:`MURI_COLUMNS`, has a
        row of another width than its header, or holds a value out of range (naming line
        and column).
    """
    name = str(path)
    header, cells = csv_cells(path, MURI_COLUMNS)
    out = []
    for k, cell in enumerate(cells):
        place = cell.place

        def seconds(column: str, cell: Cells = cell) -> float:
            return cell.time(column) / 1000 if column in header else 0.0

        if sum(seconds(f"resource_time_{k}") for k in range(3)) <= 0:
            raise InputError(
                "resource_time_0, _1 and _2 are all 0: an iteration takes some time", name, place
            )

        out.append(
            TraceRow(
                name=f"job{cell.values.get('job_id', '').strip() or k}",
                model=cell.text("model_name"),
                batch_size=cell.whole("batch_size"),
                gpus=cell.whole("num_gpu"),
                iterations=cell.whole("iterations"),
                stages=(
                    seconds("resource_time_0"),
                    seconds("resource_time_1"),
                    seconds("resource_time_2"),
                ),
                iteration_time=seconds("iteration_time"),
                duration=seconds("duration"),
                release=seconds("submit_time"),
                priority=cell.level("class") if "class" in header else 0,
                weight=cell.positive("weight") if "weight" in header else 1.0,
            )
        )
    if not out:
        raise InputError("the trace has no jobs", name)
    return out


def csv_cells(path: str | Path, columns: Sequence[str]) -> tuple[list[str], list[Cells]]:
    """The header of the CSV file ``path`` and its rows, each read by column
    (:class:`Cells`), once the file is checked to have every one of ``columns`` and
    every row the header's width.

    Raises
    ------
    InputError
        For a missing file or a folder, a file that is not CSV, a missing column or a row
        of another width (naming its line).
    """
    path = Path(path)
    name = str(path)
    check_input_file(path)
    header, rows = _read_csv(path)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", name, "line 1")
    cells = []
    for line, row in rows:
        if len(row) != len(header):
            raise InputError(_width(header, row), name, f"line {line}")
        cells.append(Cells(dict(zip(header, row, strict=True)), name, f"line {line}"))
    return header, cells


def _check_placement(placement: str) -> None:
    if placement not in PLACEMENTS:
        raise InputError(f"placement {placement!r} is not one of {', '.join(PLACEMENTS)}")


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the non-blank rows of a CSV file, each row with its first line number."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc.__class__.__name__})", name) from None
    reader = csv.reader(io.StringIO(text))
    rows: list[tuple[int, list[str]]] = []
    line = 1
    try:
        for row in reader:
            if len(row) > 1 or (row and row[0].strip()):  # blank lines hold no row
                rows.append((line, row))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"not a CSV trace ({exc})", name, f"line {line}") from None
    if not rows:
        raise InputError("the file is empty", name)
    (_, header), *data = rows
    seen = {c for c in header if header.count(c) > 1}
    if seen:
        raise InputError(f"column(s) named twice: {', '.join(sorted(seen))}", name, "line 1")
    return header, data


def _width(header: list[str], row: list[str]) -> str:
    """Why a row of another width than the header is refused, naming the column."""
    if len(row) > len(header):
        extra = ", ".join(repr(v) for v in row[len(header) :])
        return (
            f"column {len(header) + 1}: {len(row) - len(header)} field(s) more than the "
            f"{len(header)} columns of the header ({extra})"
        )
    return (
        f"column {len(row) + 1}: only {len(row)} of the {len(header)} fields of the header "
        f"(no {header[len(row)]!r})"
    )


class Cells:
    """The fields of one trace row, read by column with errors that name the column."""

    def __init__(self, values: dict[str, str], file: str, place: str) -> None:
        self.values, self.file, self.place = values, file, place

    def fail(self, column: str, cause: str) -> NoReturn:
        raise InputError(f"column {column!r}: {cause}", self.file, self.place)

    def text(self, column: str) -> str:
        value = self.values[column].strip()
        if not value:
            self.fail(column, "empty")
        return value

    def number(self, column: str, empty: str, fits: Callable[[float], bool], what: str) -> float:
        """The cell as a number (``empty``: what an empty cell is; ``""``: none), refused
        unless it ``fits`` (``what`` says what was expected)."""
        value = self.values[column].strip()
        try:
            number = float(value or empty)
        except ValueError:
            number = math.nan
        if not fits(number):
            self.fail(column, f"expected {what}, got {value!r}")
        return number

    def whole(self, column: str) -> int:
        """A whole number from 1."""
        whole = self.number(column, "", lambda x: x.is_integer() and 1 <= x <= MAX_INT,
                            "a whole number from 1 to 2**40")  # fmt: skip
        return int(whole)

    def level(self, column: str) -> int:
        """A whole number from 0; an empty cell is 0."""
        level = self.number(column, "0", lambda x: x.is_integer() and 0 <= x <= MAX_INT,
                            "a whole number from 0 to 2**40")  # fmt: skip
        return int(level)

    def positive(self, column: str) -> float:
        """A finite number above 0; an empty cell is 1."""
        return self.number(column, "1", lambda x: math.isfinite(x) and x > 0,
                           "a finite number > 0")  # fmt: skip

    def time(self, column: str) -> float:
        """Milliseconds; an empty cell is 0."""
        return self.number(column, "0", lambda x: math.isfinite(x) and x >= 0,
                           "a finite time >= 0 (ms)")  # fmt: skip


def arrivals(rng: np.random.Generator, jobs: int, arrival_rate: float | None) -> np.ndarray:
    """Release times (seconds) of ``jobs`` jobs: a Poisson process of ``arrival_rate``
    jobs per hour drawn from ``rng``, or all 0 without a rate."""
    if not arrival_rate:
        return np.zeros(jobs)
    return np.cumsum(rng.exponential(3600 / arrival_rate, size=jobs))


def released(job: dict[str, Any], release: float) -> dict[str, Any]:
    """``job`` with its ``release`` (to the millisecond) where it is after 0."""
    if release:
        job["release"] = round(float(release), 3)
    return job


def generate_batch(
    jobs: int,
    seed: int = 0,
    nodes: int = 8,
    gpus_per_node: int = 8,
    time_unit: str = "1min",
    blocks: int = 1,
    arrival_rate: float | None = None,
    placement: str = "pooled",
) -> dict[str, Any]:
    """A seeded synthetic batch of catalog training jobs in cluster form.

    GPU counts follow the mix of Muri's published trace (capped at the
    cluster's GPUs), models are drawn uniformly from the catalog, durations
    from the trace's log-normal fit (10 s to 10^6 s). With ``arrival_rate``
    (jobs per hour) releases follow a Poisson process; otherwise all jobs are
    released at 0 (an offline batch). ``placement`` (one of :data:`PLACEMENTS`)
    is the instance's placement.

    Raises
    ------
    InputError
        If a count, the seed or the rate is out of its range (``1 <= jobs <=``
        :data:`MAX_JOBS`, ``0 <= seed <=`` :data:`MAX_SEED`, :data:`MIN_RATE` to
        :data:`MAX_RATE` jobs per hour) or ``placement`` is not one of :data:`PLACEMENTS`.
    """
    _check_range("the number of jobs", jobs, 1, MAX_JOBS)
    _check_range("the seed", seed, 0, MAX_SEED)
    if arrival_rate is not None:
        _check_range("the arrival rate (jobs per hour)", arrival_rate, MIN_RATE, MAX_RATE)
    _check_cluster(nodes, gpus_per_node, blocks)
    _check_placement(placement)
    rng = np.random.default_rng(seed)
    total = nodes * gpus_per_node
    counts = [g for g in GPU_MIX if g <= total] or [total]
    weights = np.array([GPU_MIX.get(g, 1) for g in counts], dtype=float)
    gpu_draw = rng.choice(counts, size=jobs, p=weights / weights.sum())
    names = models()
    model_draw = rng.integers(0, len(names), size=jobs)
    seconds = np.clip(np.exp(rng.normal(*LOG_DURATION, size=jobs)), 10, 1e6)
    releases = arrivals(rng, jobs, arrival_rate)
    profiles = stage_profiles()
    out = []
    for k in range(jobs):
        model, gpus = names[model_draw[k]], int(gpu_draw[k])
        batch = next(b for m, b, g in profiles if m == model and g == gpus)
        per_iter = profiles[(model, batch, gpus)].iteration
        iters = max(blocks, math.ceil(seconds[k] / per_iter))
        job: dict[str, Any] = {
            "name": f"job{k}",
            "model": model,
            "batch_size": batch,
            "gpus": gpus,
            "iterations": iters,
            "blocks": blocks,
        }
        out.append(released(job, releases[k]))
    return {
        "name": f"generated-{jobs}-seed{seed}",
        "time_unit": time_unit,
        "placement": placement,
        "cluster": muri_cluster(nodes, gpus_per_node),
        "jobs": out,
    }

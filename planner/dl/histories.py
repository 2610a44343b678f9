"""Public cluster histories as cluster-form instances: Helios (SenseTime, SC 2021:
``cluster_log.csv``) and Acme (Shanghai AI Lab, NSDI 2024: ``trace_seren.csv``,
``trace_kalos.csv``), read line by line, and Philly (Microsoft, ATC 2019:
``cluster_job_log``), read job by job (:func:`import_philly`).

One training job per job that ran on GPUs (``gpu_num`` > 0, a start time, a duration
over 0 s), on the rules of :mod:`planner.dl.slurm`: its work its ``duration`` as GPU
compute at one iteration a second, its release its ``submit_time`` in seconds after the
first job's (times with a time zone are read in UTC), its CPU cores per GPU ``cpu_num``
over ``gpu_num``, and for Kalos its memory per GPU (``mem_per_pod_GB`` over a node's
GPUs). The histories name no cluster: by default it is the fewest nodes of
``gpus_per_node`` GPUs that held the most GPUs the jobs ran on at once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from planner.dl.slurm import Skipped, read_time, table_rows
from planner.errors import InputError
from planner.files import check_input_file

COLUMNS = ("job_id", "gpu_num", "cpu_num", "node_num", "submit_time", "start_time", "duration")
"""The columns of a Helios or Acme history the import reads (Kalos' ``mem_per_pod_GB``
too, where it has it)."""

LIKE = "2020-04-01 00:00:04"
"""A time as the histories write it (for a message)."""

HISTORIES = {
    "helios": "Helios' cluster_log.csv",
    "acme": "Acme's trace_seren.csv or trace_kalos.csv",
}
"""The histories :func:`import_history` reads."""


def import_history(
    path: str | Path, kind: str, nodes: int | None = None, gpus_per_node: int = 8
) -> tuple[dict[str, Any], str]:
    """Cluster-form data of a Helios or Acme history (``kind``), and a line saying what
    was left out (see the module docstring).

    Raises
    ------
    InputError
        For a missing or unreadable file, a missing column, a value out of form (naming
        its line and column), no job that ran on GPUs, or a job larger than ``nodes``.
    """
    path = Path(path)
    check_input_file(path)
    skipped = Skipped()
    rows: list[tuple[dict[str, Any], datetime, tuple[float, float, int]]] = []
    if kind not in HISTORIES:
        raise InputError(f"unknown history {kind!r}; choose one of {', '.join(HISTORIES)}")
    for line, row in table_rows(path, COLUMNS, HISTORIES[kind]):
        where = f"line {line}"
        start = read_time(row["start_time"], path, where, "start_time", LIKE)
        if start is None:
            skipped.never_started += 1
            continue
        gpus = _whole(row, "gpu_num", path, where)
        if not gpus:
            skipped.no_gpus += 1
            continue
        seconds = _number(row, "duration", path, where)
        if seconds < 1:
            skipped.no_time += 1
            continue
        submit = read_time(row["submit_time"], path, where, "submit_time", LIKE) or start
        job: dict[str, Any] = {
            "name": row["job_id"].strip() or f"job{line}",
            "gpus": gpus,
            "iterations": max(1, round(seconds)),
            "stages": {"data": 0.0, "gpu": 1.0, "sync": 0.0},
            "cpu_per_gpu": _whole(row, "cpu_num", path, where) // gpus,
        }
        pods = max(_whole(row, "node_num", path, where), 1)
        if row.get("mem_per_pod_GB", "").strip():
            memory = _number(row, "mem_per_pod_GB", path, where)
            job["mem_per_gpu"] = int(memory * pods // gpus)
        stamp = start.timestamp()
        rows.append((job, submit, (stamp, stamp + seconds, gpus)))
    return _history_data(path, rows, skipped, nodes, gpus_per_node)


def _history_data(
    path: Path,
    rows: list[tuple[dict[str, Any], datetime, tuple[float, float, int]]],
    skipped: Skipped,
    nodes: int | None,
    gpus_per_node: int,
) -> tuple[dict[str, Any], str]:
    """Cluster-form data of a history's jobs (each with its submit time and its span:
    start, end, GPUs), released after the first submission, on ``nodes`` (by default
    the fewest that held the most GPUs in use at once)."""
    if gpus_per_node < 1:
        raise InputError(f"--gpus-per-node {gpus_per_node}: give 1 or more")
    if not rows:
        said = skipped.line()
        raise InputError(f"no job ran on GPUs ({said or 'the file has no jobs'})", str(path))
    first = min(submit for _, submit, _ in rows)
    jobs = []
    for job, submit, _ in rows:
        job["release"] = (submit - first).total_seconds()
        jobs.append(job)
    if nodes is None:
        nodes = max(1, math.ceil(_peak([span for *_, span in rows]) / gpus_per_node))
    largest = max(job["gpus"] for job in jobs)
    if largest > nodes * gpus_per_node:
        raise InputError(
            f"a job of {largest} GPUs; {nodes} nodes of {gpus_per_node} GPUs hold "
            f"{nodes * gpus_per_node}: give more --nodes"
        )
    data = {
        "name": path.stem,
        "time_unit": "1s",
        "cluster": {"nodes": [{"name": "node", "count": nodes, "gpu": gpus_per_node}]},
        "jobs": jobs,
    }
    return data, skipped.line()


def _peak(spans: list[tuple[float, float, int]]) -> int:
    """The most GPUs in use at once over the jobs' (start, end, GPUs)."""
    times = np.array([t for s, e, _ in spans for t in (s, e)])
    steps = np.array([g for _, _, g in spans for g in (g, -g)])
    order = np.lexsort((steps, times))  # at one time, ends before starts
    return int(np.cumsum(steps[order]).max())


def _number(row: dict[str, str], column: str, path: Path, where: str) -> float:
    """A number >= 0 of a cell."""
    try:
        value = float(row[column])
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        raise InputError(f"column {column!r}: {row[column]!r} is not a number >= 0", str(path),
                         where)  # fmt: skip
    return value


def _whole(row: dict[str, str], column: str, path: Path, where: str) -> int:
    """A whole number >= 0 of a cell (``8.0`` is 8, as pandas writes them)."""
    value = _number(row, column, path, where)
    if value != int(value):
        raise InputError(f"column {column!r}: {row[column]!r} is not a whole number", str(path),
                         where)  # fmt: skip
    return int(value)


def import_philly(
    path: str | Path, nodes: int | None = None, gpus_per_node: int = 8
) -> tuple[dict[str, Any], str]:
    """Cluster-form data of Philly's ``cluster_job_log`` (a JSON list of jobs: ``jobid``,
    ``submitted_time``, ``attempts`` with ``start_time``, ``end_time`` and ``detail``,
    the GPUs of each machine), read job by job, and a line saying what was left out. A
    job's work is the time of all its attempts (what the cluster spent on it), its GPUs
    those of its last attempt; the rest as :func:`import_history`.

    Raises
    ------
    InputError
        For a missing file, a file that is not a JSON list of jobs, a time out of form
        (naming the job), no job that ran on GPUs, or a job larger than ``nodes``.
    """
    path = Path(path)
    check_input_file(path)
    skipped = Skipped()
    rows: list[tuple[dict[str, Any], datetime, tuple[float, float, int]]] = []
    for k, item in enumerate(json_items(path)):
        where = f"job {k + 1}"
        if not isinstance(item, dict) or not isinstance(item.get("attempts", []), list):
            raise InputError("not a Philly job (an object with attempts)", str(path), where)
        seconds, gpus, start = 0.0, 0, None
        for attempt in item.get("attempts") or []:
            begin = read_time(str(attempt.get("start_time") or ""), path, where, "start_time", LIKE)
            end = read_time(str(attempt.get("end_time") or ""), path, where, "end_time", LIKE)
            if begin is None or end is None:
                continue
            start = begin if start is None else min(start, begin)
            seconds += max((end - begin).total_seconds(), 0.0)
            gpus = sum(len(m.get("gpus") or []) for m in attempt.get("detail") or [])
        if start is None:
            skipped.never_started += 1
            continue
        if not gpus:
            skipped.no_gpus += 1
            continue
        if seconds < 1:
            skipped.no_time += 1
            continue
        submit = read_time(
            str(item.get("submitted_time") or ""), path, where, "submitted_time", LIKE
        )
        job = {
            "name": str(item.get("jobid") or f"job{k + 1}"),
            "gpus": gpus,
            "iterations": max(1, round(seconds)),
            "stages": {"data": 0.0, "gpu": 1.0, "sync": 0.0},
        }
        stamp = start.timestamp()
        rows.append((job, submit or start, (stamp, stamp + seconds, gpus)))
    return _history_data(path, rows, skipped, nodes, gpus_per_node)


def json_items(path: Path, chunk: int = 1 << 20) -> Iterator[Any]:
    """The items of the JSON list in ``path``, decoded one by one as the file is read."""
    decoder = json.JSONDecoder()
    name = str(path)
    try:
        with path.open(encoding="utf-8") as f:
            buffer = f.read(chunk).lstrip()
            if not buffer.startswith("["):
                raise InputError("not a JSON list of jobs", name)
            buffer = buffer[1:]
            while True:
                buffer = buffer.lstrip().removeprefix(",").lstrip()
                if buffer.startswith("]"):
                    return
                try:
                    item, end = decoder.raw_decode(buffer)
                except json.JSONDecodeError:
                    more = f.read(chunk)
                    if not more:
                        raise InputError("not a JSON list of jobs (cut short)", name) from None
                    buffer += more
                    continue
                yield item
                buffer = buffer[end:]
                if len(buffer) < chunk:
                    buffer += f.read(chunk)
    except UnicodeDecodeError:
        raise InputError("not a text file (UTF-8)", name) from None

"""A Slurm cluster's own history: the output of ``sacct -P`` as a cluster-form instance.

``planner import slurm SACCT [--nodes SINFO]`` reads what ``sacct -a -P -X
--format=JobID,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,ExitCode,``
``AllocTRES,ReqTRES,NNodes,NodeList,Timelimit`` prints (``|``-separated, a header line
first; only ``JobID``, ``Submit``, ``Start``, ``Elapsed``, ``AllocTRES``, ``NNodes`` and
``NodeList`` are needed), line by line, so that a large history streams through. One
training job per job that ran on GPUs:

- its GPUs: ``gres/gpu=N`` of its allocation (a gang's total over its nodes), or one
  GPU for a job of GPU shards (``gres/shard=N``), which may share its GPU;
- its work: its elapsed time, as GPU compute at one iteration a second (Slurm knows no
  stage times: such a job interleaves with no one; give a job ``stages`` or a catalog
  ``model`` in the instance to model its data loading and synchronisation);
- its release: its submit time, in seconds after the first job's submission;
- its CPU cores and memory per GPU: its allocation's ``cpu`` and ``mem`` over its GPUs.

Job steps (``JOBID.batch``), jobs without GPUs and jobs that never started are left out
and counted. The cluster is the nodes of ``sinfo -N -o "%N %c %m %G"`` (name, CPUs,
memory in MB, GRES; nodes without GPUs left out), or without it the nodes the jobs ran
on, each with as many GPUs as the most a job held on one node.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.files import check_input_file

NEEDED = ("JobID", "Submit", "Start", "Elapsed", "AllocTRES", "NNodes", "NodeList")
"""The columns of ``sacct -P`` output the import reads."""

_NEVER = {"", "unknown", "none", "n/a", "nan", "nat", "null"}
"""How ``sacct`` writes a time that never came."""


@dataclass
class Skipped:
    """What the import left out, by reason."""

    steps: int = 0
    never_started: int = 0
    no_gpus: int = 0
    no_time: int = 0

    def line(self) -> str:
        """The count as one line (empty: nothing left out)."""
        parts = [
            (self.never_started, "never started"),
            (self.no_gpus, "without GPUs"),
            (self.no_time, "ran 0 s"),
            (self.steps, "job steps"),
        ]
        said = [f"{n:,} {what}" for n, what in parts if n]
        return f"left out: {', '.join(said)}" if said else ""


@dataclass
class SlurmHistory:
    """The jobs of a ``sacct`` file and what was left out."""

    jobs: list[dict[str, Any]] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    """The nodes the jobs ran on."""
    most: int = 0
    """The most GPUs a job held on one node."""
    skipped: Skipped = field(default_factory=Skipped)
    lines: int = 0
    """Lines read (the header included)."""


def expand_hostlist(text: str) -> list[str]:
    """Slurm's hostlist as node names: ``node[1-2,05],gpu7`` -> node1, node2, node05,
    gpu7 (ranges keep their zero padding).

    Raises
    ------
    InputError
        For a malformed range.
    """
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text.strip()):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if match is None:
            if part not in ("", "None assigned"):
                out.append(part)
            continue
        head, ranges, tail = match.groups()
        for item in ranges.split(","):
            lo, _, hi = item.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise InputError(f"malformed hostlist {text!r}")
            width = len(lo)
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{head}{k:0{width}d}{tail}")
    return out


def elapsed_seconds(text: str) -> float:
    """``[D-]HH:MM:SS``, ``MM:SS`` or ``MM:SS.mmm`` in seconds.

    Raises
    ------
    ValueError
        For another form.
    """
    days, _, rest = text.strip().rpartition("-")
    parts = [float(p) for p in rest.split(":")]
    if not 1 <= len(parts) <= 3 or any(p < 0 for p in parts):
        raise ValueError(text)
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds + (int(days) * 86400 if days else 0)


def tres(text: str) -> dict[str, str]:
    """A TRES list (``cpu=8,mem=64000M,gres/gpu=2``) as a dict."""
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key:
            out[key.strip()] = value.strip()
    return out


def memory_gb(text: str) -> float:
    """Slurm memory (``16000M``, ``62.50G``, ``1T``, ``512K``; no suffix: MB) in GB.

    Raises
    ------
    ValueError
        For another form.
    """
    scale = {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0}
    unit = text[-1:].upper()
    if unit in scale:
        return float(text[:-1]) * scale[unit]
    return float(text) / 1024


def read_sacct(path: str | Path) -> SlurmHistory:
    """The jobs of a ``sacct -P`` file (see the module docstring), read line by line.

    Raises
    ------
    InputError
        For a missing or unreadable file, a missing column, a line of another width, or a
        value out of form (naming its line and column).
    """
    path = Path(path)
    check_input_file(path)
    out = SlurmHistory()
    first: datetime | None = None
    rows: list[tuple[datetime, dict[str, Any]]] = []
    for line, cells in table_rows(path, NEEDED, "sacct -P --format=...", "|"):
        out.lines = line
        where = f"line {line}"
        job_id = cells["JobID"].strip()
        if "." in job_id:
            out.skipped.steps += 1
            continue
        start = read_time(cells["Start"], path, where, "Start")
        if start is None:
            out.skipped.never_started += 1
            continue
        alloc = tres(cells["AllocTRES"])
        gpus = _whole(alloc.get("gres/gpu", "0"), path, where, "AllocTRES")
        shards = _whole(alloc.get("gres/shard", "0"), path, where, "AllocTRES")
        if not gpus and not shards:
            out.skipped.no_gpus += 1
            continue
        try:
            seconds = elapsed_seconds(cells["Elapsed"])
        except ValueError:
            raise InputError(
                f"column 'Elapsed': {cells['Elapsed']!r} is not [D-]HH:MM:SS", str(path), where
            ) from None
        if seconds < 1:
            out.skipped.no_time += 1
            continue
        submit = read_time(cells["Submit"], path, where, "Submit") or start
        first = submit if first is None or submit < first else first
        count = gpus or 1
        nodes = expand_hostlist(cells["NodeList"])
        nnodes = max(_whole(cells["NNodes"] or "1", path, where, "NNodes"), 1)
        out.hosts.update(nodes)
        out.most = max(out.most, math.ceil(count / nnodes))
        name = cells.get("JobName", "").strip()
        job: dict[str, Any] = {
            "name": f"{name}-{job_id}" if name else f"job{job_id}",
            "gpus": count,
            "iterations": max(1, round(seconds)),
            "stages": {"data": 0.0, "gpu": 1.0, "sync": 0.0},
        }
        if "cpu" in alloc:
            job["cpu_per_gpu"] = _whole(alloc["cpu"], path, where, "AllocTRES") // count
        if "mem" in alloc:
            try:
                job["mem_per_gpu"] = int(memory_gb(alloc["mem"]) // count)
            except ValueError:
                raise InputError(
                    f"column 'AllocTRES': memory {alloc['mem']!r} is not like 16000M or 62.50G",
                    str(path),
                    where,
                ) from None
        rows.append((submit, job))
    for submit, job in rows:
        job["release"] = (submit - first).total_seconds() if first is not None else 0.0
    out.jobs = [job for _, job in rows]
    return out


def read_sinfo(path: str | Path) -> list[dict[str, Any]]:
    """The nodes with GPUs of ``sinfo -N -o "%N %c %m %G"`` output (a header line first),
    each once, as cluster-form nodes: name, GPUs (from its GRES ``gpu:N`` or
    ``gpu:TYPE:N``), CPUs and memory (GB).

    Raises
    ------
    InputError
        For a missing file, or a line without the four fields.
    """
    path = Path(path)
    check_input_file(path)
    nodes: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc.__class__.__name__})", str(path)) from None
    for number, text in enumerate(lines, 1):
        fields = text.split()
        if not fields or (number == 1 and fields[0].upper() == "NODELIST"):
            continue
        if len(fields) < 4 or not fields[1].isdigit():
            raise InputError(
                'expected NODELIST CPUS MEMORY GRES (sinfo -N -o "%N %c %m %G")',
                str(path),
                f"line {number}",
            )
        gpus = 0
        for item in fields[3].split(","):
            parts = re.sub(r"\(.*\)", "", item).split(":")
            if parts[0] == "gpu" and parts[-1].isdigit():
                gpus += int(parts[-1])
        memory = int(float(fields[2].rstrip("+")) / 1024) if fields[2][:1].isdigit() else None
        if not gpus:
            continue  # a node without GPUs runs no training job
        for name in expand_hostlist(fields[0]):
            node = {"name": name, "gpu": gpus, "cpu": int(fields[1])}
            if memory is not None:
                node["mem"] = memory
            nodes[name] = node
    if not nodes:
        raise InputError("no node with GPUs", str(path))
    return list(nodes.values())


def import_slurm(sacct: str | Path, sinfo: str | Path | None = None) -> tuple[dict[str, Any], str]:
    """Cluster-form data of a ``sacct`` file (and the cluster of a ``sinfo`` file), and a
    line saying what was left out (see the module docstring).

    Raises
    ------
    InputError
        As :func:`read_sacct` and :func:`read_sinfo`, or when no job ran on GPUs.
    """
    history = read_sacct(sacct)
    if not history.jobs:
        said = history.skipped.line()
        raise InputError(f"no job ran on GPUs ({said or 'the file has no jobs'})", str(sacct))
    if sinfo is not None:
        nodes = read_sinfo(sinfo)
    else:
        nodes = [{"name": h, "gpu": history.most} for h in sorted(history.hosts)]
    return {
        "name": Path(sacct).stem,
        "time_unit": "1s",
        "cluster": {"nodes": nodes},
        "jobs": history.jobs,
    }, history.skipped.line()


def table_rows(
    path: Path, columns: Sequence[str], form: str, delimiter: str = ","
) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a delimited history (a header line first) by column, with their line
    numbers, read as the file streams by; blank lines skipped.

    Raises
    ------
    InputError
        For a missing column (``form`` says what file it should be), a row of another
        width, or a file that is not UTF-8 text or not delimited.
    """
    name = str(path)
    quoting = csv.QUOTE_NONE if delimiter == "|" else csv.QUOTE_MINIMAL
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
            header = next(reader, [])
            missing = [c for c in columns if c not in header]
            if missing:
                raise InputError(f"missing column(s) {', '.join(missing)} ({form})", name, "line 1")
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                line = reader.line_num
                if len(row) != len(header):
                    raise InputError(
                        f"{len(row)} fields; the header has {len(header)}", name, f"line {line}"
                    )
                yield line, dict(zip(header, row, strict=True))
    except UnicodeDecodeError:
        raise InputError("not a text file (UTF-8)", name) from None
    except csv.Error as exc:
        raise InputError(f"not delimited text ({exc})", name) from None


def read_time(
    text: str, path: Path, where: str, column: str, like: str = "2026-12-01T10:00:00"
) -> datetime | None:
    """A history's time (ISO 8601, as ``sacct`` and the public histories write it), in
    UTC where it names a time zone; ``None`` where it never came (empty, ``Unknown``).

    Raises
    ------
    InputError
        For another form, naming ``where`` and ``column`` and giving a time ``like``.
    """
    if text.strip().lower() in _NEVER:
        return None
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"column {column!r}: {text!r} is not a time like {like}", str(path), where
        ) from None
    return stamp if stamp.tzinfo is None else stamp.astimezone(UTC).replace(tzinfo=None)


def _whole(text: str, path: Path, where: str, column: str) -> int:
    """A whole number >= 0 of a cell."""
    if not text.strip().isdigit():
        raise InputError(f"column {column!r}: {text!r} is not a whole number", str(path), where)
    return int(text)

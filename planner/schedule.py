"""Schedules: for every task its chosen mode and start; JSON and CSV files."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.files import check_input_file, write_text
from planner.model import MAX_INT

if TYPE_CHECKING:
    from planner.model import Problem


@dataclass
class Schedule:
    """A mode, a start tick and, for a task that runs on nodes, its nodes, per task name."""

    modes: dict[str, str]
    starts: dict[str, int]
    nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The nodes of every task whose mode runs on nodes (``Mode.nodes`` > 0)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form information carried into files (solver, instance name, ...)."""

    def finish(self, problem: Problem, task: str) -> int:
        """Finish tick of ``task``."""
        return self.starts[task] + problem.task(task).mode(self.modes[task]).duration

    def makespan(self, problem: Problem) -> int:
        """Latest finish over all tasks."""
        return max((self.finish(problem, t) for t in self.starts), default=0)

    def weighted_completion(self, problem: Problem) -> float:
        """Sum over jobs of weight times the latest finish of the job's tasks."""
        done: dict[str, int] = {}
        for t in problem.tasks:
            if t.job is not None and t.name in self.starts:
                done[t.job] = max(done.get(t.job, 0), self.finish(problem, t.name))
        return sum(problem.job_weight(j) * c for j, c in done.items())

    def objective(self, problem: Problem) -> float:
        """Value of the problem's objective."""
        if problem.objective == "weighted_completion":
            return self.weighted_completion(problem)
        if problem.objective in ("energy", "cost"):
            from planner.metrics import power_objective

            return power_objective(problem, self)
        return self.makespan(problem)

    def rows(self, problem: Problem) -> list[dict[str, Any]]:
        """One row per task, in the problem's task order; ``nodes`` where the problem has nodes."""
        out = []
        for t in problem.tasks:
            if t.name not in self.starts:
                continue
            start = self.starts[t.name]
            row: dict[str, Any] = {"task": t.name, "job": t.job or "", "mode": self.modes[t.name]}
            if problem.nodes:
                row["nodes"] = list(self.nodes.get(t.name, ()))
            row.update(start=start, finish=start + t.mode(self.modes[t.name]).duration)
            out.append(row)
        return out

    def to_dict(self, problem: Problem) -> dict[str, Any]:
        """The JSON form: makespan, objective and one entry per task with its segments."""
        tasks = []
        for row in self.rows(problem):
            t = problem.task(row["task"])
            segs, at = [], row["start"]
            for k, s in enumerate(t.mode(row["mode"]).segments):
                segs.append({"name": s.name or str(k + 1), "start": at, "finish": at + s.duration})
                at += s.duration
            tasks.append({**row, "job": t.job, "segments": segs})
        return {
            "instance": problem.name,
            **self.meta,
            "makespan": self.makespan(problem),
            "objective": self.objective(problem),
            "tasks": tasks,
        }

    def save(self, path: str | Path, problem: Problem) -> None:
        """Write the schedule as JSON (``.json``) or CSV (``.csv``)."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            buf = io.StringIO()
            rows = self.rows(problem)
            for row in rows:
                if "nodes" in row:
                    row["nodes"] = NODE_SEP.join(row["nodes"])
            fields = ["task", "job", "mode", *(["nodes"] if problem.nodes else []), "start"]
            writer = csv.DictWriter(buf, fieldnames=[*fields, "finish"])
            writer.writeheader()
            writer.writerows(rows)
            write_text(path, buf.getvalue())
        elif path.suffix.lower() == ".json":
            write_text(path, json.dumps(self.to_dict(problem), indent=1) + "\n")
        else:
            raise InputError(
                f"unknown schedule format {path.suffix!r} (use .json or .csv)", str(path)
            )


NODE_SEP = "+"
"""Separator of a task's nodes in a CSV schedule (``node1+node2``)."""


def load_schedule(path: str | Path, problem: Problem | None = None) -> Schedule:
    """Read a schedule written by :meth:`Schedule.save` (JSON or CSV).

    Parameters
    ----------
    path
        The schedule file.
    problem
        The problem the schedule is for. With it, every stated ``finish`` (and, in
        JSON, every segment's ``start`` and ``finish``) must agree with the entry's
        start and the duration of its mode; without it they are not read.

    Raises
    ------
    InputError
        If the file is missing, malformed, holds a start out of range, or (with
        ``problem``) states times that contradict the start.
    """
    path = Path(path)
    name = str(path)
    check_input_file(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc.__class__.__name__})", name) from exc
    if path.suffix.lower() == ".csv":
        return _from_rows(list(csv.DictReader(io.StringIO(text))), name, True, problem)
    if path.suffix.lower() != ".json":
        raise InputError(f"unknown schedule format {path.suffix!r} (use .json or .csv)", name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", name, f"line {exc.lineno}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise InputError("expected an object with a list 'tasks'", name)
    meta = {k: v for k, v in data.items() if k in ("instance", "solver")}
    sched = _from_rows(data["tasks"], name, False, problem)
    sched.meta.update(meta)
    return sched


def _from_rows(rows: list[Any], name: str, csv_lines: bool, problem: Problem | None) -> Schedule:
    modes: dict[str, str] = {}
    starts: dict[str, int] = {}
    nodes: dict[str, tuple[str, ...]] = {}
    for i, row in enumerate(rows):
        place = f"line {i + 2}" if csv_lines else f"tasks[{i}]"
        if not isinstance(row, dict) or not all(
            row.get(k) not in (None, "") for k in ("task", "mode", "start")
        ):
            raise InputError("each entry needs 'task', 'mode' and 'start'", name, place)
        task, start = str(row["task"]), _tick(row["start"], csv_lines)
        if start is None or start < 0:
            raise InputError(f"start must be an integer >= 0, got {row['start']!r}", name, place)
        if start > MAX_INT:
            raise InputError(f"start {start} is above the limit of 2**40 = {MAX_INT}", name, place)
        if task in starts:
            raise InputError(f"task {task!r} appears twice", name, place)
        modes[task] = str(row["mode"])
        starts[task] = start
        on = _nodes(row.get("nodes"), csv_lines, name, place)
        if on:
            nodes[task] = on
        if problem is not None:
            _check_times(row, start, problem, csv_lines, name, place)
    return Schedule(modes=modes, starts=starts, nodes=nodes)


def _tick(value: Any, csv_lines: bool) -> int | None:
    """A tick written in a schedule file (a CSV cell or a JSON number); None if it is none."""
    if csv_lines:
        try:
            return int(value)
        except (TypeError, ValueError):
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_times(
    row: dict[str, Any], start: int, problem: Problem, csv_lines: bool, name: str, place: str
) -> None:
    """Refuse stated finishes (task and segments) that contradict the start and the mode."""
    task = str(row["task"])
    try:
        mode = problem.task(task).mode(str(row["mode"]))
    except KeyError:
        return  # an unknown task or mode: the validator reports it
    what = f"task {task!r} (mode {mode.name!r}) starts at {start}"
    finish = row.get("finish")
    if finish not in (None, "") and _tick(finish, csv_lines) != start + mode.duration:
        raise InputError(
            f"finish {finish!r} contradicts the start: {what} and runs {mode.duration} ticks, "
            f"so it finishes at {start + mode.duration}",
            name,
            place,
        )
    segments = row.get("segments")
    if csv_lines or segments is None:
        return
    spans, at = [], start
    for seg in mode.segments:
        spans.append({"start": at, "finish": at + seg.duration})
        at += seg.duration
    stated = [
        {k: v for k, v in s.items() if k in ("start", "finish")} if isinstance(s, dict) else s
        for s in (segments if isinstance(segments, list) else [segments])
    ]
    if stated != spans:
        runs = ", ".join(f"{s['start']} to {s['finish']}" for s in spans)
        raise InputError(
            f"segments contradict the start: {what}, so its segments run {runs}",
            name,
            f"{place}.segments",
        )


def _nodes(value: Any, csv_lines: bool, name: str, place: str) -> tuple[str, ...]:
    """The nodes of one schedule entry: a list (JSON) or ``a+b`` (CSV); none if absent."""
    if value in (None, "", []):
        return ()
    if csv_lines and isinstance(value, str):
        return tuple(value.split(NODE_SEP))
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise InputError(f"nodes must be a list of node names, got {value!r}", name, place)

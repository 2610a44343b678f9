"""PSPLIB ``.sm`` / ``.mm`` and Patterson ``.rcp`` files, read with the ``psplib`` package.

Before parsing, a scan of the numeric sections points at the first bad line, so
that a damaged file gets a message with its line number rather than a parser's
stack trace.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import psplib

from planner.errors import InputError
from planner.model import Problem, validated

_SEPARATOR = re.compile(r"^\s*[*\-=]+\s*$")
_COLUMN_HEADER = re.compile(r"^\s*(jobnr\.|([RND]\s*\d+\s*)+$)")
_SECTIONS = ("PRECEDENCE RELATIONS", "REQUESTS/DURATIONS", "AVAILABILITIES")


def parse_psplib_text(text: str, name: str, patterson: bool = False) -> Problem:
    """Parse the text of a PSPLIB (or, with ``patterson``, a ``.rcp``) file into a Problem."""
    lines = text.splitlines()
    if patterson:
        _scan_numbers(lines, 0)
    else:
        for section in _SECTIONS:
            if not any(section in line for line in lines):
                raise InputError(f"not a PSPLIB file: missing section {section!r}")
        first = next(i for i, line in enumerate(lines) if _SECTIONS[0] in line)
        _scan_numbers(lines, first + 1)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "instance"
        copy.write_text(text)
        try:
            parsed = psplib.parse(copy, instance_format="patterson" if patterson else "psplib")
        except (ValueError, IndexError, StopIteration) as exc:
            kind = "Patterson" if patterson else "PSPLIB"
            why = str(exc) or "it ends too early"
            raise InputError(f"not a valid {kind} file: {why}") from None
    return _to_problem(parsed, name)


def _scan_numbers(lines: list[str], start: int) -> None:
    for no in range(start, len(lines)):
        line = lines[no]
        if not line.strip() or _SEPARATOR.match(line) or _COLUMN_HEADER.match(line):
            continue
        if any(section in line for section in _SECTIONS):
            continue
        for token in line.split():
            if not token.isdigit():
                what = "a negative number" if re.fullmatch(r"-\d+", token) else "not a whole number"
                raise InputError(f"{token!r} is {what}", place=f"line {no + 1}")


def _to_problem(parsed: psplib.ProjectInstance, name: str) -> Problem:
    counts = {True: 0, False: 0}
    names, resources = [], []
    for res in parsed.resources:
        counts[res.renewable] += 1
        names.append(f"{'R' if res.renewable else 'N'}{counts[res.renewable]}")
        kind = "renewable" if res.renewable else "nonrenewable"
        resources.append({"name": names[-1], "capacity": res.capacity, "kind": kind})
    tasks, precs = [], []
    for i, act in enumerate(parsed.activities):
        modes = []
        for k, mode in enumerate(act.modes):
            demand, consumes = {}, {}
            for res, rname, q in zip(parsed.resources, names, mode.demands, strict=True):
                if q:
                    (demand if res.renewable else consumes)[rname] = q
            segment = {"duration": mode.duration, "demand": demand}
            modes.append({"name": str(k + 1), "segments": [segment], "consumes": consumes})
        tasks.append({"name": str(i + 1), "modes": modes})
        delays = act.delays or [0] * len(act.successors)
        for succ, lag in zip(act.successors, delays, strict=True):
            precs.append({"before": str(i + 1), "after": str(succ + 1), "lag": lag})
    data = {"name": name, "resources": resources, "tasks": tasks, "precedences": precs}
    return validated(Problem, data)


def mpm_time(path: str | Path) -> int:
    """The ``MPM-Time`` (critical-path length) from a PSPLIB file header."""
    lines = Path(path).read_text().splitlines()
    for i, line in enumerate(lines):
        if "MPM-Time" in line:
            return int(lines[i + 1].split()[-1])
    raise InputError("no MPM-Time in the header", str(path))

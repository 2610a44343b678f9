"""Reference values (best known or optimal objectives) per instance name.

Two kinds of file are read:

- a CSV table with a column ``instance`` and a value column, the first of
  ``best_ub``, ``makespan``, ``optimum``, ``objective``, ``value``
  (as in the PSPLIB and MMLIB best-known-value tables);
- a PSPLIB solution list (``j30opt.sm``, ``j120hrs.sm``): rows of
  ``parameter instance makespan ...`` after a header; instance ``(p, i)`` of
  set ``j30`` is named ``j30{p}_{i}``. The set comes from the header's
  ``Instance Set`` line or else from the file name.

Names are matched without regard to case.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

from planner.errors import InputError
from planner.files import check_input_file

VALUE_COLUMNS = ("best_ub", "makespan", "optimum", "objective", "value")
_SET_LINE = re.compile(r"^\s*instance set\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
_SET_NAME = re.compile(r"^([a-z]+\d+)", re.IGNORECASE)
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\b")


def load_reference(path: str | Path) -> dict[str, float]:
    """Read reference values: instance name (lower case) -> value.

    Raises
    ------
    InputError
        If the file is missing, unreadable, or holds no reference value.
    """
    path = Path(path)
    name = str(path)
    check_input_file(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc.__class__.__name__})", name) from exc
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    values = _from_csv(text, name) if "," in first else _from_solution_list(text, path)
    if not values:
        raise InputError("no reference values found", name)
    return values


def _from_csv(text: str, name: str) -> dict[str, float]:
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if "instance" not in fields:
        raise InputError("a reference CSV needs a column 'instance'", name, "line 1")
    column = next((c for c in VALUE_COLUMNS if c in fields), None)
    if column is None:
        raise InputError(
            f"a reference CSV needs a value column, one of {', '.join(VALUE_COLUMNS)}",
            name,
            "line 1",
        )
    values: dict[str, float] = {}
    for i, raw in enumerate(reader):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
        if not row["instance"] or not row[column]:
            continue
        try:
            value = float(row[column])
        except ValueError:
            raise InputError(
                f"{column} must be a number, got {row[column]!r}", name, f"line {i + 2}"
            ) from None
        if not math.isfinite(value):
            raise InputError(f"{column} must be finite, got {row[column]!r}", name, f"line {i + 2}")
        values[row["instance"].lower()] = value
    return values


def _from_solution_list(text: str, path: Path) -> dict[str, float]:
    found = _SET_LINE.search(text)
    stem = _SET_NAME.match(found.group(1) if found else path.stem)
    if stem is None:
        raise InputError(
            "cannot tell the instance set (no 'Instance Set' line, and the file name does "
            "not start like 'j30')",
            str(path),
        )
    prefix = stem.group(1).lower()
    values: dict[str, float] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            values[f"{prefix}{m.group(1)}_{m.group(2)}"] = float(m.group(3))
    return values

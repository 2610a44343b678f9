"""Times as users give them: whole ticks (``600``) or a duration with a unit (``90s``, ``2h``).

Every option and spec that takes a time (``replan --at``, ``--event fail:NODE+DOWN``,
``run --fail NODE@TIME+DOWN``, ``--replan-every``) reads it here, so they all
accept the same forms: a bare whole number is ticks of the instance's
``time_unit``; a number with the unit ``ms``, ``s``, ``min``, ``h`` or ``d`` is a
duration, rounded up to whole ticks.
"""

from __future__ import annotations

import math
import re

from planner.errors import InputError

UNITS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
"""Seconds per unit of a duration."""

MAX_TICKS = 10**12
"""The largest time accepted, in ticks (about 31,700 years of 1 s ticks)."""

_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(ms|s|min|h|d)$")
_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h)\s*$")


def seconds_per_tick(time_unit: str) -> float:
    """Seconds in one tick of ``time_unit``, taking a bare tick (``'1'``, PSPLIB) as one
    second: what job-level runs, which count seconds, read a plan's ticks as.

    Raises
    ------
    ValueError
        As :func:`tick_seconds`.
    """
    return tick_seconds(time_unit) if time_unit != "1" else 1.0


def tick_seconds(time_unit: str) -> float:
    """Seconds in one tick of ``time_unit`` (``'100ms'``, ``'1s'``, ``'5min'``, ``'1h'``).

    Raises
    ------
    ValueError
        If ``time_unit`` is not one (a validator's error: it names the field).
    """
    m = _UNIT.match(time_unit)
    if not m or not 0 < float(m.group(1)) < math.inf:
        raise ValueError(
            f"time_unit: {time_unit!r} is not a time unit like '100ms', '1s', '1min' or '1h'"
        )
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_ticks(text: str, time_unit: str | None, what: str) -> int:
    """``text`` as whole ticks of ``time_unit``.

    Parameters
    ----------
    text
        Whole ticks (``600``) or a duration with a unit (``90s``, ``1.5h``).
    time_unit
        The instance's tick (``1min``); ``None`` or ``1`` (no unit): only whole
        ticks are accepted.
    what
        What the time is, for messages (``--at``, ``failure n3@2h``).

    Raises
    ------
    InputError
        If ``text`` is neither, or above :data:`MAX_TICKS`.
    """
    raw = text.strip()
    if raw.isdigit():
        ticks = int(raw)
    else:
        m = _DURATION.match(raw.replace(" ", ""))
        if m is None:
            raise InputError(
                f"{what}: {text!r} is not a time: give whole ticks (600) or a duration "
                "with a unit (90s, 30min, 2h, 1d)"
            )
        if time_unit is None or time_unit == "1":
            raise InputError(
                f"{what}: {text!r} has a unit but the instance's ticks have none: give whole ticks"
            )
        seconds = float(m[1]) * UNITS[m[2]]
        ticks = math.ceil(seconds / tick_seconds(time_unit) - 1e-9)
    if ticks > MAX_TICKS:
        raise InputError(f"{what}: {text!r} is more than {MAX_TICKS:,} ticks")
    return ticks


def tick_label(time_unit: str) -> str:
    """How a column in ticks names its unit: ``ticks of 1min``, or ``ticks``."""
    return "ticks" if time_unit == "1" else f"ticks of {time_unit}"

"""What goes wrong when a plan runs: duration noise, interference slowdown, node failures.

Each disturbance is a small frozen dataclass that checks itself when built and
can be parsed from the one-word specs of ``planner run``:

- ``Noise``: ``lognormal:SIGMA`` multiplies every segment's duration by
  ``exp(N(-SIGMA^2 / 2, SIGMA^2))``, a factor of mean 1 (the plan's durations
  are taken as expected durations; the median factor is ``exp(-SIGMA^2 / 2)``);
  ``uniform:A`` by a factor uniform in ``[1 - A, 1 + A]`` (``0 <= A < 1``).
- ``Slowdown``: the factor ``s(k)`` by which a task's work slows while it
  time-shares GPUs with ``k - 1`` others. ``muri`` is Muri's measured table
  (``s(2) = 1.33 / 1.015``, ``s(3) = 1.5 / 1.015``, ``s(k >= 4) = 1.37 / 1.015``);
  a CSV file gives other factors (``k,factor`` rows).
- ``Failure``: ``NODE@TIME[+DOWN]``, node ``NODE`` fails at tick ``TIME`` and is
  back ``DOWN`` ticks later (0 by default: the node restarts at once, but the
  blocks that ran on it are lost all the same).

:func:`parse_simulation` reads the one-string form of ``planner compare
--simulate`` (``noise=lognormal:0.1,slowdown=muri,runs=20``).

Every mistake is an :class:`~planner.errors.InputError` of one line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from planner.errors import InputError
from planner.times import parse_ticks

MAX_SIGMA = 2.0
"""The largest ``lognormal:SIGMA``: its median factor is already ``exp(-2) = 0.14``."""
MAX_RUNS = 1_000_000
"""The most Monte Carlo runs of one study (each keeps two numbers)."""
MAX_SEED = 2**32 - 1
"""The largest seed (numpy's seeds are 32-bit here)."""

MURI_FACTORS = (1.0, 1.33 / 1.015, 1.5 / 1.015, 1.37 / 1.015)
"""Muri's measured slowdown of a job interleaved with k - 1 others, k = 1, 2, 3, >= 4."""

_FAILURE = re.compile(r"^(?P<node>[^@\s]+)@(?P<time>[^+]*)(?:\+(?P<down>.*))?$")


@dataclass(frozen=True)
class Noise:
    """Random factors on every segment's duration.

    Parameters
    ----------
    kind
        ``lognormal`` (factor ``exp(N(-scale^2 / 2, scale^2))``, mean 1) or
        ``uniform`` (factor uniform in ``[1 - scale, 1 + scale]``).
    scale
        ``0 <= SIGMA <= 2`` (:data:`MAX_SIGMA`) of the log-normal, or ``0 <= A < 1``
        of the uniform.
    """

    kind: Literal["lognormal", "uniform"]
    scale: float

    def __post_init__(self) -> None:
        if self.kind not in ("lognormal", "uniform"):
            raise InputError(
                f"noise {self}: unknown kind {self.kind!r} (use lognormal:SIGMA or uniform:A)"
            )
        if not math.isfinite(self.scale) or self.scale < 0:
            raise InputError(f"noise {self}: the scale must be a finite number >= 0")
        if self.kind == "lognormal" and self.scale > MAX_SIGMA:
            raise InputError(
                f"noise {self}: lognormal:SIGMA needs 0 <= SIGMA <= {MAX_SIGMA:g} (a larger "
                "SIGMA shrinks most durations to nothing)"
            )
        if self.kind == "uniform" and self.scale >= 1:
            raise InputError(f"noise {self}: uniform:A needs A < 1 (factors stay positive)")

    def __str__(self) -> str:
        return f"{self.kind}:{self.scale:g}"

    @classmethod
    def parse(cls, spec: str) -> Noise:
        """Read ``lognormal:SIGMA`` or ``uniform:A``."""
        kind, sep, value = spec.strip().partition(":")
        if not sep or kind not in ("lognormal", "uniform"):
            raise InputError(f"noise {spec!r}: expected lognormal:SIGMA or uniform:A")
        try:
            scale = float(value)
        except ValueError:
            raise InputError(f"noise {spec!r}: {value!r} is not a number") from None
        return cls(kind, scale)  # type: ignore[arg-type]

    def factors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` factors drawn from ``rng``."""
        if self.kind == "lognormal":
            return rng.lognormal(-(self.scale**2) / 2, self.scale, n)
        return rng.uniform(1 - self.scale, 1 + self.scale, n)


@dataclass(frozen=True)
class Slowdown:
    """Slowdown ``s(k)`` of a task time-sharing GPUs with ``k - 1`` others.

    Parameters
    ----------
    factors
        ``s(1), s(2), ...``; ``s(1)`` is 1 (a task alone is not slowed) and a
        ``k`` past the end takes the last factor.
    source
        Where the factors come from (``muri`` or a file name), for reports.
    """

    factors: tuple[float, ...]
    source: str = "muri"

    def __post_init__(self) -> None:
        if not self.factors or self.factors[0] != 1.0:
            raise InputError(f"slowdown {self.source}: s(1) must be 1 (a task alone)")
        if any(not math.isfinite(f) or f < 1 for f in self.factors):
            raise InputError(f"slowdown {self.source}: factors must be numbers >= 1")

    def factor(self, k: int) -> float:
        """``s(k)``."""
        return self.factors[min(max(k, 1), len(self.factors)) - 1]

    @property
    def worst(self) -> float:
        """The largest factor."""
        return max(self.factors)

    @classmethod
    def parse(cls, spec: str) -> Slowdown | None:
        """Read ``muri``, ``none`` (no slowdown: ``None``) or the name of a CSV file."""
        if spec == "none":
            return None
        if spec == "muri":
            return cls(MURI_FACTORS)
        return cls.from_csv(spec)

    @classmethod
    def from_csv(cls, path: str | Path) -> Slowdown:
        """Read ``k,factor`` rows (an optional ``k,factor`` header; ``#`` starts a comment).

        A ``k`` that is not listed takes the factor of the largest listed ``k``
        below it; ``k = 1`` may be left out (it is 1).
        """
        name = str(path)
        path = Path(path)
        if not path.is_file():
            raise InputError("no such slowdown file (use muri, none or a k,factor CSV)", name)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the file ({exc.__class__.__name__})", name) from None
        given: dict[int, float] = {}
        for n, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line or (not given and line.replace(" ", "").lower() == "k,factor"):
                continue
            cells = [c.strip() for c in line.split(",")]
            try:
                k, factor = int(cells[0]), float(cells[1])
            except (ValueError, IndexError):
                raise InputError(f"expected 'k,factor', got {line!r}", name, f"line {n}") from None
            if len(cells) != 2 or k < 1 or k in given:
                raise InputError(
                    f"expected one row per k >= 1 as 'k,factor', got {line!r}", name, f"line {n}"
                )
            if not math.isfinite(factor) or factor < 1 or (k == 1 and factor != 1):
                raise InputError(
                    f"factor {cells[1]} of k={k} must be >= 1 (and 1 for k=1)", name, f"line {n}"
                )
            given[k] = factor
        if not given:
            raise InputError("no 'k,factor' rows", name)
        factors = [1.0]
        for k in range(2, max(given) + 1):
            factors.append(given.get(k, factors[-1]))
        return cls(tuple(factors), source=path.name)


@dataclass(frozen=True)
class Failure:
    """Node ``node`` fails at tick ``time`` and is back at ``time + down``.

    A node is always back: the replay keeps every task on its planned nodes, so
    the tasks of a node that never came back could not run (that is
    re-planning's case). ``down = 0`` is a crash and an immediate restart.
    """

    node: str
    time: int
    down: int = 0

    def __post_init__(self) -> None:
        if self.time < 0 or self.down < 0:
            raise InputError(f"failure {self}: needs TIME >= 0 and DOWN >= 0")

    @property
    def end(self) -> int:
        """The tick the node is back."""
        return self.time + self.down

    def __str__(self) -> str:
        return f"{self.node}@{self.time}" + (f"+{self.down}" if self.down else "")

    @classmethod
    def parse(cls, spec: str, time_unit: str | None = None) -> Failure:
        """Read ``NODE@TIME`` or ``NODE@TIME+DOWN``: whole ticks, or durations with a unit
        (``node3@2h+30min``) given the instance's ``time_unit``."""
        m = _FAILURE.match(spec.strip())
        if m is None:
            raise InputError(f"failure {spec!r}: expected NODE@TIME[+DOWN], e.g. node3@600+60")
        values = [
            parse_ticks(m[part], time_unit, f"failure {spec!r}: {part.upper()}")
            for part in ("time", "down")
            if m[part] is not None
        ]
        return cls(m["node"], *values)


def check_overlaps(failures: Sequence[Failure]) -> None:
    """Refuse two failures of one node whose outages overlap (one rule for the replay and
    for re-planning: a node fails again only once it is back).

    Raises
    ------
    InputError
        Naming both failures.
    """
    last: dict[str, Failure] = {}
    for f in sorted(failures, key=lambda f: (f.node, f.time)):
        before = last.get(f.node)
        if before is not None and (f.time < before.end or f.time == before.time):
            raise InputError(
                f"failure {f}: node {f.node!r} is already down (failure {before}); a node "
                "fails again only once it is back"
            )
        last[f.node] = f


@dataclass(frozen=True)
class Disturbances:
    """Everything that perturbs a replay, and the dispatch variant.

    Parameters
    ----------
    noise
        Factors on segment durations, or ``None``.
    slowdown
        Interference slowdown of tasks that time-share GPUs, or ``None``.
    failures
        Node failures.
    work_conserving
        Start tasks as soon as their predecessors and resources allow, not
        before their planned start.
    """

    noise: Noise | None = None
    slowdown: Slowdown | None = None
    failures: tuple[Failure, ...] = ()
    work_conserving: bool = False

    def __post_init__(self) -> None:
        check_overlaps(self.failures)

    @classmethod
    def parse(
        cls,
        noise: str | None = None,
        slowdown: str = "muri",
        failures: Sequence[str] = (),
        work_conserving: bool = False,
        time_unit: str | None = None,
    ) -> Disturbances:
        """Build from the specs of ``planner run``, with the same defaults.

        ``noise=None`` is no noise; ``slowdown`` is ``muri`` (the default, as on the
        command line), ``none`` or a ``k,factor`` CSV; ``failures`` take durations
        with a unit given the instance's ``time_unit``.
        """
        return cls(
            noise=Noise.parse(noise) if noise is not None else None,
            slowdown=Slowdown.parse(slowdown),
            failures=tuple(Failure.parse(f, time_unit) for f in failures),
            work_conserving=work_conserving,
        )

    def to_dict(self) -> dict[str, Any]:
        """The specs as plain data."""
        return {
            "noise": str(self.noise) if self.noise else None,
            "slowdown": self.slowdown.source if self.slowdown else None,
            "slowdown_factors": list(self.slowdown.factors) if self.slowdown else None,
            "failures": [str(f) for f in self.failures],
            "work_conserving": self.work_conserving,
        }


@dataclass(frozen=True)
class Simulation:
    """How to judge plans by replaying them: the disturbances, the runs and the first seed."""

    disturbances: Disturbances
    runs: int = 1
    seed: int = 0
    interleave: str | None = None
    """Training jobs: run them under this interleaving model (``fluid`` or ``muri``;
    :mod:`planner.executor.runs`), not the file's (``None``)."""
    restart: bool = True
    """Job by job: charge the restart overheads (as Muri's simulator does)."""


_KEYS = ("noise", "slowdown", "fail", "runs", "seed", "work-conserving", "interleave", "restart")


def parse_simulation(spec: str, time_unit: str | None = None) -> Simulation:
    """Read ``key=value`` pairs separated by commas, e.g. ``noise=lognormal:0.1,runs=20``.

    Keys: ``noise`` (``lognormal:SIGMA`` or ``uniform:A``), ``slowdown`` (``muri``,
    the default, ``none`` or a ``k,factor`` CSV), ``fail`` (``NODE@TIME[+DOWN]``,
    repeatable; durations with a unit given ``time_unit``), ``runs`` (1 to
    :data:`MAX_RUNS`, default 1), ``seed`` (0 to 2**32 - 1, default 0),
    ``work-conserving`` (``yes`` or ``no``, default ``no``), ``interleave`` (``fluid``
    or ``muri``: execute job by job under that model, as ``planner run
    --interleave`` does) and ``restart`` (``yes``, the default, or ``no``: with
    ``interleave``, whether restart overheads are charged).
    """
    given: dict[str, str] = {}
    failures: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or key not in _KEYS or not value.strip():
            raise InputError(
                f"simulation {spec!r}: expected key=value pairs with keys {', '.join(_KEYS)}, "
                f"got {part!r}"
            )
        if key == "fail":
            failures.append(value.strip())
        elif key in given:
            raise InputError(f"simulation {spec!r}: {key} given twice")
        else:
            given[key] = value.strip()
    counts = {}
    for key, least, most in (("runs", 1, MAX_RUNS), ("seed", 0, MAX_SEED)):
        text = given.get(key, str(least))
        if not text.isdigit() or not least <= int(text) <= most:
            raise InputError(
                f"simulation {spec!r}: {key} must be a whole number from {least} to {most:,}"
            )
        counts[key] = int(text)
    conserving = given.get("work-conserving", "no")
    restart = given.get("restart", "yes")
    for key, value in (("work-conserving", conserving), ("restart", restart)):
        if value not in ("yes", "no"):
            raise InputError(f"simulation {spec!r}: {key} must be yes or no")
    interleave = given.get("interleave")
    if interleave not in (None, "fluid", "muri"):
        raise InputError(f"simulation {spec!r}: interleave must be fluid or muri")
    if "restart" in given and interleave is None:
        raise InputError(f"simulation {spec!r}: restart applies with interleave")
    disturbances = Disturbances.parse(
        noise=given.get("noise"),
        slowdown=given.get("slowdown", "muri"),
        failures=failures,
        work_conserving=conserving == "yes",
        time_unit=time_unit,
    )
    return Simulation(disturbances, counts["runs"], counts["seed"], interleave, restart == "yes")

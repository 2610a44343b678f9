"""What every command of the ``planner`` command line shares: the command group (usage
errors as one line), the error guard, the output of figures, option checks, progress
and the recognition of run files. The commands live in ``cli``, ``cli_run`` and
``cli_replan``, which import this module and nothing of each other but ``cli``'s
registering the other two.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from planner import __version__
from planner.errors import InputError, PlannerError
from planner.result import Progress

COMMAND_ORDER = (
    "solve", "solvers", "validate", "info", "gantt", "compare", "run", "study", "policy",
    "online", "replan", "import", "generate", "convert", "schema",
)  # fmt: skip
"""The commands in the order ``planner --help`` and the reference list them: planning,
judging, running, re-planning, then the files."""


class _OneLineErrors(TyperGroup):
    """The command group, with usage errors (a bad option value, an unknown option, a
    missing argument) printed as one ``error:`` line, exit status 2, like every other
    bad input; its commands listed in :data:`COMMAND_ORDER`."""

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands' names in :data:`COMMAND_ORDER` (any other last)."""
        names = super().list_commands(ctx)
        rank = {name: k for k, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))

    def invoke(self, ctx: Any) -> Any:
        """Run the command: an error of the toolkit that reaches here (an output file that
        cannot be written) is one ``error:`` line, exit status 2 for bad input and 1
        otherwise; Ctrl-C where a command has nothing to keep (or a second Ctrl-C, once
        the first has stopped the work) ends it with one line, exit status 130."""
        try:
            with guard():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo("aborted by Ctrl-C; what was not written yet is lost", err=True)
            raise typer.Exit(130) from None

    def main(self, *args: object, standalone_mode: bool = True, **kwargs: object) -> object:
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[arg-type]
        except typer.TyperException as exc:  # the usage errors of typer's command parser
            if not standalone_mode:
                raise
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]
                sys.exit(0)
            typer.echo(f"error: {exc.format_message()}", err=True)  # type: ignore[attr-defined]
            sys.exit(getattr(exc, "exit_code", 2))
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    name="planner",
    cls=_OneLineErrors,
    help="Plan deep-learning training jobs on multi-resource clusters, interleaved.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
import_app = typer.Typer(help="Import workloads from other tools' formats.", no_args_is_help=True)
"""``planner import``: its commands, one per format (``muri``, ``gavel``)."""

DEFAULT_TIME_LIMIT = 60.0
"""Seconds of ``planner solve`` for solvers with a time limit, unless ``--time-limit``."""
MAX_TIME_LIMIT = 7 * 86400.0
"""The longest ``--time-limit``: a week."""
MAX_WORKERS = 256
"""The most threads or processes an option may ask for."""
MAX_SOLVER_SEED = 2**31 - 1
"""The largest solver seed (CP-SAT's seed is a 32-bit signed number)."""
TIME_LIMIT_RANGE = f"seconds, > 0 and <= {MAX_TIME_LIMIT:g}"
"""The range of every ``--time-limit``, as its help states it."""


def _check_time_limit(value: float | None) -> float | None:
    """Check a ``--time-limit`` (a typer callback): ``None`` or ``0 < value <= a week``."""
    if value is not None and not 0 < value <= MAX_TIME_LIMIT:
        raise typer.BadParameter(f"{value:g} is not in ({TIME_LIMIT_RANGE})")
    return value


def time_limit_option(help: str) -> Any:
    """A command's ``--time-limit`` / ``-t`` option: seconds, checked against
    :data:`TIME_LIMIT_RANGE`; ``help`` says what the limit bounds."""
    return typer.Option("--time-limit", "-t", callback=_check_time_limit, help=help)


SCHEDULE_FORMATS = (".json", ".csv")
"""Suffixes of the schedule files ``planner solve -o`` writes."""
SHOWN_VIOLATIONS = 3
"""Violations ``planner gantt`` prints when it refuses an invalid schedule."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"planner {__version__}")
        raise typer.Exit()


PROGRESS = {"forced": False}
"""Whether ``planner --progress`` asked for progress bars whatever stderr is."""


def time_text(time_unit: str, ticks: float, named: bool = False) -> str:
    """A time in ticks of ``time_unit`` as the commands print it: in seconds where the
    ticks have a length, the ticks beside them (``8,160 s (136 ticks of 1min)``); in
    ticks where they have none (``'1'``, PSPLIB), ``named`` (``42 ticks``) or bare."""
    from planner.times import tick_seconds

    if time_unit == "1":
        return f"{ticks:g} ticks" if named else f"{ticks:g}"
    return f"{ticks * tick_seconds(time_unit):,.0f} s ({ticks:g} ticks of {time_unit})"


def seconds_of(time_unit: str) -> tuple[float, str]:
    """What a tick of ``time_unit`` is in the unit tables print, and that unit's name:
    seconds where ticks have a length, else ticks."""
    from planner.times import tick_seconds

    return (1.0, "ticks") if time_unit == "1" else (tick_seconds(time_unit), "seconds")


def progress_bar(**options: Any) -> Any:
    """A tqdm progress bar on stderr, shown only where stderr is a terminal or with
    ``planner --progress`` (``options``: tqdm's; ``disable`` still hides it)."""
    from tqdm import tqdm

    shown = PROGRESS["forced"] or sys.stderr.isatty()
    hidden = options.pop("disable", False)
    return tqdm(file=sys.stderr, disable=hidden or not shown, **options)


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens.")] = False,
    progress: Annotated[
        bool,
        typer.Option("--progress", help="Progress bars on stderr even where it is not a terminal."),
    ] = False,
) -> None:
    """Plan deep-learning training jobs on multi-resource clusters, interleaved."""
    PROGRESS["forced"] = progress
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )


@contextmanager
def guard() -> Iterator[None]:
    """Turn library errors into one line on stderr and the documented exit status."""
    try:
        yield
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except PlannerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def show(pairs: list[tuple[str, object]]) -> None:
    """Print aligned ``key  value`` lines."""
    width = max(len(k) for k, _ in pairs)
    for key, value in pairs:
        typer.echo(f"{key:<{width}}  {value}")


def chosen_options(
    solver: str, time_limit: float | None, default_limit: float, seed: int | None = None
) -> dict[str, float | int]:
    """``--time-limit`` and ``--seed`` as options of ``solver``.

    The default time limit applies to the solvers that have one; a value the user
    gave to a solver without such an option is refused, naming the solvers that take it.
    """
    from planner.solvers.registry import SOLVERS, options_of

    declared = options_of(solver)
    out: dict[str, float | int] = {}
    for name, given, default in (("time_limit", time_limit, default_limit), ("seed", seed, None)):
        if name in declared:
            value = given if given is not None else default
            if value is not None:
                out[name] = value
        elif given is not None:
            takers = ", ".join(s for s in SOLVERS if name in options_of(s))
            words = name.replace("_", " ")
            raise InputError(
                f"--{name.replace('_', '-')}: solver {solver!r} has no {words} (it makes one "
                f"pass or follows a rule); the solvers with one: {takers}"
            )
    return out


def progress_printer() -> Callable[[Progress], None]:
    """A progress callback printing the elapsed time, incumbent and bound on stderr."""

    def report(event: Progress) -> None:
        parts = [f"{event.elapsed:8.2f}s"]
        if event.objective is not None:
            parts.append(f"incumbent {event.objective:g}")
        if event.bound is not None:
            parts.append(f"bound {event.bound:g}")
        if event.message:
            parts.append(event.message)
        typer.echo("  ".join(parts), err=True)

    return report


TASK_RUN = ("disturbances", "planned_makespan")
"""The keys a task-level run file of ``planner run -o`` is recognised by."""
JOB_RUN = ("executor", "residences")
"""The keys a job-level run file of ``planner run -o`` is recognised by."""


def has_keys(data: object, keys: tuple[str, ...]) -> bool:
    """Whether ``data`` is a JSON object holding every one of ``keys``."""
    return isinstance(data, dict) and all(k in data for k in keys)


def refuse_run_as_plan(path: Path, hint: str) -> dict[str, Any] | None:
    """Refuse a run file of ``planner run -o`` (task by task or job by job) given
    where a plan is expected; else the file's JSON object, read once for the plan's
    reader (``None``: not a JSON object)."""
    data = json_object(path)
    if has_keys(data, TASK_RUN) or has_keys(data, JOB_RUN):
        raise InputError(f"a run file of planner run, not a plan: {hint}", str(path))
    return data


def json_object(path: Path, *keys: str) -> dict[str, Any] | None:
    """The data of ``path`` if it is a JSON file holding an object with every one of
    ``keys``, else ``None`` (what a run file is recognised by)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if has_keys(data, keys) else None


def run_file(path: Path) -> dict[str, Any] | None:
    """The data of ``path`` if it is a run file of ``planner run -o``, else ``None``."""
    return json_object(path, *TASK_RUN)

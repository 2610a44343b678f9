"""The ``planner`` command line: a thin layer over the library.

Library errors are caught at each command's boundary and printed as one line:
exit status 2 for bad input (including a provably infeasible instance), 1 for a
failed run, 0 for success.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from planner import __version__
from planner.bounds import critical_path_bound, energy_bound, horizon
from planner.checks import check_feasibility
from planner.errors import InputError, PlannerError
from planner.instance import load_instance, save_instance
from planner.model import Problem
from planner.result import Progress, Result
from planner.schedule import load_schedule
from planner.validate import validate

app = typer.Typer(
    name="planner",
    help="Plan deep-learning training jobs on multi-resource clusters, interleaved.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

log = logging.getLogger("planner")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"planner {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens.")] = False,
) -> None:
    """Plan deep-learning training jobs on multi-resource clusters, interleaved."""
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


def load_checked(path: Path) -> Problem:
    """Load an instance and prove it is not trivially infeasible."""
    problem = load_instance(path)
    try:
        check_feasibility(problem)
    except InputError as exc:
        raise exc.at(str(path)) from None
    return problem


def show(pairs: list[tuple[str, object]]) -> None:
    """Print aligned ``key  value`` lines."""
    width = max(len(k) for k, _ in pairs)
    for key, value in pairs:
        typer.echo(f"{key:<{width}}  {value}")


def _progress_printer() -> Callable[[Progress], None]:
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


def summary(problem: Problem, result: Result) -> list[tuple[str, object]]:
    """The lines ``planner solve`` prints about a result."""
    gap = result.gap
    rows: list[tuple[str, object]] = [
        ("instance", f"{problem.name} ({len(problem.tasks)} tasks)"),
        ("solver", result.solver),
        ("status", result.status.value),
        (problem.objective, "-" if result.objective is None else f"{result.objective:g}"),
        ("lower bound", "-" if result.lower_bound is None else f"{result.lower_bound:g}"),
        ("gap", "-" if gap is None else f"{100 * gap:.2f}%"),
        ("runtime", f"{result.runtime:.3f} s"),
    ]
    if result.schedule is not None:
        rows.append(("validator", str(validate(problem, result.schedule))))
    elif "reason" in result.stats:
        rows.append(("reason", result.stats["reason"]))
    return rows


@app.command()
def solve(
    instance: Annotated[Path, typer.Argument(help="Instance file (.json, .yaml, .sm, .mm, .rcp).")],
    solver: Annotated[str, typer.Option("--solver", "-s", help="Solver name.")] = "sgs",
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", "-t", min=0, help="Seconds.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Search workers (threads) for exact solvers.")
    ] = None,
    rule: Annotated[str | None, typer.Option(help="Priority rule for sgs (e.g. lft).")] = None,
    backend: Annotated[str | None, typer.Option(help="MILP backend: cbc or highs.")] = None,
    solver_log: Annotated[bool, typer.Option("--log", help="Show the solver's own log.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the schedule (.json or .csv).")
    ] = None,
) -> None:
    """Solve an instance and print makespan, bound, gap, status, runtime and the validator's verdict."""
    from solvers import solve as run

    with guard():
        if output is not None and output.suffix.lower() not in (".json", ".csv"):
            raise InputError("the schedule file must end in .json or .csv", str(output))
        problem = load_checked(instance)
        options = {
            k: v
            for k, v in {"rule": rule, "backend": backend, "workers": workers}.items()
            if v is not None
        }
        result = run(
            problem,
            solver,
            time_limit=time_limit,
            seed=seed,
            log=solver_log,
            progress=_progress_printer(),
            **options,
        )
        show(summary(problem, result))
        if result.schedule is None:
            raise typer.Exit(1)
        if output is not None:
            result.schedule.save(output, problem)
            typer.echo(f"schedule written to {output}")


@app.command("validate")
def validate_cmd(
    instance: Annotated[Path, typer.Argument(help="Instance file.")],
    schedule: Annotated[Path | None, typer.Argument(help="Schedule file (.json or .csv).")] = None,
) -> None:
    """Check an instance, and a schedule against it: prints every violation; exit 1 if any."""
    with guard():
        problem = load_checked(instance)
        if schedule is None:
            typer.echo(f"{instance}: valid instance ({len(problem.tasks)} tasks)")
            return
        report = validate(problem, load_schedule(schedule))
        for v in report.violations:
            typer.echo(str(v))
        if not report.ok:
            typer.echo(f"{schedule}: {report}")
            raise typer.Exit(1)
        sched = load_schedule(schedule)
        typer.echo(f"{schedule}: valid, {problem.objective} {sched.objective(problem):g}")


@app.command()
def info(instance: Annotated[Path, typer.Argument(help="Instance file.")]) -> None:
    """Print the instance's tasks, resources, horizon and lower bounds."""
    with guard():
        problem = load_checked(instance)
        modes = sum(len(t.modes) for t in problem.tasks)
        segments = sum(len(m.segments) for t in problem.tasks for m in t.modes)
        cp, energy = critical_path_bound(problem), energy_bound(problem)
        rows: list[tuple[str, object]] = [
            ("instance", problem.name),
            ("time unit", problem.time_unit),
            ("objective", problem.objective),
            ("tasks", f"{len(problem.tasks)} ({modes} modes, {segments} segments)"),
            ("precedences", len(problem.precedences)),
            ("jobs", len(problem.jobs)),
        ]
        for r in problem.resources:
            extra = f", {len(r.windows)} capacity windows" if r.windows else ""
            rows.append((f"resource {r.name}", f"{r.kind}, capacity {r.capacity}{extra}"))
        rows += [
            ("horizon", horizon(problem)),
            ("critical path", cp),
            ("energy bound", energy),
            ("lower bound", max(cp, energy)),
        ]
        show(rows)


@app.command()
def convert(
    instance: Annotated[Path, typer.Argument(help="Instance file of any supported format.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output .json, .yaml or .yml.")],
) -> None:
    """Write an instance in the native problem form (JSON or YAML)."""
    with guard():
        if output.suffix.lower() not in (".json", ".yaml", ".yml"):
            raise InputError("the output must end in .json, .yaml or .yml", str(output))
        problem = load_instance(instance)
        save_instance(problem, output)
        typer.echo(f"{instance} -> {output} ({len(problem.tasks)} tasks)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())

"""What the commands that run plans print and draw: the disturbances, the task-level
replay's rows, the Monte Carlo study's table and histogram (shared by ``planner run``,
``planner study``, ``planner policy`` and ``planner online``)."""

from __future__ import annotations

from pathlib import Path

from planner.app.base import progress_bar, time_text
from planner.app.figures import save_figure
from planner.disturbances import Disturbances
from planner.errors import InputError
from planner.model import Problem
from planner.replay.simulate import Execution, draw_makespans, monte_carlo
from planner.schedule import Schedule
from planner.study import Study

HISTOGRAM_FORMATS = (".png", ".svg", ".pdf")
"""Suffixes of the histogram ``--histogram`` writes."""


def refuse(given: dict[str, object], why: str) -> None:
    """Refuse the first option of ``given`` that was given: it ``why``."""
    clash = next((k for k, v in given.items() if v), None)
    if clash is not None:
        raise InputError(f"{clash} {why}")


def describe(dist: Disturbances) -> str:
    parts = [
        f"noise {dist.noise}" if dist.noise else "no noise",
        f"slowdown {dist.slowdown.source}" if dist.slowdown else "no slowdown",
        "failures " + ", ".join(map(str, dist.failures)) if dist.failures else "no failures",
        "work-conserving" if dist.work_conserving else "plan starts",
    ]
    return ", ".join(parts)


def task_rows(ex: Execution, schedule: Path) -> list[tuple[str, object]]:
    """The lines ``planner run`` prints of a task-level replay: times in seconds where the
    instance's ticks have a length, the ticks beside them (:func:`time_text`)."""
    unit = ex.problem.time_unit

    def times(realized: float, planned: float | None = None) -> str:
        text = time_text(unit, realized, named=True)
        if planned is None:
            return text
        return text + (
            f" (planned {planned:g})" if unit == "1" else f"; planned {time_text(unit, planned)}"
        )

    name = ex.problem.name.removesuffix(" (realized)")
    rows: list[tuple[str, object]] = [
        ("instance", f"{name} ({len(ex.runs)} tasks)"),
        ("plan", f"{schedule} (makespan {time_text(unit, ex.planned_makespan)})"),
        ("disturbances", describe(ex.disturbances)),
        ("seed", ex.seed),
        ("makespan", times(ex.makespan, ex.planned_makespan)),
        ("optimism", f"{ex.optimism:.3f} (realized / planned makespan)"),
    ]
    if ex.mean_jct is not None:
        rows.append(("mean JCT", times(round(ex.mean_jct, 1), round(ex.planned_mean_jct, 1))))
        rows.append(("p99 JCT", times(round(ex.p99_jct, 1))))
    rows.append(
        ("utilisation", ", ".join(f"{r} {100 * u:.1f}%" for r, u in ex.utilisation.items()))
    )
    if ex.disturbances.failures:
        reruns = sum(len(r.lost) for r in ex.runs)
        rows.append(
            (
                "lost work",
                f"{ex.lost_gpu_ticks} GPU-ticks, {ex.lost_task_ticks} task-ticks "
                f"({reruns} lost attempt{'s' * (reruns != 1)})",
            )
        )
    rows += [("note", note) for note in ex.notes]
    rows.append(("validator", f"{ex.report} (realized run)"))
    return rows


def more_runs(
    problem: Problem,
    plan: Schedule,
    seed: int,
    dist: Disturbances,
    runs: int,
    jobs: int,
    study: Study,
) -> None:
    """The runs after the first (seeds ``seed + 1 ..``) into ``study``, with a progress
    bar on stderr; the first Ctrl-C stops them (:attr:`Study.interrupted`), a second
    aborts."""
    from planner.interrupt import Halt

    halt = Halt()
    with progress_bar(total=runs, initial=1, unit="run", desc="replays") as bar:
        try:
            monte_carlo(
                problem,
                plan,
                dist,
                runs - 1,
                seed + 1,
                jobs=jobs,
                progress=lambda _: bar.update(),
                study=study,
                halt=halt,
            )
        except KeyboardInterrupt:
            if halt.is_set():
                raise  # the second Ctrl-C
            study.interrupted = True  # a Ctrl-C before the runs began, or as they ended


def distribution_table(study: Study, unit: str, scale: float = 1.0) -> list[str]:
    """The distribution table of the realized makespan and mean JCT, each figure times
    ``scale`` (a tick's seconds), in ``unit``."""
    figures = study.figures(per_run=False)
    header = f"{len(study)} runs ({unit})"
    lines = [f"{header:<28}" + "".join(f"{c:>12}" for c in _COLUMNS)]
    for label, key in (("makespan", "makespan"), ("mean JCT", "mean_jct")):
        if figures[key] is not None:
            cells = "".join(f"{figures[key][c] * scale:>12.1f}" for c in _COLUMNS)
            lines.append(f"{label:<28}{cells}")
    return lines


_COLUMNS = ("mean", "p5", "p50", "p95", "max")


def save_histogram(study: Study, planned: float | None, unit: str, path: Path) -> None:
    from planner.app.figures import new_figure

    fig = new_figure(figsize=(7, 4), dpi=120)
    draw_makespans(fig.add_subplot(), study, planned, unit)
    fig.tight_layout()
    save_figure(fig, path)

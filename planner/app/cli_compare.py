"""``planner compare``: solvers and policies over instances and seeds, one results table,
its summary, charts and the makespan-energy front (:mod:`planner.app.compare`,
:mod:`planner.app.compare_report`). The command registers on
:data:`planner.app.base.app` when this module is imported, which :mod:`planner.app.cli`
does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from planner.app.base import (
    MAX_WORKERS,
    TIME_LIMIT_RANGE,
    app,
    guard,
    time_limit_option,
)
from planner.files import write_text
from planner.io.paths import check_output


@app.command()
def compare(
    instances: Annotated[list[Path], typer.Argument(help="Instance files.")],
    solver: Annotated[
        list[str] | None, typer.Option("--solver", "-s", help="Solver name; repeat for several.")
    ] = None,
    time_limit: Annotated[
        float | None,
        time_limit_option(
            f"Seconds per run ({TIME_LIMIT_RANGE}).",
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            min=1, max=10_000, help="Runs per instance and solver (seeds 0..N-1; 1 to 10,000)."
        ),
    ] = 1,
    reference: Annotated[
        Path | None,
        typer.Option(help="Best known values: CSV (instance + best_ub or makespan) or j30opt.sm."),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Results table (.csv), appended run by run.")
    ] = Path("results.csv"),
    resume: Annotated[
        bool, typer.Option(help="Keep the runs already in the results table and skip them.")
    ] = False,
    force: Annotated[
        bool, typer.Option(help="Start the results table afresh, discarding the runs in it.")
    ] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            max=MAX_WORKERS,
            help=f"Local worker processes (1 to {MAX_WORKERS}).",
        ),
    ] = 1,
    dask: Annotated[
        str | None,
        typer.Option(help="Run on Dask: tcp://HOST:PORT of a scheduler, or local:N workers."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_WORKERS,
            help="Threads per run: cpsat/milp search workers, ga parallel runs "
            f"(1 to {MAX_WORKERS}).",
        ),
    ] = None,
    simulate: Annotated[
        str | None,
        typer.Option(
            help="Also replay every schedule and rank the solvers by realized makespan, e.g. "
            "noise=lognormal:0.1,slowdown=muri,runs=20 (keys noise, slowdown, fail, runs, seed, "
            "work-conserving, interleave, restart); with interleave=fluid|muri, plans run job "
            "by job under that model and peer policies (muri-s, muri-l, srtf, srsf, tiresias) "
            "may be given as solvers."
        ),
    ] = None,
    pareto: Annotated[
        int | None,
        typer.Option(
            min=2,
            max=12,
            help="Trace a makespan-energy front: run every instance under objective energy at "
            "this many makespan_watts (0, then an eighth to eight times its full draw); the "
            "summary gets the front and OUTPUT_pareto.png draws it (2 to 12 points).",
        ),
    ] = None,
) -> None:
    """Run solvers on instances; write the results table, a summary (.md) and a performance profile.

    An existing results table is kept: ``--resume`` adds the missing runs to it,
    ``--force`` starts it afresh. Ctrl-C stops the study; the runs it interrupts
    are not recorded, so ``--resume`` runs them again. With ``--simulate`` every
    valid schedule is replayed under the disturbances of the spec, and a second
    table ranks the solvers by mean realized makespan. Exit status 1 if any run
    returned an invalid schedule or failed with an error.
    """
    from planner.app.compare import run_study
    from planner.app.compare_jct import (
        jobs_path,
        read_jobs,
        save_fairness,
        save_jct_cdf,
        summarize_jct,
    )
    from planner.app.compare_report import (
        markdown,
        pareto_front,
        save_pareto,
        save_profile,
        summarize,
        summarize_realized,
        unit_words,
    )
    from planner.app.compare_run import FAILED
    from planner.io.reference import load_reference

    with guard():
        summary_path = output.with_suffix(".md")
        profile_path = output.with_name(f"{output.stem}_profile.png")
        inputs = instances if reference is None else [*instances, reference]
        check_output(output, inputs=inputs, suffixes=(".csv",), what="the results file")
        check_output(summary_path, inputs=inputs)
        check_output(profile_path, inputs=inputs)
        pareto_path = output.with_name(f"{output.stem}_pareto.png")
        if pareto:
            check_output(pareto_path, inputs=inputs)
        jct_paths = (
            jobs_path(output),
            output.with_name(f"{output.stem}_jct.png"),
            output.with_name(f"{output.stem}_fairness.png"),
        )
        if simulate is not None:
            for path in jct_paths:
                check_output(path, inputs=inputs)
        refs = load_reference(reference) if reference is not None else None
        try:
            table = run_study(
                instances,
                solver or ["sgs"],
                output,
                seeds=seeds,
                time_limit=time_limit,
                workers=workers,
                reference=refs,
                resume=resume,
                force=force,
                jobs=jobs,
                dask=dask,
                simulation=simulate,
                pareto=pareto or 0,
            )
        except KeyboardInterrupt:
            typer.echo(
                f"interrupted: the finished runs are in {output}; "
                "repeat the command with --resume to run the others",
                err=True,
            )
            raise typer.Exit(130) from None
        planned = summarize(table)
        text = markdown(planned) if not planned.empty else ""
        unit = unit_words(table)
        if simulate is not None:
            text += f"\nsolvers by realized makespan ({simulate}; {unit}):\n\n"
            text += markdown(summarize_realized(table))
        drawn = f", front in {pareto_path}" if pareto else ""
        jct = summarize_jct(table) if simulate is not None else None
        if jct is not None and not jct.empty:
            text += f"\npolicies and planners by mean realized JCT ({simulate}; seconds):\n\n"
            text += markdown(jct)
            save_jct_cdf(read_jobs(jct_paths[0]), jct_paths[1], jct)
            save_fairness(jct, jct_paths[2])
            drawn += f", JCT in {jct_paths[1]} and {jct_paths[2]}"
        if pareto:
            front = pareto_front(table)
            text += (
                f"\nmakespan against energy (objective energy at each makespan_watts; {unit}):\n\n"
            )
            text += markdown(front)
            save_pareto(front, pareto_path)
        write_text(summary_path, text)
        save_profile(table, profile_path)
        typer.echo(text, nl=False)
        typer.echo(
            f"results in {output}, summary in {summary_path}, profile in {profile_path}{drawn}"
        )
        failed = table[table["status"].isin(FAILED)]
        if len(failed):
            first = failed.iloc[0]
            typer.echo(
                f"error: {len(failed)} of {len(table)} runs failed (status invalid or error; the "
                f"error column of {output} says why), the first: {first['instance']} "
                f"{first['solver']} seed {first['seed']}: {first['error']}",
                err=True,
            )
            raise typer.Exit(1)

"""``planner import gavel``: Gavel's traces (or a batch of its job mix) on a cluster of
GPU types, as a cluster-form instance under the ``table`` model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
import yaml

from planner.app.base import guard, import_app
from planner.errors import InputError
from planner.files import write_text
from planner.io.instance import NATIVE
from planner.io.paths import check_output

MAX_GAVEL_JOBS = 100_000
"""The most jobs ``--jobs`` generates."""


@import_app.command("gavel")
def import_gavel_cmd(
    trace: Annotated[
        Path | None,
        typer.Argument(help="Gavel trace (10 tab-separated fields a line); omit with --jobs."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")] = Path(
        "gavel.yaml"
    ),
    throughputs: Annotated[
        Path,
        typer.Option(
            help="Gavel's throughputs file (per GPU type, steps per second alone and in "
            "pairs); the instance refers to it by a path relative to its folder."
        ),
    ] = Path("instances/gavel/throughputs.json"),
    cluster: Annotated[
        str, typer.Option(help="GPUs of each type, V100:P100:K80 (Gavel's -c).")
    ] = "8:16:24",
    per_server: Annotated[
        int, typer.Option(min=1, max=64, help="GPUs per server (Gavel's default: 1).")
    ] = 1,
    jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_GAVEL_JOBS,
            help="Generate this many jobs of Gavel's job mix instead of reading a trace.",
        ),
    ] = None,
    objective: Annotated[
        str,
        typer.Option(help="makespan, or weighted_completion (the mean JCT by the jobs' weights)."),
    ] = "makespan",
    seed: Annotated[int, typer.Option(min=0, help="--jobs: random seed.")] = 0,
    arrival_rate: Annotated[
        float | None,
        typer.Option(min=0.001, max=1e6, help="--jobs: jobs per hour (Poisson); default all at 0."),
    ] = None,
) -> None:
    """Read a Gavel trace, or generate a batch of Gavel's job mix, into an instance of
    its jobs on a cluster of GPU types under the table model (measured rates per type,
    alone and in pairs). Run it with planner policy (gavel-* or ours), study, online."""
    from planner.dl.gavel import (
        gavel_instance,
        generate_gavel_jobs,
        parse_cluster,
        read_gavel_trace,
        read_throughputs,
    )
    from planner.executor.model.jobs import jobs_from_instance

    with guard():
        if trace is not None and jobs is not None:
            raise InputError("give a Gavel trace or --jobs N (a generated batch), not both")
        if trace is None and jobs is None:
            raise InputError("give a Gavel trace, or --jobs N for a batch of Gavel's job mix")
        if trace is not None and (seed or arrival_rate is not None):
            raise InputError("--seed and --arrival-rate go with --jobs, not with a trace")
        inputs = [throughputs] + ([trace] if trace is not None else [])
        check_output(output, inputs=inputs, suffixes=NATIVE)
        spec = parse_cluster(cluster, per_server)
        table = read_throughputs(throughputs)
        if trace is not None:
            batch = read_gavel_trace(trace)
            name = trace.stem
        else:
            batch = generate_gavel_jobs(table, jobs or 0, seed, arrival_rate)
            name = f"gavel-mix-{jobs}-seed{seed}"
        folder = os.path.abspath(output.parent)
        ref = os.path.relpath(os.path.abspath(throughputs), folder)
        if objective not in ("makespan", "weighted_completion"):
            raise InputError(f"--objective {objective!r}: makespan or weighted_completion")
        data = {"objective": objective, **gavel_instance(batch, spec, ref, name)}
        if output.suffix.lower() == ".json":
            import json

            text = json.dumps(data, indent=1) + "\n"
        else:
            text = yaml.safe_dump(data, sort_keys=False)
        write_text(output, text)
        try:
            workload = jobs_from_instance(output, data)
        except InputError as exc:  # the jobs cannot run there: no instance written
            output.unlink()
            raise InputError(exc.cause) from None
        typer.echo(
            f"{trace or 'generated'} -> {output} ({len(workload.jobs)} jobs on "
            f"{cluster} V100:P100:K80, table model)"
        )

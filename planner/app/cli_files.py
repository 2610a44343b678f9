"""The commands that write instance files: ``planner import muri`` (Muri's traces),
``planner import synergy`` (Synergy's job streams), ``planner import slurm``,
``helios``, ``acme`` and ``philly`` (clusters' histories),
``planner generate`` (seeded batches of catalog jobs) and ``planner schema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from planner.app.base import app, guard, import_app
from planner.dl.workloads import (
    MAX_BLOCKS,
    MAX_GPUS,
    MAX_JOBS,
    MAX_NODES,
    MAX_RATE,
    MAX_SEED,
    MIN_RATE,
)
from planner.errors import InputError
from planner.files import write_text
from planner.io.instance import NATIVE, problem_from_data
from planner.io.paths import check_output
from planner.model import Problem

PLACEMENT_HELP = (
    "pooled: one resource per kind summed over the nodes; node: every task placed on whole "
    "nodes; gpu: every task placed on single GPUs."
)
"""Help of the ``--placement`` option of ``planner import muri`` and ``planner generate``."""


def _write_instance(data: dict, output: Path) -> Problem:
    """Validate cluster-form ``data`` by compiling it, then write it as JSON or YAML."""
    problem = problem_from_data(data)
    text = json.dumps(data, indent=1) + "\n" if output.suffix.lower() == ".json" else None
    write_text(output, text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return problem


LARGE_BATCH = 10_000
"""From this many jobs ``planner generate`` says what it does before it starts (about 7,000
jobs a second)."""
NODES_HELP = f"Nodes of the cluster (1 to {MAX_NODES:,})."
GPUS_HELP = f"GPUs per node (1 to {MAX_GPUS})."
BLOCKS_HELP = f"Training blocks per job (1 to {MAX_BLOCKS:,})."


@import_app.command("muri")
def import_muri_cmd(
    trace: Annotated[Path, typer.Argument(help="Muri trace CSV.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    nodes: Annotated[int, typer.Option(min=1, max=MAX_NODES, help=NODES_HELP)] = 8,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=MAX_GPUS, help=GPUS_HELP)] = 8,
    time_unit: Annotated[str, typer.Option(help="Length of a tick.")] = "1min",
    blocks: Annotated[int, typer.Option(min=1, max=MAX_BLOCKS, help=BLOCKS_HELP)] = 1,
    placement: Annotated[str, typer.Option(help=PLACEMENT_HELP)] = "pooled",
    migrate: Annotated[
        bool,
        typer.Option(
            help="Let every job's blocks change nodes, paying the catalog's restart cost "
            "for its model (needs --placement node)."
        ),
    ] = False,
    objective: Annotated[
        str,
        typer.Option(help="makespan, or weighted_completion (the mean JCT, all weights 1)."),
    ] = "makespan",
    interleave: Annotated[
        str,
        typer.Option(
            help="The instance's interleaving model: fluid (processor sharing) or muri "
            "(Muri's rotation); the executor and the peer policies run under it."
        ),
    ] = "fluid",
    restart: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=86400,
            help="Seconds of restart for jobs of models the catalog has no restart cost of "
            "(a trace with such models is refused without it).",
        ),
    ] = None,
    elastic: Annotated[
        bool,
        typer.Option(
            help="Make every job elastic: list the data-parallel plans of its model's catalog "
            "profile, one global batch on every GPU count (policy goodput chooses)."
        ),
    ] = False,
) -> None:
    """Read a Muri trace into a cluster-form instance (a data and a network slot per GPU)."""
    from planner.dl.workloads import import_muri

    with guard():
        check_output(output, inputs=[trace], suffixes=NATIVE)
        data = import_muri(
            trace, nodes, gpus_per_node, time_unit, blocks, placement, migrate, restart, elastic
        )
        data["objective"] = objective
        data["interleave"] = interleave
        problem = _write_instance(data, output)
        typer.echo(f"{trace} -> {output} ({len(data['jobs'])} jobs, {len(problem.tasks)} tasks)")


@import_app.command("synergy")
def import_synergy_cmd(
    trace: Annotated[
        Path, typer.Argument(help="Synergy job stream (CSV, as its simulator writes it).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    cluster: Annotated[
        str,
        typer.Option(
            help="Synergy's cluster: default (16 servers of 8 GPUs, 24 CPUs, "
            "500 GB), cluster_4, cluster_5, cluster_6, deployment, philly, "
            "static_trace."
        ),
    ] = "default",
) -> None:
    """Read a Synergy job stream into a cluster-form instance on one of Synergy's clusters
    (every job at its speed on the GPU-proportional share of CPU and memory; no restart
    cost; one job a GPU)."""
    from planner.dl.synergy import import_synergy

    with guard():
        check_output(output, inputs=[trace], suffixes=NATIVE)
        data = import_synergy(trace, cluster)
        problem = _write_instance(data, output)
        typer.echo(f"{trace} -> {output} ({len(data['jobs'])} jobs, {len(problem.tasks)} tasks)")


@import_app.command("pollux")
def import_pollux_cmd(
    workload: Annotated[
        Path,
        typer.Argument(
            help="Pollux workload CSV (name,time,application,num_replicas,"
            "batch_size), or the combined file of several."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    name: Annotated[
        str | None,
        typer.Option("--workload", help="Of a combined file: workload-6, or SET/workload-6."),
    ] = None,
    nodes: Annotated[int, typer.Option(min=1, max=MAX_NODES, help="Nodes (Pollux's: 16).")] = 16,
    gpus_per_node: Annotated[
        int, typer.Option(min=1, max=4, help="GPUs per node (Pollux's profiles: up to 4).")
    ] = 4,
) -> None:
    """Read a Pollux workload into a cluster-form instance of elastic jobs (Pollux's job
    model: speed by placement and batch size, progress by statistical efficiency;
    planner/dl/pollux.py)."""
    from planner.dl.pollux import import_pollux

    with guard():
        check_output(output, inputs=[workload], suffixes=NATIVE)
        data = import_pollux(workload, name, nodes, gpus_per_node)
        problem = _write_instance(data, output)
        typer.echo(f"{workload} -> {output} ({len(data['jobs'])} elastic jobs, "
                   f"{len(problem.tasks)} tasks)")  # fmt: skip


@import_app.command("slurm")
def import_slurm_cmd(
    sacct: Annotated[
        Path,
        typer.Argument(
            help="sacct -a -P -X --format=JobID,JobName,User,Account,Partition,Submit,Start,"
            "End,Elapsed,State,ExitCode,AllocTRES,ReqTRES,NNodes,NodeList,Timelimit output."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    nodes: Annotated[
        Path | None,
        typer.Option(
            "--nodes",
            help='sinfo -N -o "%N %c %m %G" output: the cluster (default: the nodes the jobs '
            "ran on).",
        ),
    ] = None,
) -> None:
    """Read a Slurm cluster's accounting into a cluster-form instance: one job per job
    that ran on GPUs, its elapsed time as GPU work at one iteration a second, released at
    its submit time (planner/dl/slurm.py says what it reads and leaves out)."""
    from planner.dl.slurm import import_slurm

    with guard():
        check_output(output, inputs=[sacct, *([nodes] if nodes else [])], suffixes=NATIVE)
        data, left = import_slurm(sacct, nodes)
        problem = _write_instance(data, output)
        note = f"; {left}" if left else ""
        typer.echo(
            f"{sacct} -> {output} ({len(data['jobs'])} jobs, {len(problem.tasks)} tasks{note})"
        )


def _import_history(kind: str, trace: Path, output: Path, nodes: int | None, per: int) -> None:
    """``planner import helios``, ``acme`` and ``philly``."""
    from planner.dl.histories import import_history, import_philly

    with guard():
        check_output(output, inputs=[trace], suffixes=NATIVE)
        if kind == "philly":
            data, left = import_philly(trace, nodes, per)
        else:
            data, left = import_history(trace, kind, nodes, per)
        problem = _write_instance(data, output)
        count = data["cluster"]["nodes"][0]["count"]
        note = f"; {left}" if left else ""
        typer.echo(
            f"{trace} -> {output} ({len(data['jobs'])} jobs, {len(problem.tasks)} tasks on "
            f"{count} nodes of {per} GPUs{note})"
        )


HISTORY_NODES = typer.Option(
    "--nodes",
    min=1,
    help="Nodes of the cluster (default: the fewest that held the most GPUs in use at once).",
)
HISTORY_GPUS = typer.Option("--gpus-per-node", min=1, help="GPUs per node.")


@import_app.command("helios")
def import_helios_cmd(
    trace: Annotated[Path, typer.Argument(help="Helios' cluster_log.csv (or a part of it).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    nodes: Annotated[int | None, HISTORY_NODES] = None,
    gpus_per_node: Annotated[int, HISTORY_GPUS] = 8,
) -> None:
    """Read a Helios history into a cluster-form instance: one job per job that ran on
    GPUs, its duration as GPU work (planner/dl/histories.py says what it reads)."""
    _import_history("helios", trace, output, nodes, gpus_per_node)


@import_app.command("acme")
def import_acme_cmd(
    trace: Annotated[Path, typer.Argument(help="Acme's trace_seren.csv or trace_kalos.csv.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    nodes: Annotated[int | None, HISTORY_NODES] = None,
    gpus_per_node: Annotated[int, HISTORY_GPUS] = 8,
) -> None:
    """Read an Acme history into a cluster-form instance: one job per job that ran on
    GPUs, its duration as GPU work (planner/dl/histories.py says what it reads)."""
    _import_history("acme", trace, output, nodes, gpus_per_node)


@import_app.command("philly")
def import_philly_cmd(
    trace: Annotated[Path, typer.Argument(help="Philly's cluster_job_log (a JSON list of jobs).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    nodes: Annotated[int | None, HISTORY_NODES] = None,
    gpus_per_node: Annotated[int, HISTORY_GPUS] = 8,
) -> None:
    """Read Philly's job log into a cluster-form instance: one job per job that ran on
    GPUs, the time of all its attempts as GPU work (planner/dl/histories.py)."""
    _import_history("philly", trace, output, nodes, gpus_per_node)


export_app = typer.Typer(help="Export plans to workload managers.", no_args_is_help=True)
"""``planner export``: its commands, one per workload manager."""


@export_app.command("slurm")
def export_slurm_cmd(
    instance: Annotated[Path, typer.Argument(help="The instance the plan was made for.")],
    plan: Annotated[Path, typer.Argument(help="Its plan: planner solve --no-preempt -o PLAN.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write.")],
    command: Annotated[
        str,
        typer.Option(
            help="Each job's command; {job}, {gpus} and {seconds} (its planned run time) are "
            "filled in."
        ),
    ] = "sleep {seconds}",
    time_scale: Annotated[
        float, typer.Option(help="Scale the planned times (0.001: an hour runs in 3.6 s).")
    ] = 1.0,
) -> None:
    """Write a plan without preemption as Slurm batch scripts, one per job (its nodes,
    GPUs or GPU shards, planned start), and submit.sh (planner/executor/slurm_export.py)."""
    from planner.app.job_runs import dispatch_file
    from planner.executor.model.jobs import jobs_from_instance
    from planner.executor.slurm_export import export_slurm

    with guard():
        if output.exists() and not output.is_dir():
            raise InputError("not a folder", str(output))
        dispatch = dispatch_file(plan)
        if dispatch is None:
            raise InputError("not a dispatch file of planner solve (plan with --no-preempt)",
                             str(plan))  # fmt: skip
        workload = jobs_from_instance(instance)
        done = export_slurm(dispatch, workload, output, command, time_scale)
        typer.echo(f"{plan} -> {output}: {done.line}")


@app.command("launch")
def launch_cmd(
    instance: Annotated[Path, typer.Argument(help="The instance the plan was made for.")],
    plan: Annotated[Path, typer.Argument(help="Its plan: planner solve --no-preempt -o PLAN.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Run file to write (planner gantt draws it).")
    ],
    time_scale: Annotated[
        float, typer.Option(help="Scale the planned times (0.001: an hour runs in 3.6 s).")
    ] = 1.0,
    command: Annotated[
        str,
        typer.Option(
            help="Each job's command; {job}, {gpus} and {seconds} (its planned run time, "
            "scaled) are filled in."
        ),
    ] = "sleep {seconds}",
    scripts: Annotated[
        Path | None,
        typer.Option(help="Keep the batch scripts and the jobs' output in this folder."),
    ] = None,
    wait_limit: Annotated[
        float | None,
        typer.Option(min=1, help="Wall seconds to wait (default: twice the scaled plan + 120)."),
    ] = None,
) -> None:
    """Run a plan without preemption on the Slurm that SLURM_CONF names: submit its batch
    scripts, wait, read each job's nodes, start and end back, and print the planned and
    realized makespan and mean JCT side by side (planner/app/launch.py)."""
    from planner.app.job_runs import dispatch_file
    from planner.app.launch import launch, progress, run_data, summary
    from planner.executor.model.jobs import jobs_from_instance

    with guard():
        check_output(output, inputs=[instance, plan], suffixes=(".json",), what="the run file")
        if scripts is not None and scripts.exists() and not scripts.is_dir():
            raise InputError("not a folder", str(scripts))
        dispatch = dispatch_file(plan)
        if dispatch is None:
            raise InputError("not a dispatch file of planner solve (plan with --no-preempt)",
                             str(plan))  # fmt: skip
        workload = jobs_from_instance(instance)
        done = launch(dispatch, workload, time_scale, command, scripts, wait_limit,
                      progress(True))  # fmt: skip
        for key, value in summary(done, dispatch):
            typer.echo(f"{key:<15}{value}")
        write_text(output, json.dumps(run_data(done, plan.name), indent=1) + "\n")
        typer.echo(f"run written to {output}")


@app.command()
def generate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Instance file to write.")],
    jobs: Annotated[
        int,
        typer.Option(min=1, max=MAX_JOBS, help=f"Number of training jobs (1 to {MAX_JOBS:,})."),
    ] = 100,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help=f"Random seed (0 to {MAX_SEED}).")
    ] = 0,
    nodes: Annotated[int, typer.Option(min=1, max=MAX_NODES, help=NODES_HELP)] = 8,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=MAX_GPUS, help=GPUS_HELP)] = 8,
    time_unit: Annotated[str, typer.Option(help="Length of a tick.")] = "1min",
    blocks: Annotated[int, typer.Option(min=1, max=MAX_BLOCKS, help=BLOCKS_HELP)] = 1,
    arrival_rate: Annotated[
        float | None,
        typer.Option(
            min=MIN_RATE,
            max=MAX_RATE,
            help=f"Jobs per hour (Poisson, {MIN_RATE:g} to {MAX_RATE:g}); default: all at 0.",
        ),
    ] = None,
    placement: Annotated[str, typer.Option(help=PLACEMENT_HELP)] = "pooled",
    hybrid: Annotated[
        bool,
        typer.Option(
            "--hybrid",
            help="Hybrid-parallel transformer jobs instead: each lists its data x pipeline "
            "x tensor plans with their step times and GPU memory (elastic: run them with "
            "planner policy ... goodput).",
        ),
    ] = False,
    gpu_memory: Annotated[
        int, typer.Option(min=1, max=1024, help="--hybrid: GB of memory per GPU.")
    ] = 16,
) -> None:
    """Write a seeded synthetic batch of catalog training jobs (GPU mix of published traces)."""
    from planner.dl.workloads import GPU_MIX
    from planner.dl.workloads import generate_batch as make

    with guard():
        check_output(output, suffixes=NATIVE)
        if hybrid:
            from planner.dl.hybrid import generate_hybrid

            if blocks != 1 or placement != "pooled":
                raise InputError("--hybrid: the jobs are elastic; give no --blocks nor --placement")
            data = generate_hybrid(jobs, seed, nodes, gpus_per_node, gpu_memory, arrival_rate)
            data["time_unit"] = time_unit
            problem = _write_instance(data, output)
            typer.echo(f"wrote {output} ({jobs} hybrid-parallel jobs, {len(problem.tasks)} tasks)")
            return
        total = nodes * gpus_per_node
        too_large = [g for g in GPU_MIX if g > total]
        if too_large:
            fits = [g for g in GPU_MIX if g <= total] or [total]
            typer.echo(
                f"note: the cluster has {total} GPU(s): jobs get {', '.join(map(str, fits))} "
                f"GPU(s), not the mix's {', '.join(map(str, too_large))}",
                err=True,
            )
        if jobs >= LARGE_BATCH:
            typer.echo(f"generating {jobs:,} jobs and checking the instance ...", err=True)
        data = make(jobs, seed, nodes, gpus_per_node, time_unit, blocks, arrival_rate, placement)
        problem = _write_instance(data, output)
        typer.echo(f"wrote {output} ({jobs} jobs, {len(problem.tasks)} tasks)")


@app.command()
def schema(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to a .json file instead of stdout."),
    ] = None,
) -> None:
    """Print the JSON Schema of native instance files."""
    from planner.io.schema import schema_text

    if output is None:
        typer.echo(schema_text(), nl=False)
        return
    with guard():
        check_output(output, suffixes=(".json",), what="the schema file")
    write_text(output, schema_text())

"""The commands that run plans and policies and say what they deliver, one path each:

- ``planner run INSTANCE PLAN``: one run of a plan;
- ``planner study INSTANCE PLAN --runs N``: a Monte Carlo study of a plan (or of a
  policy, ``--policy``);
- ``planner policy INSTANCE NAME``: one run of a job-level policy;
- ``planner online INSTANCE``: the planner re-planning as jobs arrive, beside baselines.

Training jobs run in the job-level executor; a task graph without training jobs in the
task-level replay. The commands register on :data:`planner.app.base.app` when this
module is imported, which :mod:`planner.app.cli` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from planner.app.base import (
    MAX_WORKERS,
    TIME_LIMIT_RANGE,
    app,
    guard,
    refuse_run_as_plan,
    seconds_of,
    show,
    time_limit_option,
)
from planner.app.colocation import FORMATS as CHART_FORMATS
from planner.app.gantt import save_run_gantt
from planner.app.job_runs import JobLevel, dispatch_file, dispatch_setting
from planner.app.online_runs import (
    ONLINE_TIME_LIMIT,
    JobOnline,
    online_task_graph,
    planner_options,
)
from planner.app.run_output import (
    HISTOGRAM_FORMATS,
    distribution_table,
    more_runs,
    refuse,
    save_histogram,
    task_rows,
)
from planner.disturbances import MAX_RUNS, MAX_SEED, MAX_SIGMA, Disturbances
from planner.errors import InputError
from planner.files import write_text
from planner.io.instance import load_instance
from planner.io.paths import check_output
from planner.replay.simulate import simulate, summarize
from planner.schedule import load_schedule
from planner.study import Study
from planner.times import tick_label

Instance = Annotated[Path, typer.Argument(help="Instance file (the plan's, the jobs').")]
Plan = Annotated[Path, typer.Argument(help="The plan: a schedule or dispatch file (.json, .csv).")]
NoiseOpt = Annotated[
    str | None,
    typer.Option(
        "--noise",
        help="Noise on every duration: lognormal:SIGMA (0 <= SIGMA <= "
        f"{MAX_SIGMA:g}) or uniform:A (0 <= A < 1); job by job one factor per job.",
    ),
]
SlowdownOpt = Annotated[
    str | None,
    typer.Option(
        "--slowdown",
        help="Interference slowdown: muri (Muri's factors, the default), none, or a k,factor CSV.",
    ),
]
FailOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail",
        help="A node failure NODE@TIME[+DOWN]: whole ticks or times with a unit "
        "(node3@2h+30min); repeat for more, a node failing again only once it is back.",
    ),
]
WorkConservingOpt = Annotated[
    bool,
    typer.Option(
        "--work-conserving",
        help="Start every job (task) as soon as resources allow, not at its planned start.",
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed", min=0, max=MAX_SEED, help=f"Seed of the noise (first run; 0 to {MAX_SEED})."
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the run (.json); job by job, .csv writes its co-location table instead.",
    ),
]
GanttOpt = Annotated[
    Path | None,
    typer.Option(
        "--gantt",
        help="Chart of the run: job by job its co-location chart (.png, .svg, .pdf), task by "
        "task its Gantt chart (also .html).",
    ),
]
InterleaveOpt = Annotated[
    str | None,
    typer.Option(
        "--interleave",
        help="Job by job: the interleaving model that sets every GPU set's speed, muri "
        "(Muri's rotation) or fluid (processor sharing); default the instance's.",
    ),
]
DataSlotsOpt = Annotated[
    float | None,
    typer.Option(
        "--data-slots",
        min=0.1,
        max=64,
        help="Job by job: the fluid model's data slots per GPU (0.1 to 64; default the "
        "instance's, 1).",
    ),
]
RestartOpt = Annotated[
    bool | None,
    typer.Option(
        "--restart/--no-restart",
        help="Job by job: charge each running job its model's restart overhead on every "
        "interval between events, as Muri's simulator does (the default).",
    ),
]
PowerCapOpt = Annotated[
    float | None,
    typer.Option(
        "--power-cap",
        min=1.0,
        max=1e9,
        help="Job by job: watts the cluster may draw (1 to 1e9); every running job slows "
        "alike when the GPUs would draw more (default: the instance's power.cap, else none).",
    ),
]
NodesOpt = Annotated[
    int | None,
    typer.Option(
        "--nodes", min=1, max=10_000, help="On a Muri trace (.csv): nodes (1 to 10,000; default 8)."
    ),
]
GpusPerNodeOpt = Annotated[
    int | None,
    typer.Option(
        "--gpus-per-node",
        min=1,
        max=64,
        help="On a Muri trace (.csv): GPUs per node (1 to 64; default 8).",
    ),
]


@app.command("run")
def run_cmd(
    instance: Instance,
    plan: Plan,
    noise: NoiseOpt = None,
    slowdown: SlowdownOpt = None,
    fail: FailOpt = None,
    work_conserving: WorkConservingOpt = False,
    seed: SeedOpt = 0,
    output: OutputOpt = None,
    gantt: GanttOpt = None,
    interleave: InterleaveOpt = None,
    data_slots: DataSlotsOpt = None,
    restart: RestartOpt = None,
    power_cap: PowerCapOpt = None,
) -> None:
    """Run a plan once and report what it delivers.

    Training jobs run in the job-level executor (its model on one line): the makespan
    against the model's bounds, the mean and p99 JCT, fairness, the energy, the plan's
    optimism and the audit's verdict. A task graph without training jobs is replayed
    task by task: the realized makespan, JCTs, utilisation, lost work and the
    validator's verdict on the realized schedule.
    """
    _plan_or_policy(
        instance, plan, None, _Disturb(noise, slowdown, fail or [], work_conserving, seed),
        _Model(interleave, data_slots, restart, power_cap), output, gantt,
    )  # fmt: skip


@app.command("report")
def report_cmd(
    run: Annotated[
        Path, typer.Argument(help="A job-level run file (planner policy|run ... -o RUN.json).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The page to write (.html).")],
) -> None:
    """Write one self-contained HTML page of a job-level run: its figures, its chart per
    GPU with the share of the GPUs held, the JCT distribution and a per-job table sorted
    by a click (no network needed to view it)."""
    from planner.app.colocation import job_level_run
    from planner.app.report import write_report
    from planner.io.paths import check_output

    with guard():
        data = job_level_run(run)
        if data is None:
            raise InputError("not a job-level run file (planner policy ... -o RUN.json)", str(run))
        check_output(output, inputs=[run], suffixes=(".html",), what="the report")
        report = write_report(data, output)
        typer.echo(f"report written to {output} ({report.jobs} jobs, {len(report.charts)} charts)")


@app.command("study")
def study_cmd(
    instance: Instance,
    plan: Annotated[
        Path | None,
        typer.Argument(help="The plan: a schedule file (.json, .csv); or give --policy."),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(help="Study a job-level policy instead of a plan (see planner policy)."),
    ] = None,
    runs: Annotated[
        int,
        typer.Option(
            min=2,
            max=MAX_RUNS,
            help=f"Runs, seeds SEED .. SEED + RUNS - 1 (2 to {MAX_RUNS:,}).",
        ),
    ] = 100,
    jobs: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_WORKERS, help=f"Worker processes of the runs (1 to {MAX_WORKERS})."
        ),
    ] = 1,
    histogram: Annotated[
        Path | None,
        typer.Option(help="Histogram of the realized makespans (.png, .svg or .pdf)."),
    ] = None,
    noise: NoiseOpt = None,
    slowdown: SlowdownOpt = None,
    fail: FailOpt = None,
    work_conserving: WorkConservingOpt = False,
    seed: SeedOpt = 0,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the run of SEED with the study's figures (.json).",
        ),
    ] = None,
    interleave: InterleaveOpt = None,
    data_slots: DataSlotsOpt = None,
    restart: RestartOpt = None,
    power_cap: PowerCapOpt = None,
    nodes: NodesOpt = None,
    gpus_per_node: GpusPerNodeOpt = None,
) -> None:
    """Run a plan (or a policy) under seeded disturbances RUNS times: the run of the first
    seed, then the mean, p5, p50, p95 and maximum of the makespan and the mean JCT.

    The runs are streamed in --jobs processes; Ctrl-C stops the study within about a
    second and keeps the runs finished (exit status 130).
    """
    with guard():
        if (plan is None) == (policy is None):
            raise InputError("give the plan (PLAN) or --policy NAME, one of them")
        if output is not None and output.suffix.lower() != ".json":
            raise InputError("--output: a study writes its run and figures as .json", str(output))
    _plan_or_policy(
        instance, plan, policy, _Disturb(noise, slowdown, fail or [], work_conserving, seed),
        _Model(interleave, data_slots, restart, power_cap), output, None,
        runs=runs, jobs=jobs, histogram=histogram, trace=(nodes, gpus_per_node),
    )  # fmt: skip


@app.command("policy")
def policy_cmd(
    instance: Annotated[
        Path, typer.Argument(help="Training jobs: a Muri trace (.csv) or a cluster-form file.")
    ],
    name: Annotated[
        str,
        typer.Argument(
            help="The policy: fifo; the peers srtf, srsf, tiresias, muri-s, muri-l; ours lp-groups "
            "(makespan), srsf-pack, jct-groups, ftf-groups, fair-groups (completion time, "
            "fairness); planner (the planner online, searching at every event); Gavel's "
            "gavel-*, Synergy's synergy-*; for elastic jobs Pollux's pollux, "
            "pollux-tiresias, pollux-optimus and ours goodput, goodput-pack (co-locating); "
            "or your own, FILE.py:CLASS (a planner.executor.policies.Policy)."
        ),
    ],
    time_limit: Annotated[
        float | None,
        time_limit_option(
            f"NAME planner: seconds of search per event (default {ONLINE_TIME_LIMIT:g}; "
            f"{TIME_LIMIT_RANGE}).",
        ),
    ] = None,
    noise: NoiseOpt = None,
    slowdown: SlowdownOpt = None,
    fail: FailOpt = None,
    seed: SeedOpt = 0,
    output: OutputOpt = None,
    gantt: GanttOpt = None,
    interleave: InterleaveOpt = None,
    data_slots: DataSlotsOpt = None,
    restart: RestartOpt = None,
    power_cap: PowerCapOpt = None,
    nodes: NodesOpt = None,
    gpus_per_node: GpusPerNodeOpt = None,
) -> None:
    """Run a job-level policy on training jobs in the job-level executor: at every arrival
    and completion it decides which jobs run, in which groups and where.

    Prints what planner run prints of a plan: the makespan against the model's bounds,
    the mean and p99 JCT, fairness, the energy and the audit's verdict.
    """
    with guard():
        if time_limit is not None and name != "planner":
            raise InputError(f"--time-limit is the planner's search per event; {name} has none")
    _plan_or_policy(
        instance, None, name, _Disturb(noise, slowdown, fail or [], False, seed),
        _Model(interleave, data_slots, restart, power_cap), output, gantt,
        trace=(nodes, gpus_per_node), time_limit=time_limit,
    )  # fmt: skip


@app.command("online")
def online_cmd(
    instance: Instance,
    solver: Annotated[
        str | None,
        typer.Option(
            "--solver",
            "-s",
            help="The solver of every re-plan (training jobs: portfolio, the default, "
            "searches in the executor's model; a static engine plans in the static block "
            "model; task graphs: sgs by default).",
        ),
    ] = None,
    time_limit: Annotated[
        float | None,
        time_limit_option(
            f"Seconds per re-plan, for solvers with a limit (default {ONLINE_TIME_LIMIT:g}; "
            f"{TIME_LIMIT_RANGE}); sgs makes one pass and takes none.",
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="An option of --solver as KEY=VALUE (read as YAML), e.g. rule=spt; repeat "
            "for more.",
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            help="Also run this policy on the same jobs (training jobs: muri-s, srsf-pack, "
            "FILE.py:CLASS, ...), or this solver (task graphs: exclusive-srtf, ...).",
        ),
    ] = None,
    replan_every: Annotated[
        str,
        typer.Option(
            help="Task graphs: re-plan at every 'arrival', or every PERIOD: whole ticks or a "
            "time with a unit (30min, 2h). Training jobs re-plan at every event."
        ),
    ] = "arrival",
    noise: NoiseOpt = None,
    slowdown: SlowdownOpt = None,
    fail: FailOpt = None,
    work_conserving: Annotated[
        bool,
        typer.Option(
            "--work-conserving",
            help="Task graphs: start every task as soon as resources allow.",
        ),
    ] = False,
    seed: SeedOpt = 0,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the planner's run (.json).")
    ] = None,
    gantt: GanttOpt = None,
    interleave: InterleaveOpt = None,
    data_slots: DataSlotsOpt = None,
    restart: RestartOpt = None,
    power_cap: PowerCapOpt = None,
    nodes: NodesOpt = None,
    gpus_per_node: GpusPerNodeOpt = None,
) -> None:
    """Plan online: a job is unknown until it arrives, and the planner plans anew as jobs
    arrive (finish, fail), beside every --baseline on the same jobs, in one table: jobs,
    re-plans, mean and p99 JCT, makespan, mean wait, worst finish-time fairness and the
    planner's time per re-plan.
    """
    from planner.executor.model.jobs import any_elastic
    from planner.executor.runs import DEFAULT_SLOWDOWN, Setting, dl_workload

    with guard():
        workload, why = dl_workload(instance)
        if workload is not None and any_elastic(workload.jobs):
            raise InputError(
                "elastic jobs are run by the executor's policies (planner policy INSTANCE "
                "goodput); the online planner does not plan them yet"
            )
        planner = planner_options(solver, time_limit, option or [], workload is not None)
        if workload is not None:
            setting = Setting(
                interleave, data_slots, slowdown or DEFAULT_SLOWDOWN,
                True if restart is None else restart,
            )  # fmt: skip
            online_run = JobOnline(setting, power_cap, planner)
            online_run.run(instance, workload, noise, seed, fail or (), output, gantt,
                           replan_every, work_conserving, baseline or [], nodes or 8,
                           gpus_per_node or 8)  # fmt: skip
            return
        model = _Model(interleave, data_slots, restart, power_cap)
        trace = {"--nodes": nodes is not None, "--gpus-per-node": gpus_per_node is not None}
        refuse(model.given() | trace, f"runs job by job; {instance} is {why} (task-level "
               "online replay)")  # fmt: skip
    online_task_graph(instance, noise, slowdown or DEFAULT_SLOWDOWN, fail or (), work_conserving,
                      seed, output, gantt, replan_every, planner, baseline or [])  # fmt: skip


@app.command("simulate", hidden=True, context_settings={"ignore_unknown_options": True})
def simulate_cmd(
    args: Annotated[list[str] | None, typer.Argument(hidden=True)] = None,
) -> None:
    """Replaced: planner run, planner study, planner policy and planner online."""
    with guard():
        raise InputError(
            "planner simulate is now four commands: planner run INSTANCE PLAN, planner study "
            "INSTANCE PLAN --runs N, planner policy INSTANCE NAME, planner online INSTANCE"
        )


@dataclass(frozen=True)
class _Disturb:
    """The disturbances given on the command line, as given."""

    noise: str | None
    slowdown: str | None
    fail: list[str]
    work_conserving: bool
    seed: int


@dataclass(frozen=True)
class _Model:
    """The job-level executor's model options given on the command line, as given."""

    interleave: str | None
    data_slots: float | None
    restart: bool | None
    power_cap: float | None

    def given(self) -> dict[str, bool]:
        """Which options were given, by their flags."""
        return {
            "--interleave": self.interleave is not None,
            "--data-slots": self.data_slots is not None,
            "--restart/--no-restart": self.restart is not None,
            "--power-cap": self.power_cap is not None,
        }


def _plan_or_policy(
    instance: Path,
    schedule: Path | None,
    policy: str | None,
    d: _Disturb,
    m: _Model,
    output: Path | None,
    gantt: Path | None,
    runs: int = 1,
    jobs: int = 1,
    histogram: Path | None = None,
    trace: tuple[int | None, int | None] = (None, None),
    time_limit: float | None = None,
) -> None:
    """Run a plan (``schedule``) or a policy once, or ``runs`` times, and report it: job by
    job for training jobs, else task by task."""
    from planner.app.gantt import FORMATS
    from planner.executor.runs import DEFAULT_SLOWDOWN, Setting, dl_workload

    nodes, gpus_per_node = trace
    with guard():
        plan_data = None
        if schedule is not None:
            hint = "replay the plan it ran (planner gantt draws a run)"
            plan_data = refuse_run_as_plan(schedule, hint)
        planner = None
        if policy == "planner":
            planner = planner_options(None, time_limit, [], job_level=True)
        slowdown = d.slowdown or DEFAULT_SLOWDOWN
        if policy is not None:  # a policy runs training jobs, or says why it cannot
            from planner.executor.model.jobs import jobs_from_instance

            workload, why = jobs_from_instance(instance), ""
        else:
            workload, why = dl_workload(instance)
        if d.seed + runs - 1 > MAX_SEED:
            raise InputError(f"--seed {d.seed} --runs {runs}: the last seed passes {MAX_SEED}")
        inputs = [instance, *([schedule] if schedule is not None else [])]
        if histogram is not None:
            check_output(histogram, inputs=inputs, suffixes=HISTOGRAM_FORMATS, what="the histogram")
        if workload is not None:
            if output is not None:
                suffixes = (".json", ".csv")
                check_output(output, inputs=inputs, suffixes=suffixes, what="the run file")
            if gantt is not None:
                check_output(gantt, inputs=inputs, suffixes=CHART_FORMATS, what="the chart file")
            restarts = True if m.restart is None else m.restart
            setting = Setting(m.interleave, m.data_slots, slowdown, restarts)
            if m.data_slots is not None and setting.model(workload).kind != "fluid":
                raise InputError(
                    "--data-slots: data slots are fluid's; muri loads over two of four slots"
                )
            table = dispatch_file(schedule, plan_data) if schedule is not None else None
            if table is not None:
                setting = dispatch_setting(
                    table,
                    {"--interleave": m.interleave, "--data-slots": m.data_slots,
                     "--slowdown": d.slowdown, "--restart": m.restart},
                    {"--noise": d.noise, "--fail": d.fail,
                     "--work-conserving": d.work_conserving, "--power-cap": m.power_cap},
                )  # fmt: skip
            job_level = JobLevel(setting, m.power_cap, planner, table)
            job_level.run(instance, workload, schedule, policy, nodes or 8, gpus_per_node or 8,
                          d.work_conserving, output, d.noise, d.seed, d.fail, runs, jobs,
                          histogram, gantt)  # fmt: skip
            return
        refuse(m.given(), f"runs job by job; {instance} is {why} (task-level replay)")
        refuse(
            {"--nodes": nodes is not None, "--gpus-per-node": gpus_per_node is not None},
            f"applies to a Muri trace; {instance} is {why}",
        )
        if output is not None:
            check_output(output, inputs=inputs, suffixes=(".json",), what="the run file")
        if gantt is not None:
            check_output(gantt, inputs=inputs, suffixes=FORMATS, what="the chart file")
        problem = load_instance(instance)
        dist = Disturbances.parse(d.noise, slowdown, d.fail, d.work_conserving, problem.time_unit)
        plan = load_schedule(schedule)
        try:
            ex = simulate(problem, plan, dist, d.seed)
        except KeyboardInterrupt:
            typer.echo("interrupted: no run had finished; nothing was written", err=True)
            raise typer.Exit(130) from None
        typer.echo(f"task-level replay: {instance} is {why}")
        if runs > 1:
            typer.echo(
                f"The run of seed {d.seed} (the first of {runs}; their distribution follows)"
            )
        show(task_rows(ex, schedule))
        study = Study(runs)
        study.add(summarize(ex))
        if runs > 1:
            more_runs(problem, plan, d.seed, dist, runs, jobs, study)
            typer.echo("")
            if study.interrupted:
                typer.echo(
                    f"interrupted: {len(study)} of {runs} runs finished; the table and the "
                    "files below hold them"
                )
            scale, unit = seconds_of(ex.problem.time_unit)
            for line in distribution_table(study, unit, scale):
                typer.echo(line)
        if output is not None:
            data = ex.to_json()
            if runs > 1:
                data["monte_carlo"] = study.figures()
            write_text(output, json.dumps(data, indent=1) + "\n")
            typer.echo(f"run written to {output}")
        if gantt is not None:
            save_run_gantt(ex, gantt)
            typer.echo(f"chart written to {gantt}")
        if histogram is not None:
            unit = tick_label(ex.problem.time_unit)
            save_histogram(study, ex.planned_makespan, unit, histogram)
            typer.echo(f"histogram written to {histogram}")
    if study.invalid:
        typer.echo(f"error: {study.invalid} realized schedules are invalid", err=True)
        raise typer.Exit(1)
    if study.interrupted:
        raise typer.Exit(130)

"""Runs of DL instances in the one executor: which files it runs, the one set of defaults
and the line that states them, and a plan or a policy run once or as a Monte Carlo study.

An instance with training jobs (a cluster-form file, a Muri trace, an imported or
generated batch) runs in the job-level executor (:func:`planner.executor.loop.run_policy`)
on every path that says what a plan delivers. A task graph without training jobs (PSPLIB,
users' segment profiles, ``interleave: phases``) runs in the task-level replay
(:mod:`planner.replay.loop`), which says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.disturbances import Noise, Slowdown
from planner.errors import InputError
from planner.executor.model.jobs import (
    ExecutorJob,
    Outage,
    Workload,
    check_jobs,
    jobs_from_instance,
    model_of,
    plan_of,
    with_noise,
)
from planner.executor.model.power import WATTS
from planner.study import RunSummary

if TYPE_CHECKING:
    from planner.executor.configurations import NodeRoom
    from planner.executor.loop import ExecutorRun
    from planner.executor.policies import Policy
    from planner.interleave import Interleave
    from planner.interrupt import Halt
    from planner.model import Problem
    from planner.schedule import Schedule

DEFAULT_SLOWDOWN = "muri"
"""The interference slowdown of every run unless told otherwise: Muri's measured factors."""
DEFAULT_RESTART = True
"""Whether every run charges restart overheads unless told otherwise (Muri's simulator
does)."""


@dataclass(frozen=True)
class Setting:
    """The model of a job-level run: the interleaving model (``None``: the file's, ``muri``
    for a trace), its data slots (``None``: the file's), the slowdown (``muri``, ``none`` or
    a ``k,factor`` CSV) and whether restart overheads are charged. The defaults are the
    one set every command uses."""

    interleave: str | None = None
    data_slots: float | None = None
    slowdown: str = DEFAULT_SLOWDOWN
    restart: bool = DEFAULT_RESTART

    def model(self, workload: Workload) -> Interleave:
        """The :class:`~planner.interleave.Interleave` of this setting over ``workload``'s.

        Raises
        ------
        InputError
            For a bad slowdown spec or model name (:class:`~planner.interleave.Interleave`).
        """
        slowdown = Slowdown.parse(self.slowdown)
        return model_of(workload, self.interleave, slowdown, self.data_slots)

    def line(self, model: Interleave) -> str:
        """The setting on one line, e.g. ``fluid, 1 data slot per GPU, Muri's slowdown
        factors, restart overheads``: printed beside every figure of a run."""
        if model.table is not None:
            restart = "each job's restart time" if self.restart else "no restart overhead"
            return f"table (measured rates per GPU type, alone and in pairs), {restart}"
        parts = [model.kind]
        if model.kind == "fluid":
            plural = "" if model.data_slots == 1 else "s"
            parts.append(f"{model.data_slots:g} data slot{plural} per GPU")
        if self.slowdown == "muri":
            parts.append("Muri's slowdown factors")
        elif self.slowdown == "none":
            parts.append("no slowdown")
        else:
            parts.append(f"slowdown {self.slowdown}")
        parts.append("restart overheads" if self.restart else "no restart overhead")
        return ", ".join(parts)


def dl_workload(
    path: str | Path, data: Mapping[str, Any] | None = None
) -> tuple[Workload | None, str]:
    """The workload of an instance file with training jobs, and ``""``; or ``None`` and why
    the task-level replay runs it instead. ``data``: the file already parsed
    (:attr:`planner.io.instance.InstanceFile.data`), so that it is not read again.

    Raises
    ------
    InputError
        If the file cannot be read or parsed.
    """
    from planner.io.instance import parse_native_text, read_text

    path = Path(path)
    if path.suffix.lower() == ".csv":
        return jobs_from_instance(path), ""
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        return None, "a task graph without training jobs"
    if data is None:
        try:
            data = parse_native_text(read_text(path), path.suffix.lower() == ".json")
        except InputError as exc:
            raise exc.at(str(path)) from None
    if not isinstance(data, Mapping) or "cluster" not in data:
        return None, "a task graph without training jobs"
    if data.get("interleave") == "phases":
        return None, "interleave: phases runs each block's segments back to back"
    try:
        return jobs_from_instance(path, data), ""
    except InputError as exc:
        return None, f"the executor cannot run it: {exc.cause}"


@dataclass
class Dispatch:
    """One job-level run, ready to repeat: a policy (or ``plan``) over jobs on a cluster
    under a model, with failures, a power cap and noise. Picklable, so that a Monte Carlo
    study's workers each hold one (:func:`planner.study.stream_runs`)."""

    jobs: list[ExecutorJob]
    policy: str
    nodes: int
    gpus_per_node: int
    model: Interleave
    restart: bool = DEFAULT_RESTART
    placed: dict[str, tuple[int, ...]] | None = None
    """``policy="plan"``: the nodes of every job (:func:`plan_of`)."""
    outages: list[Outage] = field(default_factory=list)
    power_cap: float | None = None
    watts: tuple[float, float] = WATTS
    noise: Noise | None = None
    planned: float | None = None
    """The plan's makespan (s), for the optimism."""
    make: Callable[[], Policy] | None = None
    """Makes a new policy for every run, where a name is not enough (the online planner:
    :func:`planner.replay.planner_policy.online_planner`); ``policy`` names it."""
    types: tuple[str, ...] = ()
    """Each node's GPU type under the ``table`` model (empty: one type)."""
    type_watts: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Under the ``table`` model: a GPU's (busy, idle) watts per type."""
    cpus: tuple[float, ...] = ()
    """Each node's CPU cores (empty: not held)."""
    mems: tuple[float, ...] = ()
    """Each node's GB of host memory (empty: not held)."""

    @property
    def room(self) -> NodeRoom:
        """Its nodes' CPU cores and host memory, as plans of configurations keep within."""
        from planner.executor.configurations import NodeRoom

        return NodeRoom(self.jobs, self.cpus, self.mems, self.gpus_per_node)

    def __post_init__(self) -> None:
        check_jobs(self.jobs, self.nodes, self.gpus_per_node, self.placed)

    def jobs_of(self, seed: int) -> list[ExecutorJob]:
        """The jobs of the run of ``seed``: each with its noise factor (one per job)."""
        return self.jobs if self.noise is None else with_noise(self.jobs, self.noise, seed)

    def run(
        self,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
        halt: Halt | None = None,
        until: float = math.inf,
    ) -> ExecutorRun:
        """The run of ``seed`` (to ``until`` seconds: the executor's state there).

        Raises
        ------
        InputError
            As :func:`~planner.executor.loop.run_policy`.
        """
        from planner.executor.loop import run_policy

        return run_policy(
            self.jobs_of(seed),
            self.make() if self.make is not None else self.policy,
            self.nodes,
            self.gpus_per_node,
            self.model,
            self.restart,
            progress=progress,
            halt=halt,
            plan=self.placed,
            outages=self.outages,
            power_cap=self.power_cap,
            watts=self.watts,
            until=until,
            types=self.types,
            type_watts=self.type_watts,
            cpus=self.cpus,
            mems=self.mems,
        )

    def summary(self, seed: int, run: ExecutorRun, valid: bool | None = None) -> RunSummary:
        """What a Monte Carlo study keeps of ``run`` (seconds), with its audit's verdict
        (``valid``, if the caller audited it already)."""
        from planner.executor.audit import audit
        from planner.executor.fairness import fairness

        ok = valid
        if ok is None:
            ok = not audit(run, self.jobs_of(seed), self.nodes * self.gpus_per_node)
        optimism = run.makespan / self.planned if self.planned else float("nan")
        fair = fairness(run, self.jobs_of(seed), self.nodes * self.gpus_per_node).overall
        return RunSummary(seed, run.makespan, optimism, run.mean_jct, run.p99_jct, 0, ok,
                          fair.ftf_max, fair.jain, fair.longest_wait)  # fmt: skip

    def __call__(self, seed: int) -> RunSummary:
        """The figures of the run of ``seed``."""
        return self.summary(seed, self.run(seed))


def dispatch_of(
    workload: Workload,
    setting: Setting,
    policy: str = "plan",
    plan: tuple[Problem, Schedule] | None = None,
    work_conserving: bool = False,
    outages: list[Outage] | None = None,
    noise: Noise | None = None,
    power_cap: float | None = None,
) -> Dispatch:
    """The :class:`Dispatch` of ``policy``, or of a placed ``plan`` (the problem compiled
    from the workload's file and its schedule), on ``workload`` under ``setting``; the
    power cap ``power_cap`` or the file's.

    Raises
    ------
    InputError
        As :func:`plan_of` and :func:`check_jobs`.
    """
    from planner.times import seconds_per_tick

    model = setting.model(workload)
    jobs, placed, planned = workload.jobs, None, None
    if plan is not None:
        problem, schedule = plan
        jobs, placed = plan_of(problem, schedule, jobs, work_conserving)
        planned = schedule.makespan(problem) * seconds_per_tick(problem.time_unit)
    return Dispatch(
        jobs=list(jobs),
        policy=policy,
        nodes=workload.nodes or 8,
        gpus_per_node=workload.gpus_per_node or 8,
        model=model,
        restart=setting.restart,
        placed=placed,
        outages=outages or [],
        power_cap=power_cap if power_cap is not None else workload.power_cap,
        watts=workload.watts,
        noise=noise,
        planned=planned,
        types=workload.types,
        type_watts=workload.type_watts,
        cpus=workload.cpus,
        mems=workload.mems,
    )


def judge(
    dispatch: Dispatch,
    runs: int = 1,
    seed: int = 0,
    jobs: int = 1,
    first: ExecutorRun | None = None,
) -> Mapping[str, float]:
    """``dispatch`` run ``runs`` times (seeds ``seed ..``; ``jobs`` worker processes): the
    mean and 95th percentile of the makespan, and the means over the runs of the mean
    and p99 JCT, the worst finish-time fairness, Jain's index and the longest wait
    (seconds; :mod:`planner.executor.fairness`). ``first``: the run of ``seed``, done
    already.

    Raises
    ------
    PlannerError
        If a run fails its audit (a bug).
    """
    from planner.errors import PlannerError
    from planner.study import Study, stream_runs

    if first is None:
        study = stream_runs(dispatch, runs, seed, jobs)
    else:
        study = Study(runs)
        study.add(dispatch.summary(seed, first))
        if runs > 1:
            stream_runs(dispatch, runs - 1, seed + 1, jobs, study=study)
    if study.invalid:
        raise PlannerError(f"{study.invalid} job-level runs fail their audit (a bug)")
    makespans, jct = study.column("makespan"), study.column("mean_jct")
    return {
        "makespan_mean": float(np.mean(makespans)),
        "makespan_p95": float(np.percentile(makespans, 95)),
        "jct_mean": float(np.mean(jct)),
        "jct_p99": float(np.mean(study.column("p99_jct"))),
        "ftf_max": float(np.mean(study.column("ftf_max"))),
        "jain": float(np.mean(study.column("jain"))),
        "wait_max": float(np.mean(study.column("longest_wait"))),
    }


def workload_problem(path: str | Path, nodes: int = 8, gpus_per_node: int = 8) -> Problem:
    """The problem the online planner plans for the workload file ``path``: a cluster-form
    instance compiled, or a Muri trace imported on ``nodes`` x ``gpus_per_node`` GPUs with
    its jobs placed on nodes (:func:`planner.dl.workloads.import_muri`).

    Raises
    ------
    InputError
        If the file cannot be read or compiled.
    """
    from planner.dl.workloads import import_muri
    from planner.io.instance import load_instance, problem_from_data

    path = Path(path)
    if path.suffix.lower() == ".csv":
        data = import_muri(path, nodes, gpus_per_node, placement="node")
        return problem_from_data(data)
    return load_instance(path)

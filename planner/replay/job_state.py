"""A job-level run's state at a tick, as re-planning freezes it: the run of a plan
stopped there (:func:`state_of_run`), or again from a run file (:func:`state_from_job_run`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.disturbances import Noise
from planner.errors import InputError
from planner.executor.runs import Setting, dispatch_of, dl_workload

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun
    from planner.model import Problem
    from planner.replay.state import State
    from planner.schedule import Schedule

RAN = "ran"
"""The name of the demand-free segment that stands for work an executed run did."""


def state_of_run(
    problem: Problem,
    schedule: Schedule,
    run: ExecutorRun,
    iterations: Mapping[str, int],
    at: int,
) -> State:
    """The state at tick ``at`` of a job-level run of a plan of ``problem`` stopped there
    (:meth:`Dispatch.run` with ``until``; ``iterations``: every job's), as re-planning
    freezes it.

    Each job's training blocks (its tasks on GPUs, in planned order) share its
    iterations by their least durations, as the dispatch does. Blocks whose iterations
    the run had done are finished: frozen between the job's first run and ``at`` (or
    its finish) in proportion to their work, each as one demand-free :data:`RAN`
    segment (the run, not the plan, says what they held). The block in progress
    continues on its nodes with the rest of its segments, scaled to the work it has
    left, if its job runs at ``at``; if its job waits, it is planned anew with that work
    alone (:attr:`State.left`). Tasks off the GPUs (stage-in, checkpoint) finish with
    the job's first run and its finish. Nodes down at ``at`` are :attr:`State.outages`.
    """
    from planner.executor.model.jobs import machines_of
    from planner.model import Segment
    from planner.replay.rebuild import scaled_segments
    from planner.replay.state import Started, State
    from planner.times import seconds_per_tick

    tick = seconds_per_tick(problem.time_unit)
    machine = machines_of(problem)[0]
    outages: dict[str, int] = {}
    for k, down, back in run.outages:
        if down <= at * tick < back:
            for name, m in machine.items():
                if m == k:
                    outages[name] = max(outages.get(name, 0), math.ceil(back / tick - 1e-9))
    by_job: dict[str, list[str]] = {}
    for t in problem.tasks:
        if t.job is not None and t.name in schedule.starts:
            by_job.setdefault(t.job, []).append(t.name)
    started: dict[str, Started] = {}
    left: dict[str, float] = {}

    def ran(name: str, start: int, span: int, rest: list[Segment] | None = None) -> None:
        mode = problem.task(name).mode(schedule.modes[name])
        nodes = tuple(schedule.nodes.get(name, ()))
        past = [Segment(name=RAN, duration=span)]
        started[name] = Started(mode.name, nodes, start, past, rest or [])  # type: ignore[arg-type]

    for job, tasks in by_job.items():
        first = run.started.get(job)
        if first is None or first >= at * tick:
            continue
        finished = run.finish.get(job)
        done = 1.0 if finished is not None else run.done.get(job, 0.0) / iterations[job]
        begin = min(math.floor(first / tick), at - 1)
        end = at if finished is None or finished > at * tick else math.ceil(finished / tick)
        tasks.sort(key=lambda n: schedule.starts[n])
        gpu = [n for n in tasks if problem.gpus(problem.task(n).mode(schedule.modes[n]))]
        work = [problem.task(n).min_duration for n in gpu]
        total, cum, position = sum(work) or 1, 0.0, begin
        for name, w in zip(gpu, work, strict=True):
            lo, hi = cum, cum + w / total
            cum = hi
            if hi <= done + 1e-9:  # done: its share of the time from the first run
                stop = begin + math.floor((end - begin) * hi / done + 1e-9)
                ran(name, position, max(stop - position, 0))
                position = max(stop, position)
                continue
            if lo < done and w:
                frac = (done - lo) / (hi - lo)
                if job in run.running and position < at:
                    mode = problem.task(name).mode(schedule.modes[name])
                    ran(name, position, at - position, scaled_segments(mode.segments, 1 - frac))
                else:
                    left[name] = 1 - frac
            break
        for name in tasks:
            if name in gpu:
                continue
            if not gpu or schedule.starts[name] <= schedule.starts[gpu[0]]:
                ran(name, begin, 0)
            elif finished is not None and end <= at:
                ran(name, end, 0)
    return State(at, started, {}, outages, left)


def state_from_job_run(
    path: str | Path,
    problem: Problem,
    schedule: Schedule,
    data: Mapping[str, Any],
    at: int,
    file: str | None = None,
    parsed: Mapping[str, Any] | None = None,
) -> State:
    """The executor's state at tick ``at`` of a job-level run file of a plan
    (``planner run INSTANCE PLAN -o run.json``): the run again, from what the file
    says of it, to ``at`` (:func:`state_of_run`). ``parsed``: the instance file ``path``
    already parsed (:attr:`planner.io.instance.InstanceFile.data`), not read again.

    Raises
    ------
    InputError
        If ``path`` has no training jobs, the file is a run of a policy or of another
        plan, or its settings are bad.
    """
    from planner.disturbances import Failure
    from planner.executor.model.jobs import outages_of
    from planner.times import seconds_per_tick

    workload, why = dl_workload(path, parsed)
    if workload is None:
        raise InputError(f"a job-level run is of an instance with training jobs; this is {why}")
    if data.get("policy") != "plan":
        raise InputError(f"a run of the policy {data.get('policy')!r}, not of a plan", file)
    try:
        setting = Setting(
            data["interleave"], data["data_slots"], str(data["slowdown"]), bool(data["restart"])
        )
        noise = Noise.parse(str(data["noise"])) if data.get("noise") else None
        seed = int(data.get("seed") or 0)
        specs = [str(f) for f in data.get("failures") or []]
        finish = {str(k): float(v) for k, v in dict(data["finish"]).items()}
        planned = float(data["planned_makespan_seconds"])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            "not a job-level run file of planner run (interleave, data_slots, slowdown, "
            "restart, finish and planned_makespan_seconds)",
            file,
        ) from None
    failures = [Failure.parse(spec, workload.time_unit) for spec in specs]
    outages = outages_of(failures, workload.names(workload.nodes or 8), workload.time_unit)
    dispatch = dispatch_of(
        workload,
        setting,
        "plan",
        (problem, schedule),
        bool(data.get("work_conserving")),
        outages,
        noise,
        data.get("power_cap"),
    )
    if not math.isclose(dispatch.planned or 0.0, planned, rel_tol=1e-9, abs_tol=1e-6):
        raise InputError(
            f"a run of a plan of makespan {planned:,.0f} s; this plan's is "
            f"{dispatch.planned:,.0f} s: give the plan the run executed",
            file,
        )
    run = dispatch.run(seed, until=at * seconds_per_tick(problem.time_unit))
    for job, end in run.finish.items():
        if not math.isclose(finish.get(job, math.nan), end, rel_tol=1e-9, abs_tol=1e-6):
            raise InputError(f"job {job!r} finishes at another time than in the run", file)
    iterations = {j.name: j.iterations for j in dispatch.jobs}
    return state_of_run(problem, schedule, run, iterations, at)

"""The power a job-level run draws, and its energy.

Every GPU of the cluster draws its idle power all the run long, and while it
computes its busy power (:data:`planner.metrics.DEFAULT_POWER`: 300 W busy, 60 W
idle, round figures for a V100-class GPU, whose board power is 300 W). A GPU set
computes the share ``sum over its jobs of gpu stage / period`` of the time (at most
all of it): interleaving raises a set's power, since its GPUs compute more of the
time, and saves idle energy when the run ends sooner. A restart overhead computes
nothing. Data loading and synchronisation are not counted; a node down still draws
its idle power.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.metrics import DEFAULT_POWER

if TYPE_CHECKING:
    from planner.execution.jobs import PeerJob
    from planner.execution.peers import PeerRun


@dataclass(frozen=True)
class Energy:
    """What a run drew: its energy and its mean and peak power."""

    kwh: float
    mean_kw: float
    peak_kw: float


def run_energy(
    run: PeerRun,
    jobs: Sequence[PeerJob],
    gpus: int,
    watts: tuple[float, float] = DEFAULT_POWER["gpu"],
) -> Energy:
    """The energy of ``run`` (of ``jobs`` on ``gpus`` GPUs) over its makespan, each GPU
    drawing ``watts`` (busy, idle) as the module docstring says."""
    busy, idle = watts
    by_name = {j.name: j for j in jobs}
    model = run.interleave
    joules = peak = 0.0
    for k, (t, groups) in enumerate(run.trace):
        end = run.trace[k + 1][0] if k + 1 < len(run.trace) else t
        span = end - t
        joules += gpus * idle * span
        draw = gpus * idle
        for names, overhead, _ in groups:
            members = [by_name[n] for n in names]
            periods = model.periods(
                [m.stages for m in members], alone=[m.iteration_time for m in members]
            )
            share = min(1.0, sum(m.stages.gpu / p for m, p in zip(members, periods, strict=True)))
            extra = members[0].gpus * share * (busy - idle)
            draw += extra
            # a restart overhead computes nothing (a job's last interval pays none)
            last = any(abs(run.finish.get(n, -1.0) - end) < 1e-4 for n in names)
            joules += extra * (span if last else max(span - overhead, 0.0))
        peak = max(peak, draw)
    makespan = run.makespan
    return Energy(
        kwh=joules / 3.6e6,
        mean_kw=joules / makespan / 1000 if makespan else 0.0,
        peak_kw=peak / 1000,
    )

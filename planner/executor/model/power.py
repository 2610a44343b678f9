"""The power of a job-level run, as the executor needs it while it runs: a GPU set's
compute share and the speed a power cap leaves the running jobs (the energy of a run is
:mod:`planner.executor.energy`'s).

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
from typing import TYPE_CHECKING

from planner.metrics import DEFAULT_POWER

if TYPE_CHECKING:
    from planner.dl.specs import ClusterInstance
    from planner.dl.specs import Tariff as ClusterTariff
    from planner.model import Tariff

WATTS = DEFAULT_POWER["gpu"]
"""A GPU's (busy, idle) watts."""


def compute_share(stages_gpu: Sequence[float], periods: Sequence[float]) -> float:
    """The share of the time a GPU set computes: its jobs' GPU stages over their periods,
    summed (at most 1)."""
    return min(1.0, sum(g / p for g, p in zip(stages_gpu, periods, strict=True)))


def throttle(
    sets: Sequence[tuple[int, float]], gpus: int, cap: float | None, watts: tuple[float, float]
) -> float:
    """The speed every running job keeps under a power ``cap`` (watts; ``None``: 1): the
    GPU sets (GPUs, compute share) draw ``watts`` as the module docstring says, and if
    they would draw more than the cap, every set computes slower in proportion, as GPU
    power capping does, so that the cluster draws the cap."""
    busy, idle = watts
    extra = sum(g * share * (busy - idle) for g, share in sets)
    if cap is None or extra <= 0:
        return 1.0
    return min(1.0, (cap - gpus * idle) / extra)


def type_watts(inst: ClusterInstance, gpu_type: str) -> tuple[float, float]:
    """A GPU's (busy, idle) watts of ``gpu_type`` in ``inst``: its power's, with its
    machines' base spread over their GPUs, else the catalog's."""
    from planner.dl.specs import Power, gpu_watts

    if inst.power is None:
        return Power().gpu_watts(gpu_type)
    return gpu_watts(inst, gpu_type)


def file_tariff(tariff: ClusterTariff) -> Tariff:
    """A cluster form's tariff in whole seconds (ticks of one second)."""
    from planner.model import PriceWindow, Tariff

    return Tariff(
        price=tariff.price,
        windows=[
            PriceWindow(start=int(w.start), end=max(int(w.start) + 1, int(w.end)), price=w.price)
            for w in tariff.windows
        ],
        period=None if tariff.period is None else max(1, round(tariff.period)),
    )

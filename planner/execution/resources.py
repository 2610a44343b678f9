"""The resources of a node beside its GPUs, as the job-level executor holds them: a GPU's
memory, which the jobs on it share (:meth:`planner.interleave.Interleave.room` is the
rule every placement and the audit follow)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.dl.specs import ClusterInstance


class _Holder(Protocol):
    """A job as the memory check reads it."""

    name: str
    gpu_mem: float


def gpu_memory_of(inst: ClusterInstance) -> float | None:
    """GB of one GPU of ``inst``'s cluster: the least of the GPU nodes' ``gpu_mem`` over
    their GPUs (``None`` if a GPU node gives none)."""
    gpu_nodes = [n for n in inst.cluster.nodes if n.gpu]
    if any(n.gpu_mem is None for n in gpu_nodes):
        return None
    return min(n.gpu_mem / n.gpu for n in gpu_nodes)  # type: ignore[operator]


def check_memory(jobs: Sequence[_Holder], memory: float | None, file: str | None = None) -> None:
    """Refuse a job that needs more memory per GPU than one GPU has (``memory`` GB).

    Raises
    ------
    InputError
        Naming the first such job.
    """
    if memory is None:
        return
    for j in jobs:
        if j.gpu_mem > memory + 1e-9:
            raise InputError(
                f"job {j.name!r} needs {j.gpu_mem:g} GB per GPU; a GPU of the cluster has "
                f"{memory:g} GB",
                file,
            )

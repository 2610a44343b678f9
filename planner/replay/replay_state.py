"""The state of the task-level replay (:mod:`planner.replay.loop`) that the modules
reading it see: the interference rule (:mod:`planner.replay.interference`) and the
recording of a run (:mod:`planner.replay.record`). Per task, lists indexed by the
task's position; capacities are *slots*: the cluster-wide renewables first, then one per
node and node kind.
"""

from __future__ import annotations

from typing import Protocol

from planner.disturbances import Disturbances, Slowdown
from planner.model import Mode, Problem, Resource
from planner.schedule import Schedule


class ReplayState(Protocol):
    """What a replay holds, as the interference rule and the recording read it."""

    problem: Problem
    plan: Schedule
    dist: Disturbances
    seed: int
    slow: Slowdown | None
    modes: list[Mode]
    """Each task's planned mode."""
    on: list[tuple[str, ...]]
    """Each task's nodes (none for a pooled plan)."""
    gpus: list[int]
    """Each task's GPUs per node."""
    fixed: list[bool]
    """Whether each task is fixed in time (the past of a re-planned instance)."""
    dem: list[list[list[tuple[int, int]]]]
    """Per task and segment, its demand as ``(slot, quantity)`` pairs."""
    names: list[str]
    """Each slot's realized resource name (``node3.gpu`` for a node's)."""
    cap: list[int]
    """Each slot's capacity."""
    res: list[Resource | None]
    """Each slot's resource of the problem (``None`` for a node's)."""
    owner: dict[int, str]
    """The node of each node slot."""
    outages: dict[str, list[tuple[int, int]]]
    """Per node, the ``[down, up)`` spans it was down."""
    attempt: list[int]
    """Each task's start of its last attempt."""
    finish: list[int | None]
    pieces: list[list[tuple[int, int, int]]]
    """Per task, its last attempt's segments as ``(segment, start, finish)``."""
    lost: list[list[tuple[int, list[tuple[int, int, int]]]]]
    """Per task, its attempts lost to failures: start and pieces."""
    lost_gpu: int
    lost_ticks: int

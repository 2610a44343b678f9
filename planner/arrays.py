"""Compact numpy views of a :class:`~planner.model.Problem` for solvers.

Modes are numbered globally: the modes of task ``i`` are
``mode_start[i] : mode_start[i + 1]``. Segments are numbered globally too: the
segments of mode ``m`` are ``seg_start[m] : seg_start[m + 1]``, each with a
duration, an offset from the mode's start, one demand per renewable resource and
one demand per node resource kind (per node of the mode's node set).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

FS, SS = 0, 1
"""Precedence kinds: finish-to-start and start-to-start."""

OK, FAIL_MODE, FAIL_DEADLINE = 0, 1, 2
"""Outcome codes of a schedule-generation pass: a schedule, no allowed mode for a task,
a missed deadline."""


class Parts(Protocol):
    """What the arrays are built from: a :class:`~planner.model.Problem`, which builds
    its own arrays (:attr:`~planner.model.Problem.arrays`); this protocol keeps the two
    modules from importing each other. The items are the problem's tasks, resources,
    jobs, nodes and precedences."""

    tasks: Sequence[Any]
    jobs: Sequence[Any]
    nodes: Sequence[Any]
    precedences: Sequence[Any]

    @property
    def renewables(self) -> Sequence[Any]:
        """The renewable resources, in file order."""
        ...

    @property
    def nonrenewables(self) -> Sequence[Any]:
        """The non-renewable resources, in file order."""
        ...

    @property
    def node_kinds(self) -> Sequence[str]:
        """The node resource kinds."""
        ...

    @property
    def task_index(self) -> Mapping[str, int]:
        """Position of each task by name."""
        ...


@dataclass(frozen=True)
class ProblemArrays:
    """Arrays of a problem, indexed by task, mode, segment and resource number."""

    n_tasks: int
    resource_names: list[str]
    capacity: np.ndarray
    """Base capacity per renewable resource, shape ``(R,)``."""
    windows: list[list[tuple[int, int, int]]]
    """Per renewable resource: ``(start, end, capacity)`` windows."""
    budget: np.ndarray
    """Budget per non-renewable resource, shape ``(N,)``."""
    mode_start: np.ndarray
    mode_task: np.ndarray
    mode_duration: np.ndarray
    mode_consumption: np.ndarray
    """Shape ``(M, N)``."""
    mode_placement: np.ndarray
    """Placement key id per mode, -1 for none."""
    seg_start: np.ndarray
    seg_duration: np.ndarray
    seg_offset: np.ndarray
    seg_demand: np.ndarray
    """Shape ``(S, R)``."""
    seg_local: np.ndarray
    """Shape ``(S, L)``: demand per node of the set on each node resource kind."""
    node_names: list[str]
    node_kinds: list[str]
    node_capacity: np.ndarray
    """Shape ``(N, L)``."""
    node_type: np.ndarray
    """Type id per node (-1 for none); ids number the types in order of first use."""
    mode_nodes: np.ndarray
    """Nodes per mode (0: none)."""
    mode_node_type: np.ndarray
    """Type id a mode's nodes must have, -1 for any."""
    mode_pin: list[list[int]]
    """Per mode, the node numbers it is pinned to (empty: not pinned)."""
    mode_follow: np.ndarray
    """Per mode, the task whose node set it keeps (``same_nodes_as``), -1 for none."""
    release: np.ndarray
    deadline: np.ndarray
    """-1 where a task has no deadline."""
    task_job: np.ndarray
    """Job number per task, -1 for none."""
    job_weight: np.ndarray
    job_colocate: np.ndarray
    prec_before: np.ndarray
    prec_after: np.ndarray
    prec_kind: np.ndarray
    """``FS`` (0) or ``SS`` (1)."""
    prec_lag: np.ndarray

    @classmethod
    def build(cls, problem: Parts) -> ProblemArrays:
        """Build the arrays of ``problem``."""
        ren = problem.renewables
        r_index = {r.name: k for k, r in enumerate(ren)}
        n_index = {r.name: k for k, r in enumerate(problem.nonrenewables)}
        j_index = {j.name: k for k, j in enumerate(problem.jobs)}
        placements: dict[str, int] = {}
        kinds = problem.node_kinds
        l_index = {k: i for i, k in enumerate(kinds)}
        types: dict[str, int] = {}
        for node in problem.nodes:
            if node.type is not None:
                types.setdefault(node.type, len(types))
        mode_start, mode_task, mode_dur, mode_place, cons = [0], [], [], [], []
        mode_nodes, mode_type, mode_pin, mode_follow = [], [], [], []
        task_index = problem.task_index
        node_index = {n.name: v for v, n in enumerate(problem.nodes)}
        seg_start, seg_dur, seg_off, demand, local = [0], [], [], [], []
        for i, task in enumerate(problem.tasks):
            for mode in task.modes:
                mode_task.append(i)
                mode_dur.append(mode.duration)
                key = mode.placement
                mode_place.append(
                    -1 if key is None else placements.setdefault(key, len(placements))
                )
                row = [0] * len(n_index)
                for name, q in mode.consumes.items():
                    row[n_index[name]] = q
                cons.append(row)
                mode_nodes.append(mode.nodes)
                mode_pin.append([node_index[v] for v in mode.on or ()])
                follow = mode.same_nodes_as
                mode_follow.append(-1 if follow is None else task_index[follow])
                mode_type.append(-1 if mode.node_type is None else types[mode.node_type])
                offset = 0
                for seg in mode.segments:
                    seg_dur.append(seg.duration)
                    seg_off.append(offset)
                    offset += seg.duration
                    d = [0] * len(ren)
                    per_node = [0] * len(kinds)
                    for name, q in seg.demand.items():
                        if name in r_index:
                            d[r_index[name]] = q
                        else:
                            per_node[l_index[name]] = q
                    demand.append(d)
                    local.append(per_node)
                seg_start.append(len(seg_dur))
            mode_start.append(len(mode_task))
        precs = problem.precedences
        idx = problem.task_index
        i64 = np.int64
        return cls(
            n_tasks=len(problem.tasks),
            resource_names=[r.name for r in ren],
            capacity=np.array([r.capacity for r in ren], dtype=i64),
            windows=[[(w.start, w.end, w.capacity) for w in r.windows] for r in ren],
            budget=np.array([r.capacity for r in problem.nonrenewables], dtype=i64),
            mode_start=np.array(mode_start, dtype=i64),
            mode_task=np.array(mode_task, dtype=i64),
            mode_duration=np.array(mode_dur, dtype=i64),
            mode_consumption=np.array(cons, dtype=i64).reshape(len(mode_task), len(n_index)),
            mode_placement=np.array(mode_place, dtype=i64),
            seg_start=np.array(seg_start, dtype=i64),
            seg_duration=np.array(seg_dur, dtype=i64),
            seg_offset=np.array(seg_off, dtype=i64),
            seg_demand=np.array(demand, dtype=i64).reshape(len(seg_dur), len(ren)),
            seg_local=np.array(local, dtype=i64).reshape(len(seg_dur), len(kinds)),
            node_names=[n.name for n in problem.nodes],
            node_kinds=list(kinds),
            node_capacity=np.array(
                [[n.capacity.get(k, 0) for k in kinds] for n in problem.nodes], dtype=i64
            ).reshape(len(problem.nodes), len(kinds)),
            node_type=np.array(
                [-1 if n.type is None else types[n.type] for n in problem.nodes], dtype=i64
            ),
            mode_nodes=np.array(mode_nodes, dtype=i64),
            mode_node_type=np.array(mode_type, dtype=i64),
            mode_pin=mode_pin,
            mode_follow=np.array(mode_follow, dtype=i64),
            release=np.array([t.release for t in problem.tasks], dtype=i64),
            deadline=np.array(
                [-1 if t.deadline is None else t.deadline for t in problem.tasks], dtype=i64
            ),
            task_job=np.array(
                [-1 if t.job is None else j_index[t.job] for t in problem.tasks], dtype=i64
            ),
            job_weight=np.array([j.weight for j in problem.jobs], dtype=float),
            job_colocate=np.array([j.colocate for j in problem.jobs], dtype=bool),
            prec_before=np.array([idx[p.before] for p in precs], dtype=i64),
            prec_after=np.array([idx[p.after] for p in precs], dtype=i64),
            prec_kind=np.array([FS if p.kind == "FS" else SS for p in precs], dtype=i64),
            prec_lag=np.array([p.lag for p in precs], dtype=i64),
        )

    @property
    def n_resources(self) -> int:
        """Number of renewable resources."""
        return len(self.resource_names)

    def capacity_profile(self, horizon: int) -> np.ndarray:
        """Capacity per renewable resource and tick over ``[0, horizon)``, shape ``(R, H)``."""
        prof = np.repeat(self.capacity[:, None], horizon, axis=1)
        for r, wins in enumerate(self.windows):
            for start, end, cap in wins:
                prof[r, start : min(end, horizon)] = cap
        return prof

    def min_duration(self) -> np.ndarray:
        """Shortest mode duration per task."""
        return np.minimum.reduceat(self.mode_duration, self.mode_start[:-1])

"""A dispatch as a plan: the groups a job-level run ran, event by event, as a file the
executor runs again.

For an instance with training jobs, ``planner solve`` returns what the job-level
executor (:mod:`planner.executor.loop`) runs: at every event of the run, which
jobs run in which groups on which GPUs. :class:`DispatchPlan` holds those events with the
model they ran in (:class:`~planner.executor.runs.Setting`); :class:`TablePolicy` is the
policy that runs them again, so the executor's replay of a dispatch gives the same run,
to the second (its makespan, JCTs and energy are the plan's). Its audit
(:func:`planner.executor.audit.audit`) is the plan's validator.

A dispatch file (``planner solve INSTANCE -o plan.json``) is JSON: ``kind`` is
``dispatch``, ``setting`` the model, ``source`` what made it, ``makespan`` and
``mean_jct`` its figures (seconds), ``events`` per event its time and its groups (member
names, GPU set as ``[[node, [gpu, ..]], ..]``), ``allocations`` (where the run's policy
decided CPU and memory) per event the CPU cores and GB of host memory per GPU it gave each
job (``{job: [cpu, mem]}``), and ``table`` the co-location table (job, GPUs, start, end,
partners) for readers. Where the run had elastic jobs, ``configs`` gives per event each
running elastic job's configuration (local batch and accumulation steps, or a
hybrid-parallel job's plan) and ``overheads`` each group's overhead as the run charged
it, so that the replay is the run.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy
from planner.files import write_text

if TYPE_CHECKING:
    from planner.executor.loop import ExecutorRun
    from planner.executor.model.jobs import Workload
    from planner.executor.runs import Dispatch, Setting

KIND = "dispatch"
"""The ``kind`` of a dispatch file."""

Event = tuple[float, tuple[tuple[tuple[str, ...], Where], ...]]
"""An event of a dispatch: its time (s) and its groups (member names, GPU set)."""
Allocation = Mapping[str, tuple[float, float]]
"""What a policy gave the jobs at an event: CPU cores and GB of host memory per GPU."""


class TablePolicy(Policy):
    """Runs the groups of a dispatch's events again (see the module docstring): at each
    event, the groups of the last event of the dispatch at or before it, with the
    interleaving model's periods; it asks to be called at every event time of the
    dispatch. Past its last event, jobs with work left run alone (a run of a dispatch
    never has any; phases of the configuration program run with restart overheads do)."""

    name = KIND

    def __init__(
        self,
        events: Sequence[Event],
        allocs: Sequence[Allocation] = (),
        configs: Sequence[Mapping[str, tuple[int, int]]] = (),
        overheads: Sequence[Sequence[float]] = (),
    ) -> None:
        self.events = events
        self.allocs = allocs
        """Per event, the CPU and memory the dispatch gave its jobs (empty: none)."""
        self.configs = configs
        """Per event, each running elastic job's configuration (empty: none)."""
        self.overheads = overheads
        """Per event, each group's overhead as the run charged it (empty: the model's)."""
        self.at = 0

    def start(self, context: Context) -> None:
        """Index the jobs by name."""
        super().start(context)
        self.index = {j.name: k for k, j in enumerate(context.jobs)}
        self.at = 0

    def next_event(self) -> float:
        """The next event time of the dispatch."""
        return self.events[self.at][0] if self.at < len(self.events) else math.inf

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """The groups of the dispatch's last event at or before ``t``, of the jobs at hand."""
        while self.at < len(self.events) and self.events[self.at][0] <= t + 1e-9:
            self.at += 1
        if self.at == 0:
            return {}
        here = {s.idx: s for s in jobs}
        given = self.allocs[self.at - 1] if self.allocs else {}
        configs = self.configs[self.at - 1] if self.configs else {}
        costs = self.overheads[self.at - 1] if self.overheads else ()
        chosen: Chosen = {}
        for g, (names, where) in enumerate(self.events[self.at - 1][1]):
            members = [here[k] for k in (self.index[n] for n in names) if k in here]
            for s in members:
                s.alloc = given.get(s.job.name)
                if configs:
                    s.config = configs.get(s.job.name)
            if members:
                found = self.group(members, where)
                if costs:
                    found = {i: (m, p, costs[g], w) for i, (m, p, _, w) in found.items()}
                chosen.update(found)
        if self.at == len(self.events) and len(chosen) < len(jobs):
            # past its last event with work left (a plan made without restart overheads,
            # run with them): the jobs left run alone, first-fit, longest first
            chosen = {}
            cluster.empty()
            for s in sorted(jobs, key=lambda s: -s.remaining * s.alone):
                s.alloc = None
                where = cluster.place(s.job.gpus)
                if where is not None:
                    chosen.update(self.alone(s, where))
        return chosen


@dataclass(frozen=True)
class DispatchPlan:
    """A dispatch with the model it runs in (see the module docstring)."""

    setting: Setting
    source: str
    """What made it (a policy, a solver's stage)."""
    events: tuple[Event, ...]
    makespan: float
    mean_jct: float
    file: str | None = field(default=None, compare=False)
    """The dispatch file it was read from, if any (named in its errors)."""
    allocs: tuple[Allocation, ...] = ()
    """Per event, the CPU and memory its policy gave the jobs (empty: it decided none)."""
    configs: tuple[Mapping[str, tuple[int, int]], ...] = ()
    """Per event, each running elastic job's configuration (empty: no elastic job)."""
    overheads: tuple[tuple[float, ...], ...] = ()
    """Per event, each group's overhead as its run charged it: kept where the run had
    elastic jobs, whose policies charge a rescale only where they place a job anew
    (empty: the model's, every interval)."""

    @classmethod
    def of_run(cls, run: ExecutorRun, setting: Setting, source: str) -> DispatchPlan:
        """The dispatch of ``run``: its events' groups (a run on shared GPUs has none:
        replay its plan instead)."""
        if run.shared:
            raise InputError("a run on shared GPUs is its plan's dispatch: keep the plan")
        events = tuple(
            (t, tuple((tuple(names), where) for names, _, where in groups))
            for t, groups in run.trace
        )
        allocs = tuple(run.allocation) if any(run.allocation) else ()
        configs = tuple(run.configs) if any(run.configs) else ()
        overheads = (tuple(tuple(cost for _, cost, _ in groups) for _, groups in run.trace)
                     if configs else ())  # fmt: skip
        return cls(setting, source, events, run.makespan, run.mean_jct, allocs=allocs,
                   configs=configs, overheads=overheads)  # fmt: skip

    def dispatch(self, workload: Workload) -> Dispatch:
        """The executor's run of this dispatch over ``workload`` (its jobs by name).

        Raises
        ------
        InputError
            If a job of the dispatch is not one of the workload's, or the dispatch misses
            one of the workload's jobs.
        """
        from planner.executor.runs import dispatch_of

        names = {j.name for j in workload.jobs}
        used = {n for _, groups in self.events for members, _ in groups for n in members}
        if used - names:
            raise InputError(
                f"the dispatch runs job {min(used - names)!r}, which the instance does not have",
                self.file,
            )
        if names - used:
            raise InputError(f"the dispatch never runs job {min(names - used)!r}", self.file)
        nodes, per_node = workload.nodes or 0, workload.gpus_per_node or 0
        for t, groups in self.events:
            for members, where in groups:
                for k, gpus in where:
                    if not 0 <= k < nodes or any(not 0 <= g < per_node for g in gpus):
                        raise InputError(
                            f"at {t:g} s the dispatch puts {', '.join(members)} on node index "
                            f"{k}, GPUs {', '.join(map(str, gpus))}: the cluster has {nodes} "
                            f"node(s) (0 to {nodes - 1}) of {per_node} GPUs (0 to {per_node - 1})",
                            self.file,
                        )
        out = dispatch_of(workload, self.setting, KIND)
        out.make = functools.partial(TablePolicy, self.events, self.allocs, self.configs,
                                     self.overheads)  # fmt: skip
        out.planned = self.makespan
        return out

    def to_data(self, run: ExecutorRun, names: Sequence[str] = ()) -> dict[str, Any]:
        """The dispatch file's data, with ``run``'s co-location table (``names`` name the
        nodes)."""
        s = self.setting
        return {
            "kind": KIND,
            "setting": {
                "interleave": s.interleave,
                "data_slots": s.data_slots,
                "slowdown": s.slowdown,
                "restart": s.restart,
            },
            "source": self.source,
            "makespan": self.makespan,
            "mean_jct": self.mean_jct,
            "events": [
                [
                    t,
                    [
                        [list(members), [[k, list(g)] for k, g in where]]
                        for members, where in groups
                    ],
                ]
                for t, groups in self.events
            ],
            **(
                {"allocations": [{n: list(a) for n, a in given.items()} for given in self.allocs]}
                if self.allocs
                else {}
            ),
            **(
                {
                    "configs": [{n: list(c) for n, c in given.items()} for given in self.configs],
                    "overheads": [list(costs) for costs in self.overheads],
                }
                if self.configs
                else {}
            ),
            "table": run.residences(names),
        }

    def save(self, path: Path, run: ExecutorRun, names: Sequence[str] = ()) -> None:
        """Write the dispatch file (:meth:`to_data`)."""
        write_text(path, json.dumps(self.to_data(run, names)) + "\n")

    @classmethod
    def from_data(cls, data: Mapping[str, Any], file: str | None = None) -> DispatchPlan:
        """The dispatch of a dispatch file's ``data``.

        Raises
        ------
        InputError
            If it is not a dispatch file, or a field is missing or malformed.
        """
        from planner.executor.runs import Setting

        if data.get("kind") != KIND:
            raise InputError("not a dispatch file of planner solve (kind: dispatch)", file)
        try:
            s = data["setting"]
            slots = s["data_slots"]
            setting = Setting(
                None if s["interleave"] is None else str(s["interleave"]),
                None if slots is None else float(slots),
                str(s["slowdown"]),
                bool(s["restart"]),
            )
            events = tuple(
                (
                    float(t),
                    tuple(
                        (
                            tuple(str(n) for n in members),
                            tuple((int(k), tuple(int(g) for g in gpus)) for k, gpus in where),
                        )
                        for members, where in groups
                    ),
                )
                for t, groups in data["events"]
            )
            allocs = tuple(
                {str(n): (float(a[0]), float(a[1])) for n, a in given.items()}
                for given in data.get("allocations", ())
            )
            if allocs and (
                len(allocs) != len(events)
                or any(not 0 <= x < math.inf for given in allocs for a in given.values() for x in a)
            ):
                raise ValueError
            configs = tuple(
                {str(n): (int(c[0]), int(c[1])) for n, c in given.items()}
                for given in data.get("configs", ())
            )
            overheads = tuple(tuple(float(c) for c in costs) for costs in data.get("overheads", ()))
            if (configs or overheads) and (
                len(configs) != len(events)
                or len(overheads) != len(events)
                or any(len(c) != len(g) for c, (_, g) in zip(overheads, events, strict=True))
                or any(not 0 <= c < math.inf for costs in overheads for c in costs)
                or any(x < 0 for given in configs for c in given.values() for x in c)
            ):
                raise ValueError
            plan = cls(
                setting, str(data["source"]), events, float(data["makespan"]),
                float(data["mean_jct"]), file, allocs, configs, overheads,
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            raise InputError(
                "a malformed dispatch file (setting, source, makespan, mean_jct, events, "
                "allocations, configs, overheads)",
                file,
            ) from None
        times = [t for t, _ in events]
        if any(b < a for a, b in itertools.pairwise(times)):
            raise InputError("a dispatch's events are out of time order", file)
        return plan


def dispatch_data(path: Path, data: Any = None) -> dict[str, Any] | None:
    """The data of ``path`` if it is a dispatch file (JSON whose ``kind`` is ``dispatch``);
    ``data``: its JSON, read already."""
    if data is None:
        if path.suffix.lower() != ".json" or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
    return data if isinstance(data, dict) and data.get("kind") == KIND else None

"""Elastic jobs in the executor: a job whose GPU count and batch configuration a policy
chooses, at speeds from Pollux's job model (:mod:`planner.dl.pollux`).

An elastic job's iterations are *progress*, counted in steps at its application's
initial batch size (so runs at different GPU counts and batch sizes compare). On a GPU
set its period (seconds per unit of progress) is its step time there, at its
configuration (local batch, accumulation steps), over the step's gain at its batch size
in its current epoch; its step time is the measured one at the set's placement (GPUs
per node), through the interleaving model where it shares the set. Its speed changes at
every epoch's start, so a running elastic job ends an interval there (the executor asks
its policy again; a policy may choose another batch there, as Pollux does).

A job's configuration is its policy's (``JobState.config``); without one, the fixed
one of its ``batch_size`` (:meth:`~planner.dl.pollux.Application.config`), or for a job
without one, Pollux's first: ``max(M0, least local batch x GPUs)``.

A hybrid-parallel job (:class:`Hybrid`) is elastic too: it lists plans (data x pipeline x
tensor GPUs, seconds per iteration, GPU memory per GPU), and its configuration is the plan
it runs, ``(plan index, 0)``, which must have as many GPUs as its set and fit a GPU's
memory. Its iterations are its work, at one gain on every plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from planner.dl.pollux import Application, application
from planner.errors import InputError
from planner.interleave import Interleave, Stages

if TYPE_CHECKING:
    from planner.dl.specs import TrainingJob

EPSILON = 1e-7
"""Progress within which a job is at an epoch's start."""


@dataclass(frozen=True)
class Elastic:
    """What makes a job elastic: its Pollux application, the folder of the profiles
    (``None``: the catalog's), and its fixed total batch size (``None``: its policy
    chooses one)."""

    application: str
    batch_size: int | None = None
    folder: str | None = None

    @property
    def app(self) -> Application:
        """Its application's model."""
        return application(self.application, self.folder)

    def default_config(self, replicas: int) -> tuple[int, int]:
        """``(local batch, accumulation steps)`` on ``replicas`` GPUs where no policy
        chose (see the module docstring)."""
        app = self.app
        return app.config(replicas, self.batch_size or app.least_batch(replicas))

    def epoch(self, progress: float) -> int:
        """The epoch a job at ``progress`` is in (its last at its end)."""
        return min(self.app.epoch_of(progress + EPSILON), self.app.max_epochs - 1)

    def next_epoch(self, progress: float) -> float:
        """The progress at which the epoch after ``progress``'s starts."""
        app = self.app
        return app.progress_at(min(self.epoch(progress) + 1, app.max_epochs))

    def step(self, where: Sequence[tuple[int, Sequence[int]]], config: tuple[int, int]) -> Stages:
        """One step on ``where`` at ``config`` as stages: compute (its accumulation steps
        included) and synchronisation."""
        atomic, accum = config
        step, sync = self.app.step_times(placement(where), atomic)
        return Stages(0.0, (step - sync) * (accum + 1), sync)

    def gain(self, replicas: int, config: tuple[int, int], progress: float) -> float:
        """Progress per step at ``config`` on ``replicas`` GPUs at ``progress``."""
        atomic, accum = config
        return self.app.gain(replicas * atomic * (accum + 1), self.epoch(progress))


@dataclass(frozen=True)
class Plan:
    """A hybrid-parallel plan: ``label`` (data x pipeline x tensor), its GPUs, its stages
    per iteration and the GB of memory each of its GPUs needs."""

    label: str
    gpus: int
    stages: Stages
    gpu_mem: float = 0.0


@dataclass(frozen=True)
class Hybrid:
    """A hybrid-parallel job: its plans, its own GPU count (the job's ``gpus``: where a
    fixed policy runs it) and a GPU's memory (GB; ``None``: not limited). A policy may
    run it on any GPU count a plan that fits has."""

    plans: tuple[Plan, ...]
    own: int
    memory: float | None = None

    @property
    def gpu_mem(self) -> float:
        """GB per GPU of the plan it runs on its own GPUs (where no policy chooses)."""
        return self.plans[self.default_config(self.own)[0]].gpu_mem

    def fits(self, plan: Plan) -> bool:
        """Whether ``plan`` fits a GPU's memory."""
        return self.memory is None or plan.gpu_mem <= self.memory + 1e-9

    @cached_property
    def _fastest(self) -> dict[int, tuple[float, int]]:
        """Per GPU count, the iterations per second alone and the index of the fastest
        plan that fits (the first of equals)."""
        out: dict[int, tuple[float, int]] = {}
        for k, p in enumerate(self.plans):
            rate = 1.0 / p.stages.total
            if self.fits(p) and rate > out.get(p.gpus, (0.0, -1))[0]:
                out[p.gpus] = (rate, k)
        return out

    def best(self, replicas: int) -> tuple[float, int]:
        """The iterations per second alone and the index of the fastest plan on exactly
        ``replicas`` GPUs that fits (``(0.0, -1)``: none)."""
        return self._fastest.get(replicas, (0.0, -1))

    def counts(self) -> list[int]:
        """The GPU counts of the plans that fit, ascending."""
        return sorted(self._fastest)

    def default_config(self, replicas: int) -> tuple[int, int]:
        """The fastest plan on ``replicas`` GPUs that fits, as ``(index, 0)``.

        Raises
        ------
        InputError
            If no plan that fits has ``replicas`` GPUs.
        """
        k = self.best(replicas)[1]
        if k < 0:
            raise InputError(
                f"no parallel plan of {replicas} GPUs fits (plans: "
                f"{', '.join(p.label for p in self.plans)})"
            )
        return k, 0

    def epoch(self, progress: float) -> int:
        """0: its speed does not change with its progress."""
        return 0

    def next_epoch(self, progress: float) -> float:
        """Never: its speed does not change with its progress."""
        return math.inf

    def step(self, where: Sequence[tuple[int, Sequence[int]]], config: tuple[int, int]) -> Stages:
        """One iteration on its plan ``config[0]``."""
        return self.plans[config[0]].stages

    def gain(self, replicas: int, config: tuple[int, int], progress: float) -> float:
        """1: an iteration is one iteration on every plan."""
        return 1.0


def hybrid_of(job: TrainingJob, memory: float | None, file: str, place: str) -> Hybrid:
    """A hybrid-parallel job's plans (its ``parallel_plans``) on GPUs of ``memory`` GB
    (``file`` and ``place``: where its errors point).

    Raises
    ------
    InputError
        Where no plan on the job's own GPUs fits a GPU's memory.
    """
    plans = tuple(
        Plan(
            p.label,
            p.gpus,
            Stages(p.stages.data, p.stages.gpu, p.stages.sync),
            float(p.gpu_mem_per_gpu),
        )
        for p in job.parallel_plans
    )
    hybrid = Hybrid(plans, job.gpus, memory)
    if hybrid.best(job.gpus)[1] < 0:
        least = min(p.gpu_mem for p in plans if p.gpus == job.gpus)
        raise InputError(
            f"job {job.name!r}: no parallel plan on its {job.gpus} GPUs fits a GPU's "
            f"{memory:g} GB (the least needs {least:g} GB per GPU)",
            file,
            place,
        )
    return hybrid


def placement(where: Sequence[tuple[int, Sequence[int]]]) -> tuple[int, ...]:
    """A GPU set's GPUs per node."""
    return tuple(len(ids) for _, ids in where if ids)


def step_periods(
    members: Sequence[tuple[Elastic | Hybrid | None, Stages, float, tuple[int, int] | None]],
    where: Sequence[tuple[int, Sequence[int]]],
    model: Interleave,
) -> list[tuple[float, tuple[int, int] | None]]:
    """The seconds per step of jobs sharing ``where``, each given as (its elastic spec or
    ``None``, its stages, its period alone, its configuration), and each elastic member's
    configuration there (its own, else its default): an elastic member's stages are its
    step's there. They do not change with a job's progress; its gain does."""
    stages, alone, configs = [], [], []
    replicas = sum(placement(where))
    for spec, fixed, own, config in members:
        if spec is None:
            stages.append(fixed)
            alone.append(own)
            configs.append(None)
            continue
        cfg = config or spec.default_config(replicas)
        step = spec.step(where, cfg)
        stages.append(step)
        alone.append(step.total)
        configs.append(cfg)
    periods = model.periods(stages, alone=alone)
    return list(zip(periods, configs, strict=True))


def elastic_periods(
    members: Sequence[tuple[Elastic | Hybrid | None, Stages, float, tuple[int, int] | None, float]],
    where: Sequence[tuple[int, Sequence[int]]],
    model: Interleave,
) -> list[float]:
    """The periods of jobs sharing ``where``, each given as (its elastic spec or ``None``,
    its stages, its period alone, its configuration, its progress): an elastic member's
    seconds per step (:func:`step_periods`) over its gain at its progress."""
    replicas = sum(placement(where))
    steps = step_periods([m[:4] for m in members], where, model)
    return [
        period if cfg is None or m[0] is None else period / m[0].gain(replicas, cfg, m[4])
        for m, (period, cfg) in zip(members, steps, strict=True)
    ]


@dataclass(frozen=True)
class ElasticFigures:
    """What a run did with its elastic jobs: how many, their GPU counts' changes
    (``resizes``: per job, the times its GPU count changed between two intervals it ran),
    the most GPUs any held, and the GPU-hours they held (a set that ``k`` jobs share, a
    ``k``-th to each)."""

    jobs: int
    resizes: dict[str, int]
    most: int
    gpu_hours: float


def elastic_figures(
    trace: Sequence[
        tuple[float, Sequence[tuple[Sequence[str], float, Sequence[tuple[int, Sequence[int]]]]]]
    ],
    elastic: set[str],
) -> ElasticFigures | None:
    """The :class:`ElasticFigures` of a run's ``trace`` (as
    :attr:`~planner.executor.loop.ExecutorRun.trace`) for the jobs named in ``elastic``
    (``None``: there are none)."""
    if not elastic:
        return None
    last: dict[str, int] = {}
    resizes = dict.fromkeys(sorted(elastic), 0)
    most, seconds = 0, 0.0
    for k, (t, groups) in enumerate(trace):
        end = trace[k + 1][0] if k + 1 < len(trace) else t
        for names, _, where in groups:
            gpus = sum(len(ids) for _, ids in where)
            for name in names:
                if name not in elastic:
                    continue
                if name in last and last[name] != gpus:
                    resizes[name] += 1
                last[name] = gpus
                most = max(most, gpus)
                seconds += gpus * (end - t) / len(names)
    return ElasticFigures(len(elastic), resizes, most, seconds / 3600)

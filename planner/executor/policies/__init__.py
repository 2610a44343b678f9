"""The executor's policies, one module each, and a user's policy from a file.

A policy answers one question at every event of a run: which jobs run, in which groups,
on which GPUs (:class:`~planner.executor.model.policy.Policy`). The peers reproduce
Muri's simulator (``srtf``, ``srsf``, ``tiresias``, ``muri-s``, ``muri-l``); ``lp-groups``,
``srsf-pack``, ``jct-groups``, ``ftf-groups`` and ``fair-groups`` (finish-time fairness)
are ours,
``gavel-*`` reproduce Gavel's policies in rounds on GPU types
(:mod:`~planner.executor.policies.gavel`), ``synergy-*`` Synergy's orders and CPU and
memory allocations in rounds (:mod:`~planner.executor.policies.synergy`; ``grid-srtf``
is ours, :mod:`~planner.executor.policies.grid`), ``batch-*`` run every job once to its
end (:mod:`~planner.executor.policies.batch`), ``pollux-tiresias`` and
``pollux-optimus`` reproduce Pollux's simulator's baselines on elastic jobs
(:mod:`~planner.executor.policies.pollux`; ``goodput`` and ``goodput-pack`` are ours,
:mod:`~planner.executor.policies.goodput`), and ``planner`` re-plans at every event;
``plan`` dispatches a plan. A new policy is one module here and one line in
:data:`POLICIES`; a user's runs from its file as ``FILE.py:CLASS``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from planner.errors import InputError
from planner.executor.model.policy import (
    Chosen,
    Cluster,
    Context,
    JobState,
    Periods,
    Policy,
    where_label,
)
from planner.executor.policies.batch import Batch, BatchFifo, BatchSrtf
from planner.executor.policies.ftf_groups import FairGroups, FtfGroups
from planner.executor.policies.gavel import GAVEL_CLASSES
from planner.executor.policies.goodput import Goodput, GoodputPack
from planner.executor.policies.grid import GridSrtf, GridSrtfEvents
from planner.executor.policies.hetero import HeteroMakespan, HeteroSrpt
from planner.executor.policies.jct_groups import JctGroups
from planner.executor.policies.lp_groups import LpGroups
from planner.executor.policies.muri import MuriL, MuriS
from planner.executor.policies.plan import PlanDispatch
from planner.executor.policies.pollux import Pollux, PolluxOptimus, PolluxTiresias
from planner.executor.policies.srsf_pack import SrsfPack
from planner.executor.policies.srtf import Fifo, Srsf, Srtf
from planner.executor.policies.synergy import SYNERGY_CLASSES
from planner.executor.policies.tiresias import Tiresias
from planner.files import check_input_file

__all__ = [
    "POLICIES",
    "Chosen",
    "Cluster",
    "Context",
    "JobState",
    "Periods",
    "PlanDispatch",
    "Policy",
    "policy_of",
    "where_label",
]

POLICIES: dict[str, type[Policy]] = {
    "fifo": Fifo,
    "srtf": Srtf,
    "srsf": Srsf,
    "tiresias": Tiresias,
    "muri-s": MuriS,
    "muri-l": MuriL,
    "lp-groups": LpGroups,
    "srsf-pack": SrsfPack,
    "jct-groups": JctGroups,
    "ftf-groups": FtfGroups,
    "fair-groups": FairGroups,
    "het-srpt": HeteroSrpt,
    "het-makespan": HeteroMakespan,
    **GAVEL_CLASSES,
    **SYNERGY_CLASSES,
    "grid-srtf": GridSrtf,
    "grid-srtf-events": GridSrtfEvents,
    "batch-lpt": Batch,
    "batch-srtf": BatchSrtf,
    "batch-fifo": BatchFifo,
    "pollux-tiresias": PolluxTiresias,
    "pollux-optimus": PolluxOptimus,
    "pollux": Pollux,
    "goodput": Goodput,
    "goodput-pack": GoodputPack,
}
"""The policies by name (``plan`` is not one: it needs a plan, :class:`PlanDispatch`; nor
is the online planner, which runs the executor itself:
:class:`~planner.replay.planner_policy.SearchPlanner`)."""


def table_policies() -> str:
    """The policies that run under the ``table`` model, for a message."""
    names = [n for n, cls in POLICIES.items() if not cls.needs_stages]
    return ", ".join(n for n in names if not n.startswith("gavel-")) + " or a gavel-* policy"


def policy_list() -> str:
    """The policies' names for a message: Gavel's forms (``-perf``, ``-packed``) and
    Synergy's allocations once."""
    names = [n for n in POLICIES if not n.endswith(("-perf", "-packed"))]
    gavel = [n for n in names if n.startswith("gavel-") and f"{n}-perf" in POLICIES]
    synergy = list(dict.fromkeys(n.rsplit("-", 1)[0] for n in SYNERGY_CLASSES))
    first = ", ".join(
        n for n in names if n not in gavel and n != "gavel-gandiva" and n not in SYNERGY_CLASSES
    )
    return (
        f"{first}; Gavel's {', '.join(gavel)}, each also -perf or -packed, and gavel-gandiva; "
        f"Synergy's {', '.join(synergy[:-1])} and {synergy[-1]}, each -fair, -greedy or -tune;"
    )


def policy_of(spec: str | Policy) -> Policy:
    """A new policy from ``spec``: a name of :data:`POLICIES`, ``FILE.py:CLASS`` (a
    :class:`Policy` subclass in a user's file, made without arguments), or a policy.

    Raises
    ------
    InputError
        For an unknown name, a file that cannot be read or run, a class it does not
        have, or a class that is not a :class:`Policy`.
    """
    if isinstance(spec, Policy):
        return spec
    if spec in POLICIES:
        return POLICIES[spec]()
    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise InputError(f"unknown policy {spec!r}; choose one of {policy_list()} or FILE.py:CLASS")
    file = Path(path)
    check_input_file(file)
    module_name = f"planner_user_policy_{abs(hash(file.resolve()))}"
    loader = importlib.util.spec_from_file_location(module_name, file)
    if loader is None or loader.loader is None:  # pragma: no cover - a .py file always loads
        raise InputError("not a Python module", path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[module_name] = module
    try:
        loader.loader.exec_module(module)
    # A user's file may fail in any way: its error is bad input, in one line.
    except Exception as exc:
        del sys.modules[module_name]
        raise InputError(f"the policy file fails: {exc.__class__.__name__}: {exc}", path) from None
    cls = getattr(module, name, None)
    if cls is None:
        raise InputError(f"no class {name!r} in the file", path)
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise InputError(
            f"{name!r} is not a policy: subclass planner.executor.policies.Policy", path
        )
    try:
        policy = cls()
    except Exception as exc:
        raise InputError(f"{name}() fails: {exc.__class__.__name__}: {exc}", path) from None
    if policy.name == Policy.name:
        policy.name = name
    return policy

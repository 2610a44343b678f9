"""planner: interleaved multi-resource planning of deep-learning training jobs.

One import reaches the library: the problem model, instance files, schedules and
the independent validator, bounds, the interleaving model (loaded with the
package), and, loaded when first used, the solvers (``planner.solve``), the
executor (``planner.simulate``, ``planner.monte_carlo``), re-planning
(``planner.replan``), the job-level executor with its policies
(``planner.run_policy``), the plan of training jobs in its model
(``planner.plan_jobs``), workloads and comparisons. ``__all__`` lists what is
public.

The package is layered, each layer importing only those below it:

- ``planner`` (this folder): the model and its evaluation;
- ``planner.dl``: training workloads, the cluster form and its compiler;
- ``planner.io``: instance files;
- ``planner.executor``: the job-level executor, its model and its policies;
- ``planner.replay``: the task-level replay and re-planning;
- ``planner.app``: the command line, comparisons and charts;

and the engines ``planner.models`` (CP-SAT, MILP) and ``planner.solvers``
(heuristics, the registry, the search in the executor's model), kept in the
repository's ``models/`` and ``solvers/`` folders, which only the app layer and
re-planning import (lazily).
"""

from importlib import import_module
from typing import Any

from planner.bounds import critical_path_bound, energy_bound, lower_bound
from planner.checks import check_feasibility
from planner.errors import InfeasibleError, InputError, PlannerError
from planner.interleave import Interleave, Stages
from planner.io.instance import load_instance, problem_from_data, save_instance
from planner.model import (
    CapacityWindow,
    Job,
    Mode,
    Node,
    Precedence,
    Problem,
    Resource,
    Segment,
    Task,
)
from planner.result import Progress, Result, Status
from planner.schedule import Schedule, load_schedule
from planner.validate import Report, Violation, validate

__version__ = "0.1.0"

_LAZY = {
    "solve": "planner.solvers",
    "SOLVERS": "planner.solvers",
    "SolverError": "planner.solvers",
    "simulate": "planner.replay.simulate",
    "monte_carlo": "planner.replay.simulate",
    "Execution": "planner.replay.record",
    "Disturbances": "planner.disturbances",
    "Failure": "planner.disturbances",
    "Noise": "planner.disturbances",
    "Slowdown": "planner.disturbances",
    "replan": "planner.replay.replan",
    "parse_event": "planner.replay.events",
    "state_from_schedule": "planner.replay.state",
    "run_policy": "planner.executor.loop",
    "read_trace": "planner.executor.model.jobs",
    "ExecutorJob": "planner.executor.model.jobs",
    "ClusterInstance": "planner.dl.specs",
    "generate": "planner.io.instance",
    "generate_batch": "planner.dl.workloads",
    "run_study": "planner.app.compare",
    "plan_jobs": "planner.app.solve_dl",
}
"""Public names loaded on first use: their modules pull in solvers and heavy libraries."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CapacityWindow",
    "InfeasibleError",
    "InputError",
    "Job",
    "Mode",
    "Node",
    "PlannerError",
    "Precedence",
    "Problem",
    "Progress",
    "Report",
    "Resource",
    "Result",
    "Schedule",
    "Segment",
    "Status",
    "Task",
    "Violation",
    "__version__",
    "check_feasibility",
    "critical_path_bound",
    "energy_bound",
    "load_instance",
    "load_schedule",
    "lower_bound",
    "problem_from_data",
    "save_instance",
    "validate",
    "Interleave",
    "Stages",
    *_LAZY,
]

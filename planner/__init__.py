"""planner: interleaved multi-resource planning of deep-learning training jobs.

The core: the problem model, instance files, schedules and the independent
validator, lower bounds. Solvers live in the ``solvers`` and ``models``
packages and are reached through :func:`solvers.solve`.
"""

from planner.bounds import critical_path_bound, energy_bound, lower_bound
from planner.checks import check_feasibility
from planner.errors import InfeasibleError, InputError, PlannerError
from planner.instance import load_instance, save_instance
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
    "save_instance",
    "validate",
]

"""The problem model every solver sees.

Time is integral (ticks). A :class:`Problem` holds renewable and non-renewable
resources, tasks whose modes are chains of segments with per-resource demands,
precedences with lags, task windows and jobs. Entities check themselves when
built; cross-references are checked once, in :class:`Problem`, with messages
that name the offending object by its field path.
"""

from __future__ import annotations

import re
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.arrays import ProblemArrays

GPU_KIND = re.compile(r"^(?:[^.]+\.)?gpu(?:\.[^.]+)?$")
"""A GPU resource or node kind: ``gpu``, ``gpu.TYPE``, ``KEY.gpu`` or ``KEY.gpu.TYPE``."""
_RESIDENT = re.compile(r"^(?:[^.]+\.)?resident(?:\.[^.]+)?$")
"""A fluid block's residency, named like a GPU resource."""

MAX_INT = 2**40
"""The largest integer an instance or a schedule may hold (about 1.1e12).

It bounds every capacity, demand, budget use, duration, lag, release, deadline,
window bound and node count, every schedule start, and the horizon (every task
back to back, see :func:`planner.bounds.horizon`), so that every tick and every
sum a solver forms stays far inside 64-bit integers.
"""

NonNegInt = Annotated[int, Field(ge=0, le=MAX_INT, strict=True)]
PosInt = Annotated[int, Field(ge=1, le=MAX_INT, strict=True)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


class _Entity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Window(_Entity):
    """A window ``[start, end)`` of ticks."""

    start: NonNegInt
    end: NonNegInt

    @model_validator(mode="after")
    def _ordered(self) -> _Window:
        if self.end <= self.start:
            raise ValueError(f"window end {self.end} must be after its start {self.start}")
        return self


class CapacityWindow(_Window):
    """A window ``[start, end)`` in which a renewable resource has another capacity."""

    capacity: NonNegInt


class PriceWindow(_Window):
    """A window ``[start, end)`` (ticks) of another price of energy."""

    price: NonNegFloat


class Tariff(_Entity):
    """The price of energy over time (per kWh, in the user's currency): ``price``, and in
    ``windows`` another; with a ``period`` (ticks) the windows repeat every period (a day).
    """

    price: NonNegFloat
    windows: list[PriceWindow] = Field(default_factory=list)
    period: PosInt | None = None

    @model_validator(mode="after")
    def _check(self) -> Tariff:
        spans = sorted((w.start, w.end) for w in self.windows)
        for (_, end), (start, _) in pairwise(spans):
            if start < end:
                raise ValueError(f"windows: two windows overlap at tick {start}")
        if self.period is not None and spans and spans[-1][1] > self.period:
            raise ValueError(f"windows: a window ends at {spans[-1][1]}, after the period")
        return self

    def paid(self, start: float, end: float) -> float:
        """The price summed over the ticks ``[start, end)`` (a part of a tick in
        proportion)."""
        return self._upto(end) - self._upto(start)

    def upto(self, t: float) -> float:
        """The price summed over the ticks ``[0, t)``."""
        return self._upto(t)

    def _upto(self, t: float) -> float:
        def within(x: float) -> float:
            total = self.price * x
            for w in self.windows:
                total += (w.price - self.price) * max(0.0, min(x, w.end) - w.start)
            return total

        if self.period is None:
            return within(t)
        rounds, rest = divmod(t, self.period)
        return rounds * within(self.period) + within(rest)


class Resource(_Entity):
    """A renewable resource (capacity per tick) or a non-renewable one (a total budget)."""

    name: Name
    capacity: NonNegInt
    kind: Literal["renewable", "nonrenewable"] = "renewable"
    windows: list[CapacityWindow] = Field(
        default_factory=list,
        description="Windows of other capacity (renewable only), e.g. maintenance.",
    )

    @model_validator(mode="after")
    def _windows(self) -> Resource:
        if self.windows and self.kind != "renewable":
            raise ValueError("capacity windows apply to renewable resources only")
        spans = sorted((w.start, w.end) for w in self.windows)
        for (_, end), (start, _) in pairwise(spans):
            if start < end:
                raise ValueError(f"capacity windows overlap at tick {start}")
        return self

    @property
    def renewable(self) -> bool:
        """Whether the resource is renewable."""
        return self.kind == "renewable"

    def capacity_at(self, tick: int) -> int:
        """Capacity at ``tick``, windows included."""
        for w in self.windows:
            if w.start <= tick < w.end:
                return w.capacity
        return self.capacity

    @property
    def max_capacity(self) -> int:
        """The largest capacity the resource ever has."""
        return max([self.capacity, *(w.capacity for w in self.windows)])


class Segment(_Entity):
    """A stretch of a mode with constant demands on renewable resources."""

    name: str | None = None
    duration: NonNegInt
    demand: dict[str, NonNegInt] = Field(default_factory=dict)
    watts: NonNegFloat | None = Field(
        default=None,
        description="Watts above idle the segment's GPUs draw while it runs, in place of "
        "the busy figure of its demands of kind gpu (a block under a GPU power limit).",
    )


class Mode(_Entity):
    """One way to run a task: segments back to back, optional budget use and placement."""

    name: str | None = None
    segments: list[Segment] = Field(min_length=1)
    consumes: dict[str, NonNegInt] = Field(
        default_factory=dict, description="Use of non-renewable resources."
    )
    placement: str | None = Field(default=None, description="Placement key, e.g. a node name.")
    nodes: NonNegInt = Field(
        default=0,
        description="Whole nodes the mode runs on (a gang when more than one); 0: none. "
        "Demands on node resources are per node of the set.",
    )
    node_type: str | None = Field(default=None, description="Only nodes of this type.")
    on: list[Name] | None = Field(
        default=None,
        description="The nodes the mode must run on (a pinned node set, as many as 'nodes'), "
        "e.g. a running task kept where it runs when the rest is planned again.",
    )
    same_nodes_as: Name | None = Field(
        default=None,
        description="A predecessor task whose node set this mode keeps, e.g. the block of a "
        "migrating job that stays where the job's previous block ran.",
    )

    @model_validator(mode="after")
    def _node_type(self) -> Mode:
        if self.node_type is not None and not self.nodes:
            raise ValueError("node_type: a mode that runs on no node (nodes: 0) has no node type")
        if self.on is not None and (len(self.on) != self.nodes or len(set(self.on)) != self.nodes):
            raise ValueError(f"on: {len(self.on)} nodes pinned, the mode runs on {self.nodes}")
        if self.same_nodes_as is not None and not self.nodes:
            raise ValueError("same_nodes_as: a mode that runs on no node (nodes: 0) keeps no nodes")
        return self

    @property
    def duration(self) -> int:
        """Total duration: the sum of the segment durations."""
        return sum(s.duration for s in self.segments)

    def peak(self, resource: str) -> int:
        """Largest demand on ``resource`` over the segments that take time."""
        return max((s.demand.get(resource, 0) for s in self.segments if s.duration), default=0)

    def energy(self, resource: str) -> int:
        """Demand times duration on ``resource``, summed over segments."""
        return sum(s.duration * s.demand.get(resource, 0) for s in self.segments)


class Task(_Entity):
    """A task: one of its modes runs, starting at or after ``release``, ending by ``deadline``."""

    name: Name
    job: str | None = None
    modes: list[Mode] = Field(min_length=1)
    release: NonNegInt = 0
    deadline: NonNegInt | None = None

    @field_validator("modes")
    @classmethod
    def _name_modes(cls, modes: list[Mode]) -> list[Mode]:
        named = [
            m if m.name else m.model_copy(update={"name": str(i + 1)}) for i, m in enumerate(modes)
        ]
        seen: set[str] = set()
        for i, m in enumerate(named):
            if m.name in seen:
                raise ValueError(f"duplicate mode name {m.name!r} (modes[{i}])")
            seen.add(m.name)  # type: ignore[arg-type]
        return named

    @property
    def min_duration(self) -> int:
        """Duration of the shortest mode."""
        return min(m.duration for m in self.modes)

    def mode(self, name: str) -> Mode:
        """The mode called ``name``; ``KeyError`` if there is none."""
        for m in self.modes:
            if m.name == name:
                return m
        raise KeyError(name)


class Precedence(_Entity):
    """``after`` may start only ``lag`` ticks after ``before`` finishes (FS) or starts (SS)."""

    before: Name
    after: Name
    kind: Literal["FS", "SS"] = "FS"
    lag: NonNegInt = 0


class Node(_Entity):
    """A machine, or a part of one (``host``): its own capacity of each node resource
    (``gpu``, ``cpu``, ...)."""

    name: Name
    capacity: dict[Name, NonNegInt] = Field(min_length=1)
    type: str | None = Field(default=None, description="A label modes can ask for (GPU type).")
    host: str | None = Field(
        default=None,
        description="The machine the node is part of: a node of the problem may be one GPU "
        "of it (the cluster form's 'placement: gpu').",
    )


class Job(_Entity):
    """A named group of tasks with a weight, an optional colocation rule and a restart cost."""

    name: Name
    weight: Annotated[float, Field(gt=0)] = 1.0
    restart: NonNegInt = Field(
        default=0,
        description="Ticks a task of the job spends restoring its state when it starts again "
        "after a failure killed it (a migrating job's moved blocks carry it as a segment).",
    )
    colocate: bool = Field(
        default=False,
        description="All tasks of the job that pick a mode with a placement key pick the same "
        "key, and all that run on nodes run on the same nodes.",
    )


class Problem(_Entity):
    """A complete instance: resources, tasks, precedences, jobs and the objective."""

    name: str = "problem"
    time_unit: str = Field(default="1", description="What one tick is, e.g. '1s' or '1min'.")
    objective: Literal["makespan", "weighted_completion", "energy", "cost"] = Field(
        default="makespan",
        description="makespan, weighted_completion (weighted job completion times), energy "
        "(kWh: the tasks' busy draw over their modes, and the idle draw of every resource "
        "and node over the makespan, plus makespan_watts over it), or cost (that draw "
        "priced by the tariff at every tick).",
    )
    makespan_watts: NonNegFloat = Field(
        default=0.0,
        description="objectives energy and cost: watts charged over the makespan on top of "
        "the idle draw, a price on time; raising it from 0 traces the makespan-energy front.",
    )
    idle_off: bool = Field(
        default=False,
        description="Resources draw nothing while idle (switched off, at the grain of a "
        "unit): energy is the busy draw alone.",
    )
    resources: list[Resource] = Field(default_factory=list)
    nodes: list[Node] = Field(
        default_factory=list,
        description="Machines whose resources modes with ``nodes`` > 0 use, per node.",
    )
    tasks: list[Task] = Field(min_length=1)
    precedences: list[Precedence] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    watts: dict[Name, tuple[NonNegFloat, NonNegFloat]] = Field(
        default_factory=dict,
        description="Busy and idle watts per physical unit of a resource kind (``gpu``: "
        "[300, 60]), for energy and power figures; the kinds not named take the metrics' "
        "defaults.",
    )
    tariff: Tariff | None = Field(
        default=None, description="The price of energy over time, for the cost of a plan."
    )
    units: dict[Name, PosInt] = Field(
        default_factory=dict,
        description="Units of demand per physical unit of a resource or node kind: 100 "
        "gives a fluid training block's shares in hundredths of a GPU. Metrics that count "
        "physical units (energy, GPUs held) divide by it; 1 where absent.",
    )

    STRUCTURE: ClassVar[frozenset[str]] = frozenset(
        {"name", "resources", "nodes", "tasks", "precedences", "jobs"}
    )
    """The fields that hold the instance's structure; the others are its settings."""

    def settings(self) -> dict[str, Any]:
        """The fields that are not :attr:`STRUCTURE` (time unit, objective, power, tariff,
        units): what an instance derived from this one (realized, re-planned) keeps."""
        return {k: getattr(self, k) for k in type(self).model_fields if k not in self.STRUCTURE}

    @model_validator(mode="after")
    def _time_unit(self) -> Problem:
        # "1" is a bare tick of no stated length (PSPLIB); anything else must be a length
        if self.time_unit != "1":
            from planner.times import tick_seconds

            try:
                tick_seconds(self.time_unit)
            except ValueError as exc:
                raise ValueError(f"{exc}, or '1' (a tick of no stated length)") from None
        elif self.objective in ("energy", "cost"):
            raise ValueError(f"objective {self.objective}: give a time_unit (the length of a tick)")
        if self.objective == "cost" and self.tariff is None:
            raise ValueError("objective cost: give a tariff (the price of energy over time)")
        return self

    @model_validator(mode="after")
    def _units(self) -> Problem:
        known = {r.name for r in self.resources} | set(self.node_kinds)
        for name in self.units:
            if name not in known:
                raise ValueError(f"units.{name}: no resource or node kind {name!r}")
        return self

    @model_validator(mode="after")
    def _cross_references(self) -> Problem:
        _unique("resources", [r.name for r in self.resources])
        _unique("tasks", [t.name for t in self.tasks])
        _unique("jobs", [j.name for j in self.jobs])
        _unique("nodes", [n.name for n in self.nodes])
        kinds = {r.name: r.kind for r in self.resources}
        for i, node in enumerate(self.nodes):
            for kind in node.capacity:
                if kind in kinds:
                    raise ValueError(
                        f"nodes[{i}].capacity.{kind}: {kind!r} is also a cluster-wide resource"
                    )
        local = self.node_kinds
        types: dict[str | None, int] = {}
        node_types = {n.name: n.type for n in self.nodes}
        for node in self.nodes:
            types[node.type] = types.get(node.type, 0) + 1
        jobs = {j.name for j in self.jobs}
        for i, task in enumerate(self.tasks):
            where = f"tasks[{i}]"
            if task.job is not None and task.job not in jobs:
                raise ValueError(f"{where}.job: unknown job {task.job!r} (task {task.name!r})")
            for k, mode in enumerate(task.modes):
                if mode.nodes:
                    have = len(self.nodes) if mode.node_type is None else types.get(mode.node_type)
                    if not have:
                        what = "no nodes" if mode.node_type is None else "no node of type"
                        raise ValueError(
                            f"{where}.modes[{k}].nodes: the problem has {what}"
                            + (f" {mode.node_type!r}" if mode.node_type is not None else "")
                        )
                    if mode.nodes > have:
                        raise ValueError(
                            f"{where}.modes[{k}].nodes: {mode.nodes} nodes asked, "
                            f"the problem has {have}"
                        )
                    for name in mode.on or ():
                        if name not in node_types:
                            raise ValueError(f"{where}.modes[{k}].on: unknown node {name!r}")
                        if mode.node_type is not None and node_types[name] != mode.node_type:
                            raise ValueError(
                                f"{where}.modes[{k}].on: node {name!r} is not of type "
                                f"{mode.node_type!r}"
                            )
                for s, seg in enumerate(mode.segments):
                    for res in seg.demand:
                        at = f"{where}.modes[{k}].segments[{s}].demand"
                        if res in local:
                            if not mode.nodes:
                                raise ValueError(
                                    f"{at}.{res}: {res!r} is a node resource but the mode runs "
                                    "on no node (give 'nodes')"
                                )
                            continue
                        _check_ref(at, res, kinds, "renewable")
                for res in mode.consumes:
                    _check_ref(f"{where}.modes[{k}].consumes", res, kinds, "nonrenewable")
        names = {t.name for t in self.tasks}
        for i, p in enumerate(self.precedences):
            for end in ("before", "after"):
                if getattr(p, end) not in names:
                    raise ValueError(f"precedences[{i}].{end}: unknown task {getattr(p, end)!r}")
            if p.before == p.after:
                raise ValueError(f"precedences[{i}]: task {p.before!r} cannot precede itself")
        self._kept_nodes()
        return self

    def _kept_nodes(self) -> None:
        """Each ``same_nodes_as`` names a direct predecessor with a mode of the same gang size."""
        before = {(p.before, p.after) for p in self.precedences}
        tasks = {t.name: t for t in self.tasks}
        for i, task in enumerate(self.tasks):
            for k, mode in enumerate(task.modes):
                ref = mode.same_nodes_as
                if ref is None:
                    continue
                at = f"tasks[{i}].modes[{k}].same_nodes_as"
                if ref not in tasks:
                    raise ValueError(f"{at}: unknown task {ref!r}")
                if (ref, task.name) not in before:
                    raise ValueError(
                        f"{at}: task {ref!r} must be a direct predecessor of {task.name!r} "
                        "(its nodes are chosen first)"
                    )
                if not any(m.nodes == mode.nodes for m in tasks[ref].modes):
                    raise ValueError(f"{at}: no mode of task {ref!r} runs on {mode.nodes} nodes")

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Problem:
        """A copy with ``update`` applied (not validated), without this problem's cached views.

        The views (``arrays``, ``task_index``, ...) are derived from the fields, so a
        copy whose fields change must build its own.
        """
        copy = super().model_copy(update=update, deep=deep)
        for name in _CACHED:
            copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def task_index(self) -> dict[str, int]:
        """Position of each task by name."""
        return {t.name: i for i, t in enumerate(self.tasks)}

    @cached_property
    def node_kinds(self) -> list[str]:
        """The node resource kinds, in order of first appearance over the nodes."""
        return list(dict.fromkeys(k for n in self.nodes for k in n.capacity))

    def gpus(self, mode: Mode) -> int:
        """The GPUs ``mode`` runs on (per node of its set): its residency where it has
        one (a fluid training block), else its peak demand on GPU kinds (``gpu``,
        ``gpu.*``, ``KEY.gpu``, ``KEY.gpu.*``), a share of a GPU counted whole."""
        peak = 0
        for seg in mode.segments:
            if not seg.duration:
                continue
            resident = [q for r, q in seg.demand.items() if _RESIDENT.match(r)]
            gpus = sum(-(-q // self.unit(r)) for r, q in seg.demand.items() if GPU_KIND.match(r))
            peak = max(peak, sum(resident) if resident else gpus)
        return peak

    def unit(self, name: str) -> int:
        """Units of demand per physical unit of resource or node kind ``name`` (1 unless
        ``units`` says otherwise)."""
        return self.units.get(name, 1)

    @cached_property
    def renewables(self) -> list[Resource]:
        """The renewable resources, in file order."""
        return [r for r in self.resources if r.renewable]

    @cached_property
    def nonrenewables(self) -> list[Resource]:
        """The non-renewable resources, in file order."""
        return [r for r in self.resources if not r.renewable]

    def task(self, name: str) -> Task:
        """The task called ``name``."""
        return self.tasks[self.task_index[name]]

    def holding_nodes(self, mode: Mode) -> list[int]:
        """Numbers of the nodes ``mode`` can run on: of its type, among its pinned nodes if
        it has any, each holding its peak demand on every node kind."""
        peak = {k: mode.peak(k) for k in self.node_kinds}
        return [
            v
            for v, node in enumerate(self.nodes)
            if mode.node_type in (None, node.type)
            and (mode.on is None or node.name in mode.on)
            and all(node.capacity.get(k, 0) >= q for k, q in peak.items())
        ]

    def job_weight(self, name: str) -> float:
        """Weight of the job called ``name``."""
        return next(j.weight for j in self.jobs if j.name == name)

    @property
    def multi_mode(self) -> bool:
        """Whether any task has more than one mode."""
        return any(len(t.modes) > 1 for t in self.tasks)

    @cached_property
    def arrays(self) -> ProblemArrays:
        """Compact numpy view for solvers (built once)."""
        from planner.arrays import ProblemArrays

        return ProblemArrays.build(self)


_CACHED = ("task_index", "node_kinds", "renewables", "nonrenewables", "arrays")


def _unique(field: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{field}[{i}].name: duplicate name {name!r}")
        seen.add(name)


def _check_ref(where: str, name: str, kinds: dict[str, str], want: str) -> None:
    if name not in kinds:
        raise ValueError(f"{where}.{name}: unknown resource {name!r}")
    if kinds[name] != want:
        raise ValueError(f"{where}: resource {name!r} is {kinds[name]}, expected {want}")


M = TypeVar("M", bound=BaseModel)
_FIELD_PATH = re.compile(r"[A-Za-z_][\w\[\].]*")
SHOWN_ERRORS = 5
"""How many of a file's validation errors a message names (the first with its cause, the
next ones by their place)."""


def validated(model: type[M], data: dict[str, Any]) -> M:
    """Validate ``data`` as ``model``; its errors become one :class:`InputError`.

    The message is one line: the first error (field path and cause) with the count of
    errors and the places of the next ones, up to :data:`SHOWN_ERRORS` in all, then how
    many more there are.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _input_error(exc) from None


def _input_error(exc: ValidationError) -> InputError:
    """The first error with its cause; with more, their count and the next ones' places,
    on one line."""
    errors = [_describe(e) for e in exc.errors()]
    place, msg = errors[0]
    if len(errors) > 1:
        others = [where or what for where, what in errors[1:SHOWN_ERRORS]]
        more = len(errors) - SHOWN_ERRORS
        listed = ", ".join(others) + (f" and {more} more" if more > 0 else "")
        msg += f" (1 of {len(errors)} errors; also at {listed})"
    return InputError(msg, place=place or None)


def _describe(error: ErrorDetails) -> tuple[str, str]:
    """The field path and the cause of one validation error."""
    place = _path(error["loc"])
    msg = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        msg = "missing required field"
    elif error["type"] == "extra_forbidden":
        msg = "unknown field"
    elif error["type"] == "less_than_equal" and error.get("ctx", {}).get("le") == MAX_INT:
        msg = f"{error['input']} is above the limit of 2**40 = {MAX_INT}"
    head, sep, rest = msg.partition(": ")
    if sep and _FIELD_PATH.fullmatch(head):
        place, msg = (f"{place}.{head}" if place else head), rest
    return place, msg


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = str(part) if str(part).isprintable() else repr(part)
            out += f".{name}" if out else name
    return out

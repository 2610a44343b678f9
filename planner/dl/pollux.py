"""Elastic training jobs as Pollux models them (Qiao et al., OSDI 2021; its artifact's
``simulator/``, Apache-2.0, whose profiles ship in ``catalog/pollux/``).

A job of an *application* (``bert``, ``cifar10``, ``deepspeech2``, ``imagenet``,
``ncf``, ``yolov3``) trains for the application's epochs. Its progress is counted in
iterations at the application's initial batch size ``M0``: a step at total batch size
``M`` adds the gain ``(var + sqr) / (var / (M / M0) + sqr)``, ``sqr`` and ``var`` the
gradient statistics of the epoch at that batch size (measured per validated batch size;
linear between them). A step of ``n`` GPUs (replicas) at local batch ``b`` with ``s``
accumulation steps takes ``step + s * (step - sync)`` seconds, ``step`` and ``sync``
measured per placement (GPUs per node, e.g. ``22``: two nodes of two) and local batch
(linear between measured batches), or linear between the measured points of other
placements. The job's *goodput* is its gain per second; it ends when its progress
reaches that of its last epoch.

:class:`Application` answers these from the profiles; :class:`GoodputModel` is Pollux's
fitted model (throughput ``T = s (a_c + b_c b) + ((a_c + b_c b)^g + T_net^g)^(1/g)``,
``T_net`` by replicas within and across nodes) that its scheduler plans with, and
:func:`fit_perf_params` fits it to the points a job has run at.
"""

from __future__ import annotations

import bisect
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from planner.errors import InputError
from planner.interleave import Stages

APPLICATIONS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
"""Pollux's six applications."""

FILES = ("applications.csv", "profiles_placements.csv", "profiles_scalability.csv",
         "profiles_validation.csv")  # fmt: skip
"""The profile files a folder of Pollux's profiles holds (``pollux_`` before each name
is accepted too, as its export names them)."""

MAX_NODES_MEASURED = 16
"""Pollux interpolates throughput across at most 16 nodes (its profiles' largest)."""


@cache
def _rows(folder: Path | None, name: str) -> list[dict[str, str]]:
    """The rows of one profile file: from ``folder``, else the catalog's (read once; every
    application reads the same files)."""
    if folder is None:
        text = resources.files("planner.dl").joinpath("catalog", "pollux", name).read_text()
        return list(csv.DictReader(text.splitlines()))
    for candidate in (folder / name, folder / f"pollux_{name}"):
        if candidate.is_file():
            with candidate.open(newline="") as f:
                return list(csv.DictReader(f))
    raise InputError(f"no {name} (nor pollux_{name}) in the profiles folder", str(folder))


PROFILED_GPUS = 4
"""GPUs per node of the nodes Pollux's profiles were measured on."""


def packed(gpus: int, per_node: int) -> tuple[int, ...]:
    """A placement of ``gpus`` on the fewest nodes of ``per_node`` GPUs."""
    return (per_node,) * (gpus // per_node) + ((gpus % per_node,) if gpus % per_node else ())


def _placement_key(digits: Sequence[int]) -> str:
    """A placement (GPUs per node) as Pollux keys it: the smallest rotation, as digits."""
    p = tuple(d for d in digits if d)
    return "".join(map(str, min(p[i:] + p[:i] for i in range(len(p)))))


@dataclass(frozen=True)
class Validation:
    """One validated batch size's measures per epoch."""

    progress: np.ndarray
    iteration: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray


class Application:
    """One of Pollux's applications, from its profiles (see the module docstring)."""

    def __init__(self, name: str, folder: Path | None = None) -> None:
        apps = {r["model"]: r for r in _rows(folder, "applications.csv")}
        if name not in apps:
            raise InputError(
                f"unknown Pollux application {name!r}; known: {', '.join(sorted(apps))}"
            )
        row = apps[name]
        self.name = name
        self.init_batch_size = int(row["init_batch_size"])
        self.max_batch_size = int(row["max_batch_size"])
        self.min_local_bsz = int(row["min_local_bsz"])
        self.max_local_bsz = int(row["max_local_bsz"])
        self.max_epochs = int(row["max_epochs"])
        self.rescale_time = float(row["rescale_time_s"])
        by_bsz: dict[int, list[dict[str, str]]] = {}
        for r in _rows(folder, "profiles_validation.csv"):
            if r["model"] == name:
                by_bsz.setdefault(int(r["batch_size"]), []).append(r)
        self.validation = {}
        for b, rs in sorted(by_bsz.items()):
            rs.sort(key=lambda r: int(r["epoch"]))
            columns = ("progress", "iteration", "grad_sqr", "grad_var")
            self.validation[b] = Validation(*(np.array([float(r[c]) for r in rs]) for c in columns))
        self.placements: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        points: dict[tuple[int, int, int], list[tuple[float, float]]] = {}
        rows = [r for r in _rows(folder, "profiles_placements.csv") if r["model"] == name]
        for key in sorted({r["placement"] for r in rows}):
            here = sorted((int(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
                          for r in rows if r["placement"] == key)  # fmt: skip
            arr = np.array(here)
            self.placements[key] = (arr[:, 0], arr[:, 1], arr[:, 2])
            for b, step, sync in here:
                digits = [int(c) for c in key]
                points.setdefault((len(digits), sum(digits), b), []).append((step, sync))
        xs = [(*k, *np.mean(v, axis=0)) for k, v in points.items()]
        for r in _rows(folder, "profiles_scalability.csv"):
            if r["model"] == name:
                xs.append((int(r["num_nodes"]), int(r["num_gpus"]), int(r["local_bsz"]),
                           float(r["step_time"]), float(r["sync_time"])))  # fmt: skip
        self._points = np.array(xs, dtype=float)
        self._starts = [0.0] + [
            float(min(v.progress[e - 1] for v in self.validation.values()))
            for e in range(1, self.max_epochs + 1)
        ]
        self.target_progress = self._starts[-1]

    @property
    def batch_sizes(self) -> list[int]:
        """The validated batch sizes, ascending."""
        return list(self.validation)

    def progress_at(self, epoch: int) -> float:
        """The progress at which ``epoch`` starts (0 for the first; the least over the
        validated batch sizes, as Pollux's simulator counts)."""
        return self._starts[epoch]

    def epoch_of(self, progress: float) -> int:
        """The epoch a job at ``progress`` is in (its last past its end)."""
        return min(bisect.bisect_right(self._starts, progress + 1e-9) - 1, self.max_epochs)

    def _between(self, batch_size: float) -> tuple[int, int]:
        """The validated batch sizes around ``batch_size``."""
        sizes = self.batch_sizes
        if not sizes[0] <= batch_size <= sizes[-1]:
            raise InputError(f"{self.name}: batch size {batch_size:g} outside the validated "
                             f"{sizes[0]}..{sizes[-1]}")  # fmt: skip
        lower = max(b for b in sizes if b <= batch_size)
        upper = min(b for b in sizes if b >= batch_size)
        return lower, upper

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """``(sqr, var)`` of the gradient in ``epoch`` at ``batch_size`` (linear between
        the validated batch sizes)."""
        return (self._validated(batch_size, "grad_sqr", epoch),
                self._validated(batch_size, "grad_var", epoch))  # fmt: skip

    def iterations_at(self, batch_size: float, epoch: int) -> float:
        """Steps at ``batch_size`` after ``epoch`` ends (linear between the validated batch
        sizes), as Optimus in Pollux's simulator counts a job's remaining work."""
        return self._validated(batch_size, "iteration", epoch)

    def _validated(self, batch_size: float, column: str, epoch: int) -> float:
        """A measure of ``epoch`` at ``batch_size``: linear between the validated batch
        sizes around it."""
        lo, hi = self._between(batch_size)
        a = float(getattr(self.validation[lo], column)[epoch])
        if lo == hi:
            return a
        w = (batch_size - lo) / (hi - lo)
        return (1 - w) * a + w * float(getattr(self.validation[hi], column)[epoch])

    def gain(self, batch_size: float, epoch: int) -> float:
        """Progress per step at ``batch_size`` in ``epoch``, in steps at the initial
        batch size."""
        sqr, var = self.grad_stats(batch_size, epoch)
        scale = batch_size / self.init_batch_size
        return (var + sqr) / (var / scale + sqr)

    def step_times(self, placement: Sequence[int], local_bsz: float) -> tuple[float, float]:
        """``(step, sync)`` seconds of one step at ``placement`` (GPUs per node) and
        local batch ``local_bsz``: measured, linear in the local batch; else linear
        between the measured points of (nodes, GPUs, local batch)."""
        return _step_times(self, _placement_key(placement), float(local_bsz))

    def least_batch(self, replicas: int) -> int:
        """The least total batch on ``replicas`` GPUs: the initial batch size, or the least
        local batch on each (Pollux's first batch for a job it has no model of)."""
        return max(self.init_batch_size, self.min_local_bsz * replicas)

    def config(
        self, replicas: int, batch_size: int, alone_accumulates: bool = False
    ) -> tuple[int, int]:
        """``(atomic_bsz, accum_steps)`` of a job of fixed ``batch_size`` on ``replicas``
        GPUs, as Pollux's simulator sets them: on one GPU at least one accumulation step
        above the initial batch size (always, with ``alone_accumulates``: its Optimus'
        prediction)."""
        local = math.ceil(batch_size / replicas - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if replicas == 1 and (alone_accumulates or batch_size > self.init_batch_size):
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        return min(atomic, int(self.max_batch_size / (replicas * (accum + 1)))), accum

    def seconds_per_step(self, placement: Sequence[int], atomic: int, accum: int) -> float:
        """Seconds of one step (its accumulation steps included)."""
        step, sync = self.step_times(placement, atomic)
        return step + (step - sync) * accum

    def goodput(self, placement: Sequence[int], atomic: int, accum: int, epoch: int) -> float:
        """Progress per second at ``placement`` with ``atomic`` local batch and ``accum``
        accumulation steps in ``epoch``."""
        batch = sum(placement) * atomic * (accum + 1)
        return self.gain(batch, epoch) / self.seconds_per_step(placement, atomic, accum)


@cache
def _step_times(app: Application, key: str, local_bsz: float) -> tuple[float, float]:
    """:meth:`Application.step_times` by placement key, cached."""
    if key in app.placements:
        bsz, step, sync = app.placements[key]
        return float(np.interp(local_bsz, bsz, step)), float(np.interp(local_bsz, bsz, sync))
    digits = [int(c) for c in key]
    nodes, replicas = min(len(digits), MAX_NODES_MEASURED), sum(digits)
    out = _interpolator(app)([nodes, replicas, local_bsz])[0]
    if not np.all(np.isfinite(out)):
        raise InputError(f"{app.name}: no measured point around {replicas} GPUs on {nodes} "
                         f"nodes at local batch {local_bsz:g}")  # fmt: skip
    return float(out[0]), float(out[1])


@cache
def _interpolator(app: Application):  # type: ignore[no-untyped-def]
    """Linear interpolation over the measured (nodes, GPUs, local batch) points."""
    from scipy.interpolate import LinearNDInterpolator

    return LinearNDInterpolator(app._points[:, :3], app._points[:, 3:])


@cache
def application(name: str, folder: str | None = None) -> Application:
    """The application ``name`` from the profiles in ``folder`` (default: the catalog's),
    read once."""
    return Application(name, Path(folder) if folder else None)


WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
"""The columns of a Pollux workload (its artifact's ``workloads/*.csv``)."""

DEFAULT_SET = "workloads"
"""The set of the combined workload file whose workloads ``--workload NAME`` names."""


def import_pollux(
    path: str | Path, workload: str | None = None, nodes: int = 16, gpus_per_node: int = 4
) -> dict[str, object]:
    """A Pollux workload as a cluster-form instance of elastic jobs on ``nodes`` nodes of
    ``gpus_per_node`` GPUs (Pollux's: 16 of 4 T4s). ``path``: one workload
    (``name,time,application,num_replicas,batch_size``) or the combined file of several
    (``set,workload,...``), of which ``workload`` picks one (``workload-6``: of the set
    ``workloads``; ``workloads-2.0/workload-6``: of another). Every job starts on its
    ``num_replicas`` GPUs at its ``batch_size`` (what the baselines keep; a policy that
    decides may change both), released at its ``time``, restarting in its application's
    rescale time.

    Raises
    ------
    InputError
        For a missing column, an unknown application, a bad number, or a workload the
        file does not hold.
    """
    from planner.files import check_input_file

    path = Path(path)
    check_input_file(path)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in WORKLOAD_COLUMNS if c not in header]
        if missing:
            raise InputError(f"not a Pollux workload: no column {missing[0]!r} (columns: "
                             f"{', '.join(WORKLOAD_COLUMNS)})", str(path))  # fmt: skip
        combined = "workload" in header
        if combined and workload is None:
            raise InputError("a file of several workloads: pick one with --workload", str(path))
        if not combined and workload is not None:
            raise InputError("--workload: the file holds one workload", str(path))
        wanted = None
        if workload is not None:
            wanted = tuple(workload.split("/", 1)) if "/" in workload else (DEFAULT_SET, workload)
        rows = [
            r
            for r in reader
            if wanted is None or (r.get("set", DEFAULT_SET), r["workload"]) == wanted
        ]
    if not rows:
        raise InputError(f"no workload {workload!r} in the file", str(path))
    jobs = []
    for k, row in enumerate(rows, start=2):
        where = f"line {k}" if wanted is None else f"job {row['name']!r}"
        app = row["application"]
        if app not in APPLICATIONS:
            raise InputError(f"unknown application {app!r}; Pollux's: {', '.join(APPLICATIONS)}",
                             str(path), where)  # fmt: skip
        try:
            release, gpus, batch = (
                float(row["time"]),
                int(row["num_replicas"]),
                int(row["batch_size"]),
            )
        except ValueError:
            raise InputError("time, num_replicas and batch_size are numbers", str(path),
                             where) from None  # fmt: skip
        total = nodes * gpus_per_node
        if release < 0 or gpus < 1 or gpus > total or batch < 1:
            raise InputError(f"time {release:g}, {gpus} replicas, batch size {batch}: out of "
                             f"range on {total} GPUs", str(path), where)  # fmt: skip
        model = application(app)
        stages = elastic_stages(app, gpus, batch)
        jobs.append({
            "name": row["name"], "gpus": gpus, "release": release,
            "iterations": math.ceil(model.target_progress),
            "stages": {"data": 0.0, "gpu": stages.gpu, "sync": stages.sync},
            "restart": model.rescale_time,
            "elastic": {"application": app, "batch_size": batch},
        })  # fmt: skip
    name = workload or path.stem
    return {
        "name": f"pollux-{name.replace('/', '-')}",
        "time_unit": "1s",
        "objective": "weighted_completion",
        "cluster": {"nodes": [{"name": "node", "count": nodes, "gpu": gpus_per_node}]},
        "jobs": jobs,
    }


def elastic_stages(application_name: str, gpus: int, batch_size: int | None) -> Stages:
    """An elastic job's stages per unit of progress in its first epoch, at its batch size
    (default: Pollux's first, ``max(M0, least local batch x GPUs)``) on its GPUs packed on
    nodes of 4 (Pollux's): what the models without elasticity see of it."""
    app = application(application_name)
    batch = batch_size or app.least_batch(gpus)
    atomic, accum = app.config(gpus, batch)
    step, sync = app.step_times(packed(gpus, PROFILED_GPUS), atomic)
    per = app.gain(gpus * atomic * (accum + 1), 0)
    return Stages(0.0, (step - sync) * (accum + 1) / per, sync / per)


@dataclass(frozen=True)
class GoodputModel:
    """Pollux's model of a job's goodput that its scheduler plans with: throughput from
    fitted ``params`` (``alpha_c, beta_c`` compute; ``alpha_n, beta_n`` network across
    nodes; ``alpha_r, beta_r`` within a node; ``gamma`` their overlap), efficiency from the
    gradient's ``sqr`` and ``var`` at the initial batch size ``init``."""

    params: tuple[float, ...]
    sqr: float
    var: float
    init: int

    def throughput(self, nodes: np.ndarray, replicas: np.ndarray, atomic: np.ndarray,
                   accum: np.ndarray) -> np.ndarray:  # fmt: skip
        """Samples per second."""
        a_c, b_c, a_n, b_n, a_r, b_r, gamma = self.params
        compute = a_c + b_c * atomic
        network = _network(nodes, replicas, (a_n, b_n, a_r, b_r))
        optim = (compute**gamma + network**gamma) ** (1 / gamma)
        return replicas * atomic * (accum + 1) / (accum * compute + optim)

    def efficiency(self, batch: np.ndarray) -> np.ndarray:
        """Progress per sample at ``batch``, over that at the initial batch size."""
        scale = batch / self.init
        denom = self.var / scale + self.sqr
        gain = np.where(denom > 0, (self.var + self.sqr) / np.where(denom > 0, denom, 1), 1.0)
        return gain / scale

    def optimize(self, nodes: np.ndarray, replicas: np.ndarray, most: int,
                 local: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """Per (nodes, replicas): the best goodput over 50 total batch sizes (geometric,
        from ``max(init, least local x replicas)`` to ``most``), with accumulation steps
        where a local batch exceeds ``local``'s largest (one GPU above the initial batch:
        at least one); its local batch and accumulation steps (Pollux's ``optimize``)."""
        nodes = np.asarray(nodes, dtype=float).ravel()
        replicas = np.asarray(replicas, dtype=float).ravel()
        lo, hi = local
        least = np.maximum(self.init, lo * replicas)
        batch = np.geomspace(least, np.maximum(most, least))
        per = batch / replicas
        eps = 1e-8
        accum = np.ceil(per / hi - eps) - 1
        accum = np.where((replicas == 1) & (per > self.init + eps), np.maximum(accum, 1), accum)
        accum = accum.astype(int)
        atomic = np.ceil(per / (accum + 1) - eps).astype(int)
        goodput = self.throughput(nodes, replicas, atomic, accum) * self.efficiency(
            replicas * atomic * (accum + 1)
        )
        goodput = np.where((lo <= atomic) & (atomic <= hi), goodput, 0.0)
        best = np.argmax(goodput, axis=0)
        cols = np.arange(goodput.shape[1])
        return goodput[best, cols], atomic[best, cols], accum[best, cols]


def _network(nodes: np.ndarray, replicas: np.ndarray, params: tuple[float, ...]) -> np.ndarray:
    """Pollux's network time: across nodes where there are several, within a node where
    there are several replicas, a constant plus a term growing past 2 replicas."""
    a_n, b_n, a_r, b_r = params
    conds = [nodes > 1, replicas > 1]
    bottleneck = np.select(conds, [a_n, a_r], 1e-8)
    retro = np.select(conds, [b_n, b_r], 1e-8) * np.maximum(replicas - 2, 1e-8)
    return bottleneck + retro


def fit_perf_params(points: dict[tuple[int, int, int], tuple[float, float]]) -> tuple[float, ...]:
    """Pollux's throughput parameters fitted to the ``points`` a job has run at ((nodes,
    replicas, local batch) -> (step, sync) seconds): least squares of the logs of the
    compute and step times, regularised as Pollux does; parameters its points cannot
    show are held at their floor (its ``fit_perf_params``)."""
    from scipy.optimize import Bounds, minimize

    keys = np.array(list(points), dtype=float)
    values = np.array(list(points.values()), dtype=float)
    nodes, replicas, atomic = keys[:, 0], keys[:, 1], keys[:, 2]
    step = values[:, 0]
    compute = step - values[:, 1]
    params = [1e-1, 1e-2] * 3 + [1.0 + 1e-3]
    lower = [1e-8, 1e-8] * 3 + [1.0]
    upper = [np.inf, np.inf] * 3 + [10.0]
    if len(np.unique(atomic)) == 1:
        params[0] = upper[0] = lower[0] = float(np.mean(compute) / 2)
    if not np.any(nodes > 1):
        params[2], upper[2], params[3], upper[3] = lower[2], lower[2], lower[3], lower[3]
    if not np.any((nodes == 1) & (replicas > 1)):
        params[4], upper[4], params[5], upper[5] = lower[4], lower[4], lower[5], lower[5]
    if not np.any(replicas > 2):
        params[3] = upper[3] = lower[3]
        params[5] = upper[5] = lower[5]

    def objective(p: np.ndarray) -> float:
        a_c, b_c, a_n, b_n, a_r, b_r, gamma = p
        pred_compute = a_c + b_c * atomic
        network = _network(nodes, replicas, (a_n, b_n, a_r, b_r))
        log_optim = np.log(pred_compute**gamma + network**gamma) / gamma
        err1 = np.sqrt(np.mean((np.log(pred_compute) - np.log(compute)) ** 2))
        err2 = np.sqrt(np.mean((log_optim - np.log(step)) ** 2))
        reg = 1e-3 * (gamma - 1) ** 2 + 1e-2 * ((b_n / a_n) ** 2 + (b_r / a_r) ** 2)
        return float(err1 + err2 + reg)

    fixed = [lo == hi for lo, hi in zip(lower, upper, strict=True)]
    free = [k for k, f in enumerate(fixed) if not f]
    x0 = np.array(params, dtype=float)

    def sub(x: np.ndarray) -> float:
        full = x0.copy()
        full[free] = x
        return objective(full)

    bounds = Bounds([lower[k] for k in free], [upper[k] for k in free])
    result = minimize(sub, x0[free], method="L-BFGS-B", bounds=bounds)
    out = x0.copy()
    out[free] = result.x
    if not np.any(nodes > 1):  # a prior: across nodes at least as slow as within one
        out[2] = max(out[2], out[4] * 1.1)
        out[3] = max(out[3], out[5] * 1.1)
    return tuple(float(v) for v in out)

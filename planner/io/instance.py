"""Reading and writing instance files.

Native JSON and YAML files come in two forms (see the README): the *problem
form* spells out the model; the *cluster form* (a top-level ``cluster`` key)
describes a cluster and training jobs and is compiled into the problem form.
PSPLIB ``.sm`` / ``.mm`` and Patterson ``.rcp`` files are read directly.
Every failure is an :class:`~planner.errors.InputError` naming the file, the
place and the cause.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from planner.bounds import horizon, horizon_error
from planner.checks import check_feasibility
from planner.errors import InputError
from planner.files import check_input_file, write_text
from planner.model import MAX_INT, Problem, validated

NATIVE = (".json", ".yaml", ".yml")
PSPLIB = (".sm", ".mm", ".rcp")


def load_instance(path: str | Path, check: bool = False) -> Problem:
    """Load an instance file of any supported format into a :class:`Problem`.

    With ``check``, also prove that the instance is not trivially infeasible
    (:func:`planner.checks.check_feasibility`).

    Raises
    ------
    InputError
        If the file is missing, unreadable, malformed or invalid;
        :class:`~planner.errors.InfeasibleError` (with ``check``) if it is infeasible.
    """
    return read_instance(path).problem(check)


@dataclass(frozen=True)
class InstanceFile:
    """An instance file read once (:func:`read_instance`): a command reads its instance
    into one of these and passes it down, so every reader shares one parse."""

    path: Path
    text: str
    data: dict[str, Any] | None = None
    """The parsed document of a native file (either form); ``None`` for PSPLIB."""

    def problem(self, check: bool = False) -> Problem:
        """The file's :class:`Problem` (a cluster form compiled); with ``check``, proved not
        trivially infeasible (:func:`planner.checks.check_feasibility`).

        Raises
        ------
        InputError
            If the file's content is invalid; :class:`~planner.errors.InfeasibleError`
            (with ``check``) if it is infeasible.
        """
        suffix = self.path.suffix.lower()
        try:
            if self.data is None:
                from planner.io.psplib_io import parse_psplib_text

                problem = parse_psplib_text(self.text, self.path.stem, patterson=suffix == ".rcp")
                check_horizon(problem)
            else:
                problem = problem_from_data(self.data)
            if check:
                check_feasibility(problem)
            return problem
        except InputError as exc:
            raise exc.at(str(self.path)) from None


def read_instance(path: str | Path) -> InstanceFile:
    """Read and parse an instance file of any supported format, once.

    Raises
    ------
    InputError
        If the file is missing, unreadable, of an unknown format, or not JSON or YAML
        where its suffix says so.
    """
    path = Path(path)
    name = str(path)
    suffix = path.suffix.lower()
    check_input_file(path)
    if suffix not in NATIVE + PSPLIB:
        raise InputError(
            f"unknown instance format {suffix or '(no extension)'!r}; "
            f"expected one of {', '.join(NATIVE + PSPLIB)}",
            name,
        )
    text = read_text(path)
    if suffix in PSPLIB:
        return InstanceFile(path, text)
    try:
        return InstanceFile(path, text, parse_native_text(text, suffix == ".json"))
    except InputError as exc:
        raise exc.at(name) from None


def read_text(path: Path) -> str:
    """The text of ``path``; empty, binary and undecodable files are input errors."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", name) from exc
    if not raw.strip():
        raise InputError("the file is empty", name)
    if b"\x00" in raw:
        raise InputError("binary data, not a text instance file", name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", name) from exc


class _DuplicateKey(Exception):
    """A key given twice in one mapping of a JSON file (its place unknown to the parser)."""


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (``json``'s ``object_pairs_hook``)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the
    last one without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping of ``node``; a repeated key is a YAML error at its line."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice in one mapping", key_node.start_mark
                )
            seen.add(key if isinstance(key, str | int | float | bool) else id(key_node))
        return super().construct_mapping(node, deep=deep)


def parse_native_text(text: str, is_json: bool) -> dict[str, Any]:
    """Parse JSON or YAML text into a mapping; a key given twice in one mapping is bad
    input in both."""
    if is_json:
        try:
            data = json.loads(text, object_pairs_hook=_json_object)
        except _DuplicateKey as exc:
            key = exc.args[0]
            raise InputError(f"invalid JSON: key {key!r} given twice in one object") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", place=f"line {exc.lineno}") from None
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply to read") from None
    else:
        try:
            data = yaml.load(text, Loader=_UniqueKeyLoader)
        except RecursionError:
            raise InputError("invalid YAML: nested too deeply to read") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            place = f"line {mark.line + 1}" if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"invalid YAML: {problem}", place=place) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping at the top level, got {type(data).__name__}")
    return data


def problem_from_data(data: dict[str, Any]) -> Problem:
    """Build a :class:`Problem` from a parsed native file of either form."""
    if "cluster" in data:
        from planner.dl.cluster import compile_cluster
        from planner.dl.specs import ClusterInstance

        problem = compile_cluster(validated(ClusterInstance, data))
        check_horizon(problem, cluster=True)
        return problem
    problem = validated(Problem, data)
    check_horizon(problem)
    return problem


def generate(jobs: int, seed: int = 0, **options: Any) -> Problem:
    """A seeded synthetic batch of ``jobs`` catalog training jobs, compiled: the
    :class:`Problem` of :func:`planner.dl.workloads.generate_batch` (whose keyword
    ``options`` it takes: ``nodes``, ``gpus_per_node``, ``time_unit``, ``blocks``,
    ``arrival_rate``, ``placement``), as ``planner generate`` writes it and
    :func:`load_instance` reads it back.

    Raises
    ------
    InputError
        For a count, seed, rate or placement out of its range.
    """
    from planner.dl.workloads import generate_batch

    return problem_from_data(generate_batch(jobs, seed, **options))


def check_horizon(problem: Problem, cluster: bool = False) -> None:
    """Refuse a problem whose horizon (:func:`planner.bounds.horizon`) is above ``MAX_INT``.

    Parameters
    ----------
    problem
        The problem to check.
    cluster
        Whether it was compiled from the cluster form, whose ``time_unit`` sets the ticks.

    Raises
    ------
    InputError
        If the horizon is too long; the advice fits the form the problem came from.
    """
    ticks = horizon(problem)
    if ticks > MAX_INT:
        raise horizon_error(ticks, problem.time_unit, cluster)


def dump_problem(problem: Problem) -> dict[str, Any]:
    """The problem form of ``problem`` as plain data (defaults left out)."""
    return problem.model_dump(mode="json", exclude_defaults=True)


def save_instance(problem: Problem, path: str | Path) -> None:
    """Write ``problem`` in the native problem form (``.json``, ``.yaml`` or ``.yml``)."""
    path = Path(path)
    data = dump_problem(problem)
    if path.suffix.lower() == ".json":
        write_text(path, json.dumps(data, indent=1) + "\n")
    elif path.suffix.lower() in (".yaml", ".yml"):
        write_text(path, yaml.safe_dump(data, sort_keys=False))
    else:
        raise InputError(f"cannot write {path.suffix!r}; use .json, .yaml or .yml", str(path))

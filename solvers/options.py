"""Solver options: what each solver declares, and the check that every call passes.

A solver declares its options as keyword-only, typed parameters with defaults::

    def solve_sgs(problem: Problem, *, rule: Rule = "lft", ...) -> Result:

and documents each one in the ``Parameters`` section of its docstring. The registry
reads them from there (:func:`solver_options`), so the declaration, the check
(:func:`check_options`) and the listing (``planner solvers``) cannot drift apart.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from planner.errors import InputError


@dataclass(frozen=True)
class Option:
    """One declared option of a solver."""

    name: str
    annotation: Any
    default: Any
    help: str

    @property
    def type_name(self) -> str:
        """The option's type as a user reads it (``int``, ``float | None``, ``lft | lst``)."""
        return _type_name(self.annotation)


@cache
def solver_options(func: Callable[..., Any]) -> dict[str, Option]:
    """The options ``func`` declares: its keyword-only parameters, typed and documented."""
    hints = typing.get_type_hints(func)
    helps = _parameter_help(inspect.getdoc(func) or "")
    out: dict[str, Option] = {}
    for name, param in inspect.signature(func).parameters.items():
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        out[name] = Option(name, hints[name], param.default, helps.get(name, ""))
    return out


def check_options(solver: str, func: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise :class:`InputError` unless every option is one ``func`` declares, of its type.

    The message names the option and lists the solver's options (for an unknown one)
    or the type it wants (for a wrong value).
    """
    declared = solver_options(func)
    for name, value in options.items():
        if name not in declared:
            settings = [o.name for o in declared.values() if o.type_name != "callable | None"]
            raise InputError(
                f"solver {solver!r} has no option {name!r}; its options: {', '.join(settings)}"
            )
        option = declared[name]
        try:
            _adapter(option.annotation).validate_python(value, strict=True)
        except ValidationError:
            raise InputError(
                f"option {name!r} of solver {solver!r} must be {option.type_name}, got {value!r}"
            ) from None


@cache
def _adapter(annotation: Any) -> TypeAdapter:
    return TypeAdapter(annotation, config={"arbitrary_types_allowed": True})


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if annotation is type(None):
        return "None"
    if origin is not None and getattr(origin, "__name__", "") == "Callable":
        return "callable"
    if origin is not None:
        return getattr(origin, "__name__", str(annotation))
    return getattr(annotation, "__name__", str(annotation))


_SECTION = re.compile(r"^Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", re.DOTALL | re.M)


def _parameter_help(doc: str) -> dict[str, str]:
    """Parameter name -> first sentence of its description, from a NumPy-style docstring."""
    found = _SECTION.search(doc)
    if not found:
        return {}
    out: dict[str, str] = {}
    names: list[str] = []
    text: list[str] = []
    for line in found.group(1).splitlines():
        if line and not line.startswith(" "):
            for name in names:
                out[name] = " ".join(text)
            names = [n.strip() for n in line.split(":")[0].split(",")]
            text = []
        elif line.strip():
            text.append(line.strip())
    for name in names:
        out[name] = " ".join(text)
    return {name: _plain(text) for name, text in out.items()}


def _plain(text: str) -> str:
    """Docstring markup as plain text: cross-references in parentheses, which name code
    (``(see :mod:`x`)``), dropped; ``:data:`~x.Y``` -> ``Y``; double backquotes dropped."""
    text = re.sub(r"\s*\((?:see\s+)?(?::\w+:`[^`]+`(?:,\s*)?)+\)", "", text)
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "")

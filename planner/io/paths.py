"""The output-path guard every command runs before it starts work.

A command that would fail to write its output only after a long solve loses
the user's time; one that writes over its own input loses the user's file.
:func:`check_output` refuses both up front, with one line naming the path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from planner.errors import InputError


def check_output(
    path: Path,
    *,
    inputs: Iterable[Path] = (),
    suffixes: Sequence[str] | None = None,
    what: str = "the output",
) -> Path:
    """Check that ``path`` can be written as a new or replaced file, before any work.

    Parameters
    ----------
    path
        The output file a command was given.
    inputs
        The files the command reads; the output must be none of them.
    suffixes
        The suffixes the command can write (lower case, with the dot), if it
        knows them.
    what
        What the output is, for the message (``"the schedule file"``).

    Returns
    -------
    Path
        ``path`` itself.

    Raises
    ------
    InputError
        If ``path`` is a folder, its suffix is not one of ``suffixes``, its
        folder does not exist or cannot be written, or it is one of ``inputs``.
    """
    file = str(path)
    if path.is_dir():
        raise InputError("is a folder; give a file name", file)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise InputError(f"{what} must end in {_either(suffixes)}", file)
    folder = path.parent
    if not folder.exists():
        raise InputError(f"folder {str(folder)!r} does not exist", file)
    if not folder.is_dir():
        raise InputError(f"{str(folder)!r} is not a folder", file)
    if not os.access(folder, os.W_OK):
        raise InputError(f"cannot write in folder {str(folder)!r} (permission denied)", file)
    if path.exists():
        for source in inputs:
            if source.exists() and os.path.samefile(path, source):
                raise InputError(
                    "is an input of this command; write the output to another file", file
                )
    return path


def _either(suffixes: Sequence[str]) -> str:
    if len(suffixes) == 1:
        return suffixes[0]
    return f"{', '.join(suffixes[:-1])} or {suffixes[-1]}"


def check_distinct(outputs: dict[str, Path | None]) -> None:
    """Refuse two outputs of one command that are the same file (one would overwrite the
    other).

    Parameters
    ----------
    outputs
        Option name -> the path it was given (``None``: not given).

    Raises
    ------
    InputError
        Naming the file and both options.
    """
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            raise InputError(
                f"given to both {seen[key]} and {option}; one would overwrite the other", str(path)
            )
        seen[key] = option

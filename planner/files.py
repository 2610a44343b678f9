"""Writing output files whole or not at all.

Every file the toolkit writes goes through :func:`write_file`: the content is written
to a temporary file beside the target and moved over it once complete, so a full disk,
a missing permission or Ctrl-C never leaves a half-written file (an existing file is
kept as it was). A target that is not a regular file (a device such as ``/dev/null``)
is written in place. A failure is one :class:`~planner.errors.OutputError` naming the
file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from planner.errors import InputError, OutputError


def write_file(path: Path | str, write: Callable[[Path], object]) -> None:
    """Write ``path`` whole: ``write`` is called with the path to write to (a temporary
    file beside ``path``, moved over it once ``write`` returns).

    Raises
    ------
    OutputError
        If the file cannot be written (no room, no permission, a folder in its place, a
        missing folder); nothing is left behind.
    """
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path
    if target.exists() and not target.is_file() and not target.is_dir():
        _in_place(path, target, write)  # a device or a pipe
        return
    if target.is_dir():
        raise OutputError("cannot write: it is a folder", str(path))
    temporary: Path | None = None
    try:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(handle)
        temporary = Path(name)
        write(temporary)
        if target.exists():
            with contextlib.suppress(OSError):
                os.chmod(temporary, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", str(path)) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                temporary.unlink()


def write_text(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` whole (:func:`write_file`)."""
    write_file(path, lambda p: p.write_text(text, encoding="utf-8"))


def _in_place(path: Path, target: Path, write: Callable[[Path], object]) -> None:
    """Write a target that is not a regular file directly."""
    try:
        write(target)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", str(path)) from None


def check_input_file(path: Path | str) -> None:
    """Refuse an input path that is not a file: one :class:`~planner.errors.InputError`,
    ``no such file`` or ``a folder, not a file``."""
    path = Path(path)
    if path.is_dir():
        raise InputError("a folder, not a file", str(path))
    if not path.is_file():
        raise InputError("no such file", str(path))

"""Errors the toolkit raises at its boundary.

Every error a user can cause carries the file, the place in it (a field path or
a line number) and the cause, and prints as one line.
"""

from __future__ import annotations


class PlannerError(Exception):
    """Base class of every error the toolkit raises on purpose."""


class InputError(PlannerError):
    """Bad input: a file that cannot be read, parsed or validated.

    Parameters
    ----------
    cause
        What is wrong, in a few words.
    file
        The file the input came from, if any.
    place
        Where in the file: a field path (``tasks[3].modes[0]``) or ``line N``.
    """

    def __init__(self, cause: str, file: str | None = None, place: str | None = None) -> None:
        self.cause = cause
        self.file = file
        self.place = place
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.place) if p]
        return ": ".join([*parts, self.cause])

    def at(self, file: str) -> InputError:
        """Return the same error attributed to ``file`` (when it has no file yet)."""
        if self.file is None:
            self.file = file
        return self


class OutputError(PlannerError):
    """An output file that cannot be written (no room on the disk, no permission, a
    folder in its place); nothing of it is left behind.

    Parameters
    ----------
    cause
        What went wrong, in a few words.
    file
        The file that was being written.
    """

    def __init__(self, cause: str, file: str) -> None:
        self.cause = cause
        self.file = file
        super().__init__(f"{file}: {cause}")


class InfeasibleError(InputError):
    """An instance that is well formed but provably has no feasible schedule."""

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.place) if p]
        return ": ".join([*parts, f"infeasible instance: {self.cause}"])

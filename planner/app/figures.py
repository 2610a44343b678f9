"""Saving matplotlib figures: written whole (:func:`planner.files.write_file`), and
matplotlib's warnings of characters its font has no glyph for (CJK or emoji job names)
summed up in one note on stderr instead of a warning per character."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.files import write_file


def save_figure(fig: Any, path: Path | str, **options: Any) -> None:
    """Save the matplotlib figure ``fig`` to ``path`` in the format of its suffix.

    Raises
    ------
    OutputError
        If the file cannot be written.
    """
    path = Path(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_file(path, lambda p: fig.savefig(p, format=path.suffix.lower()[1:], **options))
    missing = [w for w in caught if "missing from" in str(w.message) and "Glyph" in str(w.message)]
    for w in caught:
        if w not in missing:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if missing:
        print(
            f"note: {path}: characters of the labels that the chart's font has no glyph for "
            "are drawn as boxes",
            file=sys.stderr,
        )


def solver_colours(names: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    """One colour per solver or policy, by its place in sorted order, so that it keeps its
    colour in every chart of a command: tab10's for at most 10, tab20's for at most 20,
    else evenly spread over a perceptually ordered map."""
    from matplotlib import colormaps

    ordered = sorted(set(names))
    if len(ordered) <= 10:
        return {n: colormaps["tab10"](k) for k, n in enumerate(ordered)}
    if len(ordered) <= 20:
        return {n: colormaps["tab20"](k) for k, n in enumerate(ordered)}
    return {n: colormaps["turbo"](0.05 + 0.9 * k / (len(ordered) - 1))
            for k, n in enumerate(ordered)}  # fmt: skip

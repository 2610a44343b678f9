"""Matplotlib figures: made with fonts for any name the machine can draw
(:func:`new_figure`), saved whole (:func:`planner.files.write_file`), and matplotlib's
warnings of characters no installed font has a glyph for (CJK or emoji job names where
no such font is installed) summed up in one note on stderr instead of a warning per
character."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.files import write_file

LABEL_FONTS = (
    "Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Sans CJK TC",
    "Source Han Sans SC", "Source Han Sans", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
    "Droid Sans Fallback", "Microsoft YaHei", "PingFang SC", "Hiragino Sans",
    "Apple SD Gothic Neo", "Malgun Gothic", "Noto Emoji", "Noto Color Emoji",
    "Segoe UI Emoji", "Apple Color Emoji", "Segoe UI Symbol", "Symbola",
)  # fmt: skip
"""Font families that draw what matplotlib's default font has no glyph for (CJK scripts,
emoji), on Linux (Debian's ``fonts-noto-cjk``, ``fonts-wqy-zenhei``,
``fonts-noto-color-emoji``), macOS and Windows."""


def fall_back_for_labels(families: Sequence[str] | None = None) -> list[str]:
    """Put the installed ones of ``families`` (:data:`LABEL_FONTS` by default) after
    matplotlib's font families, so that a label's characters the first font lacks are
    drawn from them (matplotlib falls back glyph by glyph); the families it added. Charts
    call it through :func:`new_figure`."""
    from matplotlib import font_manager, rcParams

    families = LABEL_FONTS if families is None else families
    installed = {f.name for f in font_manager.fontManager.ttflist}
    family = list(rcParams["font.family"])
    added = [f for f in families if f in installed and f not in family]
    if added:
        rcParams["font.family"] = [*family, *added]
    return added


def new_figure(**options: Any) -> Any:
    """A matplotlib ``Figure`` (``options``: its keyword arguments) whose labels fall back
    to the installed fonts of :data:`LABEL_FONTS` for characters the default font lacks;
    matplotlib's warnings of glyphs no font has are left to :func:`save_figure`'s note."""
    from matplotlib.figure import Figure

    fall_back_for_labels()
    # laying the chart out warns of each missing glyph; saving it says so in one note
    warnings.filterwarnings("ignore", "Glyph .* missing from", UserWarning)
    return Figure(**options)


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
            f"note: {path}: characters of the labels that no installed font has a glyph for "
            "are drawn as boxes (a CJK or emoji font draws them, e.g. Debian's fonts-noto-cjk; "
            "an .html chart draws any name)",
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

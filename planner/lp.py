"""A linear program in rows, solved by HiGHS (highspy) quietly."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

INF = 1e30
"""HiGHS's infinity."""


class LinearProgram:
    """A linear program ``min cost x`` over ``0 <= x <= upper`` in rows
    ``lo <= a x <= hi``, solved by HiGHS's interior-point method without crossover (so a
    solution inside the optimal face where there are many, as ECOS, Gavel's solver,
    returns)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.cost = np.zeros(n)
        self.upper = np.full(n, INF)
        self.starts = [0]
        self.index: list[np.ndarray] = []
        self.value: list[np.ndarray] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def row(self, index: np.ndarray, value: np.ndarray, lo: float, hi: float) -> None:
        """Add ``lo <= sum value * x[index] <= hi``."""
        self.index.append(np.asarray(index, dtype=np.int32))
        self.value.append(np.asarray(value, dtype=float))
        self.starts.append(self.starts[-1] + len(index))
        self.lo.append(lo)
        self.hi.append(hi)

    def solve(self, interior: bool = True) -> np.ndarray | None:
        """The solution (``None``: infeasible), from the interior-point method (else
        HiGHS's default: a vertex)."""
        found = self._run(interior)
        return None if found is None else np.array(found.getSolution().col_value)

    def solve_with_duals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """A vertex solution and the rows' duals (``None``: infeasible), by HiGHS's
        default method: for a minimisation, a row's dual is the objective's rate of
        increase per unit of its lower bound."""
        found = self._run(False)
        if found is None:
            return None
        solution = found.getSolution()
        return np.array(solution.col_value), np.array(solution.row_dual)

    def _run(self, interior: bool) -> Any:
        """HiGHS run on the program (``None``: not solved to optimality)."""
        import highspy

        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.n, len(self.lo)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.cost, np.zeros(self.n), self.upper
        lp.row_lower_, lp.row_upper_ = np.array(self.lo), np.array(self.hi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(self.starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.concatenate(self.index) if self.index else np.zeros(0, np.int32)
        lp.a_matrix_.value_ = np.concatenate(self.value) if self.value else np.zeros(0)
        h = _highs()
        if interior:
            h.setOptionValue("presolve", "off")
            h.setOptionValue("solver", "ipm")
            h.setOptionValue("run_crossover", "off")
        h.passModel(lp)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return h


def _highs() -> object:
    """A HiGHS solver, its banner (printed once per process, as it is made) kept off
    standard output."""
    import highspy

    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


_BANNER_SHOWN = False

"""Solvers: heuristics, baselines and the registry with the shared ``solve()``."""

from planner.solvers.registry import SOLVERS, SolverError, solve

__all__ = ["SOLVERS", "SolverError", "solve"]

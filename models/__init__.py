"""Exact formulations of the problem model (CP-SAT, MILP)."""

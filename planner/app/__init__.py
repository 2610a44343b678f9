"""The app: the command line, solver comparisons and charts.

The only layer that reaches the solvers (``planner.solvers``, ``planner.models``), lazily.
"""

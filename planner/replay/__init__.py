"""The task-level replay of plans and re-planning.

- ``simulate.py``: one replay of a plan under disturbances, Monte Carlo studies,
  rankings; ``loop.py``: the replay's event loop, with ``replay_state.py``,
  ``interference.py`` and ``record.py`` (the realized run the validator checks);
- ``events.py``, ``state.py`` (the state at a tick), ``rebuild.py`` and ``replan.py``
  (the re-planned instance), ``online.py`` (re-planning as jobs arrive);
- ``job_state.py``: a job-level run's state at a tick, as re-planning freezes it;
  ``planner_policy.py``: the planner as an executor policy, re-planning with the search
  in the executor's model as jobs arrive.

Re-planning reaches the engines (:mod:`planner.solvers`) lazily.
"""

"""The job-level executor: training jobs on a GPU cluster under a policy.

- ``model/``: what a run is made of: its jobs (``jobs.py``), a node's CPU, memory and
  GPU memory (``resources.py``), elastic and hybrid-parallel jobs (``elastic.py``),
  power (``power.py``), jobs sharing single GPUs (``sharing.py``), the group-mix
  program (``grouping.py``) and the interface every policy implements (``policy.py``);
- ``policies/``: one module per policy, and the registry of their names;
- ``loop.py``: the executor's event loop; ``audit.py``: a run's audit;
  ``fairness.py``, ``energy.py``, ``utilisation.py``: what a run delivers;
  ``configurations.py``: the configuration program and the strongest bound;
  ``dispatch.py``: a dispatch as a plan file the executor runs again;
  ``runs.py``: the one set of defaults, runs and studies; ``slurm_export.py``: a plan
  as Slurm batch scripts.

It imports no solver and nothing of the task-level replay (:mod:`planner.replay`).
"""

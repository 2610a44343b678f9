"""Execution: plans replayed under disturbances, re-planning, and the job-level
executor with its policies."""

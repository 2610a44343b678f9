"""The executor's model: the jobs of a job-level run, the resources they hold, and the
interface of the policies that place them (the policies and the loop import it; it
imports neither)."""

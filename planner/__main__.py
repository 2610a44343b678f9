"""``python -m planner`` runs the command line."""

from planner.cli import app

app(prog_name="planner")

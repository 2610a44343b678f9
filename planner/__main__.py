"""``python -m planner`` runs the command line."""

from planner.app.cli import app

app(prog_name="planner")

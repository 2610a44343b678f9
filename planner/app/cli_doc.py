"""The reference of the command line, written from the command line itself (typer's own
Markdown writer): the documentation site's page *Command line* is built from it, so the
reference is what ``planner COMMAND --help`` prints."""

from __future__ import annotations


def cli_reference() -> str:
    """Markdown of every command the ``planner`` command line lists, in its order, with
    its arguments and options."""
    import typer
    import typer.cli

    from planner.app.cli import app

    group = typer.main.get_command(app)  # a fresh command tree: trimming it changes no other
    group.commands = {n: c for n, c in group.commands.items() if not c.hidden}  # type: ignore[attr-defined]
    ctx = typer.Context(group, info_name="planner")
    text = typer.cli.get_docs_for_click(obj=group, ctx=ctx, name="planner")
    text = text.replace("```console\n", "```text\n")  # usage lines: output, not code to run
    return text.split("\n", 1)[1] if text.startswith("# ") else text

"""Hooks of the documentation site (mkdocs): the references are written at build time
where a page holds their marker: the command line's from the command line itself, the
instance formats' from the JSON Schema."""

from __future__ import annotations

from typing import Any

SCHEMA = "<!-- instance schema -->"
CLI = "<!-- cli reference -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace the markers with the references they stand for."""
    if SCHEMA in markdown:
        from planner.io.schema_doc import schema_reference

        markdown = markdown.replace(SCHEMA, schema_reference())
    if CLI in markdown:
        from planner.app.cli_doc import cli_reference

        markdown = markdown.replace(CLI, cli_reference())
    return markdown

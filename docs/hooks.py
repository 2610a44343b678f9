"""Hooks of the documentation site (mkdocs): the instance formats' reference is written
from the JSON Schema at build time, where a page holds the marker below."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- instance schema -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace :data:`MARKER` with the reference of the instance formats."""
    if MARKER not in markdown:
        return markdown
    from planner.io.schema_doc import schema_reference

    return markdown.replace(MARKER, schema_reference())

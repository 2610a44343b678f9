"""The references written from the code, kept in the pages themselves (so that they
read whole where the Markdown is read as it is, not only on the built site): the
command line's from the command line, the instance formats' from the JSON Schema.

``python docs/hooks.py`` writes them anew between their markers; a test fails when a
page's copy is not what the code gives. As a hook of the site (mkdocs), it checks the
same before a build."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent


def _schema() -> str:
    from planner.io.schema_doc import schema_reference

    return schema_reference()


def _cli() -> str:
    from planner.app.cli_doc import cli_reference

    return cli_reference()


REFERENCES: dict[str, tuple[str, Callable[[], str]]] = {
    "instance schema": ("reference/formats.md", _schema),
    "cli reference": ("reference/cli.md", _cli),
}
"""Each written reference: its page (under docs/) and what writes it."""


def markers(name: str) -> tuple[str, str]:
    """The lines that open and close the written reference ``name`` in its page."""
    return (
        f"<!-- {name}: written from the code by python docs/hooks.py -->",
        f"<!-- end of {name} -->",
    )


def written(name: str, text: str) -> str:
    """The reference ``name`` as it stands between its markers in the page ``text``."""
    start, end = markers(name)
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def write_references() -> list[str]:
    """Write every reference anew into its page; the pages that changed."""
    changed = []
    for name, (page, make) in REFERENCES.items():
        path = DOCS / page
        text = path.read_text()
        start, end = markers(name)
        head, rest = text.split(start, 1)
        tail = rest.split(end, 1)[1]
        new = f"{head}{start}\n\n{make().strip(chr(10))}\n\n{end}{tail}"
        if new != text:
            path.write_text(new)
            changed.append(page)
    return changed


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Refuse to build a page whose written reference is out of date."""
    for name, (page, make) in REFERENCES.items():
        if markers(name)[0] in markdown and written(name, markdown) != make().strip("\n"):
            raise ValueError(f"{page}: the {name} is out of date: run python docs/hooks.py")
    return markdown


if __name__ == "__main__":
    for page in write_references():
        print(f"wrote {page}", file=sys.stderr)

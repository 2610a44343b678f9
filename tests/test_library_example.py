"""The API reference's walk through the library runs as written, and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "api.md"


def _walkthrough() -> str:
    text = PAGE.read_text()
    start = text.index("A walk through the library")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block is not None
    return block[1]


def test_the_api_walkthrough_runs(capsys: pytest.CaptureFixture[str]) -> None:
    scope: dict[str, object] = {}
    exec(compile(_walkthrough(), str(PAGE), "exec"), scope)
    out = capsys.readouterr().out.splitlines()
    # c (5 ticks) bounds the plan; both solvers reach it
    assert out[0] == "{'sgs': 5, 'cpsat': 5} best: sgs"
    assert out[1].startswith("realized makespan {'mean': ")
    # n1 fails at 2 with a on it: a is lost and runs again on n2 once b and c free it
    again = scope["again"]
    assert out[2].startswith("re-planned makespan 9 {'at': 2, 'finished': 0, 'running': 2, ")
    assert again.schedule.starts == {"a#lost1": 0, "a": 5, "b": 0, "c": 0}  # type: ignore[attr-defined]
    assert again.schedule.nodes["a"] == ("n2",)  # type: ignore[attr-defined]

"""Property tests: random mutations of a valid file give a clean error, never a traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import InputError
from planner.io.instance import load_instance
from tests.conftest import INSTANCES, TWO_JOBS

BASES = [TWO_JOBS, yaml.safe_load((INSTANCES / "interleave.yaml").read_text())]
CLUSTER = yaml.safe_load((INSTANCES / "example.yaml").read_text())

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=50),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(draw(st.sampled_from([*BASES, CLUSTER])))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(junk)
    return data


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=mutated(), as_yaml=st.booleans())
def test_mutated_file_loads_or_fails_cleanly(tmp_path: Path, data: dict, as_yaml: bool) -> None:
    path = tmp_path / ("m.yaml" if as_yaml else "m.json")
    path.write_text(yaml.safe_dump(data) if as_yaml else json.dumps(data))
    try:
        load_instance(path, check=True)
    except InputError as exc:
        message = str(exc)
        assert message.startswith(str(path))
        # one line, whatever the number of errors (the next ones by their place, a few)
        assert "\n" not in message

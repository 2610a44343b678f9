"""The JSON Schema of native instance files, generated from the model.

The shipped copy (``planner/io/schema/instance.schema.json``) is what editors and
other tools validate against; a test keeps it equal to :func:`instance_schema`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from planner.dl.specs import ClusterInstance
from planner.model import Problem

SCHEMA_ID = "urn:planner:instance-schema"


def instance_schema() -> dict[str, Any]:
    """The schema: a file is either the problem form or the cluster form."""
    problem = Problem.model_json_schema(ref_template="#/$defs/{model}")
    cluster = ClusterInstance.model_json_schema(ref_template="#/$defs/{model}")
    defs = {**problem.pop("$defs", {}), **cluster.pop("$defs", {})}
    defs["Problem"] = problem
    defs["ClusterInstance"] = cluster
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "planner instance",
        "description": "A planner instance in the problem form or the cluster form.",
        "oneOf": [
            {"$ref": "#/$defs/Problem"},
            {"$ref": "#/$defs/ClusterInstance"},
        ],
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """The schema as the text of the shipped file."""
    return json.dumps(instance_schema(), indent=1, sort_keys=False) + "\n"


def shipped_schema() -> str:
    """The text of the schema file shipped with the package."""
    return resources.files("planner.io").joinpath("schema/instance.schema.json").read_text()

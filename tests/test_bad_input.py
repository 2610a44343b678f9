"""Bad input: one clear line naming the file, the place and the cause; exit status 2."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from tests.conftest import INSTANCES, TWO_JOBS

SM = (INSTANCES / "psplib" / "j301_1.sm").read_text()


def edit(change: Callable[[dict[str, Any]], None]) -> str:
    """The two-job instance as JSON text after ``change``."""
    data = copy.deepcopy(TWO_JOBS)
    change(data)
    return json.dumps(data)


def seg(data: dict[str, Any], task: int = 0, k: int = 0) -> dict[str, Any]:
    return data["tasks"][task]["modes"][0]["segments"][k]


CASES = [
    # syntax: JSON that stops half-way
    ("bad.json", '{"tasks": [', "bad.json: line 1: invalid JSON: Expecting value"),
    # syntax: YAML with an unclosed flow sequence
    (
        "bad.yaml",
        "tasks: [a, b\nname: x\n",
        "bad.yaml: line 2: invalid YAML: expected ',' or ']', but got ':'",
    ),
    # an empty file
    ("empty.yaml", "", "empty.yaml: the file is empty"),
    # a file of binary data
    ("blob.json", b"\x00\x01\x02PK\x03", "blob.json: binary data, not a text instance file"),
    # bytes that are not UTF-8
    ("latin.yaml", "name: caf\xe9\n".encode("latin-1"), "latin.yaml: not UTF-8 text (byte 9)"),
    # the top level is a list, not a mapping
    ("list.yaml", "- a\n- b\n", "list.yaml: expected a mapping at the top level, got list"),
    # no tasks at all
    ("notasks.json", edit(lambda d: d.pop("tasks")), "notasks.json: tasks: missing required field"),
    # a field the model does not know
    ("extra.json", edit(lambda d: d.update(colour="red")), "extra.json: colour: unknown field"),
    # a capacity that is not a number
    (
        "type.json",
        edit(lambda d: d["resources"][0].update(capacity="four")),
        "type.json: resources[0].capacity: Input should be a valid integer",
    ),
    # a duration that is a fraction
    (
        "frac.json",
        edit(lambda d: seg(d).update(duration=2.5)),
        "frac.json: tasks[0].modes[0].segments[0].duration: Input should be a valid integer",
    ),
    # a negative duration
    (
        "negdur.json",
        edit(lambda d: seg(d).update(duration=-1)),
        "negdur.json: tasks[0].modes[0].segments[0].duration: "
        "Input should be greater than or equal to 0",
    ),
    # a negative demand
    (
        "negdem.json",
        edit(lambda d: seg(d, 1, 1).update(demand={"io": -2})),
        "negdem.json: tasks[1].modes[0].segments[1].demand.io: "
        "Input should be greater than or equal to 0",
    ),
    # a demand on a resource nobody declared
    (
        "unkres.json",
        edit(lambda d: seg(d).update(demand={"tpu": 1})),
        "unkres.json: tasks[0].modes[0].segments[0].demand.tpu: unknown resource 'tpu'",
    ),
    # a precedence naming a task that does not exist
    (
        "unktask.json",
        edit(lambda d: d.update(precedences=[{"before": "a", "after": "z"}])),
        "unktask.json: precedences[0].after: unknown task 'z'",
    ),
    # a task in a job that does not exist
    (
        "unkjob.json",
        edit(lambda d: d["tasks"][0].update(job="C")),
        "unkjob.json: tasks[0].job: unknown job 'C' (task 'a')",
    ),
    # two tasks with one name
    (
        "dup.json",
        edit(lambda d: d["tasks"][1].update(name="a")),
        "dup.json: tasks[1].name: duplicate name 'a'",
    ),
    # a precedence kind that does not exist
    (
        "kind.json",
        edit(lambda d: d.update(precedences=[{"before": "a", "after": "b", "kind": "FF"}])),
        "kind.json: precedences[0].kind: Input should be 'FS' or 'SS'",
    ),
    # a precedence cycle
    (
        "cycle.json",
        edit(
            lambda d: d.update(
                precedences=[{"before": "a", "after": "b"}, {"before": "b", "after": "a"}]
            )
        ),
        "cycle.json: precedences: infeasible instance: precedence cycle a -> b -> a",
    ),
    # a demand above every capacity
    (
        "over.json",
        edit(lambda d: seg(d).update(demand={"io": 3})),
        "over.json: tasks[0]: infeasible instance: task 'a': its mode demands more than "
        "a resource ever offers: io (demand 3, capacity 1)",
    ),
    # a window shorter than the task
    (
        "window.json",
        edit(lambda d: d["tasks"][0].update(release=5, deadline=8)),
        "window.json: tasks[0]: infeasible instance: task 'a': empty time window: it cannot "
        "start before tick 5 but must start by tick 2 to meet the deadlines",
    ),
    # a budget below what any mode choice uses
    (
        "budget.json",
        edit(
            lambda d: (
                d["resources"].append({"name": "cash", "capacity": 1, "kind": "nonrenewable"}),
                d["tasks"][0]["modes"][0].update(consumes={"cash": 2}),
            )
        ),
        "budget.json: resources: infeasible instance: non-renewable resource 'cash': the least "
        "use of any mode choice is 2, above its budget 1",
    ),
    # capacity windows that overlap
    (
        "overlap.json",
        edit(
            lambda d: d["resources"][0].update(
                windows=[
                    {"start": 0, "end": 5, "capacity": 0},
                    {"start": 3, "end": 6, "capacity": 0},
                ]
            )
        ),
        "overlap.json: resources[0]: capacity windows overlap at tick 3",
    ),
    # a cluster form with a time unit that is not one
    (
        "unit.yaml",
        yaml.safe_dump(
            {
                "time_unit": "fortnight",
                "cluster": {"nodes": [{"name": "n", "gpu": 8}]},
                "jobs": [
                    {"name": "j", "gpus": 1, "iterations": 10, "stages": {"data": 1, "gpu": 1}}
                ],
            }
        ),
        "unit.yaml: time_unit: 'fortnight' is not a time unit like '100ms', '1s', '1min' or '1h'",
    ),
    # a cluster-form job asking for more GPUs than the cluster has
    (
        "gpus.yaml",
        yaml.safe_dump(
            {
                "cluster": {"nodes": [{"name": "n", "gpu": 8}]},
                "jobs": [
                    {"name": "j", "gpus": 16, "iterations": 10, "stages": {"data": 1, "gpu": 1}}
                ],
            }
        ),
        "gpus.yaml: jobs[0].gpus: job 'j' needs 16 GPUs; the cluster has 8 GPUs",
    ),
    # a capacity above the bound every integer of an instance keeps (issue 15, row 7)
    (
        "cap.json",
        edit(lambda d: d["resources"][0].update(capacity=10**21)),
        "cap.json: resources[0].capacity: 1000000000000000000000 is above the limit of "
        "2**40 = 1099511627776",
    ),
    # a duration of 10**30 ticks (issue 15, row 7)
    (
        "dur.json",
        edit(lambda d: seg(d).update(duration=10**30)),
        "dur.json: tasks[0].modes[0].segments[0].duration: 1000000000000000000000000000000 is "
        "above the limit of 2**40 = 1099511627776",
    ),
    # a cluster-form node with 10**21 GPUs, written as a YAML integer (issue 15, row 7)
    (
        "gpus21.yaml",
        "cluster:\n  nodes: [{name: n, gpu: 1000000000000000000000}]\n"
        "jobs: [{name: j, gpus: 1, iterations: 10, stages: {data: 1, gpu: 1}}]\n",
        "gpus21.yaml: cluster.nodes[0].gpu: 1000000000000000000000 is above the limit of "
        "2**40 = 1099511627776",
    ),
    # a horizon of 2e18 ticks: one duration far above the bound (issue 15, row 8)
    (
        "long.json",
        edit(lambda d: seg(d).update(duration=2 * 10**18)),
        "long.json: tasks[0].modes[0].segments[0].duration: 2000000000000000000 is above the "
        "limit of 2**40 = 1099511627776",
    ),
    # a problem form whose durations each fit but whose horizon does not (issue 15, row 8)
    (
        "horizon.json",
        edit(lambda d: [seg(d, t, k).update(duration=2**39) for t in (0, 1) for k in (0, 1)]),
        "horizon.json: the horizon (every task back to back, with the latest release and all "
        "lags) is 2199023255552 ticks, above the limit of 2**40 = 1099511627776; divide every "
        "duration, lag, release, deadline and window bound by a common factor (fewer, longer "
        "ticks)",
    ),
    # a cluster form whose jobs in milliseconds make too long a horizon (issue 15, row 8);
    # the horizon counts every block at its slowest speed, 1/4
    (
        "ms.yaml",
        yaml.safe_dump(
            {
                "time_unit": "1ms",
                "cluster": {"nodes": [{"name": "n", "gpu": 8}]},
                "jobs": [
                    {"name": j, "gpus": 1, "duration": 5e8, "stages": {"data": 1, "gpu": 1}}
                    for j in "abc"
                ],
            }
        ),
        "ms.yaml: time_unit: the horizon (every task back to back, with the latest release and "
        "all lags) is 6000000000000 ticks, above the limit of 2**40 = 1099511627776; use a "
        "coarser time_unit than '1ms'",
    ),
    # a catalog model with a batch size the catalog did not measure (issue 15, row 10)
    (
        "batch.yaml",
        "cluster:\n  nodes: [{name: n, count: 2, gpu: 8}]\n"
        "jobs: [{name: j, model: resnet18, batch_size: 7, gpus: 2, iterations: 100}]\n",
        "batch.yaml: jobs[0].batch_size: no profile of 'resnet18' with batch size 7 on 2 GPUs; "
        "known batch sizes on 2 GPUs: [128]",
    ),
    # a measured batch size on a GPU count it was not measured on (issue 15, row 10)
    (
        "batch3.yaml",
        "cluster:\n  nodes: [{name: n, count: 2, gpu: 8}]\n"
        "jobs: [{name: j, model: resnet18, batch_size: 128, gpus: 3, iterations: 100}]\n",
        "batch3.yaml: jobs[0]: no profile of 'resnet18' with batch size 128 on 3 GPUs; "
        "known GPU counts with batch size 128: [1, 2, 4, 8, 16, 32]",
    ),
    # a batch size the model has on no GPU count, with an unmeasured count (issue 15, row 10)
    (
        "batch5.yaml",
        "cluster:\n  nodes: [{name: n, count: 2, gpu: 8}]\n"
        "jobs: [{name: j, model: resnet18, batch_size: 7, gpus: 3, iterations: 100}]\n",
        "batch5.yaml: jobs[0].batch_size: no profile of 'resnet18' with batch size 7; "
        "known batch sizes: [128]",
    ),
    # a problem form with a time unit that is not one (issue 15, row 16)
    (
        "fortnights.json",
        edit(lambda d: d.update(time_unit="5 fortnights")),
        "fortnights.json: time_unit: '5 fortnights' is not a time unit like '100ms', '1s', "
        "'1min' or '1h', or '1' (a tick of no stated length)",
    ),
    # a PSPLIB file with a word where a number belongs
    (
        "word.sm",
        SM.replace(
            "   2        1          3           6  11  15",
            "   2        1          x           6  11  15",
        ),
        "word.sm: line 20: 'x' is not a whole number",
    ),
    # a PSPLIB file with a negative duration
    (
        "neg.sm",
        SM.replace(
            "  2      1     8       4    0    0    0", "  2      1    -8       4    0    0    0"
        ),
        "neg.sm: line 56: '-8' is a negative number",
    ),
    # a file that is not PSPLIB at all
    (
        "prose.sm",
        "hello world\n",
        "prose.sm: not a PSPLIB file: missing section 'PRECEDENCE RELATIONS'",
    ),
    # a Patterson file cut short
    ("short.rcp", "3 1\n5\n0 0 1 2\n", "short.rcp: not a valid Patterson file: it ends too early"),
    # nesting deeper than Python's parsers recurse (issue 44: a RecursionError traceback)
    (
        "deepnest.json",
        "[" * 100_000 + "]" * 100_000,
        "deepnest.json: invalid JSON: nested too deeply to read",
    ),
    (
        "deepnest.yaml",
        "[" * 100_000 + "]" * 100_000,
        "deepnest.yaml: invalid YAML: nested too deeply to read",
    ),
    # an extension nobody reads
    (
        "notes.txt",
        "hello",
        "notes.txt: unknown instance format '.txt'; "
        "expected one of .json, .yaml, .yml, .sm, .mm, .rcp",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_instance_is_one_line_and_exit_2(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    result = CliRunner().invoke(app, ["info", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == f"error: {tmp_path}/{message}"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_missing_path_is_exit_2() -> None:
    result = CliRunner().invoke(app, ["solve", "no/such/instance.yaml"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: no/such/instance.yaml: no such file"


def test_bad_schedule_file_is_exit_2(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps({"tasks": [{"task": "1", "mode": "1", "start": -3}]}))
    result = CliRunner().invoke(
        app, ["validate", str(INSTANCES / "psplib" / "j301_1.sm"), str(sched)]
    )
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == f"error: {sched}: tasks[0]: start must be an integer >= 0, got -3"
    )


def test_many_errors_are_one_line_the_first_and_the_places_of_the_next(tmp_path: Path) -> None:
    # issue 15, row 15: the first few errors by name, the rest counted; issue 44: one line
    data = copy.deepcopy(TWO_JOBS)
    for t in range(2):
        data["tasks"][t]["release"] = -1
        for k in range(2):
            seg(data, t, k)["duration"] = "x"
    path = tmp_path / "many.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["info", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {path}: tasks[0].modes[0].segments[0].duration: Input should be a valid "
        "integer (1 of 6 errors; also at tasks[0].modes[0].segments[1].duration, "
        "tasks[0].release, tasks[1].modes[0].segments[0].duration, "
        "tasks[1].modes[0].segments[1].duration and 1 more)\n"
    )


@pytest.mark.parametrize("time_unit", ["1", "100ms", "5 min"])
def test_problem_form_time_units(tmp_path: Path, time_unit: str) -> None:
    # issue 15, row 16: a bare tick (PSPLIB conversions) and real lengths stay valid
    path = tmp_path / "ok.json"
    path.write_text(edit(lambda d: d.update(time_unit=time_unit)))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"{path}: valid instance (2 tasks)"


def test_schedule_start_above_the_bound_is_exit_2(tmp_path: Path) -> None:
    # issue 15, row 7: a start of 10**30 ticks
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps({"tasks": [{"task": "1", "mode": "1", "start": 10**30}]}))
    result = CliRunner().invoke(
        app, ["validate", str(INSTANCES / "psplib" / "j301_1.sm"), str(sched)]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {sched}: tasks[0]: start 1000000000000000000000000000000 is above the limit "
        "of 2**40 = 1099511627776"
    )


def test_the_library_solve_takes_a_problem_and_says_how_to_make_one() -> None:
    # issue 44: planner.solve(planner.generate(3)) raised an AttributeError
    import planner
    from planner.errors import InputError

    problem = planner.generate(3)
    assert isinstance(problem, planner.Problem) and len(problem.jobs) == 3
    data = planner.generate_batch(3)
    assert planner.problem_from_data(data) == problem  # the data of the same batch
    with pytest.raises(InputError) as caught:
        planner.solve(data)
    assert str(caught.value) == (
        "solve takes a Problem, not a dict: load a file with planner.load_instance, or build "
        "one from instance data with planner.problem_from_data"
    )
    assert planner.solve(problem, "sgs").schedule is not None

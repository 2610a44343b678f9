"""The toolkit keeps its word on odd input and a hostile disk: every defect found by
trying it as a new user would (issue 53) has its test here. Bad input is one ``error:``
line and exit status 2; an output that cannot be written is one ``error:`` line naming
the file, exit status 1, and nothing half-written; valid input that the toolkit changes
gets one ``note:`` line on stderr."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.errors import InputError, OutputError
from planner.executor.model.jobs import jobs_from_instance
from planner.files import write_file, write_text
from tests.conftest import INSTANCES, lines

runner = CliRunner()
EXAMPLE = INSTANCES / "example.yaml"
TRACE = INSTANCES / "muri_trace.csv"


def run(*args: object) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``planner ARGS``."""
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def example(tmp_path: Path, change: str = "", name: str = "x.yaml") -> Path:
    """The shipped example, its text edited by ``change`` (``old=>new``), in ``tmp_path``."""
    text = EXAMPLE.read_text()
    if change:
        old, new = change.split("=>")
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def dispatch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dispatch file of the example, as ``planner solve -o`` writes it."""
    path = tmp_path_factory.mktemp("dispatch") / "plan.json"
    code, _, err = run("solve", EXAMPLE, "-t", "2", "-o", path)
    assert code == 0, err
    return path


# 3. Every failure to write: one line naming the file, exit 1, nothing half-written.


@pytest.fixture
def full(tmp_path: Path) -> Path:
    """A file name that points at a full disk (``/dev/full``)."""
    if not Path("/dev/full").exists():  # pragma: no cover - Linux has it
        pytest.skip("no /dev/full on this system")
    link = tmp_path / "full.json"
    link.symlink_to("/dev/full")
    return link


@pytest.mark.parametrize(
    "args",
    [
        ["solve", EXAMPLE, "-t", "1", "-o", "{full}"],
        ["solve", INSTANCES / "psplib/j301_1.sm", "-s", "sgs", "-o", "{full}"],
        ["run", EXAMPLE, "{plan}", "-o", "{full}"],
        ["policy", EXAMPLE, "muri-s", "-o", "{full}"],
        ["compare", INSTANCES / "psplib/j301_1.sm", "-s", "sgs", "-o", "{full_csv}"],
        ["schema", "-o", "{full}"],
        ["generate", "--jobs", "3", "-o", "{full}"],
    ],
    ids=["solve", "solve-static", "run", "policy", "compare", "schema", "generate"],
)
def test_a_full_disk_is_one_error_line_naming_the_file(
    args: list[object], full: Path, dispatch: Path, tmp_path: Path
) -> None:
    full_csv = tmp_path / "full.csv"
    full_csv.symlink_to("/dev/full")
    names = {"full": full, "full_csv": full_csv, "plan": dispatch}
    code, _, err = run(*(str(a).format(**names) for a in args))
    target = full_csv if "{full_csv}" in args else full
    assert (code, err.splitlines()[-1]) == (
        1,
        f"error: {target}: cannot write: No space left on device",
    )
    assert "Traceback" not in err


def test_a_chart_on_a_full_disk_is_one_error_line(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.symlink_to("/dev/full")
    code, _, err = run("solve", EXAMPLE, "-t", "1", "--gantt", chart)
    assert (code, err.splitlines()[-1]) == (
        1,
        f"error: {chart}: cannot write: No space left on device",
    )


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("the old plan\n")

    def half(path: Path) -> None:
        path.write_text('{"half": ')
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match=r"plan.json: cannot write: No space left on device$"):
        write_file(target, half)
    assert target.read_text() == "the old plan\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_a_written_file_replaces_the_old_one_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    write_text(target, "new")
    assert (target.read_text(), target.stat().st_mode & 0o777) == ("new", 0o640)
    fresh = tmp_path / "fresh.txt"
    write_text(fresh, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_missing_folder_is_one_error_line(tmp_path: Path) -> None:
    with pytest.raises(
        OutputError, match=r"nowhere/x.json: cannot write: No such file or directory$"
    ):
        write_text(tmp_path / "nowhere" / "x.json", "{}")


# 4. Numbers that crash, input taken without a word.


def test_stage_times_all_zero_are_bad_input(tmp_path: Path) -> None:
    path = example(tmp_path, "{data: 0.25, gpu: 0.30, sync: 0.05}=>{data: 0, gpu: 0, sync: 0}")
    for command in ("validate", "solve"):
        code, _, err = run(command, path)
        assert (code, err) == (
            2,
            f"error: {path}: jobs[0].stages: stage times are all 0: an iteration takes some time\n",
        )


def test_a_trace_whose_stage_times_are_all_zero_is_bad_input(tmp_path: Path) -> None:
    rows = TRACE.read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[1].split(",")
    for k in range(3):
        cells[header.index(f"resource_time_{k}")] = "0"
    path = tmp_path / "zero.csv"
    path.write_text("\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n")
    code, _, err = run("policy", path, "muri-s")
    assert (code, err) == (
        2,
        f"error: {path}: line 2: resource_time_0, _1 and _2 are all 0: an iteration takes "
        "some time\n",
    )


def test_an_unknown_gpu_type_is_bad_input(tmp_path: Path) -> None:
    path = example(tmp_path, "gpu_type: V100=>gpu_type: TPUv9")
    code, _, err = run("validate", path)
    assert (code, err) == (
        2,
        f"error: {path}: cluster.nodes[0].gpu_type: unknown GPU type 'TPUv9'; the catalog "
        "knows k80, p100, v100 (other types need measured rates: interleave table)\n",
    )


def test_a_trace_model_without_a_restart_cost_needs_one(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE.read_text().replace(",gpt2,", ",llama9,"))
    out = tmp_path / "t.json"
    code, _, err = run("import", "muri", trace, "-o", out)
    assert code == 2 and not out.exists()
    assert err.startswith(f"error: {trace}: model(s) llama9: the catalog has no restart cost")
    assert err.endswith("give one with --restart SECONDS\n")
    assert run("import", "muri", trace, "-o", out, "--restart", "30")[0] == 0
    jobs = json.loads(out.read_text())["jobs"]
    assert {j.get("restart") for j in jobs if j["model"] == "llama9"} == {30.0}
    assert all("restart" not in j for j in jobs if j["model"] != "llama9")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "d.yaml",
            "name: a\nname: b\n",
            "line 2: invalid YAML: key 'name' given twice in one mapping",
        ),
        (
            "d.json",
            '{"name": "a", "name": "b"}',
            "invalid JSON: key 'name' given twice in one object",
        ),
    ],
)
def test_a_key_given_twice_is_bad_input(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert run("validate", path)[::2] == (2, f"error: {path}: {message}\n")


def test_a_key_given_twice_deep_in_the_example_is_bad_input(tmp_path: Path) -> None:
    path = example(tmp_path, "    gpus: 4\n=>    gpus: 4\n    gpus: 2\n")
    code, _, err = run("solve", path)
    assert (code, err) == (
        2,
        f"error: {path}: line 12: invalid YAML: key 'gpus' given twice in one mapping\n",
    )


def test_generate_says_when_the_cluster_leaves_out_gpu_counts(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    code, _, err = run("generate", "--jobs", "5", "--nodes", "1", "--gpus-per-node", "1", "-o", out)
    assert code == 0
    assert err == (
        "note: the cluster has 1 GPU(s): jobs get 1 GPU(s), not the mix's 2, 4, 8, 16, 32\n"
    )
    assert {j["gpus"] for j in json.loads(out.read_text())["jobs"]} == {1}
    assert run("generate", "--jobs", "5", "-o", out)[2] == ""  # 8 x 8 holds the whole mix


def test_pareto_zero_is_bad_input(tmp_path: Path) -> None:
    code, _, err = run("compare", EXAMPLE, "-o", tmp_path / "c.csv", "--pareto", "0")
    assert (code, err) == (
        2,
        "error: Invalid value for '--pareto': Input should be greater than or equal to 2\n",
    )


# The audit and the dispatch check node and GPU indices.


def test_a_dispatch_on_a_node_the_cluster_does_not_have_is_refused(
    dispatch: Path, tmp_path: Path
) -> None:
    data = json.loads(dispatch.read_text())
    members, where = data["events"][0][1][0]
    where[0][0] = 7
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    gpus = ", ".join(map(str, where[0][1]))
    message = (
        f"error: {bad}: at 0 s the dispatch puts {', '.join(members)} on node index 7, GPUs "
        f"{gpus}: the cluster has 2 node(s) (0 to 1) of 4 GPUs (0 to 3)\n"
    )
    for command in ("run", "validate"):
        assert run(command, EXAMPLE, bad)[::2] == (2, message)


def test_the_audit_refuses_a_group_on_a_node_out_of_range() -> None:
    from dataclasses import replace

    from planner.executor.audit import audit

    workload = jobs_from_instance(EXAMPLE)
    first = planner.run_policy(workload, "srtf")
    assert audit(first, workload.jobs, 8) == []
    t, groups = first.trace[0]
    names, overhead, where = groups[0]
    moved = [(names, overhead, tuple((k + 5, ids) for k, ids in where)), *groups[1:]]
    wrong = audit(replace(first, trace=[(t, moved), *first.trace[1:]]), workload.jobs, 8)
    assert any("taken, down or outside the cluster" in w for w in wrong)


# Small things.


def test_gantt_draws_the_dispatch_file_solve_writes(dispatch: Path, tmp_path: Path) -> None:
    chart = tmp_path / "sets.png"
    code, out, err = run("gantt", dispatch, "-i", EXAMPLE, "-o", chart)
    assert code == 0, err
    assert re.fullmatch(rf"chart written to {chart} \(the dispatch's run, 8 GPUs, 5 jobs\)\n", out)
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert run("gantt", dispatch)[::2] == (
        2,
        f"error: {dispatch}: a dispatch file of planner solve: pass the instance file with "
        "--instance\n",
    )


def test_another_model_on_a_dispatch_names_the_one_it_was_planned_with(dispatch: Path) -> None:
    assert run("run", EXAMPLE, dispatch, "--interleave", "muri")[::2] == (
        2,
        "error: --interleave muri: the dispatch was planned with the instance's own interleave "
        "and runs in the model it was planned in\n",
    )


@pytest.mark.parametrize(
    "args",
    [["solve", "{d}"], ["validate", "{d}"], ["policy", "{d}", "muri-s"], ["run", EXAMPLE, "{d}"],
     ["import", "muri", "{d}", "-o", "x.json"], ["info", "{d}"]],
    ids=["solve", "validate", "policy", "run", "import", "info"],
)  # fmt: skip
def test_a_folder_given_for_a_file_is_named_a_folder(tmp_path: Path, args: list[object]) -> None:
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    code, _, err = run(*(str(a).format(d=folder) for a in args))
    assert (code, err) == (2, f"error: {folder}: a folder, not a file\n")


def test_glyphs_the_font_lacks_are_one_note(tmp_path: Path) -> None:
    path = example(tmp_path, 'name: resnet50=>name: "训练😀"')
    chart = tmp_path / "c.png"
    code, _, err = run("solve", path, "-t", "1", "--gantt", chart)
    assert code == 0
    notes = [line for line in err.splitlines() if not re.match(r"\s+\d", line)]
    assert notes == [
        f"note: {chart}: characters of the labels that no installed font has a glyph for are "
        "drawn as boxes (a CJK or emoji font draws them, e.g. Debian's fonts-noto-cjk; an "
        ".html chart draws any name)"
    ]


def _font(path: Path, family: str, chars: str) -> None:
    """A font file of ``family`` with a square glyph for each of ``chars``."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    def square() -> object:
        pen = TTGlyphPen(None)
        for point in ((100, 0), (100, 700), (900, 700), (900, 0)):
            (pen.lineTo if point != (100, 0) else pen.moveTo)(point)
        pen.closePath()
        return pen.glyph()

    names = [".notdef", *(f"u{ord(c):X}" for c in chars)]
    font = FontBuilder(1000, isTTF=True)
    font.setupGlyphOrder(names)
    font.setupCharacterMap({ord(c): f"u{ord(c):X}" for c in chars})
    font.setupGlyf({n: square() for n in names})
    font.setupHorizontalMetrics({n: (1000, 100) for n in names})
    font.setupHorizontalHeader(ascent=800, descent=-200)
    font.setupNameTable({"familyName": family, "styleName": "Regular"})
    font.setupOS2(sTypoAscender=800, usWinAscent=800, usWinDescent=200)
    font.setupPost()
    font.save(str(path))


def test_an_installed_font_with_the_glyphs_draws_any_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib import font_manager, rc_context, rcParams

    from planner.app import figures

    _font(tmp_path / "cjk.ttf", "Planner Test CJK", "训练😀")
    font_manager.fontManager.addfont(str(tmp_path / "cjk.ttf"))
    monkeypatch.setattr(figures, "LABEL_FONTS", ("No Such Font", "Planner Test CJK"))
    path = example(tmp_path, 'name: resnet50=>name: "训练😀"')
    chart = tmp_path / "c.png"
    with rc_context():
        code, _, err = run("solve", path, "-t", "1", "--gantt", chart)
        assert rcParams["font.family"][-1] == "Planner Test CJK"  # installed: a fallback
        assert "No Such Font" not in rcParams["font.family"]
    assert code == 0
    assert "note:" not in err


# 5. The library says what it does.


def test_the_library_plans_training_jobs_as_the_command_line_does(tmp_path: Path) -> None:
    from planner.executor.runs import Setting

    found = planner.plan_jobs(EXAMPLE, time_limit=2, setting=Setting())
    code, out, _ = run("solve", EXAMPLE, "-t", "2")
    assert code == 0
    assert lines(out)["makespan"] == f"{found.best.run.makespan:,.0f} s"
    static = planner.solve(planner.load_instance(EXAMPLE), "sgs")
    assert static.objective < 1000  # ticks of the static block model, not seconds


def test_plan_jobs_refuses_a_task_graph() -> None:
    with pytest.raises(InputError, match=r"j301_1.sm: no training jobs to plan in the executor's"):
        planner.plan_jobs(INSTANCES / "psplib/j301_1.sm")


def test_run_policy_runs_on_the_instances_cluster() -> None:
    workload = jobs_from_instance(EXAMPLE)
    run_ = planner.run_policy(workload, "muri-s")
    code, out, _ = run("policy", EXAMPLE, "muri-s")
    assert code == 0
    assert lines(out)["makespan"].startswith(f"{run_.makespan:,.0f} s")
    assert max(k for _, groups in run_.trace for *_, where in groups for k, _ in where) == 1
    with pytest.raises(InputError, match=r"^nodes=8: the workload's cluster has 2; leave it out"):
        planner.run_policy(workload, "muri-s", nodes=8)


def test_the_formats_reference_lists_its_fields() -> None:
    text = (Path(__file__).parents[1] / "docs/reference/formats.md").read_text()
    table = text.split("## The schema", 1)[1]
    assert "| `max_colocated` |" in table and "| `gpu_type` |" in table


# A command reads its instance once and passes the parsed object down (issue 58).


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each file (by name) is read from here on."""
    counts: dict[str, int] = {}
    read_bytes, read_text = Path.read_bytes, Path.read_text

    def counted(read: Callable[..., object]) -> Callable[..., object]:
        def inner(self: Path, *a: object, **k: object) -> object:
            counts[self.name] = counts.get(self.name, 0) + 1
            return read(self, *a, **k)

        return inner

    monkeypatch.setattr(Path, "read_bytes", counted(read_bytes))
    monkeypatch.setattr(Path, "read_text", counted(read_text))
    return counts


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "-t", "1"],
        ["solve", "--static", "-s", "sgs"],
        ["info"],
        ["validate"],
        ["validate", "PLAN"],
        ["run", "PLAN"],
        ["policy", "muri-s"],
    ],
)
def test_a_command_reads_its_instance_and_plan_once(
    dispatch: Path, reads: dict[str, int], args: list[str]
) -> None:
    command, *rest = args
    given = [str(dispatch) if a == "PLAN" else a for a in rest]
    code, _, err = run(command, EXAMPLE, *given)
    assert code == 0, err
    assert reads[EXAMPLE.name] == 1
    if "PLAN" in args:
        assert reads[dispatch.name] == 1


def test_replan_reads_its_instance_and_the_run_once(tmp_path: Path, reads: dict[str, int]) -> None:
    plan, ran = tmp_path / "plan.json", tmp_path / "run.json"
    assert run("solve", EXAMPLE, "--static", "-s", "sgs", "-o", plan)[0] == 0
    assert run("run", EXAMPLE, plan, "-o", ran)[0] == 0
    reads.clear()  # from here on: the replan's
    code, _, err = run("replan", EXAMPLE, plan, "--at", "30", "--executed", ran, "-s", "sgs")
    assert code == 0, err
    assert (reads[EXAMPLE.name], reads[ran.name]) == (1, 1)

"""Solver comparison: reference files, the results table row by row, resume, parallel runs, CLI."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.app.compare import load_table, plan_runs, read_results, run_study
from planner.app.compare_jct import summarize_jct
from planner.app.compare_report import (
    markdown,
    pareto_front,
    save_profile,
    summarize,
    summarize_realized,
)
from planner.app.compare_run import COLUMNS, REALIZED
from planner.bounds import lower_bound
from planner.disturbances import parse_simulation
from planner.errors import InputError
from planner.executor.model.jobs import jobs_from_instance
from planner.executor.runs import Setting, dispatch_of, judge
from planner.io.instance import load_instance
from planner.model import Problem
from planner.result import Result, Status
from planner.schedule import Schedule
from planner.solvers import SOLVERS, solve
from planner.validate import validate
from tests.conftest import INSTANCES

DATA = Path(__file__).parent / "data"
J301 = INSTANCES / "psplib" / "j301_1.sm"
J3013 = INSTANCES / "psplib" / "j3013_1.sm"
OPTIMA = {"j301_1": 43.0, "j3013_1": 58.0}
"""Published optimal makespans (j30opt.sm)."""
runner = CliRunner()


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("bks_j30_excerpt.csv", {"j301_1": 43, "j3013_1": 58, "j3048_10": 54}),  # best_ub
        ("bks_j10_excerpt.csv", {"j102_2": 20, "j102_5": 16}),  # makespan column
        ("bks_mmlib50_excerpt.csv", {"j501_1": 31, "j501_3": 25}),  # names in capitals
        ("j30opt_excerpt.sm", {"j301_1": 43, "j301_3": 47, "j3013_1": 58, "j3025_5": 72}),
        ("j120hrs_excerpt.sm", {"j1201_1": 105, "j1201_3": 125}),  # set from the file name
    ],
)
def test_reference_files(file: str, expected: dict[str, int]) -> None:
    from planner.io.reference import load_reference

    values = load_reference(DATA / file)
    for name, value in expected.items():
        assert values[name] == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("instance,kind\nj301_1,opt\n", "value column"),  # no value column
        ("name,makespan\nj301_1,43\n", "column 'instance'"),  # no instance column
        ("instance,makespan\nj301_1,abc\n", "must be a number"),  # not a number
        ("instance,makespan\n", "no reference values"),  # no rows
        ("some text\nwithout rows\n", "no reference values"),  # a solution list with no rows
    ],
)
def test_bad_reference_files(tmp_path: Path, text: str, message: str) -> None:
    from planner.io.reference import load_reference

    path = tmp_path / "j30ref.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_reference(path)


def opt_reference() -> dict[str, float]:
    from planner.io.reference import load_reference

    return load_reference(DATA / "j30opt_excerpt.sm")


def test_study_table_row_by_row(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    table = run_study(
        [J301, J3013], ["sgs"], out, seeds=2, reference=opt_reference(), progress=False
    )
    assert list(table.columns) == COLUMNS
    assert list(zip(table["instance"], table["solver"], table["seed"], strict=True)) == [
        ("j301_1", "sgs", 0),
        ("j301_1", "sgs", 1),
        ("j3013_1", "sgs", 0),
        ("j3013_1", "sgs", 1),
    ]
    for row in table.itertuples(index=False):
        problem = load_instance(J301 if row.instance == "j301_1" else J3013)
        direct = solve(problem, "sgs")  # sgs takes no seed: both seeds run the same pass
        assert row.status == direct.status.value == "feasible"
        assert row.objective == direct.objective
        assert row.lower_bound == lower_bound(problem)
        assert row.gap_bound == pytest.approx((row.objective - row.lower_bound) / row.objective)
        assert row.reference == OPTIMA[row.instance]
        assert row.gap_reference == pytest.approx((row.objective - row.reference) / row.reference)
        assert row.objective >= row.reference
        assert bool(row.valid)
        assert row.error == ""
        assert row.runtime >= 0
    assert len(read_results(out)) == 4
    summary = summarize(table)
    assert summary.to_dict("records")[0] | {"mean_runtime_s": 0} == {
        "solver": "sgs",
        "runs": 4,
        "solved": 4,
        "optimal": 0,
        "best": 4,
        "invalid": 0,
        "errors": 0,
        "mean_gap_bound_%": pytest.approx(100 * table["gap_bound"].mean()),
        "mean_gap_reference_%": pytest.approx(100 * table["gap_reference"].mean()),
        "mean_runtime_s": 0,
    }


def test_study_with_an_exact_solver_finds_the_published_optimum(tmp_path: Path) -> None:
    table = run_study(
        [J301],
        ["sgs", "cpsat"],
        tmp_path / "r.csv",
        time_limit=20,
        workers=1,
        reference=opt_reference(),
        progress=False,
    )
    cpsat = table[table["solver"] == "cpsat"].iloc[0]
    assert cpsat["status"] == "optimal"
    assert cpsat["objective"] == 43 and cpsat["gap_reference"] == 0
    summary = summarize(table).set_index("solver")
    assert summary.loc["cpsat", "best"] == 1 and summary.loc["cpsat", "optimal"] == 1
    assert summary.loc["sgs", "best"] == 0


def test_resume_repeats_no_finished_run(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    run_study([J301, J3013], ["sgs"], out, seeds=3, progress=False)
    lines = out.read_text().splitlines(keepends=True)
    assert len(lines) == 7
    # Interrupted after two rows, in the middle of writing the third.
    out.write_text("".join(lines[:3]) + lines[3][:15])
    kept = {(r["instance"], r["solver"], int(r["seed"])) for r in read_results(out)}
    assert kept == {("j301_1", "sgs", 0), ("j301_1", "sgs", 1)}
    rerun: list[tuple[str, str, int]] = []
    table = run_study(
        [J301, J3013],
        ["sgs"],
        out,
        seeds=3,
        resume=True,
        progress=False,
        on_row=lambda row: rerun.append((row["instance"], row["solver"], row["seed"])),
    )
    every = {r.key for r in plan_runs([J301, J3013], ["sgs"], 3)}
    assert sorted(rerun) == sorted(every - kept)
    assert len(table) == 6
    keys = [(r["instance"], r["solver"], int(r["seed"])) for r in read_results(out)]
    assert sorted(keys) == sorted(every)
    rerun.clear()
    run_study(
        [J301, J3013], ["sgs"], out, seeds=3, resume=True, progress=False, on_row=rerun.append
    )
    assert rerun == []


def test_force_starts_the_table_afresh(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    run_study([J301], ["sgs"], out, seeds=2, progress=False)
    run_study([J3013], ["sgs"], out, force=True, progress=False)
    assert [r["instance"] for r in read_results(out)] == ["j3013_1"]


def test_without_resume_or_force_an_earlier_study_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    run_study([J301], ["sgs"], out, seeds=2, progress=False)
    before = out.read_text()
    with pytest.raises(InputError) as caught:
        run_study([J3013], ["sgs"], out, progress=False)
    assert str(caught.value) == (
        f"{out}: holds 2 runs of an earlier study; pass --resume to keep them and add the "
        "missing runs, or --force to start afresh"
    )
    assert out.read_text() == before
    with pytest.raises(InputError) as caught:
        run_study([J3013], ["sgs"], out, resume=True, force=True, progress=False)
    assert str(caught.value) == (
        "--resume keeps the runs of the results table and --force discards them: pass one"
    )
    assert out.read_text() == before
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InputError) as caught:
        run_study([J301], ["sgs"], other, progress=False)
    assert str(caught.value) == (
        f"{other}: is not a results table; choose another file, or pass --force to replace it"
    )
    assert other.read_text() == "a,b\n1,2\n"
    empty = tmp_path / "empty.csv"
    empty.write_text("")  # nothing to keep: the study starts in it
    assert len(run_study([J301], ["sgs"], empty, progress=False)) == 1


def test_resume_refuses_a_file_that_is_not_a_results_table(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="not a results table"):
        run_study([J301], ["sgs"], out, resume=True, progress=False)


def solve_broken(problem: Problem, **_: object) -> Result:
    """A solver with a bug: every task starts at 0."""
    schedule = Schedule(
        modes={t.name: t.modes[0].name for t in problem.tasks},
        starts={t.name: 0 for t in problem.tasks},
    )
    return Result("broken", Status.FEASIBLE, schedule, objective=schedule.makespan(problem))


def solve_crashing(problem: Problem, **_: object) -> Result:
    """A solver that raises."""
    raise RuntimeError("out of memory")


def solve_interrupted(problem: Problem, **_: object) -> Result:
    """A solve that Ctrl-C stopped: a valid schedule, the best found so far."""
    found = solve(problem, "sgs")
    return replace(found, solver="stopped", interrupted=True)


@pytest.fixture
def faulty_solvers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOLVERS, "broken", "tests.test_compare:solve_broken")
    monkeypatch.setitem(SOLVERS, "crashing", "tests.test_compare:solve_crashing")
    monkeypatch.setitem(SOLVERS, "stopped", "tests.test_compare:solve_interrupted")


def test_invalid_schedules_and_crashes_are_recorded_not_raised(
    tmp_path: Path, faulty_solvers: None
) -> None:
    problem = load_instance(J301)
    assert not validate(problem, solve_broken(problem).schedule).ok
    table = run_study(
        [J301], ["sgs", "broken", "crashing"], tmp_path / "r.csv", progress=False
    ).set_index("solver")
    assert table.loc["broken", "status"] == "invalid"
    assert table.loc["broken", "valid"] == False  # noqa: E712 (a pandas boolean)
    assert "invalid schedule" in table.loc["broken", "error"]
    assert table.loc["crashing", "status"] == "error"
    assert table.loc["crashing", "error"] == "RuntimeError: out of memory"
    summary = summarize(table.reset_index()).set_index("solver")
    assert summary.loc["broken", "invalid"] == 1 and summary.loc["broken", "best"] == 0
    assert summary.loc["crashing", "errors"] == 1
    assert summary.loc["sgs", "best"] == 1


def test_an_interrupted_run_is_not_recorded_and_stops_the_study(
    tmp_path: Path, faulty_solvers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.csv"
    with pytest.raises(KeyboardInterrupt):
        run_study([J301, J3013], ["sgs", "stopped"], out, progress=False)
    # j301_1 with sgs finished; Ctrl-C stopped j301_1 with "stopped"; nothing ran after it.
    assert [(r["instance"], r["solver"]) for r in read_results(out)] == [("j301_1", "sgs")]
    monkeypatch.setitem(
        SOLVERS, "stopped", "planner.solvers.sgs:solve_sgs"
    )  # it now runs to its end
    rerun: list[tuple[str, str]] = []
    table = run_study(
        [J301, J3013],
        ["sgs", "stopped"],
        out,
        resume=True,
        progress=False,
        on_row=lambda row: rerun.append((row["instance"], row["solver"])),
    )
    assert rerun == [("j301_1", "stopped"), ("j3013_1", "sgs"), ("j3013_1", "stopped")]
    assert len(table) == 4 and set(table["status"]) == {"feasible"}


def test_plan_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown solver"):
        plan_runs([J301], ["nope"], 1)
    with pytest.raises(InputError, match="no such file"):
        plan_runs([tmp_path / "missing.sm"], ["sgs"], 1)
    other = tmp_path / "j301_1.sm"
    other.write_text(J301.read_text())
    with pytest.raises(InputError, match="two instance files"):
        plan_runs([J301, other], ["sgs"], 1)


def sgs_rows(table) -> list[tuple]:
    return sorted(
        zip(table["instance"], table["seed"], table["objective"], table["valid"], strict=True)
    )


@pytest.fixture(scope="module")
def sequential(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    out = tmp_path_factory.mktemp("seq") / "r.csv"
    return sgs_rows(run_study([J301, J3013], ["sgs"], out, seeds=2, progress=False))


def test_local_processes_give_the_same_table(tmp_path: Path, sequential: list[tuple]) -> None:
    table = run_study([J301, J3013], ["sgs"], tmp_path / "r.csv", seeds=2, jobs=2, progress=False)
    assert sgs_rows(table) == sequential


def test_dask_local_cluster_gives_the_same_table(tmp_path: Path, sequential: list[tuple]) -> None:
    table = run_study(
        [J301, J3013], ["sgs"], tmp_path / "r.csv", seeds=2, dask="local:2", progress=False
    )
    assert sgs_rows(table) == sequential


def test_dask_scheduler_over_tcp_gives_the_same_table(
    tmp_path: Path, sequential: list[tuple]
) -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        table = run_study(
            [J301, J3013], ["sgs"], tmp_path / "r.csv", seeds=2, dask=address, progress=False
        )
    assert sgs_rows(table) == sequential


@pytest.mark.parametrize("address", ["localhost:8786", "tcp://host", "local:0", "local:x"])
def test_bad_dask_addresses(tmp_path: Path, address: str) -> None:
    with pytest.raises(InputError, match="--dask"):
        run_study([J301], ["sgs"], tmp_path / "r.csv", dask=address, progress=False)


def test_markdown_and_profile(tmp_path: Path) -> None:
    table = run_study([J301, J3013], ["sgs"], tmp_path / "r.csv", progress=False)
    text = markdown(summarize(table))
    lines = text.splitlines()
    assert lines[0].startswith("| solver | runs |") and lines[1].startswith("|---|")
    assert lines[2].startswith("| sgs | 2 | 2 | 0 | 2 | 0 | 0 |")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[8] == "-"  # no reference, no gap to it
    assert float(cells[7]) == pytest.approx(100 * table["gap_bound"].mean(), abs=0.01)
    save_profile(table, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_cli_compare(tmp_path: Path) -> None:
    out = tmp_path / "study.csv"
    args = ["compare", str(J301), str(J3013), "-s", "sgs", "--seeds", "2", "-o", str(out)]
    result = runner.invoke(app, ["--progress", *args, "--reference",
                                 str(DATA / "bks_j30_excerpt.csv")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "| sgs | 4 | 4 |" in result.stdout
    assert "4/4" in result.stderr  # the progress bar, asked for
    assert (tmp_path / "study.md").read_text() in result.stdout
    assert (tmp_path / "study_profile.png").read_bytes().startswith(b"\x89PNG")
    table = load_table(out)
    assert list(table["reference"]) == [43, 43, 58, 58]
    with out.open() as f:
        assert next(csv.reader(f)) == COLUMNS


def test_cli_compare_exits_1_on_an_invalid_schedule(tmp_path: Path, faulty_solvers: None) -> None:
    result = runner.invoke(
        app, ["compare", str(J301), "-s", "broken", "-o", str(tmp_path / "r.csv")]
    )
    assert result.exit_code == 1
    assert "| broken | 1 | 0 | 0 | 0 | 1 | 0 |" in result.stdout
    # and says so on stderr (issue 44: exit 1 with nothing there)
    assert result.stderr.splitlines()[-1].startswith(
        f"error: 1 of 1 runs failed (status invalid or error; the error column of "
        f"{tmp_path / 'r.csv'} says why), the first: j301_1 broken seed 0: solver 'broken' "
        "returned an invalid schedule: "
    )


def test_cli_compare_refuses_an_infeasible_instance_before_it_starts(tmp_path: Path) -> None:
    from tests.conftest import TWO_JOBS

    data = {**TWO_JOBS, "precedences": [{"before": "a", "after": "b"},
                                        {"before": "b", "after": "a"}]}  # fmt: skip
    cycle = tmp_path / "cycle.json"
    cycle.write_text(json.dumps(data))
    out = tmp_path / "r.csv"
    first = runner.invoke(app, ["compare", str(J301), "-s", "sgs", "-o", str(out)])
    assert first.exit_code == 0, first.output
    kept = out.read_bytes()
    result = runner.invoke(app, ["compare", str(cycle), "-s", "sgs", "-o", str(out), "--resume"])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {cycle}: precedences: infeasible instance: precedence cycle a -> b -> a\n",
    )
    assert out.read_bytes() == kept


def test_cli_compare_never_replaces_an_earlier_study(tmp_path: Path) -> None:
    out = tmp_path / "study.csv"
    first = runner.invoke(app, ["compare", str(J301), str(J3013), "-s", "sgs", "-o", str(out)])
    assert first.exit_code == 0, first.output
    kept = {p: p.read_bytes() for p in (out, tmp_path / "study.md", tmp_path / "study_profile.png")}
    args = ["compare", str(INSTANCES / "psplib" / "j301_2.sm"), "-s", "sgs", "-o", str(out)]
    again = runner.invoke(app, args)
    assert again.exit_code == 2
    assert again.stderr == (
        f"error: {out}: holds 2 runs of an earlier study; pass --resume to keep them and add "
        "the missing runs, or --force to start afresh\n"
    )
    assert again.stdout == ""
    assert {p: p.read_bytes() for p in kept} == kept
    both = runner.invoke(app, [*args, "--resume", "--force"])
    assert both.exit_code == 2
    assert {p: p.read_bytes() for p in kept} == kept
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert [r["instance"] for r in read_results(out)] == ["j301_1", "j3013_1", "j301_2"]
    assert "| sgs | 1 | 1 |" in resumed.stdout  # the summary is of this study's runs
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert [r["instance"] for r in read_results(out)] == ["j301_2"]


def test_cli_compare_stops_at_ctrl_c_and_says_how_to_go_on(
    tmp_path: Path, faulty_solvers: None
) -> None:
    out = tmp_path / "r.csv"
    result = runner.invoke(
        app, ["compare", str(J301), str(J3013), "-s", "sgs", "-s", "stopped", "-o", str(out)]
    )
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == (
        f"interrupted: the finished runs are in {out}; "
        "repeat the command with --resume to run the others"
    )
    assert [(r["instance"], r["solver"]) for r in read_results(out)] == [("j301_1", "sgs")]
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "nope"],  # unknown solver
        ["-o", "results.txt"],  # not a CSV
        ["--reference", "missing.csv"],  # no such reference file
        ["--dask", "somewhere"],  # not an address
    ],
)
def test_cli_compare_bad_input_is_one_line(tmp_path: Path, args: list[str]) -> None:
    args = [str(tmp_path / a) if "." in a and not a.startswith("-") else a for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "r.csv")]
    result = runner.invoke(app, ["compare", str(J301), *args])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_stopping_a_study_stops_its_worker_processes() -> None:
    from multiprocessing import active_children

    from planner.app.compare import execute

    before = set(active_children())
    runs = plan_runs([J301, J3013], ["sgs"], 3)
    rows = execute(runs, jobs=2)
    first = next(rows)
    assert first["status"] == "feasible"
    assert set(active_children()) - before
    rows.close()
    assert not [p for p in set(active_children()) - before if p.is_alive()]


def test_cli_compare_through_a_real_process_resumes_a_finished_study(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "r.csv"
    command = [sys.executable, "-m", "planner", "compare", str(J301), "-s", "sgs", "-o", str(out)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    before = out.read_text()
    again = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert out.read_text() == before
    assert "| sgs | 1 | 1 |" in again.stdout
    assert "run/s" not in first.stderr  # stderr is no terminal: no progress bar


SIMULATION = "noise=lognormal:0.1,slowdown=muri,runs=2"
"""A small replay study: two noisy runs per plan with Muri's slowdown."""


@pytest.fixture(scope="module")
def placed_batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six generated jobs placed on two nodes of four GPUs."""
    from planner.dl.workloads import generate_batch

    out = tmp_path_factory.mktemp("batch") / "batch.json"
    data = generate_batch(6, seed=1, nodes=2, gpus_per_node=4, placement="node")
    out.write_text(json.dumps(data))
    return out


def test_study_with_a_simulation_records_the_realized_figures(
    tmp_path: Path, placed_batch: Path
) -> None:
    out = tmp_path / "results.csv"
    solvers = ["sgs", "exclusive-fifo"]
    table = run_study([placed_batch], solvers, out, simulation=SIMULATION, progress=False)
    assert list(table.columns) == COLUMNS + REALIZED
    with out.open() as f:
        assert next(csv.reader(f)) == COLUMNS + REALIZED
    # a batch of training jobs runs in the job-level executor, with its defaults
    problem = load_instance(placed_batch)
    workload = jobs_from_instance(placed_batch)
    noise = parse_simulation(SIMULATION).disturbances.noise
    expected = {}
    for name in solvers:  # in seconds: the executor counts them
        plan = (problem, solve(problem, name).schedule)
        expected[name] = judge(dispatch_of(workload, Setting(), plan=plan, noise=noise), runs=2)
    for name, want in expected.items():
        (row,) = table[table["solver"] == name].itertuples(index=False)
        assert row.simulation == SIMULATION
        assert row.realized_makespan_mean == pytest.approx(want["makespan_mean"])
        assert row.realized_makespan_p95 == pytest.approx(want["makespan_p95"])
        assert row.realized_jct_mean == pytest.approx(want["jct_mean"])
        assert row.realized_makespan_mean != row.objective  # the noise moved it
    realized = summarize_realized(table)
    ranked = sorted(expected, key=lambda n: expected[n]["makespan_mean"])
    assert list(realized["solver"]) == ranked
    assert list(realized["plans"]) == [1, 1]
    assert list(realized["replays"]) == [2, 2]  # runs=2 of each plan
    assert list(realized["realized_makespan_mean"]) == pytest.approx(
        [expected[n]["makespan_mean"] for n in ranked]
    )


def test_a_simulated_study_resumes_only_with_its_simulation(
    tmp_path: Path, placed_batch: Path
) -> None:
    out = tmp_path / "results.csv"
    run_study([placed_batch], ["sgs"], out, simulation=SIMULATION, progress=False)
    before = out.read_text()
    rerun: list[dict] = []
    again = run_study(
        [placed_batch],
        ["sgs"],
        out,
        simulation=" noise=lognormal:0.1, runs=2",  # the same spec, written otherwise
        resume=True,
        progress=False,
        on_row=rerun.append,
    )
    assert rerun == []
    assert out.read_text() == before
    assert again["realized_makespan_mean"].notna().all()
    with pytest.raises(InputError) as caught:
        run_study([placed_batch], ["sgs"], out, simulation="runs=3", resume=True, progress=False)
    assert str(caught.value) == (
        f"{out}: holds runs simulated with {SIMULATION!r}, not 'runs=3'; resume with "
        f"--simulate {SIMULATION!r}, or pass --force to start afresh"
    )
    with pytest.raises(InputError) as caught:
        run_study([placed_batch], ["sgs"], out, resume=True, progress=False)
    assert str(caught.value) == (
        f"{out}: holds runs simulated with {SIMULATION!r}; resume with --simulate "
        f"{SIMULATION!r}, or pass --force to start afresh"
    )
    plain = tmp_path / "plain.csv"
    run_study([placed_batch], ["sgs"], plain, progress=False)
    with pytest.raises(InputError) as caught:
        run_study(
            [placed_batch], ["sgs"], plain, simulation=SIMULATION, resume=True, progress=False
        )
    assert str(caught.value) == (
        f"{plain}: holds runs of a study without --simulate; resume it without --simulate, "
        "or pass --force to start afresh"
    )
    assert out.read_text() == before


def test_cli_compare_ranks_solvers_by_realized_makespan(tmp_path: Path, placed_batch: Path) -> None:
    out = tmp_path / "study.csv"
    args = ["compare", str(placed_batch), "-s", "sgs", "-s", "exclusive-fifo", "-o", str(out)]
    result = runner.invoke(app, [*args, "--simulate", SIMULATION])
    assert result.exit_code == 0, result.output
    table = load_table(out)
    realized = summarize_realized(table)
    planned = markdown(summarize(table))
    # every time in seconds: the instance's ticks have a length (the unit column says so)
    assert set(table["unit"]) == {"s"}
    caption = f"\nsolvers by realized makespan ({SIMULATION}; seconds):\n\n"
    expected = planned + caption + markdown(realized)
    # the plans of training jobs ran in the job-level executor: their JCT and fairness too
    expected += f"\npolicies and planners by mean realized JCT ({SIMULATION}; seconds):\n\n"
    expected += markdown(summarize_jct(table))
    assert result.stdout == expected + (
        f"results in {out}, summary in {tmp_path / 'study.md'}, "
        f"profile in {tmp_path / 'study_profile.png'}, JCT in {tmp_path / 'study_jct.png'} "
        f"and {tmp_path / 'study_fairness.png'}\n"
    )
    assert (tmp_path / "study.md").read_text() == expected
    best = realized.iloc[0]
    assert (
        f"| {best['solver']} | 1 | 2 | {best['realized_makespan_mean']:.2f} | "
        f"{best['realized_makespan_p95']:.2f} | {best['realized_jct_mean']:.2f} |"
    ) in result.stdout
    assert best["realized_makespan_mean"] <= realized.iloc[1]["realized_makespan_mean"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # no replay at all
        ("runs=0", "simulation 'runs=0': runs must be a whole number from 1 to 1,000,000"),
        # an unknown key
        (
            "speed=2",
            "simulation 'speed=2': expected key=value pairs with keys noise, slowdown, "
            "fail, runs, seed, work-conserving, interleave, restart, got 'speed=2'",
        ),
        ("interleave=phases", "simulation 'interleave=phases': interleave must be fluid or muri"),
        ("restart=no", "simulation 'restart=no': restart applies with interleave"),
        # a failure of a node the instance does not have
        ("fail=node9@5", "{batch}: simulation: failure node9@5: no node 'node9'"),
    ],
)
def test_cli_compare_bad_simulation_is_one_line(
    tmp_path: Path, placed_batch: Path, spec: str, message: str
) -> None:
    out = tmp_path / "r.csv"
    args = ["compare", str(placed_batch), "-s", "sgs", "-o", str(out), "--simulate", spec]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {message.format(batch=placed_batch)}\n"
    assert not out.exists()


def test_failures_of_a_pooled_instance_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        run_study([J301], ["sgs"], tmp_path / "r.csv", simulation="fail=n1@3", progress=False)
    assert str(caught.value) == (
        f"{J301}: simulation: failure n1@3: the instance is pooled (no nodes); "
        "failures need a placed instance"
    )


def test_peer_policies_join_a_study_under_an_interleaving_model(
    tmp_path: Path, placed_batch: Path
) -> None:
    from planner.executor.loop import run_policy
    from planner.executor.model.jobs import jobs_from_instance, model_of, plan_of

    spec = "interleave=muri,slowdown=none,restart=no"
    out = tmp_path / "r.csv"
    table = run_study(
        [placed_batch], ["sgs", "muri-s", "srtf"], out, simulation=spec, progress=False
    )
    workload = jobs_from_instance(placed_batch)
    model = model_of(workload, "muri")
    peers = {p: run_policy(workload.jobs, p, 2, 4, model, False) for p in ("muri-s", "srtf")}
    rows = {r.solver: r for r in table.itertuples()}
    for policy, run in peers.items():
        assert rows[policy].status == "policy"
        assert rows[policy].realized_makespan_mean == pytest.approx(run.makespan)  # seconds
    problem = load_instance(placed_batch)
    from planner.solvers import solve

    plan = solve(problem, "sgs").schedule
    jobs, placed = plan_of(problem, plan, workload.jobs)
    executed = run_policy(jobs, "plan", 2, 4, model, restart=False, plan=placed)
    assert rows["sgs"].realized_makespan_mean == pytest.approx(executed.makespan)
    assert list(summarize(table)["solver"]) == ["sgs"]


def test_a_peer_policy_without_a_model_is_refused(tmp_path: Path, placed_batch: Path) -> None:
    with pytest.raises(InputError) as caught:
        run_study([placed_batch], ["muri-s"], tmp_path / "r.csv", progress=False)
    assert str(caught.value) == (
        "'muri-s' is a policy: it runs job by job in the executor; add --simulate "
        "(e.g. --simulate runs=1)"
    )


def test_a_study_of_training_jobs_reports_every_plan_as_the_executor_runs_it(
    tmp_path: Path,
) -> None:
    # issue 44: a static engine's row is its plan's run in the executor, as planner solve
    # prints it; the static block model's figures are the solver's, not the plan's
    from planner.executor.energy import run_energy

    example = INSTANCES / "example.yaml"
    out = tmp_path / "energy.csv"
    table = run_study([example], ["sgs", "exclusive-fifo"], out, progress=False)
    problem = load_instance(example)
    for solver in ("sgs", "exclusive-fifo"):
        plan = solve(problem, solver).schedule
        dispatch = dispatch_of(jobs_from_instance(example), Setting(), plan=(problem, plan))
        ran = dispatch.run(0)
        gpus = dispatch.nodes * dispatch.gpus_per_node
        row = table.loc[table["solver"] == solver]
        assert row["makespan"].item() == pytest.approx(ran.makespan)  # seconds
        assert row["unit"].item() == "s"
        energy = run_energy(ran, dispatch.jobs_of(0), gpus, None, False).kwh
        assert row["energy_kwh"].item() == pytest.approx(energy)
        assert row["status"].item() == "feasible"  # against the executor's bound
    summary = summarize(table).set_index("solver")
    assert summary.loc["sgs", "mean_energy_kwh"] == pytest.approx(
        table.loc[table["solver"] == "sgs", "energy_kwh"].item()
    )
    # PSPLIB has no power figures: no energy, and no energy column in the summary
    psplib = run_study([J301], ["sgs"], tmp_path / "j30.csv", progress=False)
    assert psplib["energy_kwh"].isna().all()
    assert "mean_energy_kwh" not in summarize(psplib)


@pytest.mark.parametrize(
    "written",
    [COLUMNS[:-3], COLUMNS[:-2], COLUMNS[:-1]],
    ids=["no-energy", "no-makespan", "no-unit"],
)
def test_a_results_file_of_older_columns_is_resumed(tmp_path: Path, written: list[str]) -> None:
    out = tmp_path / "old.csv"
    run_study([J301], ["sgs"], out, progress=False)
    rows = list(csv.DictReader(out.open()))
    with out.open("w", newline="") as f:  # as written before the energy or makespan column
        writer = csv.DictWriter(f, fieldnames=written, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    assert load_table(out)["energy_kwh"].isna().all()
    table = run_study([J301, J3013], ["sgs"], out, resume=True, progress=False)
    assert list(table["instance"]) == ["j301_1", "j3013_1"]
    with out.open() as f:
        assert next(csv.reader(f)) == COLUMNS
    # PSPLIB has ticks without a length: old rows and new alike in ticks
    assert list(table["unit"]) == ["ticks", "ticks"]


def test_a_results_file_in_ticks_of_a_length_is_not_resumed_in_seconds(tmp_path: Path) -> None:
    out = tmp_path / "old.csv"
    example = INSTANCES / "example.yaml"
    run_study([example], ["sgs"], out, progress=False)
    rows = list(csv.DictReader(out.open()))
    assert [r["unit"] for r in rows] == ["s"]
    with out.open("w", newline="") as f:  # as written before the unit column, in ticks
        writer = csv.DictWriter(f, fieldnames=COLUMNS[:-1], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(InputError) as caught:
        run_study([example], ["sgs", "ga"], out, resume=True, progress=False)
    assert str(caught.value) == (
        f"{out}: holds runs of example in ticks of 1min, written before results tables had "
        "a unit column (times are now in seconds); pass --force to start afresh"
    )


def test_times_are_in_seconds_where_ticks_have_a_length(tmp_path: Path) -> None:
    example = INSTANCES / "example.yaml"
    table = run_study([example, J301], ["exclusive-fifo"], tmp_path / "u.csv", progress=False)
    rows = {r.instance: r for r in table.itertuples()}
    problem = load_instance(J301)
    plan = solve(problem, "exclusive-fifo").schedule
    assert (rows["j301_1"].unit, rows["j301_1"].makespan) == ("ticks", plan.makespan(problem))
    # the example's plan runs in the executor, which counts seconds
    executed = dispatch_of(
        jobs_from_instance(example),
        Setting(),
        plan=(load_instance(example), solve(load_instance(example), "exclusive-fifo").schedule),
    ).run(0)
    assert (rows["example"].unit, rows["example"].makespan) == (
        "s",
        pytest.approx(executed.makespan),
    )


def test_a_pareto_study_traces_the_makespan_energy_front(tmp_path: Path) -> None:
    out = tmp_path / "front.csv"
    args = [str(INSTANCES / "power_limits.yaml"), "-s", "cpsat", "-t", "20", "--pareto", "3"]
    result = CliRunner().invoke(app, ["compare", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = load_table(out)
    # 0 W, then an eighth and eight times the full draw of two V100s (600 W)
    assert list(table["instance"]) == ["power_limits@0W", "power_limits@75W", "power_limits@4800W"]
    front = pareto_front(table)
    assert front["on_front"].all()
    least, shortest = table.iloc[0], table.iloc[-1]
    # the least energy: every block under a limit; a high price on time: a shorter plan
    assert least["energy_kwh"] < shortest["energy_kwh"]
    assert shortest["makespan"] < least["makespan"]
    assert (tmp_path / "front_pareto.png").stat().st_size > 0
    assert "makespan against energy" in (tmp_path / "front.md").read_text()


def test_a_pareto_study_needs_the_length_of_a_tick(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["compare", str(J301), "--pareto", "3", "-o", str(tmp_path / "r.csv")]
    )
    assert result.exit_code == 2
    assert result.output.strip().endswith(
        "--pareto: the instance needs a time_unit (the length of a tick)"
    )


def test_a_study_that_runs_nothing_leaves_no_results_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 44: an unreachable Dask scheduler left a header-only table, and the same study
    # without --dask was then refused
    import planner.app.compare as compare

    def unreachable(*args: object, **kwargs: object) -> Iterator[dict]:
        raise InputError("cannot reach the Dask scheduler at tcp://127.0.0.1:1")
        yield {}

    out = tmp_path / "cp.csv"
    monkeypatch.setattr(compare, "execute", unreachable)
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        run_study([J301], ["sgs"], out, progress=False)
    assert not out.exists()
    monkeypatch.undo()
    assert len(run_study([J301], ["sgs"], out, progress=False)) == 1


def test_points_that_print_the_same_are_on_the_front_together() -> None:
    # issue 44: (7002, 948.30) printed on and off the front, its energies 948.2999/948.3001
    rows = []
    for k, (span, kwh) in enumerate([(7002, 948.3001), (7002, 948.2999), (7100, 948.31)]):
        rows.append({"instance": f"big@{k}W", "solver": "cpsat", "seed": 0, "status": "feasible",
                     "makespan": span, "unit": "s", "energy_kwh": kwh})  # fmt: skip
    front = pareto_front(pd.DataFrame(rows)).set_index("makespan_watts")
    assert front.loc["0", "on_front"] and front.loc["1", "on_front"]
    assert not front.loc["2", "on_front"]
    assert markdown(front.loc[["0", "1"]].drop(columns="on_front")).count("948.30") == 2


def test_portfolio_on_training_jobs_plans_in_the_executor_as_solve_does(tmp_path: Path) -> None:
    # issue 44: compare -s portfolio planned the static block model (a realized makespan
    # of 192 min, "optimal" there) where planner solve plans 6,398 s in the executor
    example = INSTANCES / "example.yaml"
    solved = CliRunner().invoke(app, ["solve", str(example), "-t", "5"])
    planned = next(line for line in solved.stdout.splitlines() if line.startswith("makespan"))
    seconds = float(planned.split()[1].replace(",", ""))
    out = tmp_path / "c.csv"
    args = ["compare", str(example), "-s", "portfolio", "-t", "5", "--simulate", "runs=1"]
    result = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = read_results(out)
    assert row["status"] == "feasible"  # 6.94% above the configuration program's bound
    assert float(row["makespan"]) == pytest.approx(seconds, abs=1)  # seconds, as solve prints
    assert float(row["realized_makespan_mean"]) == pytest.approx(float(row["makespan"]))
    noisy = CliRunner().invoke(
        app, [*args[:-1], "runs=1,noise=lognormal:0.1", "-o", str(tmp_path / "n.csv")]
    )
    assert noisy.exit_code == 1
    (row,) = read_results(tmp_path / "n.csv")
    assert row["error"] == (
        "portfolio plans a dispatch, which runs its events as planned: judge it without "
        "noise, failures or work-conserving starts, or name a policy"
    )


def test_an_unreachable_dask_scheduler_is_one_line_before_any_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 44: the progress bar of the study came out before the scheduler's error
    import distributed

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 20 s")

    monkeypatch.setattr(distributed, "Client", refuse)
    out = tmp_path / "cp.csv"
    args = ["compare", str(J301), "-s", "sgs", "--dask", "tcp://127.0.0.1:1", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert (result.exit_code, result.stderr) == (
        2,
        "error: cannot reach the Dask scheduler at tcp://127.0.0.1:1 (Timed out trying to "
        "connect to tcp://127.0.0.1:1 after 20 s)\n",
    )
    assert not out.exists()

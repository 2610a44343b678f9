"""The execution side as a user meets it: ``run``, ``study``, ``policy``, ``replan``, ``online``,
``import muri``, ``generate`` and ``compare --simulate`` on a placed Muri trace.

Bad numbers and misuse end in one line and exit status 2 (the table :data:`BAD`); a
re-plan never puts work on a node that is down; Ctrl-C keeps what is finished.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.errors import InputError
from planner.executor.model.jobs import jobs_from_instance
from planner.io.instance import load_instance
from planner.replay.job_state import state_from_job_run
from planner.replay.state import State
from planner.schedule import load_schedule
from tests.conftest import INSTANCES, ROOT, ctrl_c_when, lines

runner = CliRunner()
TRACE = INSTANCES / "muri_trace.csv"


def run(*args: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``planner ARGS``."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The shipped Muri trace placed on 8 nodes, its sgs plan, and a run where node3 fails
    at tick 2000 for 600 ticks."""
    folder = tmp_path_factory.mktemp("trace")
    files = {name: folder / f"{name}.json" for name in ("placed", "plan", "run")}
    placed = ["--placement", "node", "-o", str(files["placed"])]
    assert run("import", "muri", str(TRACE), *placed)[0] == 0
    assert run("solve", str(files["placed"]), "-s", "sgs", "-o", str(files["plan"]))[0] == 0
    code, out, _ = run(
        "run", str(files["placed"]), str(files["plan"]), "--fail", "node3@2000+600",
        "-o", str(files["run"]),
    )  # fmt: skip
    assert code == 0, out
    return files


# 1. A re-plan from an executed run keeps off a node that is still down.


def test_the_state_of_a_run_carries_the_outages_in_progress(trace: dict[str, Path]) -> None:
    problem = load_instance(trace["placed"])
    plan = load_schedule(trace["plan"], problem)
    data = json.loads(trace["run"].read_text())

    def state(at: int) -> State:
        return state_from_job_run(trace["placed"], problem, plan, data, at)

    assert state(2300).outages == {"node3": 2600}
    assert state(2600).outages == {}  # back at 2600
    assert state(1999).outages == {}  # not failed yet


def test_a_replan_from_a_run_starts_nothing_on_a_node_still_down(
    trace: dict[str, Path], tmp_path: Path
) -> None:
    new, inst = tmp_path / "new.json", tmp_path / "inst.json"
    code, out, err = run(
        "replan", str(trace["placed"]), str(trace["plan"]), "--at", "2300",
        "--executed", str(trace["run"]), "--solver", "sgs", "-o", str(new),
        "--instance-out", str(inst),
    )  # fmt: skip
    assert code == 0, err
    problem = load_instance(inst)
    schedule = load_schedule(new, problem)
    on_node3 = [
        (t, schedule.starts[t], schedule.finish(problem, t))
        for t, nodes in schedule.nodes.items()
        if "node3" in nodes and t != "node3#down"
    ]
    assert on_node3  # the plan uses node3 again, once it is back
    assert all(f <= 2000 or s >= 2600 for _, s, f in on_node3), on_node3
    assert schedule.starts["node3#down"] == 2300
    assert schedule.finish(problem, "node3#down") == 2600
    assert "valid" in lines(out)["validator"]


def test_an_event_on_a_node_already_down_in_the_run_is_refused(trace: dict[str, Path]) -> None:
    code, _, err = run(
        "replan", str(trace["placed"]), str(trace["plan"]), "--at", "2300",
        "--executed", str(trace["run"]), "--event", "fail:node3+10", "--solver", "sgs",
    )  # fmt: skip
    assert code == 2
    assert err == (
        "error: event fail:node3+10: node 'node3' is already down (a failure of the run, "
        "back at tick 2600); a node fails again only once it is back\n"
    )


# 2. The makespan of a re-plan is the jobs', not a down node's placeholder.


def test_the_replanned_makespan_counts_jobs_only(trace: dict[str, Path]) -> None:
    plan = trace["plan"]
    old = json.loads(plan.read_text())["makespan"]
    args = ["replan", str(trace["placed"]), str(plan), "--event", "fail:node2+5000", "-s", "sgs"]
    code, out, _ = run(*args, "--at", "7000")
    assert code == 0
    assert lines(out)["makespan"] == f"{old} (old plan {old})"
    assert "note" not in lines(out)
    code, out, _ = run(*args, "--at", "999999")
    assert code == 0
    assert lines(out)["makespan"] == f"{old} (old plan {old})"
    assert lines(out)["note"] == (
        f"T = 999999 is at or past the old plan's end ({old}): every task of the old plan "
        "had finished"
    )


def test_times_take_units(trace: dict[str, Path]) -> None:
    code, out, _ = run(
        "replan", str(trace["placed"]), str(trace["plan"]), "--at", "2h", "--event",
        "fail:node1+90s", "-s", "sgs",
    )  # fmt: skip
    assert code == 0
    assert lines(out)["re-planned at"] == "tick 120"
    assert lines(out)["events"] == "fail:node1+2"  # 90 s is 1.5 ticks of 1 min: rounded up


# 3. --time-limit with a solver that has none.


def test_a_time_limit_for_a_solver_without_one_says_which_have_one(
    trace: dict[str, Path],
) -> None:
    # the default solver online on training jobs, portfolio, has one; sgs has none
    code, _, err = run("online", str(trace["placed"]), "--solver", "sgs", "--time-limit", "2")
    assert code == 2
    assert err == (
        "error: --time-limit: solver 'sgs' has no time limit (it makes one pass or follows a "
        "rule); the solvers with one: portfolio, cpsat, milp, ga, pso\n"
    )


def test_online_takes_a_time_limit_for_a_solver_with_one(trace: dict[str, Path]) -> None:
    code, out, err = run(
        "--progress", "online", str(trace["placed"]), "--solver", "ga", "--time-limit", "0.01",
        "--option", "schedules=20",
    )  # fmt: skip
    assert code == 0, err
    assert "planner:" in err  # the progress bar, asked for
    rows = out.splitlines()
    assert lines(out)["planner"] == (
        "re-plans at every arrival with ga, 0.01 s per re-plan (static block model)"
    )
    header = rows.index(
        "JCT, makespan and wait in seconds; worst finish-time fairness; planner time in seconds "
        "per re-plan"
    )
    assert rows[header + 1].split() == [
        "policy", "jobs", "re-plans", "mean", "JCT", "p99", "JCT", "makespan", "mean", "wait",
        "worst", "FTF", "planner", "s",
    ]  # fmt: skip
    arrivals = {j.release for j in jobs_from_instance(trace["placed"]).jobs}
    assert rows[header + 2].split()[:3] == ["planner", "40", str(len(arrivals))]


# 4-8. Bad numbers, runaway counts, outputs that collide, what cannot run: one line, exit 2.

P, S = "{placed}", "{plan}"
# fmt: off
BAD = [
    # a time limit that is no time
    (["online", P, "--time-limit", "-1"], "Invalid value for '--time-limit' / '-t': "
     "-1 is not in (seconds, > 0 and <= 604800)"),
    (["online", P, "--time-limit", "0"], "Invalid value for '--time-limit' / '-t': "
     "0 is not in (seconds, > 0 and <= 604800)"),
    (["replan", P, S, "--at", "5", "--time-limit", "0"], "Invalid value for '--time-limit' / '-t': "
     "0 is not in (seconds, > 0 and <= 604800)"),
    (["replan", P, S, "--at", "5", "--time-limit", "inf"], "Invalid value for '--time-limit' / "
     "'-t': inf is not in (seconds, > 0 and <= 604800)"),
    (["solve", P, "--time-limit", "nan"], "Invalid value for '--time-limit' / '-t': "
     "nan is not in (seconds, > 0 and <= 604800)"),
    # noise that shrinks every duration to nothing, or overflows
    (["run", P, S, "--noise", "lognormal:1e308"], "noise lognormal:1e+308: lognormal:SIGMA "
     "needs 0 <= SIGMA <= 2 (a larger SIGMA shrinks most durations to nothing)"),
    (["run", P, S, "--noise", "lognormal:30"], "noise lognormal:30: lognormal:SIGMA needs "
     "0 <= SIGMA <= 2 (a larger SIGMA shrinks most durations to nothing)"),
    (["run", P, S, "--noise", "uniform:nan"], "noise uniform:nan: the scale must be a finite "
     "number >= 0"),
    # an overrun that no run survives
    (["replan", P, S, "--at", "5", "--event", "overrun:job2/block1:1e9"], "event "
     "'overrun:job2/block1:1e9': FACTOR must be a number > 0 and <= 100"),
    (["replan", P, S, "--at", "5", "--event", "overrun:job2/block1:0"], "event "
     "'overrun:job2/block1:0': FACTOR must be a number > 0 and <= 100"),
    # generate: a seed numpy refuses, a rate that writes 300-digit releases, a huge batch
    (["generate", "--seed", "-1", "-o", "g.json"], "Invalid value for '--seed': Input should "
     "be greater than or equal to 0"),
    (["generate", "--seed", "4294967296", "-o", "g.json"], "Invalid value for '--seed': Input "
     "should be less than or equal to 4294967295"),
    (["generate", "--arrival-rate", "1e-300", "-o", "g.json"], "Invalid value for "
     "'--arrival-rate': Input should be greater than or equal to 0.01"),
    (["generate", "--jobs", "100000000", "-o", "g.json"], "Invalid value for '--jobs': Input "
     "should be less than or equal to 100000"),
    (["generate", "--gpus-per-node", "0", "-o", "g.json"], "Invalid value for "
     "'--gpus-per-node': Input should be greater than or equal to 1"),
    (["generate", "--blocks", "5000", "-o", "g.json"], "Invalid value for '--blocks': Input "
     "should be less than or equal to 1000"),
    # Monte Carlo counts past the cap
    (["study", P, S, "--runs", "1000000000"], "Invalid value for '--runs': Input should be "
     "less than or equal to 1000000"),
    (["study", P, S, "--seed", "4294967295", "--runs", "2"], "--seed 4294967295 --runs 2: "
     "the last seed passes 4294967295"),
    (["study", P, S, "--jobs", "100000"], "Invalid value for '--jobs': Input should be "
     "less than or equal to 256"),
    (["compare", P, "-s", "sgs", "-o", "c.csv", "--simulate", "runs=1000000000"], "simulation "
     "'runs=1000000000': runs must be a whole number from 1 to 1,000,000"),
    (["compare", P, "-s", "sgs", "-o", "c.csv", "--simulate", "seed=-3"], "simulation "
     "'seed=-3': seed must be a whole number from 0 to 4,294,967,295"),
    (["compare", P, "-s", "sgs", "-o", "c.csv", "--seeds", "0"], "Invalid value for '--seeds': "
     "Input should be greater than or equal to 1"),
    # two outputs to one file
    (["replan", P, S, "--at", "5", "-o", "new.json", "--instance-out", "new.json"], "new.json: "
     "given to both --output and --instance-out; one would overwrite the other"),
    (["run", P, S, "-o", "r.json", "--gantt", "./r.json"], "r.json: the chart file must "
     "end in .png, .svg, .pdf or .html"),
    (["solve", P, "-s", "sgs", "-o", "x.json", "--gantt", "x.json"], "x.json: the chart file "
     "must end in .png, .svg, .pdf or .html"),
    (["online", P, "-o", "o.json", "--gantt", "o.json"], "o.json: the chart "
     "file must end in .png, .svg, .pdf or .html"),
    # failures: one rule for simulate and replan
    (["run", P, S, "--fail", "node1@10+20", "--fail", "node1@15"], "failure node1@15: "
     "node 'node1' is already down (failure node1@10+20); a node fails again only once it is "
     "back"),
    (["run", P, S, "--fail", "node1@10", "--fail", "node1@10"], "failure node1@10: node "
     "'node1' is already down (failure node1@10); a node fails again only once it is back"),
    (["replan", P, S, "--at", "5", "--event", "fail:node1+3", "--event", "fail:node1"],
     "event fail:node1: node 'node1' is already down (event fail:node1); a node fails again "
     "only once it is back"),
    # times: whole ticks or a duration with a unit
    (["replan", P, S, "--at", "1fortnight"], "--at: '1fortnight' is not a time: give whole "
     "ticks (600) or a duration with a unit (90s, 30min, 2h, 1d)"),
    (["replan", P, S, "--at", "-5"], "--at: '-5' is not a time: give whole ticks (600) or a "
     "duration with a unit (90s, 30min, 2h, 1d)"),
    (["run", P, S, "--fail", "node1@soon"], "failure 'node1@soon': TIME: 'soon' is not a "
     "time: give whole ticks (600) or a duration with a unit (90s, 30min, 2h, 1d)"),
    (["online", P, "--replan-every", "2h"], "--replan-every: job by job the "
     "planner re-plans at every arrival"),
    (["run", P, S, "--fail", "node1@99999999999999h"], "failure 'node1@99999999999999h': "
     "TIME: '99999999999999h' is more than 1,000,000,000,000 ticks"),
    # other misuse
    (["policy", P, "muri-s", "--time-limit", "2"], "--time-limit is the planner's search per "
     "event; muri-s has none"),
    (["study", P, S, "--policy", "muri-s"], "give the plan (PLAN) or --policy NAME, one of them"),
    (["study", P], "give the plan (PLAN) or --policy NAME, one of them"),
    (["study", P, S, "-o", "s.csv"], "s.csv: --output: a study writes its run and figures as "
     ".json"),
    (["simulate", P, S, "--runs", "3"], "planner simulate is now four commands: planner run "
     "INSTANCE PLAN, planner study INSTANCE PLAN --runs N, planner policy INSTANCE NAME, "
     "planner online INSTANCE"),
    (["online", P, "--baseline", "nope"], "unknown policy 'nope'; choose one of "
     "fifo, srtf, srsf, tiresias, muri-s, muri-l, lp-groups, srsf-pack, jct-groups, ftf-groups, "
     "fair-groups, het-srpt, het-makespan, grid-srtf, grid-srtf-events, batch-lpt, batch-srtf, "
     "batch-fifo, pollux-tiresias, pollux-optimus, pollux, goodput, goodput-pack; "
     "Gavel's gavel-fifo, gavel-max-min-fairness, "
     "gavel-min-total-duration, gavel-finish-time-fairness, each also -perf or -packed, and "
     "gavel-gandiva; Synergy's synergy-fifo, synergy-srtf and synergy-las, each -fair, "
        "-greedy or -tune; or FILE.py:CLASS"),
    (["online", P, "--option", "rule"], "--option 'rule': expected KEY=VALUE, "
     "e.g. rule=spt"),
    (["replan", P, S, "--at", "5", "--stability", "-1"], "Invalid value for '--stability': "
     "Input should be greater than or equal to 0"),
    (["replan", P, S, "--at", "5", "--seed", "-2", "-s", "ga"], "Invalid value for '--seed': "
     "Input should be greater than or equal to 0"),
    (["replan", P, S, "--at", "5", "--seed", "3", "-s", "sgs"], "--seed: solver 'sgs' has no "
     "seed (it makes one pass or follows a rule); the solvers with one: portfolio, cpsat, "
     "milp, ga, pso"),
    (["replan", P, S, "--at", "5", "--executed", S], "{plan}: task 'job0/block1': not a task "
     "of a run file of planner run (mode, nodes, start, lost, segments and lost_segments)"),
    (["replan", P, "{run}", "--at", "10"], "{run}: a run file of planner run, not a plan: give "
     "it with --executed, and the plan as SCHEDULE"),
    (["run", P, "{run}"], "{run}: a run file of planner run, not a plan: replay the plan "
     "it ran (planner gantt draws a run)"),
    (["gantt", S, "-i", P, "--by", "node", "-o", "g.png", "--force"], None),  # fine: drawn
    (["run", P, S, "--rns", "2"], "No such option: --rns (Possible options: --noise)"),
    (["run"], "Missing argument 'instance'."),
    (["import", "muri", "{big}", "-o", "big.json"], "jobs[2].gpus: job 'job2' "
     "needs 1000 GPUs; the cluster has 64 GPUs"),
    (["import", "muri", "{big}", "--nodes", "0", "-o", "big.json"], "Invalid value for "
     "'--nodes': Input should be greater than or equal to 1"),
]
# fmt: on


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_numbers_and_misuse_are_one_line_and_exit_2(
    trace: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = list(csv.reader(TRACE.read_text().splitlines()))
    rows[3][rows[0].index("num_gpu")] = "1000"  # job2
    big = tmp_path / "big.csv"
    big.write_text("\n".join(",".join(r) for r in rows[:6]) + "\n")
    names = {**{k: str(v) for k, v in trace.items()}, "big": str(big), "big_name": str(big)}
    code, out, err = run(*(a.format(**names) for a in args))
    if message is None:
        assert code == 0, err
        return
    assert (code, err) == (2, f"error: {message.format(**names)}".rstrip() + "\n"), out
    assert not (tmp_path / "big.json").exists()


# 6. Ctrl-C keeps the finished runs.


def _interrupted(command: list[str], cwd: Path, least: int) -> tuple[int, str, str, float]:
    """Run ``command``, Ctrl-C it once its progress bar on stderr has counted ``least``
    (runs or re-plans); its exit status, output and the seconds from Ctrl-C to its exit."""

    def counted(err: str) -> bool:
        return max(map(int, re.findall(r"(\d+)/\d+ \[", err)), default=0) >= least

    return ctrl_c_when(command, cwd, counted)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_ends_a_monte_carlo_study_and_keeps_its_finished_runs(
    trace: dict[str, Path], tmp_path: Path, jobs: str
) -> None:
    out_run, hist = tmp_path / "run.json", tmp_path / "h.png"
    command = [
        sys.executable, "-m", "planner", "--progress", "study", str(trace["placed"]),
        str(trace["plan"]),
        "--noise", "lognormal:0.1", "--runs", "200000", "--jobs", jobs, "-o", str(out_run),
        "--histogram", str(hist),
    ]  # fmt: skip
    code, out, _, _ = _interrupted(command, tmp_path, 50)
    assert code == 130
    done = next(line for line in out.splitlines() if line.startswith("interrupted: "))
    finished = int(done.split()[1])
    assert 50 <= finished < 200000
    assert done == (
        f"interrupted: {finished} of 200000 runs finished; the table and the files below hold them"
    )
    study = json.loads(out_run.read_text())["monte_carlo"]
    assert (study["runs"], study["interrupted"]) == (finished, True)
    assert len(study["per_run"]["makespan"]) == finished
    assert hist.stat().st_size > 0


def test_ctrl_c_ends_online_planning_and_keeps_the_jobs_planned(
    tmp_path: Path,
) -> None:
    batch = tmp_path / "batch.json"
    assert run("generate", "--jobs", "400", "--seed", "2", "--arrival-rate", "20",
               "--placement", "node", "-o", str(batch))[0] == 0  # fmt: skip
    out_run = tmp_path / "on.json"
    command = [sys.executable, "-m", "planner", "--progress", "online", str(batch),
               "-o", str(out_run)]  # fmt: skip
    code, out, _, _ = _interrupted(command, tmp_path, 10)
    assert code == 130
    assert "interrupted: 1 of 1 online runs" in out
    data = json.loads(out_run.read_text())
    jobs = data["online"][0]["jobs"]
    assert 10 <= jobs < 400 and data["online"][0]["interrupted"]
    assert data["online"][0]["audit"] == "valid"


# 9. What users look at.


def test_a_run_is_drawn_per_physical_gpu(trace: dict[str, Path], tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from planner.app.colocation import draw_run, physical_gpus

    chart = tmp_path / "nodes.png"
    code, out, err = run(
        "gantt", str(trace["run"]), "-i", str(trace["placed"]), "--by", "node", "-o", str(chart)
    )
    assert (code, out) == (0, f"chart written to {chart} (job-level run, 64 GPUs, 40 jobs)\n"), err
    assert chart.stat().st_size > 0
    data = json.loads(trace["run"].read_text())
    ax, panel = Figure().subplots(2, 1)
    drawn = draw_run(data, ax, panel)
    # every GPU of the 8 nodes a row, in node order, idle ones too
    assert drawn.gpus[:9] == (*(f"node1:{i}" for i in range(8)), "node2:0")
    held = {g for r in data["residences"] for g in physical_gpus(r["gpus"])}
    assert len(drawn.gpus) == 64 and held <= set(drawn.gpus)
    # a bar per job stay per GPU it holds; node3's outage shaded; one colour per job
    assert drawn.bars == sum(len(physical_gpus(r["gpus"])) for r in data["residences"])
    assert drawn.outages == 1 and data["outages"][0][0] == "node3"
    assert len(set(drawn.colours.values())) == len(drawn.colours) == 40
    # the panel: the share of the GPUs held, from the first start, at most all of them
    assert drawn.held[0][0] == 0.0 and all(0 <= share <= 1 for _, share in drawn.held)
    assert drawn.held[-1][1] == 0.0  # all released at the end


def test_info_lists_the_nodes_of_a_placed_instance(trace: dict[str, Path]) -> None:
    code, out, _ = run("info", str(trace["placed"]))
    assert code == 0
    info = lines(out)
    assert info["nodes"] == "8"
    assert info["nodes node1 .. node8"] == "8 x gpu 8, io 8, net 8, resident 32"
    assert info["node resource gpu"] == "renewable, 64 over the nodes, demands in 1/1000"


def test_a_monte_carlo_run_labels_its_first_run(trace: dict[str, Path]) -> None:
    code, out, _ = run("study", str(trace["placed"]), str(trace["plan"]), "--runs", "3")
    assert code == 0
    rows = out.splitlines()
    assert rows[0] == "The run of seed 0 (the first of 3; their distribution follows)"
    assert any(r.startswith("3 runs (seconds)") for r in rows)
    assert "(1 lost attempt)" not in out


def test_solvers_and_help_speak_to_users() -> None:
    code, out, _ = run("solvers")
    assert code == 0
    for leak in ("DEFAULT_WORKERS", "PROOF_PARAMETERS", "RULES", "progress:", "cpsat_model"):
        assert leak not in out
    code, out, _ = run("run", "--help")
    assert code == 0 and "<bool>" not in out and "--work-conserving " in out


def test_the_search_in_the_executors_model_is_reached_through_the_registry() -> None:
    from planner.solvers.dispatch_search import search_dispatch
    from planner.solvers.registry import dispatch_solver

    assert dispatch_solver() is search_dispatch
    with pytest.raises(InputError) as caught:
        dispatch_solver("x")
    assert str(caught.value) == "unknown solver of training jobs 'x'; choose one of dispatch"
    code, out, _ = run("solvers")
    assert code == 0 and out.startswith("dispatch (training jobs): training jobs' plans: ")


def test_progress_of_a_replan_shows_incumbents(trace: dict[str, Path]) -> None:
    code, _, err = run(
        "replan", str(trace["placed"]), str(trace["plan"]), "--at", "2000", "-s", "ga",
        "--time-limit", "5", "--seed", "1",
    )  # fmt: skip
    assert code == 0
    assert "incumbent" in err


def test_compare_counts_plans_and_replays_with_the_plans_runs_as_objectives(
    trace: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "c.csv"
    code, _, err = run(
        "compare", str(trace["placed"]), "-s", "sgs", "-s", "exclusive-srtf", "-o", str(out),
        "--simulate", "runs=3,slowdown=none",
    )  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(out.read_text().splitlines()))
    # a static plan of training jobs is its run in the executor (minutes: 1min ticks)
    assert all(float(r["objective"]) == float(r["makespan"]) > 0 for r in rows), rows
    summary = out.with_suffix(".md").read_text()
    assert "| solver | plans | replays |" in summary
    assert "| 1 | 3 |" in summary


def test_the_subprocess_entry_point_prints_usage_errors_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "planner", "study", "x.json", "--runs", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "error: Invalid value for '--runs': Input should be greater than or equal to 2\n",
    )


def test_a_runs_utilisation_by_hand_and_its_panels(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    import planner
    from planner.app.colocation import draw_run
    from planner.executor.model.jobs import ExecutorJob
    from planner.executor.utilisation import run_utilisation
    from planner.interleave import Interleave, Stages

    # a job alone on 1 of 2 GPUs, 100 iterations of 0.2 s loading, 0.6 s computing and
    # 0.2 s on the network, on the cluster of 2 GPUs
    stages = Stages(0.2, 0.6, 0.2)
    job = ExecutorJob(name="a", gpus=1, iterations=100, stages=stages, iteration_time=1.0,
                      duration=100.0, restart=0.0)  # fmt: skip
    run = planner.run_policy([job], "fifo", nodes=1, gpus_per_node=2,
                             interleave=Interleave("fluid", factors=None))  # fmt: skip
    use = run_utilisation(run, [job], 2)
    assert use.times == (0.0, 100.0)
    assert use.shares["GPU compute"][0] == pytest.approx(0.3)  # 0.6 of 1 GPU of 2
    assert use.shares["data loading"][0] == pytest.approx(0.1)
    assert use.shares["network"][0] == pytest.approx(0.1)
    busy, idle = run.watts
    assert use.watts[0] == pytest.approx(2 * idle + 0.6 * (busy - idle))
    assert use.watts[1] == pytest.approx(2 * idle)
    data = {"residences": run.residences(["n"]), "policy": "fifo", "interleave": "fluid",
            "makespan": run.makespan, "cluster": {"nodes": ["n"], "gpus_per_node": 2},
            "utilisation": use.as_data(), "power_cap": 500.0}  # fmt: skip
    ax, panel, power = Figure().subplots(3, 1)
    drawn = draw_run(data, ax, panel, power)
    assert drawn.resources == ("GPU compute", "data loading", "network") and drawn.power
    assert drawn.gpus == ("n:0", "n:1")


def test_an_interactive_chart_draws_any_name(tmp_path: Path) -> None:
    import planner
    from planner.app.colocation import save_colocation_chart
    from planner.executor.model.jobs import ExecutorJob
    from planner.interleave import Interleave, Stages

    jobs = [ExecutorJob(name=n, gpus=1, iterations=10, stages=Stages(0.5, 0.5, 0.0),
                        iteration_time=1.0, duration=10.0, restart=0.0)
            for n in ("训练任务", "🚀 launch")]  # fmt: skip
    run = planner.run_policy(jobs, "fifo", nodes=1, gpus_per_node=2,
                             interleave=Interleave("fluid", factors=None))  # fmt: skip
    data = {"residences": run.residences(["n"]), "policy": "fifo", "interleave": "fluid",
            "makespan": run.makespan, "cluster": {"nodes": ["n"], "gpus_per_node": 2}}  # fmt: skip
    page = tmp_path / "chart.html"
    drawn = save_colocation_chart(data, page)
    text = page.read_text(encoding="utf-8")
    assert drawn.gpus == ("n:0", "n:1") and drawn.bars == 2
    assert '<rect data-job="训练任务"' in text and ">🚀 launch</text>" in text
    assert "<title>训练任务 on n:0: 0 - 10 s; sharing with none</title>" in text

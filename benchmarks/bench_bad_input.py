"""Bad input, as a newcomer meets it: every case is one command of the ``planner`` command
line on a file or an option that is wrong. A case is **clean** when the command exits
with status 2, prints exactly one line on stderr, starting ``error:``, no traceback, and
leaves no file behind that was not there before.

The cases: those of the new user's trial of issue 44, then 44 of our own over every
command; then issue 53's: the trial's cases (a full disk, numbers that crash, input
taken without a word) and 60 more of our own. A case that writes to a full disk
(``/dev/full``) is clean when it exits 1 with one ``error:`` line naming the file. Run
from the repository's top folder::

    python benchmarks/bench_bad_input.py

It prints one row per case and the count clean over tried.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
_TRACE = INSTANCES / "muri_trace.csv"


def _fixtures(folder: Path) -> None:
    """The bad files the cases read, and a good plan to misuse."""
    (folder / "deepnest.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "bomb.yaml").write_text(
        "tasks:\n" + "".join(f"  - {{name: t{k}, modes: [{{}}]}}\n" for k in range(50))
    )
    (folder / "unrelated.json").write_text(json.dumps({"hello": "world", "items": [1, 2, 3]}))
    (folder / "cycle.yaml").write_text(
        "resources: [{name: r, capacity: 1}]\n"
        "tasks:\n"
        "  - {name: a, modes: [{segments: [{duration: 1, demand: {r: 1}}]}]}\n"
        "  - {name: b, modes: [{segments: [{duration: 1, demand: {r: 1}}]}]}\n"
        "precedences: [{before: a, after: b}, {before: b, after: a}]\n"
    )
    (folder / "existing.csv").write_text("instance,solver,seed\n")
    (folder / "empty.yaml").write_text("")
    (folder / "list.yaml").write_text("- 1\n- 2\n")
    (folder / "binary.json").write_bytes(bytes(range(256)) * 4)
    (folder / "neg.yaml").write_text(
        "resources: [{name: r, capacity: -1}]\n"
        "tasks: [{name: a, modes: [{segments: [{duration: 1, demand: {r: 1}}]}]}]\n"
    )
    (folder / "huge.yaml").write_text(
        "resources: [{name: r, capacity: 1}]\n"
        "tasks: [{name: a, modes: [{segments: [{duration: 10000000000000, demand: {r: 1}}]}]}]\n"
    )
    (folder / "trace.csv").write_text("num_gpu,iterations\nx,y\n")
    (folder / "policy.py").write_text("raise RuntimeError('broken on import')\n")
    (folder / "notpolicy.py").write_text("class Thing:\n    pass\n")
    (folder / "sched.json").write_text(json.dumps({"tasks": [{"name": "zz", "start": 0}]}))
    _issue53_fixtures(folder)
    ex = INSTANCES / "example.yaml"
    subprocess.run(
        [sys.executable, "-m", "planner", "solve", str(ex), "--static", "-t", "2", "-o",
         str(folder / "static.json")],
        capture_output=True, check=True,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "planner", "solve", str(ex), "-t", "2", "-o",
         str(folder / "dispatch.json")],
        capture_output=True, check=True,
    )  # fmt: skip
    dispatch = json.loads((folder / "dispatch.json").read_text())
    dispatch["events"][0][1][0][1][0][0] = 7  # the first group's first node
    (folder / "node7.json").write_text(json.dumps(dispatch))


EXAMPLE_EDITS = {
    # issue 53's trial
    "zero.yaml": ("{data: 0.25, gpu: 0.30, sync: 0.05}", "{data: 0, gpu: 0, sync: 0}"),
    "tpu.yaml": ("gpu_type: V100", "gpu_type: TPUv9"),
    "dupkey.yaml": ("    gpus: 4\n", "    gpus: 4\n    gpus: 2\n"),
    # ours
    "negiter.yaml": ("iterations: 6000", "iterations: -5"),
    "nogpus.yaml": ("    gpus: 4\n", "    gpus: 0\n"),
    "toobig.yaml": ("    gpus: 4\n", "    gpus: 64\n"),
    "blocks.yaml": ("iterations: 6000", "iterations: 1"),
    "both.yaml": ("iterations: 6000", "iterations: 6000\n    duration: 100"),
    "nostages.yaml": ("    stages: {data: 0.25, gpu: 0.30, sync: 0.05}\n", ""),
    "model.yaml": ("name: resnet50\n", "name: resnet50\n    model: nope\n"),
    "dupjob.yaml": ("name: bert", "name: resnet50"),
    "unit.yaml": ("time_unit: 1min", "time_unit: 5 parsecs"),
    "placement.yaml": ("time_unit: 1min", "time_unit: 1min\nplacement: sideways"),
    "interleave.yaml": ("time_unit: 1min", "time_unit: 1min\ninterleave: quantum"),
    "colocated.yaml": ("time_unit: 1min", "time_unit: 1min\nmax_colocated: 9"),
    "slots.yaml": ("time_unit: 1min", "time_unit: 1min\ndata_slots: 0"),
    "nogpu.yaml": ("gpu: 4, cpu: 32", "gpu: 0, cpu: 32"),
    "negstage.yaml": ("{data: 0.25, gpu: 0.30", "{data: -0.25, gpu: 0.30"),
    "nanstage.yaml": ("{data: 0.25, gpu: 0.30", "{data: .nan, gpu: 0.30"),
    "release.yaml": ("name: resnet50\n", "name: resnet50\n    release: -1\n"),
    "objective.yaml": ("time_unit: 1min", "time_unit: 1min\nobjective: fastest"),
    "cost.yaml": ("time_unit: 1min", "time_unit: 1min\nobjective: cost"),
    "table.yaml": ("time_unit: 1min", "time_unit: 1min\ninterleave: table"),
    "throughputs.yaml": ("time_unit: 1min", "time_unit: 1min\nthroughputs: t.json"),
    "powergpus.yaml": ("time_unit: 1min",
                       "time_unit: 1min\npower: {gpus: {k80: {busy: 1, idle: 0}}}"),
    "windows.yaml": ("time_unit: 1min",
                     "time_unit: 1min\npower: {windows: [{start: 0, end: 5, cap: 9}]}"),
    "colour.yaml": ("time_unit: 1min", "time_unit: 1min\ncolour: red"),
    "gpumem.yaml": ("gpu_mem_per_gpu: 16", "gpu_mem_per_gpu: -1"),
    "cpumany.yaml": ("cpu_per_gpu: 6", "cpu_per_gpu: many"),
    "noname.yaml": ("name: resnet50", "name: ''"),
}  # fmt: skip
"""Files of the cases: the shipped example with one edit each (old, new)."""


def _issue53_fixtures(folder: Path) -> None:
    """The files of issue 53's cases: edits of the example, a trace whose stage times are
    all 0, a trace of a model without a restart cost, a JSON file with a key twice, a
    full disk under several names, and a folder."""
    example = (INSTANCES / "example.yaml").read_text()
    for name, (old, new) in EXAMPLE_EDITS.items():
        assert old in example, name
        (folder / name).write_text(example.replace(old, new, 1))
    rows = Path(_TRACE).read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[1].split(",")
    for k in range(3):
        cells[header.index(f"resource_time_{k}")] = "0"
    (folder / "zero.csv").write_text("\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n")
    (folder / "llama.csv").write_text(Path(_TRACE).read_text().replace(",gpt2,", ",llama9,"))
    (folder / "dupkey.json").write_text('{"name": "a", "name": "b"}')
    for name in ("full.json", "full.png", "full.csv", "full.yaml"):
        (folder / name).symlink_to("/dev/full")
    (folder / "afolder.yaml").mkdir()


EX = str(INSTANCES / "example.yaml")
J30 = str(INSTANCES / "psplib" / "j301_1.sm")
TRACE = str(INSTANCES / "muri_trace.csv")

TRIAL = [
    ("deepnest", ["solve", "deepnest.json"]),
    ("bomb (many schema errors)", ["solve", "bomb.yaml"]),
    ("bomb in info", ["info", "bomb.yaml"]),
    ("unrelated JSON", ["solve", "unrelated.json"]),
    ("unrelated JSON in info", ["info", "unrelated.json"]),
    ("compare on an unreachable Dask", ["compare", J30, "-s", "sgs", "--dask",
                                        "tcp://127.0.0.1:1", "-o", "cp.csv"]),
    ("compare --resume on an infeasible instance", ["compare", "cycle.yaml", "-s", "sgs", "-o",
                                                    "existing.csv", "--resume"]),
]  # fmt: skip

OURS = [
    ("empty YAML", ["solve", "empty.yaml"]),
    ("a YAML list", ["solve", "list.yaml"]),
    ("binary bytes", ["solve", "binary.json"]),
    ("a negative capacity", ["solve", "neg.yaml"]),
    ("a horizon past 2**40", ["solve", "huge.yaml"]),
    ("a missing file", ["solve", "nothing.yaml"]),
    ("a folder as the instance", ["solve", "."]),
    ("an unknown solver", ["solve", EX, "-s", "nope"]),
    ("a time limit of 0", ["solve", EX, "-t", "0"]),
    ("a time limit of nan", ["solve", EX, "-t", "nan"]),
    ("a negative seed", ["solve", J30, "--seed", "-1"]),
    ("a rule for cpsat", ["solve", J30, "-s", "cpsat", "--rule", "lft"]),
    ("an unknown rule", ["solve", J30, "-s", "sgs", "--rule", "zzz"]),
    ("output over the input", ["solve", J30, "-o", J30]),
    ("an unknown output suffix", ["solve", J30, "-o", "s.txt"]),
    ("an output in a missing folder", ["solve", J30, "-o", "no/such/s.json"]),
    ("a static engine option on the executor search", ["solve", EX, "--rule", "lft"]),
    ("validate a schedule of another instance", ["validate", J30, "sched.json"]),
    ("gantt without the instance", ["gantt", "static.json", "-o", "g.png"]),
    ("gantt to an unknown format", ["gantt", "static.json", "-i", EX, "-o", "g.jpg"]),
    ("run without the plan", ["run", EX]),
    ("run a dispatch under noise", ["run", EX, "dispatch.json", "--noise", "lognormal:0.1"]),
    ("run with a bad noise spec", ["run", EX, "static.json", "--noise", "gauss:1"]),
    ("run with a failure of a missing node", ["run", EX, "static.json", "--fail", "n9@5"]),
    ("run with --runs (a study's option)", ["run", EX, "static.json", "--runs", "3"]),
    ("study with one run", ["study", EX, "static.json", "--runs", "1"]),
    ("study of a plan and a policy", ["study", EX, "static.json", "--policy", "srtf"]),
    ("study writing CSV", ["study", EX, "static.json", "-o", "s.csv"]),
    ("an unknown policy", ["policy", EX, "lifo"]),
    ("a policy file that fails", ["policy", EX, "policy.py:Pairs"]),
    ("a class that is not a policy", ["policy", EX, "notpolicy.py:Thing"]),
    ("a policy on a task graph", ["policy", J30, "srtf"]),
    ("a time limit for srtf", ["policy", EX, "srtf", "-t", "1"]),
    ("online with an unknown baseline", ["online", EX, "--baseline", "nope"]),
    ("online with a bad option", ["online", EX, "--option", "rule"]),
    ("replan a dispatch", ["replan", EX, "dispatch.json", "--at", "10"]),
    ("replan at a time that is no time", ["replan", EX, "static.json", "--at", "soon"]),
    ("replan with an unknown event", ["replan", EX, "static.json", "--at", "5", "--event",
                                      "explode:x"]),
    ("import a trace with bad numbers", ["import", "muri", "trace.csv", "-o", "t.json"]),
    ("generate a million jobs", ["generate", "--jobs", "1000000", "-o", "g.json"]),
    ("the replaced simulate command", ["simulate", EX, "static.json"]),
    ("compare with no seeds", ["compare", J30, "-s", "sgs", "--seeds", "0", "-o", "c.csv"]),
    ("compare a policy without --simulate", ["compare", EX, "-s", "muri-s", "-o", "p.csv"]),
    ("convert over its input", ["convert", TRACE, "-o", TRACE]),
]  # fmt: skip


ISSUE53 = [
    # the trial's: a full disk (exit 1), numbers that crash, input taken without a word
    ("solve -o on a full disk", ["solve", EX, "-t", "1", "-o", "full.json"], 1),
    ("solve --gantt on a full disk", ["solve", EX, "-t", "1", "--gantt", "full.png"], 1),
    ("run -o on a full disk", ["run", EX, "dispatch.json", "-o", "full.json"], 1),
    ("compare -o on a full disk", ["compare", J30, "-s", "sgs", "-o", "full.csv"], 1),
    ("schema -o on a full disk", ["schema", "-o", "full.json"], 1),
    ("policy -o on a full disk", ["policy", EX, "muri-s", "-o", "full.json"], 1),
    ("generate -o on a full disk", ["generate", "--jobs", "3", "-o", "full.yaml"], 1),
    ("import muri -o on a full disk", ["import", "muri", TRACE, "-o", "full.json"], 1),
    ("stages all 0", ["solve", "zero.yaml"], 2),
    ("a trace's resource times all 0", ["policy", "zero.csv", "muri-s"], 2),
    ("a dispatch on node index 7", ["run", EX, "node7.json"], 2),
    ("validate a dispatch on node index 7", ["validate", EX, "node7.json"], 2),
    ("an unknown GPU type", ["solve", "tpu.yaml"], 2),
    ("a trace model without a restart cost", ["import", "muri", "llama.csv", "-o", "l.json"], 2),
    ("a YAML key twice", ["solve", "dupkey.yaml"], 2),
    ("a JSON key twice", ["validate", "dupkey.json"], 2),
    ("compare --pareto 0", ["compare", EX, "-o", "c.csv", "--pareto", "0"], 2),
    ("run --interleave muri on a dispatch", ["run", EX, "dispatch.json", "--interleave",
                                             "muri"], 2),
    ("a folder for a file", ["run", EX, "afolder.yaml"], 2),
]  # fmt: skip
"""Issue 53's trial, each with the exit status a clean answer has."""

OURS53 = [
    ("negative iterations", ["solve", "negiter.yaml"]),
    ("a job on 0 GPUs", ["solve", "nogpus.yaml"]),
    ("a job larger than the cluster", ["solve", "toobig.yaml"]),
    ("more blocks than iterations", ["solve", "blocks.yaml"]),
    ("iterations and a duration", ["solve", "both.yaml"]),
    ("neither stages nor a model", ["solve", "nostages.yaml"]),
    ("an unknown catalog model", ["solve", "model.yaml"]),
    ("a job name twice", ["solve", "dupjob.yaml"]),
    ("a time unit that is no unit", ["solve", "unit.yaml"]),
    ("an unknown placement", ["solve", "placement.yaml"]),
    ("an unknown interleaving model", ["solve", "interleave.yaml"]),
    ("max_colocated 9", ["solve", "colocated.yaml"]),
    ("0 data slots", ["solve", "slots.yaml"]),
    ("a cluster without GPUs", ["solve", "nogpu.yaml"]),
    ("a negative stage time", ["solve", "negstage.yaml"]),
    ("a stage time of nan", ["solve", "nanstage.yaml"]),
    ("a negative release", ["solve", "release.yaml"]),
    ("an unknown objective", ["solve", "objective.yaml"]),
    ("objective cost without a tariff", ["solve", "cost.yaml"]),
    ("interleave table without throughputs", ["solve", "table.yaml"]),
    ("throughputs without interleave table", ["solve", "throughputs.yaml"]),
    ("power figures of a GPU type no node has", ["solve", "powergpus.yaml"]),
    ("power windows without a cap", ["solve", "windows.yaml"]),
    ("an unknown field", ["info", "colour.yaml"]),
    ("negative GPU memory", ["validate", "gpumem.yaml"]),
    ("CPUs per GPU that are no number", ["policy", "cpumany.yaml", "srtf"]),
    ("an empty job name", ["solve", "noname.yaml"]),
    ("solve --interleave quantum", ["solve", EX, "--interleave", "quantum"]),
    ("solve --data-slots 0", ["solve", EX, "--data-slots", "0"]),
    ("solve --slowdown nonsense", ["solve", EX, "--slowdown", "nonsense"]),
    ("solve --static --interleave muri", ["solve", EX, "--static", "--interleave", "muri"]),
    ("solve -s ga --workers 0", ["solve", J30, "-s", "ga", "--workers", "0"]),
    ("solve --gantt to .bmp", ["solve", J30, "-s", "sgs", "--gantt", "g.bmp"]),
    ("solve --initial of a missing file", ["solve", J30, "-s", "ga", "--initial", "no.json"]),
    ("run a failure at a negative time", ["run", EX, "static.json", "--fail", "node1@-5"]),
    ("run a plan of another instance", ["run", J30, "static.json"]),
    ("policy with noise sigma 5", ["policy", EX, "srtf", "--noise", "lognormal:5"]),
    ("policy with a failure of a missing node", ["policy", EX, "srtf", "--fail", "nodeX@1h"]),
    ("study of 0 runs", ["study", EX, "static.json", "--runs", "0"]),
    ("study on 0 processes", ["study", EX, "static.json", "--runs", "5", "--jobs", "0"]),
    ("online re-planning every 0", ["online", EX, "--replan-every", "0"]),
    ("online with a time limit of 0", ["online", EX, "-t", "0"]),
    ("replan at a negative tick", ["replan", EX, "static.json", "--at", "-3"]),
    ("replan a failure of a missing node", ["replan", EX, "static.json", "--at", "5", "--event",
                                            "fail:nope"]),
    ("import muri on 0 nodes", ["import", "muri", TRACE, "--nodes", "0", "-o", "m.json"]),
    ("import muri with an unknown placement", ["import", "muri", TRACE, "--placement",
                                               "sideways", "-o", "m.json"]),
    ("import muri with an unknown objective", ["import", "muri", TRACE, "--objective",
                                               "fastest", "-o", "m.json"]),
    ("import gavel without its throughputs file", ["import", "gavel", TRACE, "--throughputs",
                                                   "none.json", "--cluster", "1:1:1", "-o",
                                                   "g.json"]),
    ("import gavel on a cluster that is no cluster", ["import", "gavel", TRACE,
                                                      "--throughputs", "none.json", "--cluster",
                                                      "1:x:1", "-o", "g.json"]),
    ("generate 0 jobs", ["generate", "--jobs", "0", "-o", "g.json"]),
    ("generate at a negative rate", ["generate", "--jobs", "3", "--arrival-rate", "-1", "-o",
                                     "g.json"]),
    ("generate with a negative seed", ["generate", "--jobs", "3", "--seed", "-1", "-o",
                                       "g.json"]),
    ("convert to .txt", ["convert", J30, "-o", "c.txt"]),
    ("schema to .yaml", ["schema", "-o", "s.yaml"]),
    ("compare an unknown solver", ["compare", J30, "-s", "nope", "-o", "c.csv"]),
    ("compare on 0 workers", ["compare", J30, "-s", "sgs", "--workers", "0", "-o", "c.csv"]),
    ("info of a missing file", ["info", "nothing.yaml"]),
    ("validate a missing schedule", ["validate", EX, "nothing.json"]),
    ("gantt by quantum", ["gantt", "static.json", "-i", EX, "--by", "quantum"]),
    ("an unknown command", ["plan", EX]),
]  # fmt: skip
"""60 more of our own (issue 53), over every command."""


def run_case(args: list[str], folder: Path, expected: int = 2) -> tuple[int, int, bool, bool]:
    """Exit status, stderr lines, whether stderr is clean, whether files were left. Bad
    input (``expected`` 2) is clean with one ``error:`` line alone; a failed write (1)
    with one ``error:`` line, the last, after the command's progress lines."""
    before = {p.name for p in folder.iterdir()}
    done = subprocess.run(
        [sys.executable, "-m", "planner", *args], cwd=folder, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    after = {p.name for p in folder.iterdir()}
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    if expected == 1:
        clean = len(errors) == 1 and lines[-1] == errors[0]
    else:
        clean = len(lines) == 1 and len(errors) == 1
    clean = clean and "Traceback" not in done.stderr
    return done.returncode, len(lines), clean, bool(after - before)


def main() -> None:
    """Run every case; print the table and the count."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _fixtures(folder)
        print("| set | case | exit | stderr lines | one error line | files left | clean |")
        print("|---|---|---|---|---|---|---|")
        sets = {
            "trial 44": [(name, args, 2) for name, args in TRIAL],
            "ours 44": [(name, args, 2) for name, args in OURS],
            "trial 53": ISSUE53,
            "ours 53": [(name, args, 2) for name, args in OURS53],
        }
        counts = {group: [0, 0] for group in sets}
        for group, cases in sets.items():
            for name, args, expected in cases:
                code, lines, clean, left = run_case(args, folder, expected)
                ok = clean and code == expected and not left
                counts[group][0] += ok
                counts[group][1] += 1
                print(f"| {group} | {name} | {code} | {lines} | {'yes' if clean else 'no'} | "
                      f"{'yes' if left else 'no'} | {'yes' if ok else 'NO'} |")  # fmt: skip
        print()
        for group, (ok, tried) in counts.items():
            print(f"{group}: {ok} clean of {tried} tried")


if __name__ == "__main__":
    main()

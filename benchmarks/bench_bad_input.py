"""Bad input, as a newcomer meets it: every case is one command of the ``planner`` command
line on a file or an option that is wrong. A case is **clean** when the command exits
with status 2, prints exactly one line on stderr, starting ``error:``, no traceback, and
leaves no file behind that was not there before.

The cases: those of the new user's trial of issue 44, then 40 of our own over every
command. Run from the repository's top folder::

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
    ("an unknown policy", ["policy", EX, "fifo"]),
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


def run_case(args: list[str], folder: Path) -> tuple[int, int, bool, bool]:
    """Exit status, stderr lines, whether every line is clean, whether files were left."""
    before = {p.name for p in folder.iterdir()}
    done = subprocess.run(
        [sys.executable, "-m", "planner", *args], cwd=folder, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    after = {p.name for p in folder.iterdir()}
    lines = done.stderr.strip().splitlines()
    clean = len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return done.returncode, len(lines), clean, bool(after - before)


def main() -> None:
    """Run every case; print the table and the count."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _fixtures(folder)
        print("| set | case | exit | stderr lines | one error line | files left | clean |")
        print("|---|---|---|---|---|---|---|")
        counts = {"trial": [0, 0], "ours": [0, 0]}
        for group, cases in (("trial", TRIAL), ("ours", OURS)):
            for name, args in cases:
                code, lines, clean, left = run_case(args, folder)
                ok = clean and code == 2 and not left
                counts[group][0] += ok
                counts[group][1] += 1
                print(f"| {group} | {name} | {code} | {lines} | {'yes' if clean else 'no'} | "
                      f"{'yes' if left else 'no'} | {'yes' if ok else 'NO'} |")  # fmt: skip
        print()
        for group, (ok, tried) in counts.items():
            print(f"{group}: {ok} clean of {tried} tried")


if __name__ == "__main__":
    main()

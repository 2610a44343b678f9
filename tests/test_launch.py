"""Plans that run on a real Slurm (issue 57): ``planner launch`` submits a plan without
preemption, waits, and reads what Slurm did back.

The end-to-end test needs a running Slurm (``SLURM_CONF``; ``.ci/slurm`` starts one with
nodes node1..node3 of 8 fake GPUs): it skips without one on a developer's machine and
fails in CI, which starts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.app.cli import app
from planner.app.launch import fields, gpu_indices
from tests.conftest import INSTANCES, lines, needed

# scontrol show job -o -d of a running gang (Slurm 22.05), cut short
GANG = (
    "JobId=3 JobName=g JobState=RUNNING NodeList=node[2-3] NumNodes=2 JOB_GRES=gpu:6   "
    "Nodes=node2 CPU_IDs=1 Mem=4000 GRES=gpu:3(IDX:0-2)   Nodes=node3 CPU_IDs=0 Mem=4000 "
    "GRES=gpu:3(IDX:3-5) MinCPUsNode=1 TresPerNode=gres:gpu:3"
)

# sacct -a -P -X of a small history: four jobs of one GPU shard (data loading 60% of
# their time, so that a plan lets two share a GPU), a 2-node gang, a job never started
SACCT = """\
JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|ReqTRES|NNodes|NodeList|Timelimit
101|tune-a|ann|ml|gpu|2026-11-02T09:00:00|2026-11-02T09:00:05|2026-11-02T09:10:05|00:10:00|COMPLETED|0:0|billing=1,cpu=1,gres/shard=1,mem=4000M,node=1|cpu=1,gres/shard=1,node=1|1|node1|1-00:00:00
102|tune-b|ann|ml|gpu|2026-11-02T09:00:00|2026-11-02T09:00:05|2026-11-02T09:08:05|00:08:00|COMPLETED|0:0|billing=1,cpu=1,gres/shard=1,mem=4000M,node=1|cpu=1,gres/shard=1,node=1|1|node1|1-00:00:00
103|tune-c|bob|ml|gpu|2026-11-02T09:00:00|2026-11-02T09:00:07|2026-11-02T09:09:07|00:09:00|COMPLETED|0:0|billing=1,cpu=1,gres/shard=1,mem=4000M,node=1|cpu=1,gres/shard=1,node=1|1|node1|1-00:00:00
103.batch|batch|||||2026-11-02T09:00:07|2026-11-02T09:09:07|00:09:00|COMPLETED|0:0|cpu=1,mem=4000M,node=1||1|node1|
104|tune-d|bob|ml|gpu|2026-11-02T09:00:00|2026-11-02T09:00:07|2026-11-02T09:07:07|00:07:00|COMPLETED|0:0|billing=1,cpu=1,gres/shard=1,mem=4000M,node=1|cpu=1,gres/shard=1,node=1|1|node1|1-00:00:00
105|llm|cat|nlp|gpu|2026-11-02T09:00:00|2026-11-02T09:00:10|2026-11-02T09:20:10|00:20:00|COMPLETED|0:0|billing=8,cpu=8,gres/gpu=4,mem=62.50G,node=2|cpu=8,gres/gpu=4,node=2|2|node[2-3]|1-00:00:00
106|never|dan|ml|gpu|2026-11-02T09:03:00|Unknown|Unknown|00:00:00|CANCELLED|0:0||cpu=1,gres/gpu=1,node=1|1||1-00:00:00
"""
SINFO = "NODELIST CPUS MEMORY GRES\nnode[1-3] 32 256000 gpu:2,shard:8\n"
SCALE = 0.02


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_scontrol_lines_give_each_node_its_gpus() -> None:
    assert fields(GANG)["NodeList"] == "node[2-3]"
    assert fields(GANG)["GRES"] == "gpu:3(IDX:0-2) gpu:3(IDX:3-5)"
    assert gpu_indices(GANG) == {"node2": "0-2", "node3": "3-5"}
    shard = "Nodes=node1 CPU_IDs=0 Mem=4000 GRES=shard:2(IDX:4) MinCPUsNode=1"
    assert gpu_indices(shard) == {"node1": "4"}
    typed = "Nodes=node[1-2] CPU_IDs=0 Mem=4000 GRES=gpu:tesla:2(IDX:0,3) MinCPUsNode=1"
    assert gpu_indices(typed) == {"node1": "0,3", "node2": "0,3"}
    assert gpu_indices("JobId=9 JobState=PENDING NodeList=(null)") == {}


def test_launch_without_slurm_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tmp_path / "plan.json"
    assert run("solve", INSTANCES / "example.yaml", "-t", "2", "--no-preempt", "-o", plan)[0] == 0
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run("launch", INSTANCES / "example.yaml", plan, "-o", tmp_path / "run.json")
    assert (code, err) == (
        2,
        "error: no Slurm here: sbatch is not on PATH (install Slurm's client commands and "
        "point SLURM_CONF to its configuration)\n",
    )
    assert not (tmp_path / "run.json").exists()


def test_launch_refuses_a_plan_that_preempts(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run("solve", INSTANCES / "example.yaml", "-t", "2", "-o", plan)[0] == 0
    code, _, err = run("launch", INSTANCES / "example.yaml", plan, "-o", tmp_path / "run.json",
                       "--time-scale", "0")  # fmt: skip
    assert (code, err) == (2, "error: --time-scale 0: give a factor > 0\n")
    code, _, err = run("launch", INSTANCES / "example.yaml", plan, "-o", tmp_path / "run.json")
    assert code == 2 and "moves or pauses in this plan" in err


def slurm() -> None:
    """Skip (fail in CI) without a Slurm that answers."""
    if shutil.which("sbatch") is None or not os.environ.get("SLURM_CONF"):
        needed("a running Slurm", "export SLURM_CONF=$(.ci/slurm)")
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %G"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode != 0 or "node3" not in done.stdout:
        needed("a running Slurm with nodes node1..node3", "export SLURM_CONF=$(.ci/slurm)")


def test_a_history_goes_through_slurm_and_back(tmp_path: Path) -> None:
    slurm()
    (tmp_path / "sacct.txt").write_text(SACCT)
    (tmp_path / "sinfo.txt").write_text(SINFO)
    instance, plan, out = tmp_path / "hist.yaml", tmp_path / "plan.json", tmp_path / "run.json"
    code, said, err = run("import", "slurm", tmp_path / "sacct.txt", "--nodes",
                          tmp_path / "sinfo.txt", "-o", instance)  # fmt: skip
    assert (code, err) == (0, "")
    assert "(5 jobs, 5 tasks; left out: 1 never started, 1 job steps)" in said
    data = yaml.safe_load(instance.read_text())
    for job in data["jobs"][:4]:  # the tuning jobs wait on data 60% of the time
        job["stages"] = {"data": 0.6, "gpu": 0.4, "sync": 0.0}
    instance.write_text(yaml.safe_dump(data))
    assert run("solve", instance, "--no-preempt", "-t", "5", "-o", plan)[0] == 0
    dispatch = json.loads(plan.read_text())
    shared = [r for r in dispatch["table"] if r["partners"]]
    assert shared, "the plan lets tuning jobs share a GPU"

    code, said, err = run("launch", instance, plan, "--time-scale", SCALE, "-o", out,
                          "--scripts", tmp_path / "scripts")  # fmt: skip
    assert (code, err) == (0, ""), said
    got = lines(said)
    assert got["placement"] == "5 of 5 jobs on their planned nodes"
    assert got["starts"] == "0 jobs before their planned start"
    assert "--gres=shard:1" in (tmp_path / "scripts" / "jobs" / "tune-a-101.sh").read_text()
    jobs = json.loads(out.read_text())["jobs"]
    for row in dispatch["table"]:  # on its planned nodes, never before its planned start
        job = jobs[row["job"]]
        planned = sorted({part.split(":")[0] for part in row["gpus"].split("+")})
        assert sorted(job["nodes"]) == planned
        assert job["slurm_state"] == "COMPLETED"
        assert job["realized"][0] * SCALE >= int(job["planned"][0] * SCALE)
    for row in shared:  # jobs planned to share a GPU ran at once
        a, b = jobs[row["job"]]["realized"], jobs[row["partners"][0]]["realized"]
        assert max(a[0], b[0]) < min(a[1], b[1])
    code, said, err = run("gantt", out, "-o", tmp_path / "run.png")
    assert (code, err) == (0, "") and (tmp_path / "run.png").stat().st_size > 0

"""A Slurm cluster's accounting in (issue 57): ``planner import slurm SACCT [--nodes
SINFO]`` on files written here in ``sacct -P`` and ``sinfo -N`` form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import planner
from planner.app.cli import app
from planner.dl.slurm import elapsed_seconds, expand_hostlist, memory_gb, read_sacct
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.model.jobs import jobs_from_instance

HEADER = (
    "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|ExitCode|AllocTRES|"
    "ReqTRES|NNodes|NodeList|Timelimit"
)
LINES = [
    "101|train_a|ann|lab|gpu|2026-12-01T10:00:00|2026-12-01T10:00:05|2026-12-01T11:00:05|"
    "01:00:00|COMPLETED|0:0|billing=8,cpu=8,gres/gpu=2,mem=64000M,node=1||1|node1|1-00:00:00",
    "101.batch|batch|||||2026-12-01T10:00:05|2026-12-01T11:00:05|01:00:00|COMPLETED|0:0|"
    "cpu=8,mem=64000M,node=1||1|node1|",
    "102|gang|bob|lab|gpu|2026-12-01T10:10:00|2026-12-01T10:20:00|2026-12-02T12:20:00|"
    "1-02:00:00|CANCELLED by 0|0:15|billing=32,cpu=32,gres/gpu=16,mem=500G,node=2||2|"
    "node[1-2]|2-00:00:00",
    "103|share|cy|lab|gpu|2026-12-01T10:30:00|2026-12-01T10:30:01|2026-12-01T10:40:01|10:00|"
    "COMPLETED|0:0|cpu=2,gres/shard=2,mem=16000M,node=1||1|node3|01:00:00",
    "104|cpuonly|dee|lab|cpu|2026-12-01T10:31:00|2026-12-01T10:31:01|2026-12-01T10:40:01|"
    "09:00|COMPLETED|0:0|cpu=2,mem=16000M,node=1||1|node4|01:00:00",
    "105|pending|eve|lab|gpu|2026-12-01T10:32:00|Unknown|Unknown|00:00:00|PENDING|0:0||"
    "billing=8,cpu=8,gres/gpu=2|1|None assigned|01:00:00",
]
SINFO = "NODELIST CPUS MEMORY GRES\nnode[1-3] 32 256000 gpu:8,shard:32\ncpu1 64 512000 (null)\n"


def sacct(tmp_path: Path, lines: list[str] = LINES, header: str = HEADER) -> Path:
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_slurms_forms_are_read() -> None:
    assert expand_hostlist("node[1-2,05],gpu7") == ["node1", "node2", "node05", "gpu7"]
    assert expand_hostlist("a[08-10]") == ["a08", "a09", "a10"]
    assert elapsed_seconds("1-02:00:00") == 26 * 3600
    assert elapsed_seconds("10:00") == 600
    assert elapsed_seconds("00:01:02.500") == 62.5
    assert memory_gb("16000M") == pytest.approx(15.625)
    assert memory_gb("62.50G") == 62.5


def test_an_accounting_file_becomes_training_jobs(tmp_path: Path) -> None:
    out = tmp_path / "hist.yaml"
    code, text, err = run("import", "slurm", sacct(tmp_path), "-o", out)
    assert code == 0, err
    assert text.endswith(
        "(3 jobs, 3 tasks; left out: 1 never started, 1 without GPUs, 1 job steps)\n"
    )
    data = yaml.safe_load(out.read_text())
    # the nodes the jobs ran on, each with the most GPUs a job held on one node
    assert data["cluster"]["nodes"] == [{"name": f"node{k}", "gpu": 8} for k in (1, 2, 3)]
    first, gang, share = data["jobs"]
    assert first == {
        "name": "train_a-101", "gpus": 2, "iterations": 3600,
        "stages": {"data": 0.0, "gpu": 1.0, "sync": 0.0}, "cpu_per_gpu": 4,
        "mem_per_gpu": 31, "release": 0.0,
    }  # fmt: skip
    assert (gang["gpus"], gang["iterations"], gang["release"]) == (16, 26 * 3600, 600.0)
    assert (share["gpus"], share["iterations"], share["release"]) == (1, 600, 1800.0)
    workload = jobs_from_instance(out)
    result = planner.run_policy(workload, "muri-s")
    assert audit(result, workload.jobs, 24) == []


def test_sinfo_gives_the_cluster(tmp_path: Path) -> None:
    nodes = tmp_path / "sinfo.txt"
    nodes.write_text(SINFO)
    out = tmp_path / "hist.yaml"
    code, _, err = run("import", "slurm", sacct(tmp_path), "--nodes", nodes, "-o", out)
    assert code == 0, err
    data = yaml.safe_load(out.read_text())
    assert data["cluster"]["nodes"] == [
        {"name": f"node{k}", "gpu": 8, "cpu": 32, "mem": 250} for k in (1, 2, 3)
    ]  # the CPU node runs no training job: left out


@pytest.mark.parametrize(
    ("lines", "header", "message"),
    [
        (LINES, "JobID|Submit|Start", "line 1: missing column(s) Elapsed, AllocTRES, NNodes, "
         "NodeList (sacct -P --format=...)"),
        (["101|x|ann|lab|gpu|2026-12-01T10:00:00"], HEADER, "line 2: 6 fields; the header has 16"),
        ([LINES[0].replace("01:00:00|COMPLETED", "one hour|COMPLETED")], HEADER,
         "line 2: column 'Elapsed': 'one hour' is not [D-]HH:MM:SS"),
        ([LINES[0].replace("2026-12-01T10:00:05|2026-12-01T11", "yesterday|2026-12-01T11")],
         HEADER, "line 2: column 'Start': 'yesterday' is not a time like 2026-12-01T10:00:00"),
        ([LINES[4]], HEADER, "no job ran on GPUs (left out: 1 without GPUs)"),
    ],
)  # fmt: skip
def test_bad_accounting_is_one_line(
    tmp_path: Path, lines: list[str], header: str, message: str
) -> None:
    code, _, err = run("import", "slurm", sacct(tmp_path, lines, header), "-o", tmp_path / "h.yaml")
    assert code == 2
    assert err.count("\n") == 1 and err.endswith(f"{message}\n"), err
    assert not (tmp_path / "h.yaml").exists()


def test_a_large_history_streams(tmp_path: Path) -> None:
    many = [LINES[0].replace("101|", f"{k}|", 1) for k in range(2000)]
    history = read_sacct(sacct(tmp_path, many))
    assert (len(history.jobs), history.lines) == (2000, 2001)
    with pytest.raises(InputError, match="line 2002: 3 fields"):
        read_sacct(sacct(tmp_path, [*many, "1|2|3"]))


HELIOS = """job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,\
duration,queue
j1,u1,vc1,8,32,1,COMPLETED,2020-04-01 00:00:04,2020-04-01 00:00:10,2020-04-01 01:00:10,3600,6
j2,u1,vc1,16,64,2,FAILED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 00:40:05,1800,5
j3,u2,vc2,0,4,1,COMPLETED,2020-04-01 00:11:00,2020-04-01 00:11:00,2020-04-01 00:12:00,60,0
j4,u2,vc2,1,6,1,CANCELLED,2020-04-01 00:12:00,,,0,0
"""
KALOS = """job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,type,state,submit_time,start_time,\
end_time,duration,queue,gpu_time
k1,a,2,16,128,800,Pretrain,COMPLETED,2023-05-01 00:00:00+08:00,2023-05-01 00:05:00+08:00,\
2023-05-01 02:05:00+08:00,7200,300,115200
k2,b,1,1,8,100,Evaluation,COMPLETED,2023-04-30 16:01:00+00:00,2023-04-30 16:01:30+00:00,\
2023-04-30 16:11:30+00:00,600,30,600
"""


def test_a_helios_history_becomes_training_jobs(tmp_path: Path) -> None:
    path, out = tmp_path / "cluster_log.csv", tmp_path / "h.yaml"
    path.write_text(HELIOS)
    code, text, err = run("import", "helios", path, "-o", out)
    assert code == 0, err
    # j1 (8 GPUs) and j2 (16) ran at once from 00:10:05: 24 GPUs, 3 nodes of 8
    assert text.endswith(
        "(2 jobs, 2 tasks on 3 nodes of 8 GPUs; left out: 1 never started, 1 without GPUs)\n"
    )
    data = yaml.safe_load(out.read_text())
    got = [(j["name"], j["gpus"], j["iterations"], j["release"], j["cpu_per_gpu"])
           for j in data["jobs"]]  # fmt: skip
    assert got == [("j1", 8, 3600, 0.0, 4), ("j2", 16, 1800, 596.0, 4)]
    code, _, err = run("import", "helios", path, "--nodes", 1, "-o", out)
    assert (code, err) == (
        2,
        "error: a job of 16 GPUs; 1 nodes of 8 GPUs hold 8: give more --nodes\n",
    )


def test_an_acme_history_reads_time_zones_and_memory(tmp_path: Path) -> None:
    path, out = tmp_path / "trace_kalos.csv", tmp_path / "k.yaml"
    path.write_text(KALOS)
    code, _, err = run("import", "acme", path, "-o", out)
    assert code == 0, err
    k1, k2 = yaml.safe_load(out.read_text())["jobs"]
    # k2 came 60 s after k1, its times in UTC and k1's at +08:00
    assert (k1["release"], k2["release"]) == (0.0, 60.0)
    assert (k1["mem_per_gpu"], k2["mem_per_gpu"]) == (100, 100)  # 800 GB a pod, 8 GPUs a pod


def test_a_history_without_its_columns_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("job_id,gpu_num\nj1,8\n")
    code, _, err = run("import", "helios", path, "-o", tmp_path / "h.yaml")
    assert (code, err) == (
        2,
        f"error: {path}: line 1: missing column(s) cpu_num, node_num, submit_time, start_time, "
        "duration (Helios' cluster_log.csv)\n",
    )


PHILLY = [
    {"status": "Pass", "vc": "v1", "jobid": "application_1", "user": "u",
     "submitted_time": "2017-10-03 03:00:00",
     "attempts": [
         {"start_time": "2017-10-03 03:00:10", "end_time": "2017-10-03 03:10:10",
          "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]},
         {"start_time": "2017-10-03 03:20:00", "end_time": "2017-10-03 04:20:00",
          "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]},
                     {"ip": "m2", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]},
     ]},
    {"status": "Killed", "vc": "v1", "jobid": "application_2", "user": "u",
     "submitted_time": "2017-10-03 03:05:00", "attempts": []},
    {"status": "Pass", "vc": "v2", "jobid": "application_3", "user": "w",
     "submitted_time": "2017-10-03 03:30:00",
     "attempts": [{"start_time": "2017-10-03 03:30:00", "end_time": "None",
                   "detail": [{"ip": "m3", "gpus": ["gpu0"]}]},
                  {"start_time": "2017-10-03 03:31:00", "end_time": "2017-10-03 03:41:00",
                   "detail": [{"ip": "m3", "gpus": ["gpu0"]}]}]},
]  # fmt: skip


def test_a_philly_log_streams_job_by_job(tmp_path: Path) -> None:
    import json

    from planner.dl.histories import import_philly, json_items

    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(PHILLY, indent=1))
    data, left = import_philly(path)
    first, third = data["jobs"]
    # every attempt's time is work; the GPUs are the last attempt's (2 machines x 4)
    assert (first["name"], first["gpus"], first["iterations"]) == ("application_1", 8, 4200)
    assert (third["gpus"], third["iterations"], third["release"]) == (1, 600, 1800.0)
    assert left == "left out: 1 never started"
    many = [{**PHILLY[0], "jobid": f"a{k}"} for k in range(300)]
    path.write_text(json.dumps(many))
    # read in chunks of 100 characters: every job is cut across chunks
    assert [item["jobid"] for item in json_items(path, chunk=100)] == [f"a{k}" for k in range(300)]
    path.write_text(json.dumps(many)[:-1000])
    with pytest.raises(InputError, match="not a JSON list of jobs \\(cut short\\)"):
        list(json_items(path, chunk=100))

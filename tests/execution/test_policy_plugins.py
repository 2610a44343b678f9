"""Policies are plug-ins: the guide's policy runs from its file, and passes the audit;
a file that fails, or a class that is not a policy, is one line of bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.errors import InputError
from planner.executor.audit import audit
from planner.executor.loop import run_policy
from planner.executor.model.jobs import read_trace
from planner.executor.policies import POLICIES, Policy, policy_of
from tests.conftest import INSTANCES, ROOT, lines

SLICE = INSTANCES / "muri_trace3_40.csv"


def guide_policy() -> str:
    """The example policy of the guide *Policies and online mode*."""
    text = (ROOT / "docs" / "guides" / "policies-online.md").read_text()
    start = text.index("## Your own policy")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block is not None
    return block[1]


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.py"
    path.write_text(guide_policy())
    return path


def test_the_guide_policy_runs_from_its_file_and_passes_the_audit(pairs: Path) -> None:
    result = CliRunner().invoke(app, ["policy", str(SLICE), f"{pairs}:PairsFirst"])
    assert result.exit_code == 0, result.output
    rows = lines(result.stdout)
    assert rows["policy"] == f"{pairs}:PairsFirst"
    assert rows["audit"].startswith("valid")
    # it pairs: some job-intervals ran in groups of two, none in larger ones
    groups = dict(re.findall(r"(\d+): ([\d.]+)%", rows["groups"]))
    assert set(groups) == {"1", "2"} and float(groups["2"]) > 0


def test_a_policy_object_runs_like_a_named_one(pairs: Path) -> None:
    jobs = read_trace(SLICE)
    run = run_policy(jobs, policy_of(f"{pairs}:PairsFirst"))
    assert run.policy == "pairs-first"
    assert audit(run, jobs, 64) == []
    # the shipped srtf as a class gives the same run as its name
    assert run_policy(jobs, POLICIES["srtf"]()).finish == run_policy(jobs, "srtf").finish


def test_a_policy_that_breaks_the_rules_fails_its_audit() -> None:
    class Crowd(Policy):
        """Every job on the first node's GPUs at once."""

        def schedule(self, t, jobs, cluster):  # type: ignore[no-untyped-def]
            where = ((0, tuple(range(cluster.per_node))),)
            return {s.idx: ([s], s.alone, s.cost, where) for s in jobs}

    jobs = [j for j in read_trace(SLICE) if j.gpus == 8][:3]
    run = run_policy(jobs, Crowd())
    assert any("taken, down or outside the cluster" in w for w in audit(run, jobs, 64))


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        ("x = 1 / 0\n", "Bad", "the policy file fails: ZeroDivisionError: division by zero"),
        ("x = 1\n", "Bad", "no class 'Bad' in the file"),
        ("class Bad:\n    pass\n", "Bad",
         "'Bad' is not a policy: subclass planner.executor.policies.Policy"),
    ],
)  # fmt: skip
def test_a_bad_policy_file_is_one_line(
    tmp_path: Path, source: str, spec: str, message: str
) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(InputError) as caught:
        policy_of(f"{path}:{spec}")
    assert str(caught.value) == f"{path}: {message}"
    result = CliRunner().invoke(app, ["policy", str(SLICE), f"{path}:{spec}"])
    assert (result.exit_code, result.stderr) == (2, f"error: {path}: {message}\n")


def test_an_unknown_policy_names_the_choices() -> None:
    with pytest.raises(InputError) as caught:
        policy_of("lifo")
    assert str(caught.value) == (
        "unknown policy 'lifo'; choose one of fifo, srtf, srsf, tiresias, muri-s, muri-l, "
        "lp-groups, srsf-pack, jct-groups, ftf-groups, fair-groups, "
        "het-srpt, het-makespan, grid-srtf, grid-srtf-events, batch-lpt, batch-srtf, batch-fifo, "
        "pollux-tiresias, pollux-optimus, pollux, goodput, goodput-pack; "
        "Gavel's gavel-fifo, "
        "gavel-max-min-fairness, "
        "gavel-min-total-duration, gavel-finish-time-fairness, each also -perf or -packed, and "
        "gavel-gandiva; Synergy's synergy-fifo, synergy-srtf and synergy-las, each -fair, "
        "-greedy or -tune; or FILE.py:CLASS"
    )
    with pytest.raises(InputError, match="no such file"):
        policy_of("missing.py:Policy")

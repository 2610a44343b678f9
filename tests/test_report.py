"""``planner report`` (issue 58): one self-contained page of a job-level run, checked in
headless Chromium where it is installed (in CI it must be)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.app.cli import app
from planner.app.colocation import physical_gpus
from tests.conftest import INSTANCES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("report")
    data = folder / "run.json"
    code, _, err = run("policy", INSTANCES / "muri_trace3_40.csv", "muri-s", "--fail",
                       "node3@20000+20000", "-o", data)  # fmt: skip
    assert code == 0, err
    page = folder / "report.html"
    code, out, err = run("report", data, "-o", page)
    assert (code, out) == (0, f"report written to {page} (40 jobs, 3 charts)\n"), err
    return page, json.loads(data.read_text())


def test_the_report_holds_every_job_and_needs_no_network(report: tuple[Path, dict]) -> None:
    page, data = report
    text = page.read_text()
    rows = re.findall(r"<tr><td>([^<]+)</td>", text)
    assert sorted(rows) == sorted(data["finish"])
    assert len(re.findall(r'<img id="[a-z-]+" alt="[^"]+" src="data:image/png;base64,', text)) == 2
    # the interactive chart: a bar per job stay per GPU, each naming its job on hover
    assert text.count('<rect data-job="') == sum(
        len(physical_gpus(r["gpus"])) for r in data["residences"] if r["gpus"]
    )
    assert text.count("<title>job0 on ") >= 1
    assert not re.search(r"(src|href)=\"https?:", text)
    jct = {j: f - data["release"][j] for j, f in data["finish"].items()}
    mean = sum(jct.values()) / len(jct)
    assert f"<tr><th>mean JCT</th><td>{mean:,.0f} s</td></tr>" in text
    assert f"<tr><th>makespan</th><td>{data['makespan']:,.0f} s</td></tr>" in text
    assert "<tr><th>failures</th><td>node3@20000+20000</td></tr>" in text


def test_bad_report_arguments_are_one_line(tmp_path: Path) -> None:
    code, _, err = run("report", INSTANCES / "example.yaml", "-o", tmp_path / "r.html")
    assert (code, err) == (2, f"error: {INSTANCES / 'example.yaml'}: not a job-level run file "
                              "(planner policy ... -o RUN.json)\n")  # fmt: skip


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="no Chromium here")
def test_the_report_in_headless_chromium(report: tuple[Path, dict], tmp_path: Path) -> None:
    assert CHROMIUM is not None, "CI runs the report in Chromium: install it"
    page, data = report
    # a click on the JCT column sorts the table; the page logs no error
    probe = tmp_path / "probe.html"
    click = ('<script>document.querySelectorAll("table.jobs th")[4].click();'
             'for (const img of document.images) if (!img.complete || !img.naturalWidth)'
             ' console.error("chart missing: " + img.id);'
             'document.querySelector("#run-svg g[data-job=job0]").dispatchEvent('
             'new MouseEvent("click"));'
             'const faded = [...document.querySelectorAll("#run-svg rect[data-job]")]'
             '.filter(r => r.style.opacity === "0.15").length;'
             'document.body.dataset.faded = faded;</script></body>')  # fmt: skip
    probe.write_text(page.read_text().replace("</body>", click))
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=2000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == []
    # a click on job0 in the legend fades every bar but job0's
    others = sum(len(physical_gpus(r["gpus"])) for r in data["residences"]
                 if r["gpus"] and r["job"] != "job0")  # fmt: skip
    assert f'data-faded="{others}"' in done.stdout
    order = re.findall(r"<tr><td>([^<]+)</td>", done.stdout)
    jct = {j: f - data["release"][j] for j, f in data["finish"].items()}
    assert order == sorted(jct, key=lambda j: (jct[j], j)) or [jct[j] for j in order] == sorted(
        jct.values()
    )

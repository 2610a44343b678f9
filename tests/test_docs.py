"""The documentation keeps its word: every code block of the README and of the docs runs,
page by page in the order of the site, each page in a fresh folder that holds the
checkout's ``instances/``; the site builds with ``mkdocs build --strict`` (its CLI
reference written from the command line, its formats reference from the JSON Schema,
its API reference from the docstrings);
and its pages open in headless Chromium without a broken link or a console error.

Code blocks are ``bash`` (run with ``bash -euo pipefail``), ``python`` (run in one
namespace per page), ``yaml`` (an instance: it must load) or ``text`` (output, formulas:
not code). The only block not run is the installation, which ``.ci/run`` runs.
"""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml
from sybil import Example, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.conftest import INSTANCES, ROOT, chromium, needed

LANGUAGES = {"bash", "python", "yaml", "text"}
"""The languages a code block of the docs may have; ``text`` is output, not code."""
RUN = {"bash", "python", "yaml"}
"""The languages of the blocks that run."""
BLOCK_SECONDS = 600
"""A ``bash`` block that runs longer has hung (the slowest takes about a minute)."""


def nav_pages() -> list[Path]:
    """The README, then the site's pages in the order of ``mkdocs.yml``'s nav."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def walk(item: Any) -> Iterator[str]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from walk(value)
        else:
            for value in item:
                yield from walk(value)

    return [ROOT / "README.md", *(ROOT / "docs" / page for page in walk(config["nav"]))]


PAGES = nav_pages()


def _run_bash(example: Example) -> None:
    """Run a ``bash`` block in the page's folder; fail with its output if it fails."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", example.parsed],
        cwd=example.namespace["folder"],
        capture_output=True,
        text=True,
        env=env,
        timeout=BLOCK_SECONDS,
    )
    example.namespace["ran"].append("bash")
    if done.returncode != 0:
        raise AssertionError(
            f"{example.path}, line {example.line}: exit status {done.returncode}\n"
            f"{example.parsed}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n"
            f"{done.stderr[-3000:]}"
        )


def _load_yaml(example: Example) -> None:
    """A ``yaml`` block is an instance: it loads (and compiles) without error."""
    from planner.io.instance import problem_from_data

    problem_from_data(yaml.safe_load(example.parsed))
    example.namespace["ran"].append("yaml")


_PYTHON = PythonEvaluator()


def _python(example: Example) -> None:
    """Run a ``python`` block in the page's namespace."""
    example.namespace["ran"].append("python")
    _PYTHON(example)


SYBIL = Sybil(
    parsers=[
        CodeBlockParser("bash", _run_bash),
        CodeBlockParser("python", _python),
        CodeBlockParser("yaml", _load_yaml),
        SkipParser(),
    ]
)


def fences(path: Path) -> list[str]:
    """The language of every fenced code block of ``path``, in order."""
    return re.findall(r"^ *```(\S*)\n(?:.*?\n)*? *```$", path.read_text(), flags=re.M)


def skipped(path: Path) -> list[str]:
    """The blocks a ``<!-- skip: next -->`` keeps from running."""
    return re.findall(r"<!-- skip: next -->\n```bash\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_code_block_of_the_page_runs_in_order(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "instances").symlink_to(INSTANCES)
    monkeypatch.chdir(tmp_path)
    document = SYBIL.parse(page)
    document.namespace.update(folder=tmp_path, ran=[])
    for example in document.examples():
        example.evaluate()
    languages = fences(page)
    assert set(languages) <= LANGUAGES, f"{page}: a code block says its language ({LANGUAGES})"
    run = [lang for lang in languages if lang in RUN]
    assert len(document.namespace["ran"]) == len(run) - len(skipped(page))


def test_the_only_block_not_run_is_the_installation_that_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for page in PAGES:
        for block in skipped(page):
            for line in block.strip().splitlines():
                assert line.startswith("pip install") and line in ci, f"{page}: {line}"


def test_the_readme_is_short_and_its_links_exist() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    assert [t for t in targets if "://" not in t and not (ROOT / t).exists()] == []
    commands = re.findall(r"```bash\n(.*?)```", text, flags=re.S)[0]
    assert commands.strip().splitlines() == [
        "pip install -e . && planner solve instances/example.yaml",
        "pip install -e '.[test]' && pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert all(line in ci for line in commands.strip().splitlines())


# The site: built once for the tests below.


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with ``mkdocs build --strict``."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        needed("mkdocs", "pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
         str(ROOT / "mkdocs.yml"), "-d", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_the_site_builds_strict_with_the_references_written_from_the_code(site: Path) -> None:
    from planner.app.base import COMMAND_ORDER
    from planner.io.schema import instance_schema

    for page in PAGES[1:]:
        html = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / "index.html" if html.name == "index" else site / html / "index.html"
        assert built.is_file(), built
    cli = (site / "reference" / "cli" / "index.html").read_text()
    for command in COMMAND_ORDER:
        assert f"planner {command}" in cli, command
    assert "--time-limit" in cli and "planner simulate" not in cli
    formats = (site / "reference" / "formats" / "index.html").read_text()
    for name in instance_schema()["$defs"]:
        assert f'id="{name.lower()}"' in formats, name
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in (
        "solvers.registry.solve",
        "planner.io.instance.generate",
        "planner.executor.loop.run_policy",
        "planner.executor.model.policy.Policy",
    ):
        assert f'id="{name}"' in api, name  # fmt: skip


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site served over HTTP on this machine, as ``mkdocs serve`` would."""
    handler = partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        """No log lines on the test's output."""


def test_every_page_opens_in_chromium_without_broken_links_or_console_errors(
    site: Path, served: str, tmp_path: Path
) -> None:
    browser = chromium()
    pages = sorted(p.relative_to(site) for p in site.rglob("index.html"))
    assert len(pages) >= len(PAGES) - 1
    broken, errors = [], []
    for page in pages:
        url = urljoin(served, str(page.parent) + "/" if str(page.parent) != "." else "")
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=3000", "--dump-dom", url],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert "</html>" in done.stdout, url
        for line in done.stderr.splitlines():
            if "CONSOLE" in line and (served in line or "Uncaught" in line):
                errors.append(f"{url}: {line}")
        for link in re.findall(r'(?:href|src)="([^"]+)"', done.stdout):
            target = urlparse(urljoin(url, link))
            if target.netloc != urlparse(served).netloc or target.scheme not in ("http", ""):
                continue  # another site: not this build's to check
            path = site / unquote(target.path).lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{url}: {link}")
            elif (
                target.fragment
                and path.suffix == ".html"
                and f'id="{target.fragment}"' not in path.read_text()
            ):
                broken.append(f"{url}: {link} (no such anchor)")
    assert broken == []
    assert errors == []


def test_the_written_references_are_in_their_pages_and_up_to_date() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    for name, (page, make) in hooks.REFERENCES.items():
        text = (ROOT / "docs" / page).read_text()
        assert hooks.written(name, text) == make().strip("\n"), f"run python docs/hooks.py: {page}"
    formats = (ROOT / "docs" / "reference" / "formats.md").read_text()
    assert "| `max_colocated` |" in formats

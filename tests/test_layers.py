"""The package's layers: every import goes down, and no modules import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core": 0, "dl": 1, "io": 2, "executor": 3, "replay": 4, "app": 5}
"""Each layer may import the layers of lower rank and its own: the job-level executor
(``planner.executor``) below the task-level replay and re-planning (``planner.replay``),
which re-plans job-level runs too."""
ENGINES = ("planner.models", "planner.solvers")
"""CP-SAT, MILP and the heuristics: above the core, reached only from the app layer
and from re-planning (lazily)."""
REACH_ENGINES = ("planner.app.", "planner.replay.replan", "planner.replay.planner_policy")
SOLVERS_REACH = LAYERS["executor"]
"""The solvers import layers up to the job-level executor: the search in the executor's
model runs it (:mod:`planner.solvers.dispatch_search`); the models import the core only."""


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in (("planner", "planner"), ("models", "planner.models"),
                            ("solvers", "planner.solvers")):  # fmt: skip
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts)).removesuffix(".__init__")
            out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path, name: str, typing: bool = False) -> list[tuple[str, bool]]:
    """The planner modules ``path`` imports, each with whether at module level; imports
    under ``if TYPE_CHECKING:`` (which run only for type checkers) only with ``typing``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not typing:
            return
        if isinstance(node, ast.Import):
            found.extend((a.name, top) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((sub if sub in MODULES else base, top))
        inner = top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, True)
    return [(m, top) for m, top in found if m == "planner" or m.startswith("planner.")]


def _layer(module: str) -> str:
    parts = module.split(".")
    if module.startswith(ENGINES):
        return "engines"
    if module == "planner.__main__":
        return "app"  # ``python -m planner``: the command line
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


def test_every_import_goes_down_the_layers() -> None:
    upward = []
    for name, path in MODULES.items():
        if name == "planner":
            continue  # the facade: it names the public API of every layer (lazily above core)
        for target, _ in _imports(path, name):
            if target == "planner" and name != "planner.app.base":
                upward.append(f"{name} imports the package facade")
                continue
            if target == "planner":
                continue  # the app's --version
            mine, theirs = _layer(name), _layer(target)
            if theirs == "engines":
                if mine != "engines" and not name.startswith(REACH_ENGINES):
                    upward.append(f"{name} -> {target}")
            elif mine == "engines":
                reach = SOLVERS_REACH if name.startswith("planner.solvers") else 0
                if LAYERS[theirs] > reach:
                    upward.append(f"{name} -> {target}")
            elif LAYERS[theirs] > LAYERS[mine]:
                upward.append(f"{name} ({mine}) -> {target} ({theirs})")
    assert upward == []


def test_no_import_cycles() -> None:
    # type-only imports count too: a reader follows them as any other
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        for target, _ in _imports(path, name, typing=True):
            if target in MODULES and target != name and target != "planner":
                graph.add_edge(name, target)
    assert list(nx.simple_cycles(graph)) == []


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from planner.app.cli import app\n\ndef f():\n    from planner.solvers import solve\n"
    )
    assert _imports(bad, "planner.model") == [
        ("planner.app.cli", True),
        ("planner.solvers", False),
    ]
    assert (_layer("planner.app.cli"), _layer("planner.solvers"), _layer("planner.model")) == (
        "app",
        "engines",
        "core",
    )


def test_one_import_reaches_the_library() -> None:
    import planner

    for name in planner.__all__:
        assert getattr(planner, name) is not None, name
    from planner.replay.simulate import simulate
    from planner.solvers import solve

    assert (planner.solve, planner.simulate) == (solve, simulate)


MAX_LINES = 700
"""The most lines a module may have: a room a reader can hold in their head."""


def test_no_module_is_over_700_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def _package(module: str) -> str:
    """The package a module belongs to: a package's ``__init__`` is the package itself,
    and ``python -m planner``'s ``__main__`` is the command line's."""
    if module == "planner.__main__":
        return "planner.app"
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def package_graph() -> nx.DiGraph:
    """Which package imports which (a function's imports and type-only ones included; the
    facade ``planner/__init__.py``, which names every layer's API lazily, left out)."""
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        if name == "planner":
            continue
        for target, _ in _imports(path, name, typing=True):
            if target in MODULES and target != "planner" and _package(target) != _package(name):
                graph.add_edge(_package(name), _package(target))
    return graph


def test_no_package_cycles() -> None:
    assert list(nx.simple_cycles(package_graph())) == []

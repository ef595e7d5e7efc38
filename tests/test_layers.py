"""The shape of the code, checked: the import graph (walked with `ast`) has no cycle, between files or
between packages, and no project import inside a function, `arith.config` is a leaf, mlflow is imported
only under `arith.tracking` (and the layers above), `import analysis` loads no torch, no module is over
400 lines and no test file over 600, the tool imports nothing of the lab, and no task-specific rule is
written outside its task."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the tool, and the lab: the project's own research bookkeeping, which the tool never imports
TOOL = ("arith", "experiments", "sweeps", "analysis")
PACKAGES = (*TOOL, "lab")
TOP = (*PACKAGES, "scripts", "benchmarks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _files() -> dict[str, Path]:
    return {_module_name(p): p for top in TOP for p in sorted((ROOT / top).rglob("*.py"))}


def _target(name: str, imported: str | None, modules: dict[str, Path]) -> str | None:
    """The project module an import binds: `from a.b import c` is a.b.c when that is a module."""
    if imported and f"{name}.{imported}" in modules:
        return f"{name}.{imported}"
    return name if name in modules else None


def _imports(tree: ast.AST, modules: dict[str, Path]) -> list[tuple[ast.AST, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node, t) for a in node.names if (t := _target(a.name, None, modules))]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node, t) for a in node.names if (t := _target(node.module, a.name, modules))]
    return out


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = _files()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    inside: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        nested = {
            id(sub)
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for sub in ast.walk(fn)
        }
        for node, target in _imports(tree, modules):
            if id(node) in nested:
                inside.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target} inside a function")
            elif target != name:
                graph[name].add(target)
    return graph, inside


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_and_no_project_import_inside_a_function():
    graph, inside = _graph()
    assert not inside, "\n".join(inside)
    assert not _cycles(graph)


def _package(module: str) -> str:
    """The package a module belongs to: an `arith` sub-package (arith.model, arith.data, ...) or top-level
    module (arith.config, arith.ask, ...), else its top folder (sweeps, analysis, scripts, ...)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "arith" else parts[0]


def test_no_import_cycle_between_packages():
    """Each package owns what it names: collapsed to packages the graph has no cycle either. A loop
    through several files of several packages (model -> training -> tracking -> model) is no file cycle,
    yet it ties the packages together: none can be read, tested or moved without the others."""
    graph, _ = _graph()
    packages: dict[str, set[str]] = {_package(m): set() for m in graph}
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = _package(module), _package(target)
            if a != b:
                packages[a].add(b)
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    loops = [
        " <-> ".join(component)
        + "".join(
            f"\n  {a} -> {b}: {', '.join(sorted(via))}"
            for (a, b), via in sorted(edges.items())
            if a in component and b in component
        )
        for component in _cycles(packages)
    ]
    assert not loops, "import cycles between packages:\n" + "\n".join(loops)


def test_the_tool_imports_nothing_from_the_lab():
    """The lab (recipe searches, budgets, the plan and its reproduction, the GPU bank, RESULTS.md) builds on
    the tool and registers its grids through the experiments' plugin hook: no module of the tool imports it,
    so a user's commands load none of it."""
    graph, _ = _graph()
    found = [
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith(TOOL)
        for t in targets
        if _package(t) == "lab"
    ]
    assert not found, "\n".join(found)


def test_the_config_is_a_leaf():
    """The config imports nothing of the project but its error type and how a value is read into a
    field's type, both leaves themselves."""
    graph, _ = _graph()
    assert graph["arith.config"] <= {"arith.errors", "arith.coerce"}
    assert graph["arith.coerce"] <= {"arith.errors"} and not graph["arith.errors"]


def _late_imports(names: tuple[str, ...]) -> list[str]:
    bad = []
    for name, path in _files().items():
        text = path.read_text()
        if name.startswith(names) and ("noqa: E402" in text or re.search(r"^def __getattr__\(", text, re.M)):
            bad.append(name)
    return bad


def test_no_module_getattr_no_late_import():
    assert not _late_imports(PACKAGES)


def test_no_sys_path_edit_in_scripts():
    """Command lines, benchmarks and tests import the installed packages (`pip install -e .`): none edits
    sys.path or loads a module by its path."""
    assert not _late_imports(("scripts", "benchmarks"))
    edits = re.compile(r"sys\.path\.(insert|append)|spec_from_file_location|__package__ in")
    folders = (*TOP, "tests")
    bad = [
        str(p.relative_to(ROOT))
        for top in folders
        for p in sorted((ROOT / top).rglob("*.py"))
        if p != Path(__file__).resolve() and edits.search(p.read_text())
    ]
    assert not bad


def test_scripts_are_thin_command_lines():
    """What a script does lives in the packages: each file of scripts/ is at most 150 lines."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "scripts").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 150
    }
    assert not long


#: the most lines a module may have: past it a module holds more than one idea, split it along them
MAX_MODULE_LINES = 400
#: the most lines a test file may have: past it, split it by subject (shared fixtures in conftest / stores)
MAX_TEST_LINES = 600


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for top in TOP
        for p in sorted((ROOT / top).rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these along their ideas: {long}"


def test_mlflow_is_imported_only_by_the_tracking_package_in_arith():
    for name, path in _files().items():
        if name.startswith("arith.") and not name.startswith("arith.tracking"):
            assert not re.search(r"^\s*(import|from) mlflow\b", path.read_text(), re.M), name
        if name.startswith("arith."):
            assert not re.search(r"^\s*(import|from) ray\b", path.read_text(), re.M), name


def test_each_sub_package_says_what_it_owns():
    for package in ("arith.data", "arith.model", "arith.training", "arith.tracking", "experiments"):
        path = ROOT / package.replace(".", "/") / "__init__.py"
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and len(doc) > 200, package


@pytest.mark.parametrize("module", ["analysis", "experiments.registry", "arith.config", "arith.data.tasks"])
def test_light_imports_load_no_torch(module):
    """The analysis and every experiment's declaration (grid, claims, checks) import without torch: a
    laptop reads a sweep, and sweeps and analysis share the experiments, without the model."""
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_the_offline_executor_imports_without_mlflow_or_ray():
    code = "import sys; sys.modules['mlflow'] = sys.modules['ray'] = None; import sweeps.offline, lab.bank"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_users_commands_load_nothing_of_the_lab():
    """`python sweeps/run.py` and `python -m analysis`, their grids listed, load no module of the lab: without
    it registered ($POSDESC_EXPERIMENTS) the grids are the catalogue's alone."""
    code = (
        "import sys, sweeps.run, analysis.__main__\n"
        "from sweeps.grids import GRIDS\n"
        "assert 'demo' in GRIDS and 'cpu_tune_reverse' not in GRIDS, list(GRIDS)\n"
        "print(sorted(m for m in sys.modules if m == 'lab' or m.startswith('lab.')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "POSDESC_EXPERIMENTS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_no_test_file_is_over_600_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_TEST_LINES
    }
    assert not long, f"split these by subject: {long}"

"""One name, one job: no two modules of the project define the same public top-level function, so that a
name read anywhere (`trial_config`, `run_trial`, `summary`) says which job it is without its module.

The modules are walked with `ast` (nothing is imported). A name may repeat only where it means the same
job everywhere (ALLOWED); clashes in code owned elsewhere are listed in PENDING until renamed there (a
name taken off it is checked again)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("arith", "sweeps", "analysis", "lab", "scripts", "benchmarks")

#: names that mean the same job in every module that defines them
ALLOWED = {
    # the command line of a module or script (`python -m ...`, `python scripts/...`): parse argv and run
    "main",
    # a command line's argv parser, called by its `main` only
    "parse_args",
}

#: clashes in code owned elsewhere, each to be renamed by its owner (taken off once renamed)
PENDING: set[str] = set()


def public_functions() -> dict[str, list[str]]:
    """Public top-level function name -> the modules (paths) that define it."""
    defined: dict[str, list[str]] = defaultdict(list)
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                is_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                if is_function and not node.name.startswith("_"):
                    defined[node.name].append(str(path.relative_to(ROOT)))
    return defined


def test_no_two_modules_define_the_same_public_function() -> None:
    clashes = {name: paths for name, paths in public_functions().items() if len(paths) > 1}
    new = {name: paths for name, paths in clashes.items() if name not in ALLOWED | PENDING}
    assert not new, f"one name, two jobs: rename one (or list a same-job name in ALLOWED): {new}"


def test_the_walk_finds_the_known_names() -> None:
    defined = public_functions()
    assert defined["trial_config"] == ["sweeps/space.py"]
    assert defined["run_trial"] == ["sweeps/trainable.py"]
    assert defined["machine"] == ["arith/training/hardware.py"]
    assert len(defined["main"]) > 5


def test_a_pending_name_still_clashes() -> None:
    """A name renamed by its owner leaves PENDING, so that the clash test guards it again."""
    defined = public_functions()
    stale = {name for name in PENDING if len(defined.get(name, [])) < 2}
    assert not stale, f"no longer a clash, take it off PENDING: {stale}"


#: functions that may take an argparse Namespace: a command line's argv parser and its `main`, which
#: pass plain values on (the rest of the code is called, and tested, without a command line)
NAMESPACE_TAKERS = {"main", "parse_args"}


def namespace_parameters() -> list[str]:
    """`path:line function(parameter)` for every parameter annotated as an argparse Namespace outside a
    command line's `main` / `parse_args`, methods and nested functions included."""
    found = []
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    or node.name in NAMESPACE_TAKERS
                ):
                    continue
                arguments = node.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
                for argument in every:
                    annotation = ast.unparse(argument.annotation) if argument.annotation else ""
                    if "Namespace" in annotation.replace("SimpleNamespace", ""):
                        where = f"{path.relative_to(ROOT)}:{node.lineno}"
                        found.append(f"{where} {node.name}({argument.arg}: {annotation})")
    return found


def test_no_function_takes_a_namespace_but_a_command_line() -> None:
    """Values, not Namespaces: a command line parses argv and passes plain values on."""
    found = namespace_parameters()
    assert not found, "take plain values instead of an argparse Namespace:\n" + "\n".join(found)


def test_the_namespace_walk_finds_an_annotated_parameter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check sees quoted, optional and keyword-only annotations, and lets a `main` through."""
    (tmp_path / "arith").mkdir()
    (tmp_path / "arith" / "cli.py").write_text(
        "import argparse\n"
        "def main(args: argparse.Namespace) -> None: ...\n"
        "def run(args: 'argparse.Namespace') -> None: ...\n"
        "class C:\n    def go(self, *, ns: Namespace | None = None) -> None: ...\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert [line.split(" ", 1)[1] for line in namespace_parameters()] == [
        "run(args: 'argparse.Namespace')",
        "go(ns: Namespace | None)",
    ]

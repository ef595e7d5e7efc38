"""One name, one job: no two modules of the project define the same public top-level function, so that a
name read anywhere (`trial_config`, `run_trial`, `summary`) says which job it is without its module.

The modules are walked with `ast` (nothing is imported). A name may repeat only where it means the same
job everywhere (ALLOWED); clashes in code owned elsewhere are listed in PENDING until renamed there (a
name taken off it is checked again)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("arith", "sweeps", "analysis", "scripts", "benchmarks")

#: names that mean the same job in every module that defines them
ALLOWED = {
    # the command line of a module or script (`python -m ...`, `python scripts/...`): parse argv and run
    "main",
    # a command line's argv parser, called by its `main` only
    "parse_args",
}

#: clashes in packages other engineers own (arith/, analysis/): each to be renamed by its owner
PENDING = {
    # arith.tracking.store: can the store be reached; analysis.load: the same check raising AnalysisError
    "check_reachable",
    # arith's accuracy heatmap of one evaluation vs analysis.plots' heatmap of a sweep's table
    "heatmap",
    # arith.model.gpt (a folder) vs arith.tracking.models (a run's model from a store), mid-move
    "load_model",
    # arith.data.tasks.render (a line of data) vs analysis.report.render (a report in a format)
    "render",
    # analysis.presearch (a pre-search's table) vs analysis.results (the claims at a glance)
    "summary",
    # analysis.verdicts.untestable (an Outcome) vs analysis.results.untestable (the page's table)
    "untestable",
}


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
    assert defined["machine"] == ["sweeps/storage.py"]
    assert len(defined["main"]) > 5

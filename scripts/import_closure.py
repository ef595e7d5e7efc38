"""How much code a user's two commands load: the static import closure (project modules only) of
`sweeps/run.py` and `analysis/__main__.py`, walked with `ast` from their top-level imports and every parent
package's `__init__`. The experiments' catalogue, found by listing its folder, counts in full.

    python scripts/import_closure.py            # modules and lines of the closure, of the packages
    python scripts/import_closure.py --list     # ... and each module of the closure with its lines
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arith", "experiments", "sweeps", "analysis")
ENTRY_POINTS = ("sweeps.run", "analysis.__main__")
#: modules a package loads by listing a folder, not by an import statement
FOUND_BY_LISTING = {"experiments.registry": "experiments.catalog"}


def modules() -> dict[str, Path]:
    """Every module of the packages by its dotted name (a package by its own name)."""
    out = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _with_parents(name: str, known: dict[str, Path]) -> list[str]:
    """`name` and the packages above it (importing a.b.c runs a/__init__ and a/b/__init__ first)."""
    parts = name.split(".")
    return [p for i in range(1, len(parts) + 1) if (p := ".".join(parts[:i])) in known]


def imports_of(name: str, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports, wherever the statement sits."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(known[name].read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target:
                out.update(_with_parents(target, known))
    if name in FOUND_BY_LISTING:
        folder = FOUND_BY_LISTING[name]
        out.update(m for m in known if m == folder or m.startswith(folder + "."))
    return out - {name}


def closure(entry_points: tuple[str, ...] = ENTRY_POINTS) -> set[str]:
    known = modules()
    seen: set[str] = set()
    todo = [p for e in entry_points for p in _with_parents(e, known)]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imports_of(name, known) - seen)
    return seen


def lines(names: set[str] | dict[str, Path]) -> int:
    known = modules()
    return sum(len(known[n].read_text().splitlines()) for n in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print each module of the closure")
    args = parser.parse_args()
    known, reached = modules(), closure()
    if args.list:
        for name in sorted(reached):
            print(f"{len(known[name].read_text().splitlines()):6d}  {name}")
    print(
        f"closure of {' + '.join(ENTRY_POINTS)}: {len(reached)} of {len(known)} modules, "
        f"{lines(reached):,} of {lines(known):,} lines"
    )


if __name__ == "__main__":
    main()

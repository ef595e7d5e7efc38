"""The committed sweep archives (docs/results/sweeps/, docs/results/gpu/) rewritten once into today's record
of a trial, so that the readers read one format: `python -m lab.archives migrate` (running it again changes
nothing).

What an archive written by an older trainer or sweep lacked, and what it gets:

- a trial's params for config fields added since: each field's default, as the trainer logs it (what the
  readers took for a missing param);
- a trial's `eval/cells.csv` without the seen/unseen split (`n_seen`, `accuracy_seen`, `accuracy_unseen`,
  where it could not be recovered exactly): the columns, empty (what the readers took them for);
- a sweep's parent run without its `presearch_seeds` tag: its experiment's declared pre-search seeds, where
  it declares some (what the analysis fell back to); without `variant_of`: its grid's parent, where the grid
  is a variant (what a sweep writes today);
- the archive's header without the digest of its content (the format's first version): the file is written
  again as the archive module writes every archive (`arith.tracking.archive.write_records`), sealed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import lab  # noqa: F401  (registers the lab's grids: their declarations say what older sweeps lacked)
from arith.config import ExperimentConfig
from arith.tracking.archive import VERSION, read_archive, write_records
from arith.tracking.runs import param_value
from arith.tracking.schema import CELLS_ARTIFACT, GRID_TAG, PRESEARCH_SEEDS_TAG, SPLIT_COLUMNS, VARIANT_OF_TAG
from experiments.registry import EXPERIMENTS
from lab.plan import ARCHIVES, TEXTS

#: every committed archive: the cpu reproduction's and the gpu scale's banked batches
COMMITTED = (ARCHIVES, TEXTS / "gpu")
CELLS_CSV = CELLS_ARTIFACT


def with_split(cells: str) -> str:
    """`eval/cells.csv` with the seen/unseen split's columns, empty where the text has none."""
    lines = cells.split("\n")
    header = lines[0].split(",")
    if all(column in header for column in SPLIT_COLUMNS):
        return cells
    missing = [column for column in SPLIT_COLUMNS if column not in header]
    blanks = "," * len(missing)
    rows = [line + blanks if line else line for line in lines[1:]]
    return "\n".join([",".join([*header, *missing]), *rows])


def migrate_trial(record: dict[str, Any]) -> bool:
    """Fill what an older trainer left out of a trial's record (in place); whether anything changed."""
    changed = False
    for key, value in ExperimentConfig().flat().items():
        if key not in record["params"]:
            record["params"][key] = param_value(value)
            changed = True
    cells = record["artifacts"].get(CELLS_CSV)
    if cells is not None and (filled := with_split(cells)) != cells:
        record["artifacts"][CELLS_CSV] = filled
        changed = True
    return changed


def migrate_parent(record: dict[str, Any]) -> bool:
    """Fill the sweep tags an older sweep left out of its parent run's record (in place)."""
    tags, changed = record["tags"], False
    grid = tags.get(GRID_TAG, "")
    experiment = EXPERIMENTS.get(grid)
    if experiment and experiment.grid.parent and VARIANT_OF_TAG not in tags:
        tags[VARIANT_OF_TAG] = experiment.grid.parent
        changed = True
    seeds = experiment.grid.presearch_seeds if experiment else ()
    if PRESEARCH_SEEDS_TAG not in tags and seeds:
        tags[PRESEARCH_SEEDS_TAG] = json.dumps(sorted(set(seeds)))
        changed = True
    return changed


def migrate_archive(path: Path, write: bool = True) -> int:
    """Rewrite the archive at `path` into today's record, sealed with its content's digest as the archive
    module writes every archive now (`write_records`); returns how many runs changed (an archive of the
    format's first version, unsealed, is rewritten all the same)."""
    header, records = read_archive(path)  # the header and the parent checked there
    changed = sum(migrate_trial(r) if r["parent_run_id"] else migrate_parent(r) for r in records)
    if write and (changed or header.get("version") != VERSION):
        write_records(path, header["experiment"], records)
    return changed


def committed_archives() -> list[Path]:
    return sorted(p for folder in COMMITTED for p in folder.rglob("*.jsonl"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.archives", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["migrate"])
    p.add_argument("paths", nargs="*", type=Path, help="archives (default: every committed one)")
    p.add_argument("--dry-run", action="store_true", help="count what would change, write nothing")
    args = p.parse_args(argv)
    total = 0
    for path in args.paths or committed_archives():
        changed = migrate_archive(path, write=not args.dry_run)
        total += changed
        if changed:
            print(f"{path}: {changed} run(s) {'to rewrite' if args.dry_run else 'rewritten'}")
    print(f"{total} run(s) {'to rewrite' if args.dry_run else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

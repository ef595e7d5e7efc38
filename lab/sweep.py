"""`python -m lab.sweep`: `python sweeps/run.py` with the lab's grids and its recipe searches.

    python -m lab.sweep --grid reverse_posembed_recipe --scale cpu_recipe --seeds 0-4
    python -m lab.sweep --search mul_format_recipe --dry-run   # its configurations and ASHA's rungs
    python -m lab.sweep --search mul_format_recipe             # on pre-search seed 100 (--seeds 100,101)
    python -m lab.sweep --list                                 # every grid, then the searches

Every flag of `sweeps/run.py` is the same here; `--search NAME` runs a declared search
(`lab.search.declared.Search`, the registry's SEARCHES) under ASHA on pre-search seeds, as a sweep extended
by `lab.search.sweep.SearchRun` (its grid and scale are the search's; --grid is then optional).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import lab  # noqa: F401  (registers the lab's grids and searches)
from arith.config import ConfigError
from lab.search.sweep import SearchRun
from lab.searches import SEARCHES
from sweeps.errors import SweepError
from sweeps.grids import GRIDS, list_grids
from sweeps.options import read_options, sweep_parser
from sweeps.run import main as run_main
from sweeps.run import tune_sweep


def search_lines() -> list[str]:
    """The `--list` lines of the declared searches: each one's size, experiment, rungs and seeds."""
    lines = []
    for search in SEARCHES.values():
        size = len(search.grid(GRIDS[search.experiment]).points())
        rungs = " / ".join(f"{r:g}" for r in search.scheduler.rungs())
        seeds = ", ".join(map(str, search.seeds))
        lines.append(f"search {search.name}  ({size} configurations)  {search.description}")
        lines.append(f"    for: {search.experiment}; ASHA at {rungs} core-minutes; pre-search seeds {seeds}")
    return lines


def lab_parser() -> argparse.ArgumentParser:
    """`sweeps/run.py`'s flags and `--search`."""
    p = sweep_parser(prog="python -m lab.sweep")
    p.add_argument(
        "--search",
        metavar="NAME",
        help="run the recipe search NAME under ASHA on pre-search seeds (100 up): its experiment's compared "
        "points x what a recipe may change; --grid is then optional, --scale defaults to the search's",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return lab_parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options, args = read_options(argv, lab_parser())
    if not args.search:
        if args.list:
            print("\n".join([list_grids(), "", *search_lines()]))
            return 0
        return run_main(argv)
    try:
        search = SearchRun.of(args.search, args.scale, args.seeds, args.grid)
        seeds = options.seeds if options.resume else search.seeds  # a resumed search keeps its own
        return tune_sweep(search.grid, search.scale, replace(options, seeds=seeds, extension=search))
    except (ConfigError, SweepError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

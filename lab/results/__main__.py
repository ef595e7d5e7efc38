"""`python -m lab.results`: rewrite docs/RESULTS.md from the store (no sweep runs)."""

from __future__ import annotations

import argparse
import sys

from lab.paper_trial import paper_trial
from lab.plan import ROOT, restore_archives, store_uri
from lab.results.page import write_results


def main(argv: list[str] | None = None) -> int:
    """`python -m lab.results`: rewrite docs/RESULTS.md from the store (every archived sweep imported into it
    first); no sweep runs."""
    p = argparse.ArgumentParser(prog="python -m lab.results", description=main.__doc__)
    p.add_argument("--store", default="runs/cpu", help="folder of the MLflow store (default runs/cpu)")
    p.add_argument("--out", default="docs/RESULTS.md")
    args = p.parse_args(argv)
    uri = store_uri(args.store)
    restore_archives(uri)  # an archived part counts as run
    write_results(uri, ROOT / args.out, paper_trial=paper_trial)
    return 0


if __name__ == "__main__":
    sys.exit(main())

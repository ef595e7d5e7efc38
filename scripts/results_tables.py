"""Every table row and every number of generated result pages, one a line, for a diff before and after a
change that must not move a number (a migration of the archives, a page split in several):

    python scripts/results_tables.py docs/RESULTS.md docs/results/*.md > after.txt
    diff before.txt after.txt

Run ids, store paths and the way to the figures are masked (a rebuild imports the archives under new ids,
into its own store; a page beside docs/RESULTS.md links the figures from there).
With --sorted the rows come sorted, for pages whose tables moved between files.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
STORE = re.compile(r"sqlite:///\S*?mlflow\.db")
#: a link to the figures, from docs/RESULTS.md or from a page beside it
FIGURES = re.compile(r"\((?:\.\./|results/)figures/")


def table_rows(text: str) -> list[str]:
    """The page's markdown table rows (its separator rows left out), masked."""
    rows = [line.strip() for line in text.splitlines() if line.lstrip().startswith("|")]
    rows = [row for row in rows if not set(row) <= set("|-: ")]
    return [FIGURES.sub("(FIGURES/", STORE.sub("STORE", RUN_ID.sub("RUN", row))) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--sorted", action="store_true", help="sort the rows (pages whose tables moved)")
    args = parser.parse_args()
    rows = [row for page in args.pages for row in table_rows(page.read_text())]
    print("\n".join(sorted(rows) if args.sorted else rows))


if __name__ == "__main__":
    main()

"""Pre-search records: the committed JSON lines of docs/presearch/ (one trial a line: config, final accuracy
grid, steps, seconds, machine), read back as tables.

    python -m analysis.presearch summary docs/presearch/cpu_tune_hash.jsonl   # mean ± SE over seeds, per
    point
    python -m analysis.presearch budget docs/presearch/cpu_tune_steps.jsonl  # steps to learn, extrapolated

The records were written by the pre-search runner that `sweeps.offline` replaced; new pre-searches are sweep
archives (docs/results/gpu/), read like any sweep.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from analysis.budget import budget_table
from analysis.tables import markdown_table
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    SEED_COLUMN,
)


def seeds_table(records: list[dict]) -> str:
    """Per point (and --set) over its seeds: test accuracy and each digit count's accuracy (the longer
    factor's, for multiplication) as mean ± standard error, a markdown table; failed trials are counted
    apart."""
    rows = []
    for rec in records:
        if "error" in rec:
            continue
        cells = pd.DataFrame(rec["cells"])
        digits = cells[COL_DIGITS_COLUMN]
        if cells[ROW_DIGITS_COLUMN].notna().any():
            digits = cells[[ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN]].max(axis=1)
        by_digits = cells.groupby(digits.astype(int))[ACCURACY_COLUMN].mean()
        point = rec[POINT_COLUMN] + "".join(f", {k}={v}" for k, v in rec.get("set", {}).items())
        rows.append(
            {
                POINT_COLUMN: point,
                SEED_COLUMN: rec[SEED_COLUMN],
                "test_acc": rec["test_acc"],
                **by_digits.to_dict(),
            }
        )
    frame = pd.DataFrame(rows)
    columns = ["test_acc", *sorted(c for c in frame.columns if isinstance(c, int))]
    lines = [
        "| point | seeds | " + " | ".join(f"{c} digits" if c != "test_acc" else c for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for point, trials in frame.groupby(POINT_COLUMN, sort=False):
        n = len(trials)
        shown = []
        for column in columns:
            values = trials[column].dropna()
            if values.empty:  # a digit count this point is not tested on
                shown.append("")
                continue
            se = values.std(ddof=1) / len(values) ** 0.5 if len(values) > 1 else None
            shown.append(f"{values.mean():.2f}" + (f" ± {se:.2f}" if se is not None else ""))
        seeds = ",".join(str(s) for s in sorted(trials[SEED_COLUMN]))
        lines.append(f"| {point} | {n} ({seeds}) | " + " | ".join(shown) + " |")
    failed = sum("error" in rec for rec in records)
    return "\n".join(lines) + (f"\n\n{failed} failed trial(s) left out.\n" if failed else "\n")


def read_records(paths: list[str]) -> list[dict]:
    """Every record of the JSON-lines files, in order."""
    lines = [line for path in paths for line in Path(path).read_text().splitlines()]
    return [json.loads(line) for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.presearch", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["summary", "budget"])
    parser.add_argument("files", nargs="+", help="pre-search JSON-lines files")
    args = parser.parse_args(argv)
    records = read_records(args.files)
    if args.command == "summary":
        print(seeds_table(records), end="")
    else:  # points run at several train.max_steps: steps to learn the task in range (analysis.budget)
        table = budget_table(records)
        print(markdown_table(table) if not table.empty else "no point was run at several step budgets")
    return 0


if __name__ == "__main__":
    sys.exit(main())

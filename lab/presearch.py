"""Pre-search records: the committed JSON lines of docs/presearch/ (one trial a line: config, final accuracy
grid, steps, seconds, machine), read back as tables.

    python -m lab.presearch summary docs/presearch/cpu_tune_hash.jsonl   # mean ± SE over seeds, per
    point
    python -m lab.presearch budget docs/presearch/cpu_tune_steps.jsonl  # steps to learn, extrapolated

The records were written by the pre-search runner that `sweeps.offline` replaced; new pre-searches are sweep
archives (docs/results/gpu/), read like any sweep.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    SEED_COLUMN,
    TEST_ACC_METRIC,
)
from lab.analysis_output import markdown_table
from lab.budget import budget_table
from lab.plan import ROOT, TEXTS

#: the committed records, one JSON-lines file a pre-search
PRESEARCH = ROOT / "docs" / "presearch"
#: docs/RESULTS.md's words before the pre-search tables, and under the extrapolated budgets
PRESEARCH_INTRO = (TEXTS / "presearch.md").read_text()
BUDGET_NOTE = yaml.safe_load((TEXTS / "notes.yaml").read_text())["budget_note"]


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
                TEST_ACC_METRIC: rec[TEST_ACC_METRIC],
                **by_digits.to_dict(),
            }
        )
    frame = pd.DataFrame(rows)
    columns = [TEST_ACC_METRIC, *sorted(c for c in frame.columns if isinstance(c, int))]
    lines = [
        "| point | seeds | "
        + " | ".join(f"{c} digits" if c != TEST_ACC_METRIC else c for c in columns)
        + " |",
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


def presearch_records(folder: Path = PRESEARCH) -> dict[str, list[dict]]:
    """The pre-search's JSON-lines records, by file stem."""
    return {
        path.stem: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def presearch_tables(
    files: dict[str, list[dict]], budgets: pd.DataFrame | None = None, budget_curves: str = ""
) -> str:
    """The pre-search records as tables: one row per trial, its --set, overall accuracy and per test context
    (past the longest trained length, or on the longest factor, where the test goes there), the machine;
    then the extrapolated step budgets (default: of every record) and their figure (`budget_curves`, a
    link)."""
    parts = [PRESEARCH_INTRO]
    if budgets is None:
        budgets = budget_table([rec for records in files.values() for rec in records])
    for stem, records in files.items():
        rows = []
        order = sorted(
            records, key=lambda r: (json.dumps(r.get("set", {})), r[POINT_COLUMN], r.get(SEED_COLUMN, 0))
        )
        for rec in order:
            cells = pd.DataFrame(rec.get("cells", []))
            row = {POINT_COLUMN: rec[POINT_COLUMN], SEED_COLUMN: rec.get(SEED_COLUMN, 0)}
            if any(r.get("set") for r in records):
                row["--set"] = " ".join(f"{k}={v}" for k, v in rec.get("set", {}).items())
            row.update(test_acc=rec.get(TEST_ACC_METRIC), steps=rec.get("steps"))
            if not cells.empty:
                longest = rec["config"]["data.max_digits"]
                if cells[ROW_DIGITS_COLUMN].notna().any():  # multiplication: the cells of the longest factor
                    hard = cells[cells[[ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN]].max(axis=1) == longest]
                    label = f"with a {longest}-digit factor"
                elif (cells[COL_DIGITS_COLUMN] > longest).any():  # length generalisation: past the longest
                    hard, label = cells[cells[COL_DIGITS_COLUMN] > longest], f"beyond {longest} digits"
                else:  # tested within the trained lengths (nl_mix): every cell, then the longest
                    hard, label = cells, "all"
                for context, frame in hard.groupby(CONTEXT_COLUMN):
                    row[f"{context}: {label}"] = round(frame[ACCURACY_COLUMN].mean(), 3)
                if label == "all":
                    top = int(cells[COL_DIGITS_COLUMN].max())
                    for context, frame in cells[cells[COL_DIGITS_COLUMN] == top].groupby(CONTEXT_COLUMN):
                        row[f"{context}: {top} digits"] = round(frame[ACCURACY_COLUMN].mean(), 3)
            row["train s"] = rec.get("train_seconds")
            row["machine"] = rec.get("machine", "")
            rows.append(row)
        frame = pd.DataFrame(rows)
        last = ["train s", "machine"]
        parts.append(f"### {stem}\n\n{markdown_table(frame[[c for c in frame if c not in last] + last])}\n")
    if not budgets.empty:
        figure = f"\n\n![The gate's reading by step budget]({budget_curves})" if budget_curves else ""
        parts.append(
            f"### Steps to competence (extrapolated)\n\n{BUDGET_NOTE}{figure}\n\n{markdown_table(budgets)}\n"
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.presearch", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["summary", "budget"])
    parser.add_argument("files", nargs="+", help="pre-search JSON-lines files")
    args = parser.parse_args(argv)
    records = read_records(args.files)
    if args.command == "summary":
        print(seeds_table(records), end="")
    else:  # points run at several train.max_steps: steps to learn the task in range (lab.budget)
        table = budget_table(records)
        print(markdown_table(table) if not table.empty else "no point was run at several step budgets")
    return 0


if __name__ == "__main__":
    sys.exit(main())

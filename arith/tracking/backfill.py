"""The seen/unseen split of archived runs, recovered where it is exact and nowhere else.

Sweeps archived before the evaluator split each cell's accuracy by whether a test problem is also a
training problem (`arith.training.evaluate.CellResult`: `n_seen`, `accuracy_seen`, `accuracy_unseen`)
lack those columns, so the report cannot show a model that memorised its training set. They can be
recovered without the model: a trial's data is deterministic in its config (logged whole as params),
and `eval/errors.csv` holds the wrong answers of its last evaluation. Where that file kept every wrong
answer of a cell (`n - correct` rows), the split of that cell at that epoch is exact; everywhere else
(earlier epochs, cells whose errors were cut at `train.errors_per_cell`) it stays NaN.

A run is skipped, with its reason, when its regenerated test set does not have the archived cells and
counts, or its regenerated training set does not give the archived `seen_in_train`.

    python -m arith.tracking.backfill docs/results/sweeps/*.jsonl docs/results/gpu/*/*.jsonl

rewrites the archives in place: only the `eval/cells.csv` text of the runs it fills changes; running it
again changes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.examples import Cell, Example
from arith.data.tasks import problem_id, problem_ids
from arith.tracking.archive import ArchiveError, read_archive
from arith.tracking.schema import (
    A_COLUMN,
    B_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    CORRECT_COLUMN,
    EPOCH_COLUMN,
    EXPECTED_COLUMN,
    N_COLUMN,
    PROMPT_COLUMN,
    ROW_DIGITS_COLUMN,
    SEEN_IN_TRAIN_COLUMN,
    SPLIT_COLUMNS,
)

CELLS_CSV, ERRORS_CSV = "eval/cells.csv", "eval/errors.csv"
#: characters a cells.csv field cannot hold unquoted (the text is rebuilt field by field)
_QUOTED = set(',"\r\n')


class Skip(Exception):
    """A run whose split cannot be recovered exactly; the message says why."""


@dataclass
class ArchiveReport:
    """What the backfill did to one archive: run names filled, already filled, skipped with reasons."""

    path: Path
    backfilled: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    exact_cells: int = 0
    seconds: float = 0.0


def config_from_params(params: dict[str, str]) -> ExperimentConfig:
    """A trial's config rebuilt from its MLflow params (every trial logs `cfg.flat()`). A logged data key
    this code does not know would change the data silently, so it fails; other unknown keys are ignored."""
    known = set(ExperimentConfig.keys())
    unknown = sorted(k for k in params if k not in known and k.startswith("data."))
    if unknown:
        raise Skip(f"params {unknown} are unknown to this config: its data cannot be regenerated")
    try:
        return ExperimentConfig().with_overrides({k: v for k, v in params.items() if k in known})
    except ConfigError as err:
        raise Skip(f"params do not make a config ({err})") from err


def _cell_of(row: dict[str, str]) -> Cell:
    row_digits = row[ROW_DIGITS_COLUMN]
    return (
        row[CONTEXT_COLUMN],
        int(float(row_digits)) if row_digits else None,
        int(float(row[COL_DIGITS_COLUMN])),
    )


def _split_text(text: str) -> tuple[str, list[str]]:
    """(line ending, lines without it) of a CSV text that ends with one."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    if lines and lines[-1] == "":
        lines.pop()
    return newline, lines


def _parse_cells(text: str) -> tuple[str, list[str], list[list[str]]]:
    """(line ending, header, rows as field lists) of eval/cells.csv; every field unquoted."""
    newline, lines = _split_text(text)
    rows = [next(csv.reader([line])) for line in lines]
    if not rows or any(ch in _QUOTED for row in rows for value in row for ch in value):
        raise Skip("eval/cells.csv is empty or holds quoted fields")
    return newline, rows[0], rows[1:]


def _number(value: float) -> str:
    """A float as pandas' to_csv writes it (NaN as an empty field)."""
    return "" if math.isnan(value) else repr(float(value))


def _errors_by_cell(text: str, epoch: int) -> dict[Cell, list[dict[str, str]]]:
    """The kept wrong answers per cell; they must all be of the last evaluation (`epoch`)."""
    rows = list(csv.DictReader(text.splitlines(keepends=True)))
    epochs = {int(float(row[EPOCH_COLUMN])) for row in rows}
    if epochs - {epoch}:
        raise Skip(f"eval/errors.csv holds epochs {sorted(epochs)}, the last evaluation is epoch {epoch}")
    out: dict[Cell, list[dict[str, str]]] = {}
    for row in rows:
        out.setdefault(_cell_of(row), []).append(row)
    return out


def _matches(example: Example, row: dict[str, str]) -> bool:
    """Whether a kept wrong answer is this test problem (its operands and expected answer agree)."""
    same_a = not row[A_COLUMN] or int(float(row[A_COLUMN])) == example.a
    same_b = not row[B_COLUMN] or (example.b is not None and int(float(row[B_COLUMN])) == example.b)
    return same_a and same_b and row[EXPECTED_COLUMN] == example.answer.strip()


def split_of_cell(
    examples: Sequence[Example], seen: Sequence[bool], wrong: Sequence[dict[str, str]]
) -> tuple[float, float, float]:
    """(n_seen, accuracy_seen, accuracy_unseen) of one cell whose wrong answers are all in `wrong`,
    computed as `arith.training.evaluate._score_cells` does (NaN accuracy for an empty part). Each wrong
    answer is matched to a test problem by its prompt; problems with the same prompt are one problem,
    seen or not alike."""
    by_prompt: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_prompt.setdefault(e.prompt, []).append(i)
    used = Counter(row[PROMPT_COLUMN] for row in wrong)
    for row in wrong:
        items = by_prompt.get(row[PROMPT_COLUMN], [])
        if used[row[PROMPT_COLUMN]] > len(items) or not all(_matches(examples[i], row) for i in items):
            raise Skip(f"a wrong answer ({row[PROMPT_COLUMN]!r}) is not a test problem of its cell")
    correct = [True] * len(examples)
    for prompt, count in used.items():
        for i in by_prompt[prompt][:count]:
            correct[i] = False
    seen_items = [i for i in range(len(examples)) if seen[i]]
    unseen_items = [i for i in range(len(examples)) if not seen[i]]
    return float(len(seen_items)), _part_accuracy(correct, seen_items), _part_accuracy(correct, unseen_items)


def _part_accuracy(correct: Sequence[bool], items: Sequence[int]) -> float:
    return sum(correct[i] for i in items) / len(items) if items else math.nan


def backfill_cells(record: dict[str, Any]) -> tuple[str, int]:
    """(the run's eval/cells.csv with the split filled where exact, cells filled). Raises Skip."""
    artifacts = record.get("artifacts", {})
    if CELLS_CSV not in artifacts:
        raise Skip("no eval/cells.csv (stopped before its first evaluation)")
    if ERRORS_CSV not in artifacts:
        raise Skip("no eval/errors.csv (archived before wrong answers were kept)")
    newline, header, rows = _parse_cells(artifacts[CELLS_CSV])
    has_split = all(column in header for column in SPLIT_COLUMNS)
    header = header if has_split else [*header, *SPLIT_COLUMNS]
    rows = [row if has_split else [*row, "", "", ""] for row in rows]
    table = [dict(zip(header, row, strict=True)) for row in rows]
    last = max(int(float(row[EPOCH_COLUMN])) for row in table)
    errors = _errors_by_cell(artifacts[ERRORS_CSV], last)
    final = {_cell_of(row): row for row in table if int(float(row[EPOCH_COLUMN])) == last}
    exact = [
        c
        for c, row in final.items()
        if int(row[N_COLUMN]) - int(row[CORRECT_COLUMN]) == len(errors.get(c, []))
    ]
    if set(errors) - set(final):
        raise Skip(
            f"eval/errors.csv has cells {sorted(set(errors) - set(final), key=str)} that cells.csv lacks"
        )
    over = [
        c
        for c, row in final.items()
        if int(row[N_COLUMN]) - int(row[CORRECT_COLUMN]) < len(errors.get(c, []))
    ]
    if over:
        raise Skip(f"cells {sorted(over, key=str)} have more kept wrong answers than n - correct")
    if not exact:
        raise Skip(f"every cell's wrong answers were cut at train.errors_per_cell (epoch {last})")
    cfg = config_from_params(record.get("params", {}))
    test = _test_by_cell(cfg, table)
    train = problem_ids(train_examples(cfg.data))
    seen = {c: [problem_id(e) in train for e in examples] for c, examples in test.items()}
    for row in table:
        cell, fraction = _cell_of(row), float(row[SEEN_IN_TRAIN_COLUMN] or "nan")
        if fraction != sum(seen[cell]) / len(seen[cell]):
            raise Skip(
                f"cell {cell}: archived seen_in_train {row[SEEN_IN_TRAIN_COLUMN]} != regenerated "
                f"{sum(seen[cell])}/{len(seen[cell])}"
            )
    for cell in exact:
        values = [_number(v) for v in split_of_cell(test[cell], seen[cell], errors.get(cell, []))]
        row = final[cell]
        old = [row[c] for c in SPLIT_COLUMNS]
        if any(old) and old != values:
            raise Skip(f"cell {cell}: the archived split {old} differs from the recovered {values}")
        row.update(zip(SPLIT_COLUMNS, values, strict=True))
    lines = [",".join(header), *(",".join(row[c] for c in header) for row in table)]
    return "".join(line + newline for line in lines), len(exact)


def _test_by_cell(cfg: ExperimentConfig, table: list[dict[str, str]]) -> dict[Cell, list[Example]]:
    """The regenerated test set per cell, checked against the archived cells and their counts."""
    try:
        examples = test_examples(cfg.data)
    except ConfigError as err:
        raise Skip(f"its test set cannot be regenerated ({err})") from err
    test: dict[Cell, list[Example]] = {}
    for e in examples:
        test.setdefault(e.cell, []).append(e)
    for row in table:
        cell = _cell_of(row)
        if cell not in test or len(test[cell]) != int(row[N_COLUMN]):
            got = len(test.get(cell, []))
            raise Skip(
                f"regenerated test set has {got} problems in cell {cell}, cells.csv says {row[N_COLUMN]}"
            )
    archived = {_cell_of(row) for row in table}
    if set(test) != archived:
        raise Skip(f"regenerated test cells {sorted(set(test) - archived, key=str)} are not archived")
    return test


def backfill_archive(path: Path, *, write: bool = True) -> ArchiveReport:
    """Fill the split into every trial run of the archive at `path` where it is exact; rewrite the file
    (only the changed runs' lines, serialised as the archive module writes them) unless `write` is off."""
    start = time.perf_counter()
    read_archive(path)  # the header and the parent are checked there
    report = ArchiveReport(path)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    changed = False
    for index, line in enumerate(lines):
        record = json.loads(line) if line.strip() else None
        if not record or "format" in record or record.get("parent_run_id") is None:
            continue
        name = record.get("run_name") or record["run_id"]
        try:
            cells, n_exact = backfill_cells(record)
        except Skip as reason:
            report.skipped[name] = str(reason)
            continue
        report.exact_cells += n_exact
        if cells == record["artifacts"][CELLS_CSV]:
            report.unchanged.append(name)
            continue
        record["artifacts"][CELLS_CSV] = cells
        lines[index] = json.dumps(record)
        report.backfilled.append(name)
        changed = True
    if changed and write:
        path.write_text("\n".join(lines), encoding="utf-8")
    report.seconds = time.perf_counter() - start
    return report


def _print_report(report: ArchiveReport) -> None:
    print(
        f"{report.path}: {len(report.backfilled)} run(s) backfilled, {len(report.unchanged)} already, "
        f"{len(report.skipped)} skipped; {report.exact_cells} exact cells ({report.seconds:.0f} s)"
    )
    reasons: dict[str, list[str]] = {}
    for name, reason in report.skipped.items():
        reasons.setdefault(reason, []).append(name)
    for reason, names in reasons.items():
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        print(f"  skipped {shown}: {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arith.tracking.backfill", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("archives", nargs="+", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        for path in args.archives:
            _print_report(backfill_archive(path, write=not args.dry_run))
    except ArchiveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"done in {(time.perf_counter() - start) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())

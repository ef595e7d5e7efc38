"""The paper's evaluation: exact match per test cell (`decoding.is_right`: for dialogues the last number of
the teacher's reply, as the paper checks), the share of each cell's problems that were training problems
(which the paper worries about but never measures), and the wrong answers kept for `digit_errors`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Hashable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from arith.data.examples import Cell, Example
from arith.data.tasks import problem_id
from arith.tracking import schema
from arith.training.decoding import generate_replies, is_right

#: a failure's fields in the trainer's log of failed decodings (eval/failures.jsonl)
FAILURE_COLUMNS = (schema.PROMPT_COLUMN, schema.EXPECTED_COLUMN, "generated", *schema.CELL_KEYS)


@dataclass(frozen=True)
class CellResult:
    """One cell of the paper's grids, its accuracy split by whether each problem is also a training problem
    (a model that memorised is right on the seen ones only); NaN where unknown or empty."""

    context: str
    row_digits: int | None
    col_digits: int
    n: int
    correct: int
    accuracy: float
    seen_in_train: float = math.nan
    n_seen: float = math.nan
    accuracy_seen: float = math.nan
    accuracy_unseen: float = math.nan


@dataclass(frozen=True)
class Failure:
    """A wrong answer, like the paper's table tab:fail."""

    prompt: str
    expected: str
    generated: str
    cell: Cell
    #: the operands (b is None for reversal)
    a: int | None = None
    b: int | None = None

    def to_json(self) -> dict:
        return dict(
            zip(FAILURE_COLUMNS, (self.prompt, self.expected, self.generated, *self.cell), strict=True)
        )


@dataclass
class EvalResult:
    cells: list[CellResult]
    #: the first `failures_per_cell` wrong answers of each cell
    failures: list[Failure]
    #: wall-clock seconds of the whole evaluation (encoding, decoding, scoring)
    seconds: float
    #: every wrong answer, up to `errors_per_cell` a cell, in the order of the examples
    errors: list[Failure] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        return sum(cell.n for cell in self.cells)

    @property
    def samples_per_s(self) -> float:
        return self.n_samples / self.seconds if self.seconds > 0 else math.inf

    def mean_accuracy(self, context: str | None = None) -> float:
        """The unweighted mean over cells (the paper's tables give every cell equal weight)."""
        cells = [c for c in self.cells if context is None or c.context == context]
        return float(np.mean([c.accuracy for c in cells])) if cells else math.nan

    def seen_fraction(self) -> float:
        """Fraction of all test items that were also training items (NaN without a training set)."""
        if not self.cells or math.isnan(self.cells[0].seen_in_train):
            return math.nan
        return sum(c.seen_in_train * c.n for c in self.cells) / self.n_samples

    def to_frame(self) -> pd.DataFrame:
        """One row per cell, columns CELL_COLUMNS (row_digits is None for one-dimensional grids)."""
        return pd.DataFrame([asdict(c) for c in self.cells], columns=schema.CELL_COLUMNS)

    def failures_frame(self) -> pd.DataFrame:
        return pd.DataFrame([f.to_json() for f in self.failures], columns=FAILURE_COLUMNS)

    def errors_frame(self) -> pd.DataFrame:
        """The kept wrong answers, one row each, columns ERROR_COLUMNS (`reply` = the generated text)."""
        rows = [(*f.cell, f.a, f.b, f.prompt, f.expected, f.generated) for f in self.errors]
        frame = pd.DataFrame(rows, columns=schema.ERROR_COLUMNS)
        operands = {c: schema.operand_dtype(frame[c]) for c in (schema.A_COLUMN, schema.B_COLUMN)}
        return frame.astype({**operands, schema.ROW_DIGITS_COLUMN: "Int64"})


def evaluate(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    batch_size: int = 256,
    train_problems: Collection[Hashable] | None = None,
    failures_per_cell: int = 3,
    errors_per_cell: int = 100,
    seed: int = 0,
    max_new_tokens: int = 0,
) -> EvalResult:
    """Greedy-decode every example's prompt and score it per cell. `train_problems`: `problem_ids` of the
    training set, for `seen_in_train`; `seed` fixes the test's random position draws; `max_new_tokens`:
    every reply's cap (0 = `reply_cap`; set it for a dialogue file longer than the generator's templates)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    missing = [e for e in examples if e.cell is None]
    if missing:
        raise ValueError(f"every test example needs a cell; {len(missing)} have none, e.g. {missing[0]}")
    start = time.perf_counter()
    generated, ended = generate_replies(
        model, tokenizer, examples, batch_size=batch_size, seed=seed, max_new_tokens=max_new_tokens
    )
    correct = [is_right(e, text, done) for e, text, done in zip(examples, generated, ended, strict=True)]
    seen = None if train_problems is None else [problem_id(e) in train_problems for e in examples]
    wrong = [
        Failure(prompt=e.prompt, expected=e.answer.strip(), generated=text.strip(), cell=e.cell, a=e.a, b=e.b)
        for e, text, ok in zip(examples, generated, correct, strict=True)
        if not ok
    ]
    return EvalResult(
        cells=_score_cells(examples, correct, seen),
        failures=_first_per_cell(wrong, failures_per_cell),
        seconds=time.perf_counter() - start,
        errors=_first_per_cell(wrong, errors_per_cell),
    )


def _score_cells(
    examples: Sequence[Example], correct: Sequence[bool], seen: Sequence[bool] | None
) -> list[CellResult]:
    """Each cell's scores, by context (in order of first appearance), then row and column digits."""
    by_cell: dict[Cell, list[int]] = {}
    for i, e in enumerate(examples):
        by_cell.setdefault(e.cell, []).append(i)
    contexts = list(dict.fromkeys(cell[0] for cell in by_cell))
    results = []
    for cell in sorted(by_cell, key=lambda c: (contexts.index(c[0]), -1 if c[1] is None else c[1], c[2])):
        items = by_cell[cell]
        n_correct = sum(correct[i] for i in items)
        split: dict[str, float] = {}
        if seen is not None:
            seen_items = [i for i in items if seen[i]]
            split = {
                schema.SEEN_IN_TRAIN_COLUMN: len(seen_items) / len(items),
                schema.N_SEEN_COLUMN: float(len(seen_items)),
                schema.ACCURACY_SEEN_COLUMN: _accuracy(correct, seen_items),
                schema.ACCURACY_UNSEEN_COLUMN: _accuracy(correct, [i for i in items if not seen[i]]),
            }
        results.append(CellResult(*cell, len(items), n_correct, n_correct / len(items), **split))
    return results


def _accuracy(correct: Sequence[bool], items: Sequence[int]) -> float:
    return sum(correct[i] for i in items) / len(items) if items else math.nan


def _first_per_cell(failures: Sequence[Failure], per_cell: int) -> list[Failure]:
    kept: dict[Cell, int] = {}
    out = []
    for failure in failures:
        if kept.get(failure.cell, 0) < per_cell:
            kept[failure.cell] = kept.get(failure.cell, 0) + 1
            out.append(failure)
    return out

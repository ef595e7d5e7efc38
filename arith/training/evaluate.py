"""The paper's evaluation: exact match per test cell, memorisation and failures.

Every prompt is answered greedily (`arith.training.decoding`); a reply is correct iff it ended within its
cap and `arith.data.tasks.answer_key(task, format, generated) == example.key` (`decoding.is_right`): for
dialogues the last number of the teacher's reply, as the paper checks "the teacher's response". Each cell
also records the fraction of its test problems that were in the training set
(`arith.data.tasks.problem_id`), which the paper worries about for small digit counts but never measures.

Wrong answers are kept: every one up to `errors_per_cell` a cell (`EvalResult.errors`, with the operands,
for `arith.tracking.digit_errors`), and the first `failures_per_cell` of those as `EvalResult.failures`.
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
from arith.tracking.schema import (
    A_COLUMN,
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    B_COLUMN,
    CELL_COLUMNS,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    ERROR_COLUMNS,
    EXPECTED_COLUMN,
    N_SEEN_COLUMN,
    PROMPT_COLUMN,
    ROW_DIGITS_COLUMN,
    SEEN_IN_TRAIN_COLUMN,
    operand_dtype,
)
from arith.training.decoding import generate_replies, is_right


@dataclass(frozen=True)
class CellResult:
    """One cell of the paper's grids, its accuracy split by whether each test problem is also a training
    problem: a model that memorised its training set is right on the seen ones only. `seen_in_train`
    (the seen fraction), `n_seen` and the split accuracies are NaN when no training set was given; an
    accuracy is NaN where its part is empty."""

    context: str
    row_digits: int | None
    col_digits: int
    n: int
    correct: int
    accuracy: float
    seen_in_train: float
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
        context, row_digits, col_digits = self.cell
        return {
            PROMPT_COLUMN: self.prompt,
            EXPECTED_COLUMN: self.expected,
            "generated": self.generated,
            CONTEXT_COLUMN: context,
            ROW_DIGITS_COLUMN: row_digits,
            COL_DIGITS_COLUMN: col_digits,
        }


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
        return pd.DataFrame([asdict(c) for c in self.cells], columns=CELL_COLUMNS)

    def failures_frame(self) -> pd.DataFrame:
        columns = [
            PROMPT_COLUMN,
            EXPECTED_COLUMN,
            "generated",
            CONTEXT_COLUMN,
            ROW_DIGITS_COLUMN,
            COL_DIGITS_COLUMN,
        ]
        return pd.DataFrame([f.to_json() for f in self.failures], columns=columns)

    def errors_frame(self) -> pd.DataFrame:
        """The kept wrong answers, one row each, columns ERROR_COLUMNS (`reply` = the generated text)."""
        rows = [(*f.cell, f.a, f.b, f.prompt, f.expected, f.generated) for f in self.errors]
        frame = pd.DataFrame(rows, columns=ERROR_COLUMNS)
        operands = {c: operand_dtype(frame[c]) for c in (A_COLUMN, B_COLUMN)}
        return frame.astype({**operands, ROW_DIGITS_COLUMN: "Int64"})


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
    """Greedy-decode every example's prompt and score it per cell.

    `train_problems`: `arith.data.tasks.problem_ids(train_examples)`, for each cell's `seen_in_train`.
    `errors_per_cell`: wrong answers kept a cell (`EvalResult.errors`; the failures are the first of them).
    `seed` fixes the random position draws (random_embed tags, randomized ids) of the test.
    `max_new_tokens`: the decoding cap of every reply (0 = `reply_cap`, fitted to the data; set it for
    a dialogue file whose replies are longer than the generator's templates)."""
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
    seen = None
    if train_problems is not None:
        seen = [problem_id(e) in train_problems for e in examples]
    cells = _score_cells(examples, correct, seen)
    errors = _pick_failures(examples, generated, correct, max(errors_per_cell, failures_per_cell))
    failures = _first_per_cell(errors, failures_per_cell)
    errors = _first_per_cell(errors, errors_per_cell)
    return EvalResult(cells=cells, failures=failures, seconds=time.perf_counter() - start, errors=errors)


def _cell_order(examples: Sequence[Example]) -> list[Cell]:
    """Cells sorted by context (in order of first appearance), then row and column digits."""
    contexts: dict[str, int] = {}
    for e in examples:
        contexts.setdefault(e.cell[0], len(contexts))
    cells = {e.cell for e in examples}
    return sorted(cells, key=lambda c: (contexts[c[0]], -1 if c[1] is None else c[1], c[2]))


def _score_cells(
    examples: Sequence[Example], correct: Sequence[bool], seen: Sequence[bool] | None
) -> list[CellResult]:
    by_cell: dict[Cell, list[int]] = {}
    for i, e in enumerate(examples):
        by_cell.setdefault(e.cell, []).append(i)
    results = []
    for cell in _cell_order(examples):
        items = by_cell[cell]
        n_correct = sum(correct[i] for i in items)
        split: dict[str, float] = {}
        if seen is not None:
            seen_items = [i for i in items if seen[i]]
            unseen_items = [i for i in items if not seen[i]]
            split = {
                SEEN_IN_TRAIN_COLUMN: len(seen_items) / len(items),
                N_SEEN_COLUMN: float(len(seen_items)),
                ACCURACY_SEEN_COLUMN: _accuracy(correct, seen_items),
                ACCURACY_UNSEEN_COLUMN: _accuracy(correct, unseen_items),
            }
        results.append(
            CellResult(
                cell[0],
                cell[1],
                cell[2],
                len(items),
                n_correct,
                n_correct / len(items),
                split.pop(SEEN_IN_TRAIN_COLUMN, math.nan),
                **split,
            )
        )
    return results


def _accuracy(correct: Sequence[bool], items: Sequence[int]) -> float:
    return sum(correct[i] for i in items) / len(items) if items else math.nan


def _pick_failures(
    examples: Sequence[Example], generated: Sequence[str], correct: Sequence[bool], per_cell: int
) -> list[Failure]:
    """The first `per_cell` wrong answers of each cell, in the order of `examples`."""
    kept: dict[Cell, int] = {}
    failures = []
    for e, text, ok in zip(examples, generated, correct, strict=True):
        if ok or kept.get(e.cell, 0) >= per_cell:
            continue
        kept[e.cell] = kept.get(e.cell, 0) + 1
        failures.append(
            Failure(
                prompt=e.prompt, expected=e.answer.strip(), generated=text.strip(), cell=e.cell, a=e.a, b=e.b
            )
        )
    return failures


def _first_per_cell(failures: Sequence[Failure], per_cell: int) -> list[Failure]:
    kept: dict[Cell, int] = {}
    out = []
    for failure in failures:
        if kept.get(failure.cell, 0) < per_cell:
            kept[failure.cell] = kept.get(failure.cell, 0) + 1
            out.append(failure)
    return out

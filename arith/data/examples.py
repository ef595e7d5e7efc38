"""The unit of data: one rendered line, split into the prompt and the answer the model must produce."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: A test cell, as in the paper's tables: (context, row_digits, col_digits). Multiplication: row = digits
#: of b, col = digits of a; other tasks: row is None, col = each operand's digits. Contexts: "main";
#: "regular"/"repetitive" for digit reversal; "dialogue"/"pure_addition" for the dialogue task.
Cell = tuple[str, "int | None", int]


@dataclass(frozen=True, slots=True)
class Example:
    """One line of data. `text` is what a model is trained on; `prompt` is what the evaluator feeds.

    Conventions shared by every format:
    - `answer` starts with a space, so prompt and answer tokenize the same apart as together;
    - `text` has no leading space: tokenizers prepend one, so that the first digit is also " d";
    - `key` is what exact match compares: `arith.data.tasks.answer_key(task, format, answer)`.
    """

    task: str
    format: str
    a: int
    b: int | None
    prompt: str
    answer: str
    key: str
    #: what produced the line: "main", or "n_times_1" / "first_step" (augmentation), "dialogue", "mix"
    kind: str = "main"
    cell: Cell | None = None

    @property
    def text(self) -> str:
        return self.prompt + self.answer

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.text, "cell": list(self.cell) if self.cell is not None else None}

"""`python -m arith.data dump|preview`: a task's data as JSONL, or a few lines for a person to read.

    python -m arith.data dump --task mul --format padding_reverse --max-digits 5 --count 1000 --out d.jsonl
    python -m arith.data preview --task add_scratchpad --format recursive_scratchpad

Settings are checked before anything is written: a bad one leaves the output file untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arith.config import ConfigError
from arith.data.datasets import OPTIONS, generate
from arith.data.examples import Example
from arith.data.tasks import TASKS


def write_jsonl(examples: Iterable[Example], path: str | os.PathLike[str]) -> int:
    """Write one JSON object per example (task, format, a, b, prompt, answer, text, key, kind, cell),
    atomically: a reader never sees a half-written file. Returns the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for e in examples:
                f.write(json.dumps(e.to_json()) + "\n")
                n += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--task", required=True, help=f"one of: {', '.join(TASKS)}")
    common.add_argument("--format", help="the task's data format (default: its first, 'basic')")
    common.add_argument("--split", default="train", help="train or test (default train)")
    common.add_argument("--min-digits", type=int)
    common.add_argument("--max-digits", type=int)
    common.add_argument("--one-digit-weight", type=float, help="mul: weight of 1 digit in {a,1,...,1}")
    common.add_argument("--augment", help="mul: none, n_times_1 or first_step")
    common.add_argument("--reverse-addends", action="store_true", help="add_scratchpad recursive_scratchpad")
    common.add_argument("--random-space-prob", type=float)
    common.add_argument("--mix-format", help="dialogue: none, basic or random_space")
    common.add_argument("--mix-samples", type=int)
    common.add_argument("--dialogue-file", help="dialogue: a JSONL (`text` field) or text file to load")
    common.add_argument("--test-digits", help="comma-separated digit counts of the test cells")
    common.add_argument(
        "--count", type=int, help="training lines (test split: lines per cell); default paper's"
    )
    common.add_argument("--seed", type=int, default=0)
    parser = argparse.ArgumentParser(prog="python -m arith.data", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", parents=[common], help="write the dataset as JSONL")
    dump.add_argument("--out", required=True, help="output .jsonl file")
    preview = sub.add_parser("preview", parents=[common], help="print a few lines for a person to read")
    preview.add_argument("--lines", type=int, default=8)
    return parser


def _options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The data flags given: one left out (None, or a switch left off) keeps the task's default."""
    return {k: v for k, v in values.items() if k in OPTIONS and v is not None and v is not False}


def _preview(examples: Sequence[Example], lines: int) -> None:
    kinds = Counter(e.kind for e in examples)
    print(f"{len(examples)} examples ({', '.join(f'{k}: {n}' for k, n in kinds.items())})")
    for e in examples[:lines]:
        cell = f" cell={e.cell}" if e.cell else ""
        print(f"{e.prompt}|{e.answer}".replace("\n", "\u23ce") + f"    [key {e.key}{cell}]")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        examples = generate(
            args.task, args.format, count=args.count, seed=args.seed, split=args.split, **_options(vars(args))
        )
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "dump":
        n = write_jsonl(examples, args.out)
        print(f"wrote {n} lines to {args.out}", file=sys.stderr)
    else:
        _preview(examples, args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

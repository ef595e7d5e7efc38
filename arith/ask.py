"""`python -m arith.ask --grid demo --point padding_reverse --seed 0 "123+456"`: ask a trial's trained model a
problem and see what it writes.

    python -m arith.ask --grid demo --point padding_reverse --seed 0 "123+456"   # the demo's padded model
    python -m arith.ask --grid mul_format --point padding_reverse_10 "123*456"  # a mul_format trial
    python -m arith.ask runs:/<run id> --cell 3x3 --n 20   # the first 20 problems of a test cell

The trial is `--grid`, `--point` (its name, `format=padding_reverse`, or its label, `padding_reverse`) and
`--seed` (default 0) in the grid's latest sweep (or `--sweep <parent run id>`), or RUN: `runs:/<run id>`
(its logged model), a bare run id, any MLflow artifact URI of a model folder, or a local one
(`ArithModel.save` plus `experiment_config.json`, as `tracking.log_model` keeps it). A problem is written
in the task's notation: `123+456` for addition, `123*456` for multiplication. The prompt is rendered in the
trial's format; the reply, the expected answer, right or wrong follow. The store of a run is
`--tracking-uri`, else $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db. A run
imported from an offline sweep's archive has no `model/`: its weights are read from beside the archive when
its sweep kept them (`sweeps.offline --keep-weights`), else one line says there are none. A cell
is `AxB` (digits of a x digits of b) for multiplication, the digit count for one-dimensional tasks, with
`CONTEXT:` in front for another context than `main` (`repetitive:5`). Decoding is the evaluation's
(greedy, batched, the trial's test seed): a problem of the test grid gets the reply the trial scored.
Bad input (an unknown run, a problem the task cannot read, a folder that is not a saved model) exits 2
with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from safetensors import SafetensorError

from arith.config import ConfigError, ExperimentConfig, TrackingConfig
from arith.data.datasets import test_examples
from arith.data.examples import Example
from arith.data.tasks import answer_number, get_task
from arith.model.gpt import ModelFolderError, load_folder
from arith.model.tokenizer import encode_examples
from arith.tracking import store
from arith.tracking.models import kept_weights, model_folder
from arith.tracking.schema import EXPERIMENT_CONFIG
from arith.tracking.trial_lookup import TrialNotFound, trial_run_id
from arith.training.decoding import generate_replies, is_right, reply_cap

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_PROBLEM = re.compile(r"^\s*(\d+)\s*([*x×+])\s*(\d+)\s*$")
#: the operator a typed problem of each task uses


class AskError(ValueError):
    """Input `ask` cannot answer; the message is the one line it prints."""


@dataclass
class Answer:
    example: Example
    reply: str
    right: bool


def model_uri(run: str) -> str:
    """`runs:/<id>` and a bare run id mean the run's `model/` artifact; anything else is taken as is."""
    if _RUN_ID.match(run):
        return f"runs:/{run}/model"
    if run.startswith("runs:/") and run.rstrip("/").count("/") == 1:
        return run.rstrip("/") + "/model"
    return run


def typed_example(cfg: ExperimentConfig, problem: str) -> Example:
    """The problem `a*b` / `a+b` rendered as the trial's format renders its test lines
    (`Task.typed_example`)."""
    d = cfg.data
    task = get_task(d.task)
    if not task.operator:
        raise AskError(f"task {d.task!r} takes no typed problem; ask it with --cell (its test grid)")
    match = _PROBLEM.match(problem)
    if match is None or (match.group(2) in "x×*") != (task.operator == "*"):
        raise AskError(
            f"cannot read {problem!r} as a problem of task {d.task}: write it like 12{task.operator}34"
        )
    try:
        return task.typed_example(d, int(match.group(1)), int(match.group(3)))
    except (ConfigError, ValueError) as err:
        raise AskError(f"cannot pose {problem!r} in format {d.format!r}: {err}") from err


def parse_cell(text: str) -> tuple[str, int | None, int]:
    """`3x2` -> ("main", 2, 3) (digits of a x digits of b; rows are b's digits); `5` -> ("main", None, 5);
    `repetitive:5` -> ("repetitive", None, 5)."""
    context, _, digits = text.rpartition(":")
    match = re.fullmatch(r"(\d+)(?:[x×](\d+))?", digits.strip())
    if match is None:
        raise AskError(f"cannot read cell {text!r}: write AxB (digits of a x b) or N, e.g. 3x3 or 5")
    a_digits, b_digits = int(match.group(1)), match.group(2)
    return (context or "main", None if b_digits is None else int(b_digits), a_digits)


def cell_examples(cfg: ExperimentConfig, cell_text: str, n: int) -> list[Example]:
    """The first `n` test problems of a cell of the trial's test grid."""
    cell = parse_cell(cell_text)
    tests = test_examples(cfg.data)
    chosen = [e for e in tests if e.cell == cell][:n]
    if not chosen:
        cells = sorted({_cell_text(e.cell) for e in tests})
        raise AskError(f"no test cell {cell_text!r} in this trial's grid; its cells: {', '.join(cells)}")
    return chosen


def _cell_text(cell) -> str:
    context, rows, cols = cell
    text = str(cols) if rows is None else f"{cols}x{rows}"
    return text if context == "main" else f"{context}:{text}"


def ask(model, tokenizer, cfg: ExperimentConfig, examples: Sequence[Example]) -> list[Answer]:
    """Greedy replies, decoded and scored as the evaluation does."""
    replies, ended = generate_replies(
        model,
        tokenizer,
        examples,
        batch_size=cfg.train.eval_batch_size,
        seed=cfg.train.seed,
        max_new_tokens=cfg.train.eval_max_new_tokens,
    )
    return [
        Answer(e, text.strip(), is_right(e, text, done))
        for e, text, done in zip(examples, replies, ended, strict=True)
    ]


def check_fits(cfg: ExperimentConfig, tokenizer, examples: Sequence[Example]) -> None:
    """A problem whose prompt and longest reply need more positions than the model has cannot be asked."""
    for example, (ids, start) in zip(examples, encode_examples(tokenizer, examples), strict=True):
        need = start + (cfg.train.eval_max_new_tokens or reply_cap(tokenizer, example, len(ids) - start))
        if need > cfg.model.n_positions:
            raise AskError(
                f"{example.prompt.strip()!r} and its reply need {need} positions; the model has "
                f"model.n_positions={cfg.model.n_positions}: ask a shorter problem"
            )


def run_id_of(run: str) -> str | None:
    """The run id that `runs:/<id>` or a bare id names; None for a folder or another URI."""
    text = run.removeprefix("runs:/").strip("/")
    return text if _RUN_ID.match(text) else None


def load(run: str, tracking_uri: str = "", device: str = "cpu"):
    """(model, tokenizer, trial config) of a run's or folder's saved model; for a run whose store holds
    none, the weights its offline sweep kept (`kept_weights`)."""
    try:
        return _load(model_uri(run), run, tracking_uri, device)
    except AskError as err:
        run_id = run_id_of(run)
        if run_id is None or Path(run).exists():
            raise
        unloaded = err
    try:
        folder = kept_weights(run_id, tracking_uri)
    except ModelFolderError as err:
        raise AskError(str(err)) from None
    if folder is None:  # no such run: the download's own error says so
        raise unloaded
    return _load(str(folder), run, tracking_uri, device)


def _load(uri: str, run: str, tracking_uri: str, device: str):
    from transformers import PreTrainedTokenizerFast

    try:
        with model_folder(uri, tracking_uri) as folder:
            model = load_folder(folder, device)
            config = folder / EXPERIMENT_CONFIG
            if not config.exists():
                raise AskError(f"{run}: the model has no {EXPERIMENT_CONFIG} (not saved by a trial)")
            cfg = ExperimentConfig.from_dict(json.loads(config.read_text()))
            tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder))
    except (ModelFolderError, OSError) as err:
        raise AskError(str(err).splitlines()[0]) from err
    except SafetensorError as err:  # a weights file cut short (an interrupted copy or download)
        raise AskError(f"{run}: the model's weights cannot be read ({err})") from err
    return model.eval(), tokenizer, cfg


def find_trial(tracking_uri: str, grid: str, point: str, seed: int, sweep: str = "") -> str:
    """The run id of a trial named by grid, point and seed (`arith.tracking.trial_lookup`)."""
    uri = TrackingConfig(tracking_uri=tracking_uri).resolved_uri()
    try:
        store.check_reachable(uri)
        return trial_run_id(uri, grid, point, seed, sweep)
    except (TrialNotFound, store.StoreError) as err:
        raise AskError(str(err)) from None


def read_as_number(cfg: ExperimentConfig, text: str) -> str:
    """`text` followed by the number a person reads in it (`9 7 5 0  (= 579)`: padded, reversed), where
    the task's answer is one."""
    number = answer_number(cfg.data.task, cfg.data.format, text)
    return text if number is None else f"{text}  (= {number})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arith.ask",
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n" + __doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", nargs="?", help="runs:/<run id>, a run id, a model URI or folder")
    parser.add_argument("problem", nargs="?", help='a problem in the task\'s notation: "123+456", "123*456"')
    parser.add_argument("--grid", help="the trial's grid (instead of RUN), e.g. demo")
    parser.add_argument("--point", help="with --grid: the trial's point, e.g. padding_reverse")
    parser.add_argument("--seed", type=int, default=0, help="with --grid: the trial's seed (default 0)")
    parser.add_argument("--sweep", default="", help="with --grid: its sweep's parent run id (default latest)")
    parser.add_argument("--cell", help="a cell of the test grid instead: AxB (digits of a x b) or N")
    parser.add_argument("--n", type=int, default=10, help="problems of --cell to ask (default 10)")
    parser.add_argument("--tracking-uri", default="", help="the run's store (default $MLFLOW_TRACKING_URI)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    if args.grid:  # the trial by name: the one positional given is the problem
        if args.problem is not None:
            parser.error("give --grid and --point, or RUN, not both")
        if not args.point:
            parser.error("--grid needs --point (and --seed, default 0)")
        args.run, args.problem = None, args.run
    elif args.run is None:
        parser.error("give RUN, or --grid, --point and --seed")
    if (args.problem is None) == (args.cell is None):
        parser.error("give a problem or --cell, not both")
    try:
        if args.grid:
            args.run = find_trial(args.tracking_uri, args.grid, args.point, args.seed, args.sweep)
        model, tokenizer, cfg = load(args.run, args.tracking_uri, args.device)
        examples = (
            [typed_example(cfg, args.problem)]
            if args.problem is not None
            else cell_examples(cfg, args.cell, args.n)
        )
        check_fits(cfg, tokenizer, examples)
        answers = ask(model, tokenizer, cfg, examples)
    except AskError as err:
        print(f"ask: {err}", file=sys.stderr)
        return 2
    print(f"# {cfg.data.task}, format {cfg.data.format}, position {cfg.model.position} ({args.run})")
    if len(answers) == 1:
        answer = answers[0]
        print(f"prompt:   {answer.example.prompt}")
        print(f"reply:    {read_as_number(cfg, answer.reply)}")
        print(f"expected: {read_as_number(cfg, answer.example.answer.strip())}")
        print(f"right:    {'yes' if answer.right else 'no'}")
        return 0
    width = max(len(a.example.prompt) for a in answers)
    for answer in answers:
        mark = "right" if answer.right else "WRONG"
        expected = (
            "" if answer.right else f"   (expected {read_as_number(cfg, answer.example.answer.strip())})"
        )
        print(f"{answer.example.prompt:<{width}}  {read_as_number(cfg, answer.reply)}   {mark}{expected}")
    right = sum(a.right for a in answers)
    print(f"{right}/{len(answers)} right in cell {args.cell}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Position coupling beside its authors' own code on the same protocol: `python -m lab.peer_coupling`.

The authors' code (HanseulJo/position-coupling, commit b9cad94), run on this project's CPU kind with 1
layer, 128 wide, batch 128, lr 1e-3 and 8,600 steps (19 CPU-minutes), trained on 1-5-digit operands and
tested on 1,000 problems a length with the start offset at 1, read the accuracies of `PEER`
(docs/position_schemes.md). Their code scores a problem right when the argmax at every answer position of
one teacher-forced pass is the true token (its "instance accuracy"); this project scores the reply greedy
decoding writes. This command reads both off `length_gen`'s coupling trials (their logged models, every
judged seed), on 1,000 problems a length drawn as the trial's test draws them, and prints them beside the
peer's, with the share of greedy replies that wrote the whole sum and did not stop (a missed stop fails
both measures: the end token is an answer position).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from arith.ask import AskError, load
from arith.config import TrackingConfig
from arith.data.datasets import test_examples
from arith.tracking import store
from arith.tracking.schema import GRID_TAG, POINT_TAG, SEED_TAG
from arith.training.decoding import generate_replies, is_right
from arith.training.forced import forced_correct

#: the authors' code on 1-5-digit training, accuracy by operand length (1,000 problems a length)
PEER = {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: 0.98, 7: 0.29, 8: 0.53, 9: 0.56, 10: 0.63, 11: 0.50}
PEER |= {15: 0.16, 21: 0.16}


def coupling_runs(tracking_uri: str, grid: str, point: str) -> list[tuple[int, str]]:
    """(seed, run id) of the latest sweep's finished trials of `point`, judged seeds (below 100) only."""
    client = store.client(tracking_uri)
    experiment = client.get_experiment_by_name(grid)
    if experiment is None:
        raise AskError(f"no experiment {grid!r} at {tracking_uri}")
    runs = client.search_runs(
        [experiment.experiment_id],
        f"tags.{POINT_TAG} = '{point}' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    latest: dict[int, str] = {}
    for run in runs:
        seed = int(run.data.tags.get(SEED_TAG, "-1"))
        if 0 <= seed < 100 and run.data.tags.get(GRID_TAG) == grid:
            latest.setdefault(seed, run.info.run_id)
    return sorted(latest.items())


def read_trial(run_id: str, tracking_uri: str, per_length: int, lengths: Sequence[int]) -> pd.DataFrame:
    """One trial's greedy and teacher-forced accuracy by operand length."""
    model, tokenizer, cfg = load(run_id, tracking_uri)
    data = dataclasses.replace(cfg.data, test_digits=list(lengths), test_per_cell=per_length)
    examples = [e for e in test_examples(data) if e.cell[0] == "main"]
    batch = cfg.train.eval_batch_size
    replies, ended = generate_replies(model, tokenizer, examples, batch_size=batch, seed=cfg.train.seed)
    greedy = [is_right(e, r, d) for e, r, d in zip(examples, replies, ended, strict=True)]
    # every digit of the answer written, then more: the sum right, the stop missed
    overran = [
        not right and r.strip().startswith(e.answer.strip()) and len(r.strip()) > len(e.answer.strip())
        for e, r, right in zip(examples, replies, greedy, strict=True)
    ]
    forced = forced_correct(model, tokenizer, examples, batch_size=batch)
    frame = pd.DataFrame(
        {"length": [e.cell[2] for e in examples], "greedy": greedy, "forced": forced, "overran": overran}
    )
    return frame.groupby("length").mean().reset_index()


def beside_peer(readings: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """By length: the peer's accuracy, and ours greedy and teacher-forced (mean over seeds, lowest seed)."""
    every = pd.concat([r.assign(seed=s) for s, r in readings.items()])
    by = every.groupby("length")
    out = pd.DataFrame(
        {
            "peer (teacher-forced)": pd.Series(PEER),
            "ours teacher-forced, mean": by["forced"].mean(),
            "lowest seed": by["forced"].min(),
            "ours greedy, mean": by["greedy"].mean(),
            "lowest seed ": by["greedy"].min(),
            "ours greedy, sum right but no stop": by["overran"].mean(),
        }
    )
    out.index.name = "operand length"
    return out.loc[sorted(set(every["length"]))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tracking-uri", default="", help="default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db"
    )
    parser.add_argument("--grid", default="length_gen")
    parser.add_argument("--point", default="scheme=coupling")
    parser.add_argument("--per-length", type=int, default=1000, help="problems a length (the peer's 1,000)")
    parser.add_argument("--longest", type=int, default=21)
    parser.add_argument("--seeds", default="", help="comma-separated judged seeds (default: every one)")
    parser.add_argument("--out", default="", help="folder: each seed's reading as seed-<n>.csv, read back")
    args = parser.parse_args(argv)
    uri = TrackingConfig(tracking_uri=args.tracking_uri).resolved_uri()
    lengths = list(range(1, args.longest + 1))
    try:
        runs = coupling_runs(uri, args.grid, args.point)
        if not runs:
            raise AskError(f"no finished trial of {args.point} in grid {args.grid} at {uri}")
        wanted = {int(s) for s in args.seeds.split(",") if s}
        out = Path(args.out) if args.out else None
        readings = {}
        for seed, run_id in runs:
            saved = out / f"seed-{seed}.csv" if out else None
            if wanted and seed not in wanted:
                if saved and saved.exists():
                    readings[seed] = pd.read_csv(saved)
                continue
            print(f"seed {seed}: run {run_id[:8]}", file=sys.stderr, flush=True)
            readings[seed] = read_trial(run_id, uri, args.per_length, lengths)
            if saved:
                saved.parent.mkdir(parents=True, exist_ok=True)
                readings[seed].to_csv(saved, index=False)
    except AskError as err:
        print(f"peer_coupling: {err}", file=sys.stderr)
        return 2
    seeds = ", ".join(str(s) for s in readings)
    print(f"{args.grid} {args.point}, seeds {seeds}; {args.per_length} problems a length\n")
    print(beside_peer(readings).round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

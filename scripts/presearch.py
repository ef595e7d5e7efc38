"""Pre-search a grid on a machine without Ray or MLflow: every point in its own process, one JSON line each.

    python scripts/presearch.py --grid cpu_tune_hash --scale cpu --procs 16 --out runs/presearch/hash.jsonl
    python scripts/presearch.py summary runs/presearch/hash.jsonl   # mean ± SE over seeds, per point
    python scripts/presearch.py budget docs/presearch/cpu_tune_steps.jsonl  # steps to learn, extrapolated

The lent GPU machines of this project have PyTorch and transformers but no Ray and no MLflow, and many small
trials fit one GPU at once: this runs a grid's trials (the same `points()` as sweeps/run.py, with its `--only`
and `--set`) in a pool of processes with tracking off, and appends one line per trial (the config, the final
accuracy grid, a few failed answers, steps, seconds, the machine) to `--out`. It is for choosing a preset
quickly; the results that docs/RESULTS.md reports come from sweeps/run.py on the target machine. On a GPU the
trials train in bf16 autocast, so their numbers approximate, not repeat, a CPU trial of the same config.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arith.config import ConfigError, ExperimentConfig, parse_set  # noqa: E402
from sweeps.grids import get_grid, points  # noqa: E402
from sweeps.run import SweepError, seeds_arg, select  # noqa: E402

#: pre-searches run seeds from here up, apart from the sweeps' 0, 1, 2, ...: a budget chosen on a pre-search
#: is then judged on seeds it was not chosen on (analysis.findings leaves the pre-search's seeds out)
FIRST_SEED = 100


def run_trial(config: dict) -> dict:
    """Train one config (tracking off, one CPU thread: the GPU does the work) and summarise it."""
    from arith.train import train

    cfg = ExperimentConfig.from_dict(config)
    start = time.perf_counter()
    record: dict = {"point": cfg.tracking.tags.get("point", ""), "seed": cfg.train.seed, "config": cfg.flat()}
    try:
        result = train(cfg)
    except Exception:  # a failed trial is a result too; the others go on
        return {**record, "error": traceback.format_exc(limit=3)}
    cells = result.cells
    return {
        **record,
        "failures": result.failures[:6],
        "test_acc": round(result.test_acc, 4),
        "steps": result.steps,
        "train_seconds": round(result.train_seconds, 1),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "tokens_per_s": round(result.tokens_per_s),
        "cells": [
            {
                "context": row.context,
                "row_digits": None if row.row_digits != row.row_digits else row.row_digits,
                "col_digits": row.col_digits,
                "accuracy": round(float(row.accuracy), 3),
            }
            for row in cells.itertuples()
        ],
    }


def machine() -> str:
    """What the trials ran on, for the record: the GPU's name, else the CPU cores this process may use."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.machine()}, {cpus} CPU cores"


def summary(records: list[dict]) -> str:
    """Per point (and --set) over its seeds: test accuracy and each digit count's accuracy (the longer
    factor's, for multiplication) as mean ± standard error, a markdown table; failed trials are counted
    apart."""
    import pandas as pd

    rows = []
    for rec in records:
        if "error" in rec:
            continue
        cells = pd.DataFrame(rec["cells"])
        digits = cells["col_digits"]
        if cells["row_digits"].notna().any():
            digits = cells[["row_digits", "col_digits"]].max(axis=1)
        by_digits = cells.groupby(digits.astype(int))["accuracy"].mean()
        point = rec["point"] + "".join(f", {k}={v}" for k, v in rec.get("set", {}).items())
        rows.append({"point": point, "seed": rec["seed"], "test_acc": rec["test_acc"], **by_digits.to_dict()})
    frame = pd.DataFrame(rows)
    columns = ["test_acc", *sorted(c for c in frame.columns if isinstance(c, int))]
    lines = [
        "| point | seeds | " + " | ".join(f"{c} digits" if c != "test_acc" else c for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for point, trials in frame.groupby("point", sort=False):
        n = len(trials)
        shown = []
        for column in columns:
            values = trials[column].dropna()
            if values.empty:  # a digit count this point is not tested on
                shown.append("")
                continue
            se = values.std(ddof=1) / len(values) ** 0.5 if len(values) > 1 else None
            shown.append(f"{values.mean():.2f}" + (f" ± {se:.2f}" if se is not None else ""))
        seeds = ",".join(str(s) for s in sorted(trials["seed"]))
        lines.append(f"| {point} | {n} ({seeds}) | " + " | ".join(shown) + " |")
    failed = sum("error" in rec for rec in records)
    return "\n".join(lines) + (f"\n\n{failed} failed trial(s) left out.\n" if failed else "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/presearch.py", description=__doc__.splitlines()[0])
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] in (["summary"], ["budget"]):  # python scripts/presearch.py summary|budget FILE.jsonl ...
        lines = [line for path in argv[1:] for line in Path(path).read_text().splitlines()]
        records = [json.loads(line) for line in lines if line.strip()]
        if argv[0] == "summary":
            print(summary(records), end="")
        else:  # points run at several train.max_steps: steps to learn the task in range (analysis/budget)
            from analysis.budget import budget_table
            from analysis.tables import markdown_table

            table = budget_table(records)
            print(markdown_table(table) if not table.empty else "no point was run at several step budgets")
        return 0
    parser.add_argument("--grid", required=True)
    parser.add_argument("--scale", default="cpu")
    parser.add_argument(
        "--seeds",
        type=seeds_arg,
        default=1,
        help=f"a count K (seeds {FIRST_SEED}..{FIRST_SEED}+K-1), or seeds: 101,102",
    )
    parser.add_argument("--only", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--procs", type=int, default=4, help="trials at a time (default 4)")
    parser.add_argument("--out", required=True, help="JSON-lines file the results are appended to")
    args = parser.parse_args(argv)
    try:
        given = parse_set(args.set)
        overrides = {**given, "tracking.enabled": False, "train.checkpoint_every": 0}
        overrides["train.num_threads"] = 1
        seeds = range(FIRST_SEED, FIRST_SEED + args.seeds) if isinstance(args.seeds, int) else args.seeds
        configs = select(points(get_grid(args.grid), args.scale, seeds, overrides), parse_set(args.only))
    except (ConfigError, SweepError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    where = machine()
    print(f"{len(configs)} trials of {args.grid} ({args.scale}), {args.procs} at a time on {where} -> {out}")
    # spawn, not fork: machine() has already initialised CUDA in this process, and CUDA cannot be forked
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.procs, mp_context=spawn) as pool, out.open("a") as sink:
        futures = [pool.submit(run_trial, cfg.to_dict()) for cfg in configs]
        for future in as_completed(futures):
            record = {"grid": args.grid, "scale": args.scale, "set": given, "machine": where}
            record.update(future.result())
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            shown = {
                k: record.get(k) for k in ("point", "seed", "test_acc", "steps", "train_seconds", "error")
            }
            print(json.dumps({k: v for k, v in shown.items() if v is not None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

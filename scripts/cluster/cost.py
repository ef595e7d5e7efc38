"""GPU-hours of the paper-scale grids, so a cluster run can be planned before it is paid for.

    python scripts/cluster/cost.py --tokens-per-s 150000 [--grids nl_mix,mul_format] [--usd-per-gpu-hour 1.2]

For every trial of a grid at scale `paper` (sweeps.grids), the training tokens are
samples per epoch x epochs x tokens per sample. Samples and tokens are measured, not assumed: a
proportional probe of the trial's own training set (arith.data.datasets) is encoded with the project's
tokenizer (arith.model.tokenizer; for pretrained trials too, since GPT-2's tokenizer needs the hub: its splits
of the paper's spaced digits are alike). GPU-hours = training tokens / (training tokens per second of one
GPU). The throughput is an argument because it depends on the GPU and the trainer: measure it with a short run
of the trainer (its MLflow metric `train/tokens_per_s`). Evaluation passes are not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere in the repository

from arith.config import ConfigError, DataConfig, ExperimentConfig
from arith.data.datasets import train_examples
from arith.data.tasks import get_task
from arith.model.tokenizer import build_tokenizer, encode_examples
from sweeps.grids import GRIDS, points

#: the grids that reproduce a table or figure of the paper (position_schemes goes beyond it); a grid that
#: sets a scale's own settings (`over_scale`, e.g. mul_format_long's step budget) is a cpu-scale grid
PAPER_GRIDS = [name for name, grid in GRIDS.items() if grid.paper_tables and not grid.over_scale]


@dataclass(frozen=True)
class TrainingSize:
    """One trial's training volume: samples in an epoch and mean tokens per sample (eos included)."""

    samples: int
    tokens_per_sample: float


def nominal_samples(d: DataConfig) -> int:
    return get_task(d.task).train_size(d)


def measure(d: DataConfig, probe: int) -> TrainingSize:
    """Generate a `probe`-sized slice of the training set (every count shrunk alike) and encode it."""
    fraction = min(1.0, probe / nominal_samples(d))

    def shrink(n: int) -> int:
        return max(1, round(n * fraction))

    small = ExperimentConfig(data=d).with_overrides(
        {
            "data.train_samples": shrink(d.train_samples),
            "data.mix_samples": shrink(d.mix_samples),
            "data.dialogue_easy": shrink(d.dialogue_easy),
            "data.dialogue_hard": shrink(d.dialogue_hard),
        }
    )
    examples = train_examples(small.data)
    tokenizer = build_tokenizer(e.text for e in examples)
    lengths = [len(ids) for ids, _ in encode_examples(tokenizer, examples)]
    return TrainingSize(round(len(examples) / fraction), statistics.fmean(lengths))


def grid_cost(name: str, tokens_per_s: float, probe: int, seeds: int, cache: dict) -> dict:
    """One table row: trials, samples, epochs, tokens and GPU-hours of grid `name` at scale paper."""
    trials = points(name, "paper")
    total_tokens = 0.0
    samples, epochs, per_sample = [], [], []
    for cfg in trials:
        key = json.dumps(cfg.to_dict()["data"], sort_keys=True)
        if key not in cache:
            cache[key] = measure(cfg.data, probe)
        size = cache[key]
        samples.append(size.samples)
        epochs.append(cfg.train.epochs)
        per_sample.append(size.tokens_per_sample)
        total_tokens += size.samples * cfg.train.epochs * size.tokens_per_sample * seeds
    gpu_hours = total_tokens / tokens_per_s / 3600
    return {
        "grid": name,
        "trials": len(trials) * seeds,
        "samples/epoch": _span(samples),
        "epochs": _span(epochs),
        "tokens/sample": _span([round(t) for t in per_sample]),
        "training tokens": f"{total_tokens / 1e9:.2f} B",
        "GPU-hours": gpu_hours,
    }


def _span(values: list) -> str:
    low, high = min(values), max(values)
    fmt = (lambda v: f"{v:,}") if isinstance(low, int) else str
    return fmt(low) if low == high else f"{fmt(low)}-{fmt(high)}"


def markdown(rows: list[dict], usd_per_gpu_hour: float) -> str:
    heads = [*rows[0], *(["USD"] if usd_per_gpu_hour else [])]
    lines = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    for row in rows:
        cells = [str(v) for k, v in row.items() if k != "GPU-hours"]
        cells.append(f"{row['GPU-hours']:,.1f}")
        if usd_per_gpu_hour:
            cells.append(f"{row['GPU-hours'] * usd_per_gpu_hour:,.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(r["GPU-hours"] for r in rows)
    usd = f" (USD {total * usd_per_gpu_hour:,.0f})" if usd_per_gpu_hour else ""
    lines.append(f"\nAll {len(rows)} grids: {total:,.1f} GPU-hours{usd}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/cluster/cost.py", description=__doc__.split("\n")[0])
    p.add_argument("--tokens-per-s", type=float, required=True, help="training tokens per second of one GPU")
    p.add_argument(
        "--grids", default="", help=f"comma-separated (default: the paper's, {', '.join(PAPER_GRIDS)})"
    )
    p.add_argument("--seeds", type=int, default=1, help="seeds per point (sweeps/run.py --seeds)")
    p.add_argument("--probe", type=int, default=3000, help="samples generated per distinct data config")
    p.add_argument("--usd-per-gpu-hour", type=float, default=0.0, help="adds a cost column when > 0")
    args = p.parse_args(argv)
    names = [g for g in args.grids.split(",") if g] or PAPER_GRIDS
    unknown = [g for g in names if g not in GRIDS]
    if unknown or args.tokens_per_s <= 0 or args.seeds < 1 or args.probe < 1:
        p.error(
            f"unknown grid(s) {unknown}; choose from {', '.join(GRIDS)}" if unknown else "values must be > 0"
        )
    cache: dict = {}
    try:
        rows = [grid_cost(name, args.tokens_per_s, args.probe, args.seeds, cache) for name in names]
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(markdown(rows, args.usd_per_gpu_hour))
    return 0


if __name__ == "__main__":
    sys.exit(main())

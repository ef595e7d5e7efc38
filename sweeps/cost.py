"""The cost model of a sweep: what a trial trains on, measured on a proportional probe of its own data.

One way to shrink a trial's data serves every estimate: `probe_config(cfg, samples)` keeps `samples` of
the training set by shrinking every count of it alike (train samples, mixed-in lines, easy and hard
dialogues), so a probe has the mix and lengths of the set it stands for. On it:

- `measure(data, probe)` -> `TrainingSize`: samples an epoch and mean tokens a sample (the project's
  tokenizer; for pretrained trials too: GPT-2's needs the hub and splits the paper's spaced digits alike);
  `grid_cost(...)` sums a grid's training tokens at scale `paper` and turns them into GPU-hours at a given
  throughput (`scripts/cluster/cost.py`); `cost_table` prints the rows.
- `throughput_config(cfg, samples, max_steps, batch_size)`: the trial shrunk to a timing run (one epoch
  capped at `max_steps`, no evaluation grid, no tracking), which `scripts/cluster/throughput.py` trains and
  `benchmarks/bench_paper.py` probes for its batch widths.

Evaluation passes are not counted here (benchmarks/bench_paper.py times them).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass

from arith.config import DataConfig, ExperimentConfig
from arith.data.datasets import train_examples
from arith.data.tasks import get_task
from arith.model.tokenizer import build_tokenizer, encode_examples
from arith.validation import validate
from sweeps.grids import GRIDS, points

#: the data counts a probe shrinks alike
SHRUNK = ("data.train_samples", "data.mix_samples", "data.dialogue_easy", "data.dialogue_hard")


def paper_grids() -> list[str]:
    """The grids that reproduce a table or figure of the paper (position_schemes goes beyond it); a grid
    that sets a scale's own settings (`over_scale`, e.g. mul_format_long's step budget) is a cpu-scale
    grid."""
    return [name for name, grid in GRIDS.items() if grid.paper_tables and not grid.over_scale]


@dataclass(frozen=True)
class TrainingSize:
    """One trial's training volume: samples in an epoch and mean tokens per sample (eos included)."""

    samples: int
    tokens_per_sample: float


def nominal_samples(d: DataConfig) -> int:
    """The training set's size as the task counts it."""
    return get_task(d.task).train_size(d)


def probe_fraction(d: DataConfig, samples: int) -> float:
    """The share of the training set a probe of `samples` keeps (at most all of it)."""
    return min(1.0, samples / nominal_samples(d))


def probe_config(cfg: ExperimentConfig, samples: int) -> ExperimentConfig:
    """`cfg` with its training set cut to about `samples`, every count shrunk alike (at least 1 each)."""
    fraction = probe_fraction(cfg.data, samples)
    flat = cfg.flat()
    return cfg.with_overrides({key: max(1, round(flat[key] * fraction)) for key in SHRUNK})


def measure(d: DataConfig, probe: int) -> TrainingSize:
    """Generate a `probe`-sized slice of the training set (every count shrunk alike) and encode it."""
    fraction = probe_fraction(d, probe)
    examples = train_examples(probe_config(ExperimentConfig(data=d), probe).data)
    tokenizer = build_tokenizer(e.text for e in examples)
    lengths = [len(ids) for ids, _ in encode_examples(tokenizer, examples)]
    return TrainingSize(round(len(examples) / fraction), statistics.fmean(lengths))


def throughput_config(
    cfg: ExperimentConfig, samples: int, max_steps: int, batch_size: int
) -> ExperimentConfig:
    """`cfg` shrunk to a throughput run: a probe of its data, one epoch capped at `max_steps`, no tracking."""
    return validate(
        probe_config(cfg, samples).with_overrides(
            {
                "data.test_per_cell": 1,
                "train.epochs": 1,
                "train.eval_epochs": [],
                "train.max_steps": max_steps,
                "train.batch_size": batch_size,
                "train.checkpoint_every": 0,
                "tracking.enabled": False,
            }
        )
    )


def grid_cost(name: str, tokens_per_s: float, probe: int, seeds: int, cache: dict) -> dict:
    """One table row: trials, samples, epochs, tokens and GPU-hours of grid `name` at scale paper."""
    trials = points(name, "paper")
    total_tokens = 0.0
    samples, epochs, per_sample = [], [], []
    for cfg in trials:
        key = json.dumps(dataclasses.asdict(cfg.data), sort_keys=True)
        if key not in cache:
            cache[key] = measure(cfg.data, probe)
        size = cache[key]
        samples.append(size.samples)
        epochs.append(cfg.train.epochs)
        per_sample.append(size.tokens_per_sample)
        total_tokens += size.samples * cfg.train.epochs * size.tokens_per_sample * seeds
    hours = gpu_hours(total_tokens / tokens_per_s)
    return {
        "grid": name,
        "trials": len(trials) * seeds,
        "samples/epoch": span(samples),
        "epochs": span(epochs),
        "tokens/sample": span([round(t) for t in per_sample]),
        "training tokens": f"{total_tokens / 1e9:.2f} B",
        "GPU-hours": hours,
    }


def gpu_hours(seconds: float) -> float:
    """GPU-hours of `seconds` of one GPU's time: the one conversion the cost model and the benchmark's
    measured table (benchmarks/bench_paper.py) both use."""
    return seconds / 3600


def span(values: list) -> str:
    """`low-high` of a column (one value where they agree; thousands separated for integers)."""
    low, high = min(values), max(values)
    fmt = (lambda v: f"{v:,}") if isinstance(low, int) else str
    return fmt(low) if low == high else f"{fmt(low)}-{fmt(high)}"


def cost_table(rows: list[dict], usd_per_gpu_hour: float) -> str:
    """The rows as a markdown table, GPU-hours (and USD where a price is given) last, with the total."""
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

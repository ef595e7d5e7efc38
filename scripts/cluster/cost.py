"""GPU-hours of the paper-scale grids, so a cluster run can be planned before it is paid for.

    python scripts/cluster/cost.py --tokens-per-s 150000 [--grids nl_mix,mul_format] [--usd-per-gpu-hour 1.2]

For every trial of a grid at scale `paper` (sweeps.grids), the training tokens are
samples per epoch x epochs x tokens per sample. Samples and tokens are measured, not assumed: a
proportional probe of the trial's own training set (arith.data.datasets) is encoded with the project's
tokenizer (arith.model.tokenizer; for pretrained trials too, since GPT-2's tokenizer needs the hub: its splits
of the paper's spaced digits are alike). GPU-hours = training tokens / (training tokens per second of one
GPU). The throughput is an argument because it depends on the GPU and the trainer: measure it with a short run
of the trainer (its MLflow metric `train/tokens_per_s`). Evaluation passes are not counted. The cost model
is `sweeps.cost`; this is its command line.
"""

from __future__ import annotations

import argparse
import sys

from arith.config import ConfigError
from sweeps.cost import cost_table, grid_cost, paper_grids
from sweeps.grids import GRIDS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/cluster/cost.py", description=__doc__.split("\n")[0])
    p.add_argument("--tokens-per-s", type=float, required=True, help="training tokens per second of one GPU")
    p.add_argument(
        "--grids", default="", help=f"comma-separated (default: the paper's, {', '.join(paper_grids())})"
    )
    p.add_argument("--seeds", type=int, default=1, help="seeds per point (sweeps/run.py --seeds)")
    p.add_argument("--probe", type=int, default=3000, help="samples generated per distinct data config")
    p.add_argument("--usd-per-gpu-hour", type=float, default=0.0, help="adds a cost column when > 0")
    args = p.parse_args(argv)
    names = [g for g in args.grids.split(",") if g] or paper_grids()
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
    print(cost_table(rows, args.usd_per_gpu_hour))
    return 0


if __name__ == "__main__":
    sys.exit(main())

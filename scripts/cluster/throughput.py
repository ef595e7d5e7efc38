"""Training throughput of the paper-scale trials on this machine, measured with the project's trainer.

    python scripts/cluster/throughput.py [--grids mul_format,nl_mix,add_posembed] [--batch-sizes 32,128]

For the first random-init point of each grid at scale `paper` (or the first whose name contains
`--match`) it trains `--max-steps` steps on a `--samples`-sized slice of the training set, without MLflow
or evaluation grids, and prints the trainer's own tokens/s (training tokens over training seconds, the
number `cost.py --tokens-per-s` takes) as one JSON line per run. The slice is `sweeps.cost.throughput_config`.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from arith.tracking.schema import POINT_TAG
from arith.training.train import train
from sweeps.cost import throughput_config
from sweeps.grids import GRIDS, points


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python scripts/cluster/throughput.py", description=__doc__.split("\n")[0]
    )
    p.add_argument("--grids", default="mul_format,nl_mix,add_posembed", help=f"from: {', '.join(GRIDS)}")
    p.add_argument("--match", default="", help="take the first point whose name contains this")
    p.add_argument("--batch-sizes", default="32", help="comma-separated train.batch_size values")
    p.add_argument("--samples", type=int, default=20_000, help="training samples generated per run")
    p.add_argument("--max-steps", type=int, default=400, help="optimiser steps timed per run")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config overrides")
    args = p.parse_args(argv)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    for grid in args.grids.split(","):
        candidates = [c for c in points(grid, "paper") if c.model.init == "random"]
        cfg = next((c for c in candidates if args.match in c.tracking.tags[POINT_TAG]), candidates[0])
        cfg = cfg.with_overrides(dict(s.split("=", 1) for s in args.set))
        for batch_size in (int(b) for b in args.batch_sizes.split(",")):
            result = train(throughput_config(cfg, args.samples, args.max_steps, batch_size))
            row = {
                "device": device,
                "grid": grid,
                POINT_TAG: cfg.tracking.tags[POINT_TAG],
                "preset": cfg.model.preset,
                "batch_size": batch_size,
                "steps": result.steps,
                "train_seconds": round(result.train_seconds, 2),
                "tokens_per_s": round(result.tokens_per_s),
            }
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

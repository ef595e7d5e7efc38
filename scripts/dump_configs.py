"""Every grid x scale's trial configs (seed 0 and the next), one JSON line each, for a byte-identity check
before and after a refactor: `python scripts/dump_configs.py OUT.jsonl && cmp OUT.jsonl BEFORE.jsonl`.
The lab's grids count too (importing `lab` registers them); a grid made for another scale writes its error.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import lab  # noqa: F401  (registers the lab's grids)
from arith.tracking.schema import GRID_TAG, SCALE_TAG
from sweeps.grids import GRIDS, points
from sweeps.scales import SCALES


def main(path: str) -> None:
    with open(path, "w") as out:
        for name in sorted(GRIDS):
            for scale in sorted(SCALES):
                try:
                    configs = points(name, scale, seeds=2)
                except Exception as err:  # a grid made for another scale
                    error = f"{type(err).__name__}: {err}"
                    out.write(json.dumps({GRID_TAG: name, SCALE_TAG: scale, "error": error}) + "\n")
                    continue
                for c in configs:
                    row = {GRID_TAG: name, SCALE_TAG: scale, "config": dataclasses.asdict(c)}
                    out.write(json.dumps(row, sort_keys=True, default=str) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])

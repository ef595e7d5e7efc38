"""Retake README's pictures of the demo: its HTML report and the MLflow UI, in headless Chromium.

    python scripts/screenshots.py                  # make demo's store and report -> docs/img/
    python scripts/screenshots.py --grid mul_format --report reports/mul_format --out /tmp/shots
    python scripts/screenshots.py --grid add_posembed_recipe_24k --plan --tracking-uri \
        sqlite:///runs/cpu/mlflow.db --report reports/acc_add_rand --out /tmp/shots   # the plan's parts

Needs `chromium` on PATH (`make screenshots` installs it with apt-get when missing). It starts and stops
its own `mlflow server` on a free port (`analysis.screenshots`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.load import AnalysisError, require_store
from analysis.screenshots import take
from arith.config import TrackingConfig
from arith.tracking import store
from lab.plan import plan_sweeps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grid", default="demo", help="the sweep's grid (default: demo)")
    parser.add_argument(
        "--tracking-uri",
        default="",
        help="MLflow store; default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db",
    )
    parser.add_argument("--report", type=Path, default=Path("reports/demo"), help="the HTML report's folder")
    parser.add_argument("--out", type=Path, default=Path("docs/img"), help="where the PNGs go")
    parser.add_argument("--port", type=int, default=None, help="MLflow server port (default: a free one)")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="the view of every part of the grid's plan (docs/results/plan.yaml) in the store, read as one "
        "sweep (the report's: `python -m lab.report --plan`); default: the grid's latest sweep",
    )
    args = parser.parse_args(argv)
    uri = TrackingConfig(tracking_uri=args.tracking_uri).resolved_uri()
    try:
        runs = None
        if args.plan:
            require_store(uri)
            runs = plan_sweeps(store.client(uri), args.grid).to_read(uri)
        paths = take(args.grid, uri, args.report, args.out, args.port, runs)
    except (AnalysisError, FileNotFoundError, RuntimeError, TimeoutError) as err:
        print(f"screenshots: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"{path} ({path.stat().st_size // 1000} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

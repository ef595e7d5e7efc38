"""Retake README's pictures of the demo: its HTML report and the MLflow UI, in headless Chromium.

    python scripts/screenshots.py                  # make demo's store and report -> docs/img/
    python scripts/screenshots.py --grid mul_format --report reports/mul_format --out /tmp/shots

Needs `chromium` on PATH (`make screenshots` installs it with apt-get when missing). It starts and stops
its own `mlflow server` on a free port (`analysis.screenshots`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.screenshots import take
from arith.config import TrackingConfig


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
    args = parser.parse_args(argv)
    uri = TrackingConfig(tracking_uri=args.tracking_uri).resolved_uri()
    try:
        paths = take(args.grid, uri, args.report, args.out, args.port)
    except (FileNotFoundError, RuntimeError, TimeoutError) as err:
        print(f"screenshots: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"{path} ({path.stat().st_size // 1000} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

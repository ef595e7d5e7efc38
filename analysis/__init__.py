"""From a sweep's MLflow runs to the paper's tables beside the paper's own numbers, its claims checked and
heatmaps: `report(grid, tracking_uri)`, or `python -m analysis --grid NAME` from a shell."""

from analysis.load import AnalysisError, Sweep, read_sweep
from analysis.report import Analysis, analyse, render, report

__all__ = ["Analysis", "AnalysisError", "Sweep", "analyse", "read_sweep", "render", "report"]

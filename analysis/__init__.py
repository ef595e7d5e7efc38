"""From a sweep's MLflow runs to the paper's tables, beside the paper's own numbers.

`report(grid, tracking_uri)` reads the latest sweep of a grid (or the parent run given), builds the
paper-shaped tables with the paper's numbers and the difference, checks the paper's claims, draws
heatmaps, and returns the report text; `python -m analysis --grid NAME` does the same from a shell.
"""

from analysis.load import AnalysisError, Sweep, read_sweep
from analysis.report import Analysis, analyse, render, report

__all__ = ["Analysis", "AnalysisError", "Sweep", "analyse", "read_sweep", "render", "report"]

"""What the lab's pages write besides the analysis's own reports: GitHub tables and reproducible PNGs."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from analysis.tables import markdown_rows


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a GitHub table (blank for missing values), without pandas' optional tabulate."""
    shown = frame.astype(object).where(frame.notna(), "")
    return markdown_rows(shown.columns, shown.itertuples(index=False))


def save(figure: Figure, path) -> None:
    """Write a figure as a PNG with no timestamp in it, so the same numbers give the same file."""
    figure.savefig(path, dpi=100, metadata={"Software": None})

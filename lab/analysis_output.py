"""What the lab's pages write besides the analysis's own reports: GitHub tables and reproducible PNGs."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a GitHub table (blank for missing values), without pandas' optional tabulate."""
    shown = frame.astype(object).where(frame.notna(), "")
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in shown.itertuples(index=False)]
    return "\n".join(lines)


def save(figure: Figure, path) -> None:
    """Write a figure as a PNG with no timestamp in it, so the same numbers give the same file."""
    figure.savefig(path, dpi=100, metadata={"Software": None})

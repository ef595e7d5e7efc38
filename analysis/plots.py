"""Heatmaps of each accuracy table beside the paper's (matplotlib, Agg: no display needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from analysis.tables import Table, column_labels


def _panel(ax, grid, title: str, table: Table) -> None:
    values = grid.to_numpy(dtype=float)
    masked = np.ma.masked_invalid(values)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")  # a cell the sweep lacks: grey
    ax.imshow(masked, vmin=0.0, vmax=1.0, cmap=cmap, aspect="auto")
    ax.set_xticks(
        range(values.shape[1]), column_labels(grid), rotation=90 if values.shape[1] > 10 else 0, fontsize=7
    )
    ax.set_yticks(range(values.shape[0]), [str(i) for i in grid.index], fontsize=7)
    ax.set_xlabel(table.col_name, fontsize=8)
    if table.row_name:
        ax.set_ylabel(table.row_name, fontsize=8)
    ax.set_title(title, fontsize=9)
    if values.size <= 400:
        for (i, j), value in np.ndenumerate(values):
            text = "–" if np.isnan(value) else f"{value:.2f}"
            color = "k" if np.isnan(value) or value >= 0.6 else "w"
            ax.text(j, i, text, ha="center", va="center", fontsize=6, color=color)


def heatmap(table: Table) -> Figure:
    """This sweep's grid (left), its accuracy on the test problems not seen in training (where the trials
    recorded the split) and the paper's (right, when it has one; its numbers mix seen and unseen problems);
    grey = cell only the other side has, or no unseen problem in the cell."""
    rows, cols = table.ours.shape
    width = 2.0 + 0.45 * cols
    shown = [(table.ours, "this sweep" if table.has_paper else "this sweep (no paper table)")]
    if table.has_split:
        shown.append((table.unseen, "this sweep, unseen problems only"))
    if table.has_paper:
        shown.append((table.paper, f"paper ({', '.join(table.paper_sources)})"))
    figure = Figure(figsize=(len(shown) * width, 1.9 + 0.4 * rows + (1.0 if cols > 10 else 0.0)))
    axes = figure.subplots(1, len(shown), squeeze=False)[0]
    for ax, (grid, title) in zip(axes, shown, strict=True):
        # a title wider than its panel is cut at the figure's edge: wrapped to the panel's width
        _panel(ax, grid, "\n".join(textwrap.wrap(title, width=max(12, int((width - 0.8) * 11)))), table)
    figure.suptitle(table.title, fontsize=10)
    figure.tight_layout()
    return figure


def write_heatmaps(tables: list[Table], out_dir: Path) -> list[Path]:
    """One PNG per table under out_dir/heatmaps/; returns the paths."""
    folder = Path(out_dir) / "heatmaps"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for table in tables:
        path = folder / f"{table.slug}.png"
        heatmap(table).savefig(path, dpi=110)
        paths.append(path)
    return paths

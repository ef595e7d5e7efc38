"""The report as one self-contained HTML page: CSS and every figure (a base64 PNG) inline, so the file can
be mailed, logged as an MLflow artifact or opened offline.
"""

from __future__ import annotations

import base64
import html
import io

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.by_digits import accuracy_by_digits_figure
from analysis.curves import learning_curves_figure, point_colours, point_labels, seeds_by_point
from analysis.findings import HELD, NOT_HELD, Finding
from analysis.plots import heatmap
from analysis.sweep import EPOCH_METRICS, Sweep
from analysis.tables import Table, render_tables
from analysis.wrong_answers import points_of, wrong_answers_html
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    EPOCH_COLUMN,
    POINT_COLUMN,
    POINT_TAG,
    RUN_ID_COLUMN,
    SEED_COLUMN,
    TEST_ACC_METRIC,
    point_label,
)

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f; margin: 0;
       background: #f6f7f9; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #ddd; }
h3 { margin-top: 26px; } h4 { margin: 14px 0 4px; font-size: 14px; color: #555; }
.meta { color: #555; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 14px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f0f2f5; } td:first-child, th:first-child { text-align: left; }
.verdict { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600;
           font-size: 13px; white-space: nowrap; }
.held { background: #d7f5dd; color: #0f5d22; } .not-held { background: #fde0dd; color: #8a1c13; }
.other { background: #eceff3; color: #444; }
.finding td { text-align: left; vertical-align: top; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; }
.note { background: #fff8e1; padding: 6px 10px; border-left: 3px solid #e0b000; }
.errors { display: flex; gap: 18px; align-items: flex-start; margin: 8px 0 18px; }
.errors-figure { flex: 0 0 52%; } .errors-figure img { max-width: 100%; }
.wrong-answers td { vertical-align: top; } .wrong-answers td.wrong { text-align: left; }
.wrong-answers ul { margin: 0; padding-left: 16px; } .expected { color: #666; }
code { font-size: 12px; }
"""


def _img(figure: Figure, alt: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


#: a verdict's badge (any other verdict's: "other")
VERDICT_CLASSES = {HELD: "held", NOT_HELD: "not-held"}


def findings_html(findings: list[Finding], grid: str) -> str:
    if not findings:
        return f"<p>No claim of the paper is tested by grid {html.escape(grid)!s}.</p>"
    rows = [
        f'<tr class="finding"><td>{html.escape(f.claim)}</td>'
        f'<td><span class="verdict {VERDICT_CLASSES.get(f.status, "other")}">'
        f"{html.escape(f.status)}</span></td>"
        f"<td>{html.escape(f.evidence)}</td></tr>"
        for f in findings
    ]
    return "<table><tr><th>claim</th><th>verdict</th><th>why</th></tr>" + "".join(rows) + "</table>"


def seed_spread_figure(sweep: Sweep) -> Figure | None:
    """Each finished trial's mean accuracy at its last evaluation, a dot per seed, by point."""
    cells = sweep.cells
    if cells.empty:
        return None
    last = cells[cells[EPOCH_COLUMN] == cells.groupby(RUN_ID_COLUMN)[EPOCH_COLUMN].transform("max")]
    per_run = last.groupby(RUN_ID_COLUMN)[ACCURACY_COLUMN].mean()
    trials = sweep.trials.set_index(RUN_ID_COLUMN).loc[per_run.index]
    labels = point_labels(trials.reset_index(), sweep.axes).to_numpy()
    frame = pd.DataFrame({POINT_COLUMN: labels, ACCURACY_COLUMN: per_run.to_numpy()})
    points = sorted(frame[POINT_COLUMN].unique())
    figure = Figure(figsize=(7.5, 0.9 + 0.42 * len(points)))
    ax = figure.subplots()
    by_point = [(p, frame.loc[frame[POINT_COLUMN] == p, ACCURACY_COLUMN]) for p in points]
    seeds_by_point(ax, by_point, ["C0"] * len(points), size=36, alpha=0.75)
    ax.set_xlabel("mean accuracy over the test grid, last evaluation (dot: a seed; bar: the mean)")
    figure.tight_layout()
    return figure


def metric_histories(sweep: Sweep) -> pd.DataFrame:
    """run_id, metric, epoch, value of the EPOCH_METRICS each finished trial logged; where the store has
    none, test_acc from its cells."""
    history = sweep.history_of(EPOCH_METRICS).rename(columns={"step": EPOCH_COLUMN})
    if not history.empty or sweep.cells.empty:
        return history
    means = sweep.cells.groupby([RUN_ID_COLUMN, EPOCH_COLUMN])[ACCURACY_COLUMN].mean().reset_index()
    return means.assign(metric=TEST_ACC_METRIC).rename(columns={ACCURACY_COLUMN: "value"})[
        [RUN_ID_COLUMN, "metric", EPOCH_COLUMN, "value"]
    ]


def epochs_figure(sweep: Sweep, history: pd.DataFrame) -> Figure | None:
    """Test accuracy by epoch, a line per trial in its point's colour: in and beyond the training range
    side by side where logged, else over the whole test grid."""
    if history.empty:
        return None
    metrics = [m for m in EPOCH_METRICS[:2] if m in set(history["metric"])] or [TEST_ACC_METRIC]
    labels = dict(zip(sweep.trials[RUN_ID_COLUMN], point_labels(sweep.trials, sweep.axes), strict=True))
    points = sorted(set(labels.values()))
    colour = point_colours(sweep.trials, pd.Series(list(labels.values())))
    figure = Figure(figsize=(5.2 * len(metrics), 3.6))
    axes = figure.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        for run_id, line in history[history["metric"] == metric].groupby(RUN_ID_COLUMN):
            line = line.sort_values(EPOCH_COLUMN)
            ax.plot(line[EPOCH_COLUMN], line["value"], marker="o", ms=3, lw=1.2, color=colour[labels[run_id]])
        ax.set_title(metric, fontsize=10)
        ax.set_xlabel(EPOCH_COLUMN)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("exact-match accuracy")
    handles = [Line2D([], [], color=colour[p], lw=2) for p in points]
    figure.legend(handles, points, loc="lower center", ncol=min(4, len(points)), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.06 + 0.04 * (len(points) // 4), 1, 1))
    return figure


def wrong_answers_section(sweep: Sweep, table: Table, anchor: str = "wrong-answers") -> str:
    """Beside a table: per point, where its wrong answers err and a few of each cell; `anchor`, the
    heading's id, is a link (report.html#wrong-answers) straight to it."""
    points, clean = points_of(sweep, table)
    if not points and not clean:
        if not sweep.errors_kept_by:
            return (
                '<p class="meta">No wrong answers kept (trials from before eval/errors.csv, or run with '
                "train.errors_per_cell=0).</p>"
            )
        return ""
    title = html.escape(table.title)
    parts = [f'<h4 id="{anchor}">What the trials wrote when wrong: {title}</h4>']
    for point in points:
        figure = point.figure()
        image = _img(figure, f"digit errors: {point.label}") if figure is not None else ""
        parts.append(
            f'<div class="errors"><div class="errors-figure"><strong>{html.escape(point.label)}</strong>'
            f"{image}</div><div>{wrong_answers_html(point)}</div></div>"
        )
    parts += [
        f'<p class="meta"><strong>{html.escape(label)}</strong>: no wrong answers: every test answer of '
        "its trials was right.</p>"
        for label in clean
    ]
    return "\n".join(parts)


def mlflow_links_html(sweep: Sweep, view_url: str) -> str:
    """The way into MLflow from a number seen here: the sweep's view, then every trial's run."""
    if not view_url:
        return ""
    trials = sweep.trials.sort_values([POINT_TAG, SEED_COLUMN])
    runs_page = view_url.partition("?")[0]  # a view's link is its experiment's runs page and a query
    runs = []
    for run_id, point, seed in zip(
        trials[RUN_ID_COLUMN], trials[POINT_TAG], trials[SEED_COLUMN], strict=True
    ):
        name = html.escape(f"{point_label(point)} seed {seed}")
        runs.append(f'<a href="{html.escape(f"{runs_page}/{run_id}")}">{name}</a>')
    return (
        f'<p class="mlflow">In MLflow: <a id="mlflow-view" href="{html.escape(view_url)}">the sweep\'s runs, '
        f"grouped by {html.escape(', '.join(sweep.axes))}</a> (start the UI first); each trial's run: "
        + " · ".join(runs)
        + "</p>"
    )


def figure_section(title: str, figure: Figure | None, alt: str, caption: str = "") -> list[str]:
    if figure is None:
        return []
    said = [f'<p class="meta">{html.escape(caption)}</p>'] if caption else []
    return [f"<h2>{html.escape(title)}</h2>", _img(figure, alt), *said]


def page(analysis, head: str) -> str:
    """The whole page for an `analysis.report.Analysis`; `head` is the report's one-line summary."""
    sweep: Sweep = analysis.sweep
    parts = [
        f"<h1>Sweep analysis: {html.escape(sweep.grid)}</h1>",
        f'<p class="meta">{html.escape(head)}</p>',
        mlflow_links_html(sweep, analysis.view_url),
        *(f'<p class="note">note: {html.escape(n)}</p>' for n in sweep.notes),
    ]
    if len(sweep.unfinished):
        parts += ["<h2>Unfinished trials</h2>", sweep.unfinished.to_html(index=False)]
    parts += ["<h2>The paper's claims</h2>", findings_html(analysis.findings, sweep.grid)]
    parts.append("<h2>Tables beside the paper's</h2>")
    sections = 0  # #wrong-answers is the first section's anchor
    for table in analysis.tables:
        parts.append(_img(heatmap(table), f"heatmap: {table.title}"))
        parts.append(render_tables([table], "html"))
        anchor = "wrong-answers" + (f"-{sections + 1}" if sections else "")
        section = wrong_answers_section(sweep, table, anchor)
        sections += f'id="{anchor}"' in section
        parts.append(section)
    parts += figure_section(
        "Accuracy by digit count",
        accuracy_by_digits_figure(sweep),
        "accuracy at the end by digit count, each seed",
        "Each point's mean over its judged seeds (a line) and each seed (a dot; hollow: a seed that chose "
        "the budget, never judged); shaded: the digit counts beyond training.",
    )
    parts += figure_section("Spread over seeds", seed_spread_figure(sweep), "accuracy of each seed by point")
    parts += figure_section(
        "Learning curves",
        learning_curves_figure(sweep),
        "training loss by step; lowest accuracy at the end on the gated cells",
        "Left: each point's training loss by step (line: the mean over its seeds; band: their range). "
        "Right: each trial's lowest accuracy at the end on the cells the competence rule reads (dot: a "
        "seed; black bar: the seeds' mean; dashed line: learned).",
    )
    epochs = epochs_figure(sweep, metric_histories(sweep))
    parts += figure_section("Test accuracy by epoch", epochs, "test accuracy by epoch, per trial")
    body = "\n".join(parts)
    title = html.escape(f"{sweep.grid}: sweep analysis")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
        "</body>\n</html>\n"
    )

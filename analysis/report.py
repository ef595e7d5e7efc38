"""One sweep -> the report a researcher reads: trial status, the paper's tables beside this sweep's
numbers, the paper's claims checked, heatmaps; written to a folder and logged on the sweep's parent run."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from analysis.by_digits import accuracy_by_digits_figure
from analysis.findings import Finding, evaluate_findings, findings_frame, render_findings, verdict_numbers
from analysis.html import page
from analysis.load import read_sweep
from analysis.plots import write_heatmaps
from analysis.summary import VERDICTS_TAG, log_summary
from analysis.sweep import IDENTITY_KEYS, TAG_COLUMNS, Sweep, aggregate_seeds, as_stored
from analysis.tables import Table, build_tables, long_frame, markdown_rows, render_tables
from analysis.ui_view import share_view
from analysis.wrong_answers import write_figures
from arith.tracking import store
from arith.tracking.schema import RUN_DESCRIPTION_TAG
from experiments.paper import attach_paper

FORMATS: dict[str, str] = {"markdown": "md", "csv": "csv", "latex": "tex", "html": "html"}


@dataclass
class Analysis:
    sweep: Sweep
    #: seed means per point x evaluation x cell, outer-joined with the paper's numbers
    frame: pd.DataFrame
    tables: list[Table]
    findings: list[Finding]
    #: the link to the sweep's stored MLflow view ('' without one), which the HTML report leads with
    view_url: str = ""


def analyse(sweep: Sweep) -> Analysis:
    """Tables (of seed means) and findings (of the seeds themselves: verdicts weigh their spread)."""
    point_keys = [*dict.fromkeys([*IDENTITY_KEYS, *sweep.axes]), *TAG_COLUMNS]
    digit_map = sweep.digit_map
    frame = attach_paper(aggregate_seeds(sweep.cells, sweep.axes), point_keys, digit_map)
    findings = evaluate_findings(
        sweep.cells, sweep.grid, digit_map, sweep.presearch_seeds_tag, sweep.variant_of
    )
    return Analysis(sweep, frame, build_tables(frame, sweep.axes), findings)


def render(analysis: Analysis, fmt: str = "markdown") -> str:
    """The whole report as one string in `fmt` (markdown, csv, latex or html)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of: {', '.join(FORMATS)}")
    sweep = analysis.sweep
    more = len(sweep.parent_run_ids) - 1
    first = sweep.parent_run_id
    which = f"Sweeps {first} and {more} more, read as one," if more > 0 else f"Sweep {first}"
    counts = ", ".join(f"{n} {status}" for status, n in sorted(sweep.status_counts.items()))
    head = (
        f"{which} of grid {sweep.grid!r} (scale {sweep.scale or '?'}) at {sweep.tracking_uri}: "
        f"{len(sweep.trials)} trials ({counts}); numbers are from finished trials only."
    )
    if fmt == "html":
        return page(analysis, head)
    notes, unfinished = sweep.notes, sweep.unfinished
    tables = render_tables(analysis.tables, fmt)
    findings = render_findings(analysis.findings, fmt, sweep.grid)
    if fmt == "csv":
        parts = [f"# {head}", *(f"# note: {n}" for n in notes), "# tables", tables, "# findings", findings]
        if len(unfinished):
            parts += ["# unfinished trials", unfinished.to_csv(index=False)]
        return "\n".join(parts)
    if fmt == "latex":
        parts = [f"% {head}", *(f"% note: {n}" for n in notes)]
        if len(unfinished):
            parts.append(
                unfinished.astype(str).to_latex(index=False, caption="Unfinished trials", escape=True)
            )
        return "\n".join([*parts, tables, findings])
    parts = [f"# Sweep analysis: {sweep.grid}", "", head, ""]
    parts += [f"- note: {n}" for n in notes]
    if len(unfinished):
        rows = markdown_rows(unfinished.columns, unfinished.itertuples(index=False))
        parts += ["", "## Unfinished trials (not in the numbers)", "", rows]
    return "\n".join([*parts, "", "## Tables", "", tables, "## Findings", "", findings])


def write_outputs(analysis: Analysis, text: str, fmt: str, out_dir: Path) -> list[Path]:
    """The report, its machine-readable parts and the heatmaps, into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        out_dir / f"report.{FORMATS[fmt]}": text,
        out_dir / "tables.csv": long_frame(analysis.tables).to_csv(index=False),
        out_dir / "findings.csv": findings_frame(analysis.findings).to_csv(index=False),
        out_dir / "trials.csv": as_stored(analysis.sweep.trials).to_csv(index=False),
        out_dir / "cells.csv": as_stored(analysis.sweep.cells).to_csv(index=False),
    }
    for path, content in files.items():
        path.write_text(content)
    figures = write_heatmaps(analysis.tables, out_dir)
    if (by_length := accuracy_by_digits_figure(analysis.sweep)) is not None:
        figures.append(out_dir / "accuracy_by_digits.png")
        by_length.savefig(figures[-1], dpi=110)
    return [*files, *figures, *write_figures(analysis.sweep, analysis.tables, out_dir)]


#: where the verdicts start in the parent run's description (what comes before it, the command, is kept)
VERDICTS_HEADING = "**Verdicts** (`python -m analysis`):"


def described(description: str, findings: Sequence[Finding]) -> str:
    """The parent run's description: its command, then each claim's verdict (a later analysis replaces
    the verdicts, not the command)."""
    lines = [VERDICTS_HEADING]
    for f in findings:
        lines.append(f"- {f.claim}: **{f.status}**" + (f": {verdict_numbers(f)}" if f.judged else ""))
    command = description.split(VERDICTS_HEADING)[0].rstrip()
    return "\n\n".join(filter(None, [command, "\n".join(lines)]))


def log_to_parent(analysis: Analysis, out_dir: Path) -> str | None:
    """Log the folder as the parent run's `analysis/` artifacts, its verdicts where the MLflow UI shows
    them, and its summary (`analysis.summary`); a message if that failed."""
    from mlflow.exceptions import MlflowException

    parent, findings = analysis.sweep.parent_run_id, analysis.findings
    try:
        client = store.client(analysis.sweep.tracking_uri)
        client.log_artifacts(parent, str(out_dir), "analysis")
        if findings:
            description = client.get_run(parent).data.tags.get(RUN_DESCRIPTION_TAG, "")
            client.set_tag(parent, RUN_DESCRIPTION_TAG, described(description, findings))
        log_summary(client, analysis)
    except (MlflowException, OSError) as err:
        return f"could not log the analysis on run {parent}: {err}"
    return None


def report(
    grid: str,
    tracking_uri: str,
    parent_run_id: str | Sequence[str] | None = None,
    out_dir: str | Path | None = None,
    fmt: str = "markdown",
    log_artifacts: bool = True,
) -> str:
    """Analyse one sweep of `grid` (the latest unless `parent_run_id`; several ids combine sweeps), write
    it to `out_dir` (if given), log it on the (first) parent run, and return the report text.

    Raises `analysis.AnalysisError` with a readable message for input it cannot analyse.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of: {', '.join(FORMATS)}")
    return report_sweep(read_sweep(grid, tracking_uri, parent_run_id), out_dir, fmt, log_artifacts)


def report_sweep(
    sweep: Sweep,
    out_dir: str | Path | None = None,
    fmt: str = "markdown",
    log_artifacts: bool = True,
    rejudge: Callable[[list[Finding]], list[Finding]] | None = None,
    ui_url: str = "",
) -> str:
    """`report` of a sweep already read. `rejudge`: the caller's reading of the findings (a planned sweep
    with parts still to run judges none); `ui_url`: an MLflow UI, where the sweep's view is stored."""
    analysis = analyse(sweep)
    if rejudge is not None:
        analysis = replace(analysis, findings=rejudge(analysis.findings))
    if ui_url:
        analysis = replace(analysis, view_url=share_view(sweep, ui_url))
    text = render(analysis, fmt)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        write_outputs(analysis, text, fmt, folder)
        problem = log_to_parent(analysis, folder) if log_artifacts else None
    if problem:
        text += f"\n{problem}\n"
    return text


__all__ = ["VERDICTS_TAG", "Analysis", "analyse", "render", "report", "report_sweep"]

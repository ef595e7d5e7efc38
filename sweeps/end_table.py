"""The end of a sweep as a Ray Tune user expects it: one row per trial, read back from the trials' MLflow
runs (what the UI shows), then the claims' verdicts, the HTML report's path and the MLflow views' links;
and `--register NAME`: the best trial's logged model registered in the Model Registry.

    trial     point            seed  test_acc  in_range  unseen   wall  status
    3f2a1b9c  basic               0      0.01      0.01    0.00   1:02  FINISHED
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.load import AnalysisError, read_sweep
from analysis.report import analyse, report_sweep
from analysis.summary import claim_ids
from analysis.ui_view import share_sweeps_view, share_view, ui_command
from arith.tracking import store
from arith.tracking.schema import HEADLINE_METRICS, POINT_TAG, SEED_TAG, TEST_ACC_METRIC, point_label
from experiments.registry import claims_for
from sweeps.errors import SweepError
from sweeps.progress import clock

#: the headline accuracies' columns, as short as a terminal needs
COLUMNS = {name: name.rpartition("/")[2] for name in HEADLINE_METRICS}
#: why a trial ended FAILED without an error (its run's `failure` tag), as the table says it
FAILURES = {"nonfinite_loss": "non-finite loss", "config_error": "setting refused"}
#: what Tune's per-trial summary shows of each trial when the analysis cannot compare the sweep
SUMMARY_METRICS = (TEST_ACC_METRIC, "epoch", "time_total_s")
#: the reports' folder (`make demo`'s REPORT is reports/<grid>)
REPORTS = Path("reports")
#: the MLflow UI's address the view's link is for (`make ui`'s)
UI_URL = "http://127.0.0.1:5000"


def trial_rows(runs: list[Any]) -> pd.DataFrame:
    """One row a trial run, sorted by point and seed."""
    rows = []
    for run in runs:
        tags, metrics, info = run.data.tags, run.data.metrics, run.info
        wall = (info.end_time - info.start_time) / 1000 if info.end_time and info.start_time else math.nan
        rows.append(
            {
                "trial": info.run_id[:8],
                POINT_TAG: point_label(tags.get(POINT_TAG, "")),
                SEED_TAG: int(tags.get(SEED_TAG, -1)),
                **{short: metrics.get(name, math.nan) for name, short in COLUMNS.items()},
                "wall": "" if math.isnan(wall) else clock(wall),
                "status": info.status
                + (f" ({FAILURES[why]})" if (why := tags.get("failure")) in FAILURES else ""),
            }
        )
    frame = pd.DataFrame(rows, columns=["trial", POINT_TAG, SEED_TAG, *COLUMNS.values(), "wall", "status"])
    return frame.sort_values([POINT_TAG, SEED_TAG]).reset_index(drop=True)


def table_text(frame: pd.DataFrame) -> str:
    """The rows as a terminal table, accuracies to two places, '-' where a trial logged none."""
    return frame.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.2f}")


def verdict_lines(sweep: Any) -> list[str]:
    """Each claim's verdict, by its id, with the numbers of its weakest contrast."""
    findings = analyse(sweep).findings
    ids = claim_ids(findings, claims_for(sweep.grid, sweep.variant_of))
    lines = []
    for cid, finding in zip(ids, findings, strict=True):
        numbers = finding.numbers
        if finding.judged:
            read = f" ({numbers['effect']}, 95% CI {numbers['95% CI']})" if numbers["95% CI"] else ""
        else:  # why, in short
            read = f" ({finding.evidence[:100]}{'...' if len(finding.evidence) > 100 else ''})"
        lines.append(f"verdict  {cid}: {finding.status}{read}")
    return lines


def sweep_trials(uri: str, parent_run_id: str) -> list[Any]:
    """The trial runs nested under the sweep's parent run, in its experiment."""
    client = store.client(uri)
    experiment_id = client.get_run(parent_run_id).info.experiment_id
    return store.search_runs(client, [experiment_id], store.trials_filter(parent_run_id))


def end_of_sweep(grid: str, uri: str, parent_run_id: str) -> str:
    """The trials' table, verdicts, report and views' links; without an analysis, the table and why."""
    parts = [table_text(trial_rows(sweep_trials(uri, parent_run_id))), ""]
    try:
        sweep = read_sweep(grid, uri, parent_run_id)
        db = store.sqlite_path(uri)  # the report beside a SQLite store, else here
        out = (db.parent if db is not None else Path()) / REPORTS / grid
        remote = uri.startswith(("http://", "https://"))
        ui_url = uri if remote else UI_URL
        report_sweep(sweep, out, "html", ui_url=ui_url)  # logs the parent run's summary, the report
    except AnalysisError as err:
        return "\n".join([*parts, f"no report: {err}"])
    parts += verdict_lines(sweep)
    parts.append(f"report   {out / 'report.html'}")
    parts.append(f"MLflow   {share_view(sweep, ui_url)}")
    parts.append(f"         its grid's sweeps side by side: {share_sweeps_view(sweep, ui_url)}")
    if not remote:
        parts.append(f"         (start the UI first: {ui_command(uri, 5000)})")
    return "\n".join(parts)


def final_report(grid: str, uri: str, parent_run_id: str, results: Any) -> str:
    """`end_of_sweep`, or without an analysis a table of Tune's `results`: each trial's point, seed, status
    and final metrics."""
    try:
        return end_of_sweep(grid, uri, parent_run_id)
    except Exception as err:  # the sweep's results stand even if the comparison cannot be drawn
        print(f"analysis.report failed ({err}); per-trial summary instead", file=sys.stderr)
    rows = []
    for result in results:
        cfg, metrics = result.config or {}, result.metrics or {}
        failed = [why for key, why in FAILURES.items() if metrics.get(key)]  # ended without an error
        status = f"FAILED ({failed[-1]})" if failed else "ERROR" if result.error else "DONE"
        row = {POINT_TAG: cfg.get(POINT_TAG), SEED_TAG: cfg.get(SEED_TAG), "status": status}
        rows.append({**row, **{m: metrics.get(m) for m in SUMMARY_METRICS}})
    frame = pd.DataFrame(rows).sort_values([POINT_TAG, SEED_TAG])
    return frame.to_string(index=False)


def register_best(uri: str, parent_run_id: str, name: str) -> str:
    """Register the logged model of the sweep's finished trial with the highest final test_acc as a new
    version of `name`; the line to print."""
    import mlflow
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    metric = HEADLINE_METRICS[0]
    finished = [t for t in sweep_trials(uri, parent_run_id) if t.info.status == "FINISHED"]
    scored = [(t.data.metrics[metric], t) for t in finished if metric in t.data.metrics]
    if not scored:
        raise SweepError(f"--register: sweep {parent_run_id} has no finished trial with {metric}")
    accuracy, trial = max(scored, key=lambda pair: pair[0])
    models = store.client(uri).search_logged_models(
        [trial.info.experiment_id], filter_string=f"source_run_id = '{trial.info.run_id}'", max_results=5
    )
    if not models:
        raise SweepError(
            f"--register: trial {trial.info.run_name} logged no model (tracking.log_model=none?)"
        )
    with _use_tracking_uri(uri):  # store.client above: MLflow's HTTP settings, as for every client
        version = mlflow.register_model(f"models:/{models[0].model_id}", name).version
    return f"registered {models[0].name} ({metric} {accuracy:.2f}) as model {name!r}, version {version}"

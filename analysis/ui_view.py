"""A ready-made MLflow UI view of a sweep, stored as the experiment tag the UI's "Share" button writes
(``mlflow.sharedViewState.<key>``, opened by ``viewStateShareKey=<key>``).

The table: the trials only (not the parent run), the varying axes and test accuracies as columns, grouped
by the axes with each group's average. The charts (``&compareRunsMode=CHART``): a bar per trial of each
headline accuracy, then MLflow's own charts in the sections `metric_sections` orders. The charts draw
trials, not groups, because only a run can be given a colour: each trial's `mlflow.runColor` tag is its
point's colour, the same as in the report's figures (the UI hashes group names into near-identical reds).
`share_sweeps_view` stores a view of a grid's sweeps side by side, one row a parent run.
The JSON is the UI's own view state as MLflow 3.17 reads it; another version may show its default view.
`ui_command` is the command that starts the UI over a local store, as a reader can type it where they
stand (a bare `mlflow` is not on PATH outside the activated environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.curves import point_colours, point_labels
from analysis.load import FINISHED, Sweep
from arith.tracking import store
from arith.tracking.schema import (
    AXES_TAG,
    BEYOND_METRIC,
    CI_HIGH_SUFFIX,
    CI_LOW_SUFFIX,
    CLAIM_TAG_PREFIX,
    COLOUR_COLUMN,
    COMMAND_PARAM,
    CONTEXT_COLUMN,
    GRID_TAG,
    IN_RANGE_METRIC,
    RUN_COLOR_TAG,
    RUN_ID_COLUMN,
    SCALE_TAG,
    SEEDS_PARAM,
    SWEEP_TAG,
    TEST_ACC_METRIC,
)
from arith.tracking.store import sqlite_path

VIEW_TAG = "mlflow.sharedViewState."
#: opens the UI's "Model training" workflow: a first visit otherwise opens its GenAI one
TRAINING_WORKFLOW = "workflowType=machine_learning"
#: the accuracy metrics a view shows first, when the trials logged them
LEADING_METRICS = (TEST_ACC_METRIC, IN_RANGE_METRIC, BEYOND_METRIC)
#: draw every run in the charts (the UI's default draws the first 10)
SHOW_ALL_RUNS = "SHOW_ALL"
#: the most runs a chart compares: every trial of any sweep here
RUNS_COMPARED = 100
#: MLflow's section for metrics without a prefix
UNPREFIXED_SECTION = "Model metrics"
#: the chart sections by prefix, in the view's order (a prefix not named here goes just before `eval`)
SECTION_ORDER = (TEST_ACC_METRIC, "gate", "search", "train", UNPREFIXED_SECTION, "eval")


def quoted(kind: str, key: str) -> str:
    return f"{kind}.`{key}`"


def varying_axes(sweep: Sweep) -> list[str]:
    """The sweep's axes that take more than one value among its trials (not one fixed by --only)."""
    trials = sweep.trials
    axes = [a for a in sweep.axes if a in trials.columns and trials[a].astype(str).nunique() > 1]
    return axes or ["data.format"]


def accuracy_metrics(sweep: Sweep, logged: list[str] | None = None) -> list[str]:
    """The logged `test_acc*` metrics, the headline ones first (without `logged`: as the cells imply)."""
    if logged is None:
        contexts = sorted(sweep.cells[CONTEXT_COLUMN].dropna().unique())
        logged = [TEST_ACC_METRIC, *(f"test_acc/{c}" for c in contexts if len(contexts) > 1 or c != "main")]
    names = [m for m in logged if m == TEST_ACC_METRIC or m.startswith("test_acc/")]
    return [*(m for m in LEADING_METRICS if m in names), *sorted(set(names) - set(LEADING_METRICS))]


def view_state(sweep: Sweep, logged: list[str] | None = None) -> dict:
    axes = varying_axes(sweep)
    metrics = accuracy_metrics(sweep, logged)
    columns = [*(quoted("params", a) for a in axes), *(quoted("metrics", m) for m in metrics)]
    return {
        "searchFilter": view_filter(sweep),
        "orderByKey": quoted("metrics", TEST_ACC_METRIC),
        "orderByAsc": False,
        "selectedColumns": columns,
        **column_layout(columns),
        "groupBy": {
            "aggregateFunction": "average",
            "groupByKeys": [{"mode": "param", "groupByData": a} for a in axes],
        },
        "useGroupedValuesInCharts": False,
        "hideEmptyCharts": True,
        "runsHiddenMode": SHOW_ALL_RUNS,
        **claim_charts(metrics, logged or metrics),
    }


#: a column's width in pixels: 8 a header character, 40 for the sort icon, at least an average's width
PX_PER_CHARACTER, HEADER_PADDING_PX, MIN_COLUMN_PX = 8, 40, 140


def column_layout(columns: list[str]) -> dict:
    """The runs table's column order (the UI's own puts every metric before every param) and widths (its
    default cuts `test_acc/regular/beyond` to `test_acc/regula`)."""
    widths = {
        c: max(MIN_COLUMN_PX, PX_PER_CHARACTER * len(c.split(".", 1)[1].strip("`")) + HEADER_PADDING_PX)
        for c in columns
    }
    return {"columnOrder": ["duration", *columns], "columnWidths": widths}


def view_filter(sweep: Sweep) -> str:
    """The trials the report read, without their parent run(s); of several parts, by run id (MLflow has no
    `IN` on tags), since the experiment also holds trials the report did not read."""
    parents = sweep.parent_run_ids or (sweep.parent_run_id,)
    if len(parents) == 1:
        return store.trials_filter(parents[0])
    ids = ", ".join(f"'{run_id}'" for run_id in dict.fromkeys(sweep.trials[RUN_ID_COLUMN]))
    return f"attributes.run_id IN ({ids})"


def view_key(sweep: Sweep) -> str:
    """The view's name: its parent run's, or of several parts, the first's and a digest of them all."""
    key = f"sweep-{sweep.parent_run_id[:12]}"
    parents = sorted(set(sweep.parent_run_ids) | {sweep.parent_run_id})
    if len(parents) == 1:
        return key
    digest = hashlib.sha1(",".join(parents).encode()).hexdigest()[:8]
    return f"{key}-and-{len(parents) - 1}-more-{digest}"


CLAIM_SECTION = "claim-accuracies"


def claim_charts(metrics: list[str], logged: Sequence[str] = ()) -> dict:
    """The chart view: a section of bar charts of the headline accuracies, then one per prefix of the
    `logged` metrics for MLflow to fill with its own charts."""
    headline = [m for m in LEADING_METRICS if m in metrics] or metrics[:1]
    card = chart_card(CLAIM_SECTION)
    bars = [
        {**card, "uuid": f"bar-{m}", "type": "BAR", "metricKey": m, "displayName": f"{m} (last value)"}
        for m in headline
    ]
    sections = [chart_section(CLAIM_SECTION, "Accuracy by the sweep's axes"), *metric_sections(logged)]
    return {"compareRunSections": sections, "compareRunCharts": bars, "isAccordionReordered": True}


def metric_sections(logged: Sequence[str]) -> list[dict]:
    """A section for each prefix of the `logged` metrics in `SECTION_ORDER`, where the UI sorts them by
    name (`eval`, the evaluation's throughput, second, under the accuracies)."""
    # the section MLflow puts a metric in: its key less the last part (the UI's `extractChartSectionName`)
    names = sorted({"/".join(m.split("/")[:-1]) or UNPREFIXED_SECTION for m in logged})

    def rank(name: str) -> tuple[int, str]:
        top = name.split("/")[0] if name != UNPREFIXED_SECTION else name
        place = SECTION_ORDER.index(top) if top in SECTION_ORDER else SECTION_ORDER.index(UNPREFIXED_SECTION)
        return (2 * place + (top not in SECTION_ORDER), name)

    return [chart_section(f"section-{name}", name) for name in sorted(names, key=rank)]


def chart_section(uuid: str, name: str) -> dict:
    return dict(uuid=uuid, name=name, display=True, isReordered=False, deleted=False, isGenerated=False)


def chart_card(section: str) -> dict:
    return dict(metricSectionId=section, runsCountToCompare=RUNS_COMPARED, deleted=False, isGenerated=False)


def logged_metrics(sweep: Sweep) -> list[str]:
    """The metric keys a finished trial of the sweep logged."""
    finished = sweep.trials.loc[sweep.trials["status"] == FINISHED, RUN_ID_COLUMN]
    if finished.empty:
        return []
    return sorted(store.client(sweep.tracking_uri).get_run(finished.iloc[0]).data.metrics)


def colour_untagged_trials(sweep: Sweep) -> int:
    """Tag each trial without a run colour (from before the tag, or restored from an archive) with its
    point's colour in the report's figures; returns how many it tagged."""
    trials = sweep.trials
    labels = point_labels(trials, sweep.axes)
    colours = point_colours(trials, labels)
    tagged = trials[COLOUR_COLUMN].fillna("") if COLOUR_COLUMN in trials else [""] * len(trials)
    client = store.client(sweep.tracking_uri)
    every = zip(trials[RUN_ID_COLUMN], labels, tagged, strict=True)
    untagged = [(run_id, label) for run_id, label, tag in every if not tag]
    for run_id, label in untagged:
        client.set_tag(run_id, RUN_COLOR_TAG, colours[label])
    return len(untagged)


def store_view(client, experiment_id: str, key: str, state: dict, ui_url: str) -> str:
    """Store a view state on the experiment; return the UI address that opens it."""
    client.set_experiment_tag(experiment_id, VIEW_TAG + key, json.dumps(state))
    runs_page = f"{ui_url.rstrip('/')}/#/experiments/{experiment_id}/runs"
    return f"{runs_page}?{TRAINING_WORKFLOW}&viewStateShareKey={key}"


def share_view(sweep: Sweep, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store the view on the sweep's experiment, its trials coloured by point; return its UI address."""
    colour_untagged_trials(sweep)
    client = store.client(sweep.tracking_uri)
    experiment_id = client.get_run(sweep.parent_run_id).info.experiment_id
    state = view_state(sweep, logged_metrics(sweep) or None)
    return store_view(client, experiment_id, view_key(sweep), state, ui_url)


#: the parent run's params the view of a grid's sweeps shows, in its order
SWEEP_PARAMS = (SCALE_TAG, SEEDS_PARAM, AXES_TAG, COMMAND_PARAM, GRID_TAG)


def sweeps_view_state(metrics: list[str], claim_tags: list[str]) -> dict:
    """A grid's sweeps side by side, newest first: a row a parent run, its params, the points' seed means
    (their intervals left to the run's page) and the claims' verdicts (`analysis.summary` logs them)."""
    means = [m for m in metrics if not m.endswith((CI_LOW_SUFFIX, CI_HIGH_SUFFIX))]
    columns = [
        *(quoted("params", p) for p in SWEEP_PARAMS),
        *(quoted("metrics", m) for m in means),
        *(quoted("tags", t) for t in claim_tags),
    ]
    return {
        "searchFilter": f"tags.{SWEEP_TAG} = '1'",
        "orderByKey": "attributes.start_time",
        "orderByAsc": False,
        "selectedColumns": columns,
        **column_layout(columns),
        "runsHiddenMode": SHOW_ALL_RUNS,
    }


def share_sweeps_view(sweep: Sweep, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store the view of the sweep's grid's sweeps on its experiment; return its UI address."""
    client = store.client(sweep.tracking_uri)
    parent = client.get_run(sweep.parent_run_id)
    claim_tags = sorted(t for t in parent.data.tags if t.startswith(CLAIM_TAG_PREFIX))
    state = sweeps_view_state(sorted(parent.data.metrics), claim_tags)
    return store_view(client, parent.info.experiment_id, f"sweeps-{sweep.grid}", state, ui_url)


ROOT = Path(__file__).resolve().parent.parent
#: the store `make ui` serves, relative to the project's root
MAKE_UI_STORE = "mlflow.db"
MAKE_UI_PORT = 5000


def ui_command(uri: str, port: int = MAKE_UI_PORT, cwd: Path | None = None) -> str:
    """`make ui` where it serves this store on this port from `cwd`, else the venv's `mlflow ui ...`."""
    here = Path(cwd or os.getcwd()).resolve()
    db = sqlite_path(uri)
    if here == ROOT and db is not None and db.resolve() == ROOT / MAKE_UI_STORE and port == MAKE_UI_PORT:
        return "make ui"
    mlflow = Path(sys.executable).with_name("mlflow")
    try:
        shown = str(mlflow.relative_to(here))
    except ValueError:
        shown = str(mlflow)
    return shlex.join([shown, "ui", "--backend-store-uri", uri, "--port", str(port)])

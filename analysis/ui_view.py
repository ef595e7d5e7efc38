"""A ready-made MLflow UI view of a sweep: the axes it varies and the accuracies its claims rest on as
columns, trials grouped by those axes, and the same numbers as charts, each trial in its point's colour.

The MLflow UI can open a view that is stored as an experiment tag (``mlflow.sharedViewState.<key>``,
what its "Share" button writes) via ``#/experiments/<id>/runs?viewStateShareKey=<key>``. Writing that
tag saves a person the clicks: the params of every axis the sweep varies and the test accuracies the
trials logged (`test_acc`, in and beyond the training range, per context) as columns, sorted by
`test_acc`, grouped by the varying axes with each group's average (grouping also lifts the trials out
from under the collapsed parent run). The view lists the sweep's trials only: its parent run, all dashes
where the trials have numbers, would otherwise be a group of its own. The link also asks for the UI's
"Model training" workflow (`TRAINING_WORKFLOW`): MLflow 3.17 opens a first visit in its GenAI one.

Adding ``&compareRunsMode=CHART`` opens the chart view, led by a section of its own: a bar chart of each
headline accuracy (each trial's last value); MLflow's own charts of every other metric follow, in sections
the view orders (`metric_sections`: accuracies, then training, then bookkeeping, the throughput of the
evaluation last) where MLflow would sort them by name (`eval` second, under the accuracies). Every trial is
drawn (`runsHiddenMode` SHOW_ALL): the UI's default draws the first 10 runs only, which in a sweep of 20
trials sorted by accuracy left one side of the comparison out of every chart. The charts
draw the trials one by one, not the groups' averages (`useGroupedValuesInCharts` off), because only a run
can be given a colour: each trial's `mlflow.runColor` tag (`arith.tracking.schema.RUN_COLOR_TAG`, set by
`sweeps.space`) is its point's colour from a ten-colour palette, the same in the report's figures, every
seed of a point alike. A group's colour is the UI's own hash of its name into a palette with several
near-identical reds (or a person's pick, kept in the browser): no tag sets it, and two groups of the
demo came out in reds hard to tell apart. So the table reads the groups' averages, the charts each seed's
bar in its point's colour, and the spread of the seeds shows.
A parallel-coordinates chart asked for in the same state is not drawn by MLflow 3.17 over grouped runs, so
the view asks for none. The tag's JSON is the UI's own view state (its
`compareRunCharts` / `compareRunSections`, checked with MLflow 3.17); an MLflow that reads it
differently shows its default view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from analysis.curves import point_colours, point_labels
from analysis.load import FINISHED, Sweep
from arith.tracking import store
from arith.tracking.schema import (
    BEYOND_METRIC,
    COLOUR_COLUMN,
    CONTEXT_COLUMN,
    IN_RANGE_METRIC,
    RUN_COLOR_TAG,
    RUN_ID_COLUMN,
    TEST_ACC_METRIC,
)

VIEW_TAG = "mlflow.sharedViewState."
#: the UI's query parameter that opens an experiment in its "Model training" workflow: without it MLflow
#: 3.17 opens a first visit in its GenAI workflow (a sidebar of traces, judges and prompts), whatever the
#: experiment's kind tag
TRAINING_WORKFLOW = "workflowType=machine_learning"
#: the accuracy metrics a view shows first, when the trials logged them (arith.training.metrics)
LEADING_METRICS = (TEST_ACC_METRIC, IN_RANGE_METRIC, BEYOND_METRIC)
#: the UI's run-visibility mode that draws every run in the charts (its default: the first 10)
SHOW_ALL_RUNS = "SHOW_ALL"
#: the most runs a chart of ours compares: every trial of any sweep this project runs
RUNS_COMPARED = 100
#: MLflow's section for metrics without a prefix (`epochs_done`, `seen_fraction`, `test_acc` itself)
UNPREFIXED_SECTION = "Model metrics"
#: the chart sections by prefix, in the order the view shows them (accuracies first, the evaluation's
#: throughput last); a prefix not named here comes after the named ones, before the throughput
SECTION_ORDER = (TEST_ACC_METRIC, "gate", "search", "train", UNPREFIXED_SECTION, "eval")


def quoted(kind: str, key: str) -> str:
    return f"{kind}.`{key}`"


def varying_axes(sweep: Sweep) -> list[str]:
    """The sweep's axes that take more than one value among its trials (a subset run with --only, or a
    setting fixed in this sweep, is no axis of the view)."""
    trials = sweep.trials
    axes = [a for a in sweep.axes if a in trials.columns and trials[a].astype(str).nunique() > 1]
    return axes or ["data.format"]


def accuracy_metrics(sweep: Sweep, logged: list[str] | None = None) -> list[str]:
    """The test-accuracy columns: the logged `test_acc*` metrics, the headline ones first; without
    `logged`, those the contexts of the sweep's cells imply."""
    if logged is None:
        contexts = sorted(sweep.cells[CONTEXT_COLUMN].dropna().unique())
        logged = [TEST_ACC_METRIC, *(f"test_acc/{c}" for c in contexts if len(contexts) > 1 or c != "main")]
    names = [m for m in logged if m == TEST_ACC_METRIC or m.startswith("test_acc/")]
    return [*(m for m in LEADING_METRICS if m in names), *sorted(set(names) - set(LEADING_METRICS))]


def view_state(sweep: Sweep, logged: list[str] | None = None) -> dict:
    """The UI view for this sweep (columns, order, grouping, charts of the trials in their colours)."""
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


#: the runs table's duration column (it has no column id of its own: ag-grid names it by its field)
DURATION_COLUMN = "duration"
#: a column's width in pixels: about 8 a character of its header, 40 for the sort icon and padding, and
#: at least MIN_COLUMN_PX, which shows an accuracy to 6 digits with the UI's "(average)" after it
PX_PER_CHARACTER, HEADER_PADDING_PX, MIN_COLUMN_PX = 8, 40, 140


def column_layout(columns: list[str]) -> dict:
    """The runs table's column order and widths: the sweep's axes first, beside the run names, then the
    accuracies, each column wide enough for its whole name (the UI's default width cut
    `test_acc/regular`, `test_acc/regular/beyond` and `test_acc/regular/in_range` to one
    `test_acc/regula`), where the UI puts every metric before every parameter."""
    widths = {
        c: max(MIN_COLUMN_PX, PX_PER_CHARACTER * len(c.split(".", 1)[1].strip("`")) + HEADER_PADDING_PX)
        for c in columns
    }
    return {"columnOrder": [DURATION_COLUMN, *columns], "columnWidths": widths}


def view_filter(sweep: Sweep) -> str:
    """The UI's search filter that keeps the sweep's trials and leaves its parent run(s) out: the
    trials of its one parent run (`store.trials_filter`), or of several parts the trials read, by run id
    (MLflow filters `IN` on run ids, not on tags): the grid's experiment also holds other sweeps of it
    (superseded, searches, trials a rerun replaced), which the report did not read."""
    parents = sweep.parent_run_ids or (sweep.parent_run_id,)
    if len(parents) == 1:
        return store.trials_filter(parents[0])
    ids = ", ".join(f"'{run_id}'" for run_id in dict.fromkeys(sweep.trials[RUN_ID_COLUMN]))
    return f"attributes.run_id IN ({ids})"


def view_key(sweep: Sweep) -> str:
    """The name the view is stored under: its parent run's, or for several parts read as one, the first's
    with a digest of them all (two reads of different parts get views of their own)."""
    key = f"sweep-{sweep.parent_run_id[:12]}"
    parents = sorted(set(sweep.parent_run_ids) | {sweep.parent_run_id})
    if len(parents) == 1:
        return key
    digest = hashlib.sha1(",".join(parents).encode()).hexdigest()[:8]
    return f"{key}-and-{len(parents) - 1}-more-{digest}"


#: the chart view's first section: the accuracies a claim rests on, by the sweep's axes
CLAIM_SECTION = "claim-accuracies"


def claim_charts(
    metrics: list[str], logged: Sequence[str] = (), name: str = "Accuracy by the sweep's axes"
) -> dict:
    """The UI's chart-view state: one section (`name`) with a bar chart per headline accuracy (MLflow's
    `RunsChartsBarCardConfig` fields), then a section per prefix of the `logged` metrics, in the view's
    order (`metric_sections`), for MLflow to fill with its own charts."""
    headline = [m for m in LEADING_METRICS if m in metrics] or metrics[:1]
    card = chart_card(CLAIM_SECTION)
    bars = [
        {**card, "uuid": f"bar-{m}", "type": "BAR", "metricKey": m, "displayName": f"{m} (last value)"}
        for m in headline
    ]
    sections = [chart_section(CLAIM_SECTION, name), *metric_sections(logged)]
    return {"compareRunSections": sections, "compareRunCharts": bars, "isAccordionReordered": True}


def section_name(metric: str) -> str:
    """The chart section MLflow puts a metric's chart in: its key less the last `/` part, or
    `UNPREFIXED_SECTION` for a key without one (the UI's `extractChartSectionName`)."""
    return "/".join(metric.split("/")[:-1]) or UNPREFIXED_SECTION


def metric_sections(logged: Sequence[str]) -> list[dict]:
    """A section for each prefix of the `logged` metrics, ordered by `SECTION_ORDER` (a nested prefix,
    `test_acc/regular`, after its parent) where the UI would sort them by name. With the view's
    `isAccordionReordered` MLflow keeps this order and puts each metric it charts itself in the section of
    its name; a metric logged later, of a prefix not here, gets a section after these."""
    names = sorted({section_name(m) for m in logged})

    def rank(name: str) -> tuple[int, str]:
        # a named prefix at its place; one not named just after the unprefixed section, before `eval`
        top = name.split("/")[0] if name != UNPREFIXED_SECTION else name
        place = SECTION_ORDER.index(top) if top in SECTION_ORDER else SECTION_ORDER.index(UNPREFIXED_SECTION)
        return (2 * place + (top not in SECTION_ORDER), name)

    return [chart_section(f"section-{name}", name) for name in sorted(names, key=rank)]


def chart_section(uuid: str, name: str) -> dict:
    """A chart section of the UI's view state, ours (not generated by MLflow), shown."""
    return dict(uuid=uuid, name=name, display=True, isReordered=False, deleted=False, isGenerated=False)


def chart_card(section: str) -> dict:
    """What every chart card of ours in `section` shares (every trial compared: `RUNS_COMPARED`)."""
    return dict(metricSectionId=section, runsCountToCompare=RUNS_COMPARED, deleted=False, isGenerated=False)


def logged_metrics(sweep: Sweep) -> list[str]:
    """The metric keys a finished trial of the sweep logged."""
    finished = sweep.trials.loc[sweep.trials["status"] == FINISHED, RUN_ID_COLUMN]
    if finished.empty:
        return []
    return sorted(store.client(sweep.tracking_uri).get_run(finished.iloc[0]).data.metrics)


def colour_untagged_trials(sweep: Sweep) -> int:
    """Give each trial without a run colour (a sweep from before the tag, or restored from its archive)
    the colour the report's figures draw its point in (`analysis.curves.point_colours`), so that the UI's
    charts draw every seed of a point alike, in the figures' colour, rather than each run in a colour of
    the UI's own; returns how many trials it tagged."""
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


def share_view(sweep: Sweep, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store the view on the sweep's experiment, its trials coloured by point (`colour_untagged_trials`);
    return the UI address that opens it. A sweep read from several parts gets a view apart from its first
    part's."""
    colour_untagged_trials(sweep)
    client = store.client(sweep.tracking_uri)
    experiment_id = client.get_run(sweep.parent_run_id).info.experiment_id
    key = view_key(sweep)  # several parts read as one: a view of its own, not the first's
    state = view_state(sweep, logged_metrics(sweep) or None)
    client.set_experiment_tag(experiment_id, VIEW_TAG + key, json.dumps(state))
    runs_page = f"{ui_url.rstrip('/')}/#/experiments/{experiment_id}/runs"
    return f"{runs_page}?{TRAINING_WORKFLOW}&viewStateShareKey={key}"

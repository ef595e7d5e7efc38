"""A recipe search's ready-made MLflow UI view: each configuration with the gate's weakest cell, the
core-minutes it spent and how ASHA ended it, best first; its charts open on the gate against CPU seconds."""

from __future__ import annotations

import json

from analysis.ui_view import (
    SHOW_ALL_RUNS,
    TRAINING_WORKFLOW,
    VIEW_TAG,
    chart_card,
    chart_section,
    column_layout,
    quoted,
)
from arith.tracking import store
from arith.tracking.schema import CPU_SECONDS, GATE_METRIC, POINT_TAG
from lab.search.declared import CORE_MINUTES, STOPPED_TAG

#: the search view's first section (MLflow orders the chart sections by name: "Cost ..." comes first)
SEARCH_SECTION = "search-cost-to-gate"


def search_charts() -> dict:
    """The chart view of a search: a section, first, with the gate's weakest cell of each trial against
    its CPU seconds (the cost-to-gate figure of docs/RESULTS.md, live: the trainer logs both each epoch)
    and a bar of the latest gate per trial (MLflow's `RunsChartsLineCardConfig` / `BarCardConfig`)."""
    card = chart_card(SEARCH_SECTION)
    line = {
        **card,
        "uuid": "search-gate-by-cpu-seconds",
        "type": "LINE",
        "metricKey": GATE_METRIC,
        "selectedMetricKeys": [GATE_METRIC],
        "xAxisKey": "metric",
        "selectedXAxisMetricKey": CPU_SECONDS,
        "xAxisScaleType": "linear",
        "scaleType": "linear",
        "lineSmoothness": 0,
        "displayPoints": True,
    }
    bar = {**card, "uuid": "search-gate-last", "type": "BAR", "metricKey": GATE_METRIC}
    name = "Cost to the gate: the weakest gated cell (unseen problems) by CPU seconds, each trial"
    return {"compareRunSections": [chart_section(SEARCH_SECTION, name)], "compareRunCharts": [line, bar]}


def search_view_state(parent_run_id: str) -> dict:
    """The UI view of a recipe search's trials (`lab.search.sweep`): each configuration (its `point` tag,
    recipe and compared format) with the gate's weakest cell, the core-minutes it spent and how ASHA
    ended it, best first; the chart view opens on the gate against the CPU seconds spent (`search_charts`)."""
    columns = [
        quoted("tags", POINT_TAG),
        quoted("metrics", GATE_METRIC),
        quoted("metrics", CORE_MINUTES),
        quoted("metrics", CPU_SECONDS),
        quoted("tags", STOPPED_TAG),
    ]
    return {
        "searchFilter": store.trials_filter(parent_run_id),
        "orderByKey": quoted("metrics", GATE_METRIC),
        "orderByAsc": False,
        "selectedColumns": columns,
        **column_layout(columns),
        "useGroupedValuesInCharts": False,
        "hideEmptyCharts": True,
        "runsHiddenMode": SHOW_ALL_RUNS,
        **search_charts(),
    }


def share_search_view(tracking_uri: str, parent_run_id: str, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store a search's view on its experiment; return the UI address that opens it."""
    client = store.client(tracking_uri)
    experiment_id = client.get_run(parent_run_id).info.experiment_id
    key = f"search-{parent_run_id[:12]}"
    client.set_experiment_tag(experiment_id, VIEW_TAG + key, json.dumps(search_view_state(parent_run_id)))
    runs_page = f"{ui_url.rstrip('/')}/#/experiments/{experiment_id}/runs"
    return f"{runs_page}?{TRAINING_WORKFLOW}&viewStateShareKey={key}"

"""A ready-made MLflow UI view of a grid's sweeps side by side: one row a sweep (its parent run), its
params (grid, scale, axes, seeds, command), each point's seed means of the headline accuracies and each
claim's verdict as columns (`analysis.summary` logs them), newest first. Where the trials' view
(`analysis.ui_view`) compares the points of one sweep, this compares sweeps: which one held a claim, what
another seed range or scale read. Stored as the trials' view is, an experiment tag the UI's
`viewStateShareKey` opens."""

from __future__ import annotations

import json

from analysis.load import Sweep
from analysis.ui_view import TRAINING_WORKFLOW, VIEW_TAG, column_layout
from arith.tracking import store
from arith.tracking.schema import (
    AXES_TAG,
    CI_HIGH_SUFFIX,
    CI_LOW_SUFFIX,
    CLAIM_TAG_PREFIX,
    COMMAND_PARAM,
    GRID_TAG,
    SCALE_TAG,
    SEEDS_PARAM,
    SWEEP_TAG,
)

#: the parent run's params, in the order the view shows them
PARAMS = (SCALE_TAG, SEEDS_PARAM, AXES_TAG, COMMAND_PARAM, GRID_TAG)


def sweeps_view_state(metrics: list[str], claim_tags: list[str]) -> dict:
    """The view: the grid's parent runs, their params, the points' seed means (their intervals' ends left
    to the run's page) and the claims' verdicts as columns, the newest sweep first."""
    means = [m for m in metrics if not m.endswith((CI_LOW_SUFFIX, CI_HIGH_SUFFIX))]
    columns = [
        *(f"params.`{p}`" for p in PARAMS),
        *(f"metrics.`{m}`" for m in means),
        *(f"tags.`{t}`" for t in claim_tags),
    ]
    return {
        "searchFilter": f"tags.{SWEEP_TAG} = '1'",
        "orderByKey": "attributes.start_time",
        "orderByAsc": False,
        "selectedColumns": columns,
        **column_layout(columns),
        "runsHiddenMode": "SHOW_ALL",
    }


def share_sweeps_view(sweep: Sweep, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store the view of the sweep's grid's sweeps on its experiment; return the UI address that opens it."""
    client = store.client(sweep.tracking_uri)
    parent = client.get_run(sweep.parent_run_id)
    claim_tags = sorted(t for t in parent.data.tags if t.startswith(CLAIM_TAG_PREFIX))
    state = sweeps_view_state(sorted(parent.data.metrics), claim_tags)
    key = f"sweeps-{sweep.grid}"
    client.set_experiment_tag(parent.info.experiment_id, VIEW_TAG + key, json.dumps(state))
    runs_page = f"{ui_url.rstrip('/')}/#/experiments/{parent.info.experiment_id}/runs"
    return f"{runs_page}?{TRAINING_WORKFLOW}&viewStateShareKey={key}"

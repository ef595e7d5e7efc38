"""A ready-made MLflow UI view of a sweep: the grid's axes and accuracies as columns, trials grouped.

The MLflow UI can open a view that is stored as an experiment tag (``mlflow.sharedViewState.<key>``,
what its "Share" button writes) via ``#/experiments/<id>/runs?viewStateShareKey=<key>``. Writing that
tag saves a person the clicks: params of every axis and `test_acc`, `test_acc/<context>` as columns,
sorted by `test_acc`, grouped by the grid's last axis with the average shown for each group (grouping
also lifts the trials out from under the collapsed parent run). The tag's JSON is the UI's own view
state (checked with MLflow 3.x); an MLflow that reads it differently shows its default view instead.
"""

from __future__ import annotations

import json

from analysis.load import Sweep

VIEW_TAG = "mlflow.sharedViewState."


def _quoted(kind: str, key: str) -> str:
    return f"{kind}.`{key}`"


def view_state(sweep: Sweep) -> dict:
    """The UI view for this sweep (columns, order, grouping)."""
    contexts = sorted(sweep.cells["context"].dropna().unique())
    metrics = ["test_acc", *(f"test_acc/{c}" for c in contexts if len(contexts) > 1 or c != "main")]
    axes = [a for a in sweep.axes if not a.startswith(("train.lr", "data.test_digits"))] or ["data.format"]
    return {
        "searchFilter": "",
        "orderByKey": _quoted("metrics", "test_acc"),
        "orderByAsc": False,
        "selectedColumns": [*(_quoted("params", a) for a in axes), *(_quoted("metrics", m) for m in metrics)],
        "groupBy": {
            "aggregateFunction": "average",
            "groupByKeys": [{"mode": "param", "groupByData": axes[-1]}],
        },
    }


def share_view(sweep: Sweep, ui_url: str = "http://127.0.0.1:5000") -> str:
    """Store the view on the sweep's experiment; return the UI address that opens it."""
    from arith import store

    client = store.client(sweep.tracking_uri)
    experiment_id = client.get_run(sweep.parent_run_id).info.experiment_id
    key = f"sweep-{sweep.parent_run_id[:12]}"
    client.set_experiment_tag(experiment_id, VIEW_TAG + key, json.dumps(view_state(sweep)))
    return f"{ui_url.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={key}"

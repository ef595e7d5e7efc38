"""The HTML report's way into MLflow: a link to the sweep's stored view (`analysis.ui_view.share_view`:
the trials grouped by the grid's axes) and one to each trial's run, by point and seed, where a reader
who saw a number in the report goes to see where it came from."""

from __future__ import annotations

import html
import re

from analysis.sweep import Sweep
from arith.tracking.schema import POINT_TAG, RUN_ID_COLUMN, SEED_COLUMN, point_label

#: the experiment's runs page in a view's link: `<ui>/#/experiments/<id>/runs?...`
RUNS_PAGE = re.compile(r"^(?P<ui>.*?)/#/experiments/(?P<experiment>[^/?]+)/runs")


def run_url(view_url: str, run_id: str) -> str:
    """A trial run's page in the UI the view's link is for."""
    found = RUNS_PAGE.match(view_url)
    if found is None:
        return ""
    return f"{found['ui']}/#/experiments/{found['experiment']}/runs/{run_id}"


def mlflow_links_html(sweep: Sweep, view_url: str) -> str:
    """A paragraph of links: the sweep's view, then every trial's run ('' without a view)."""
    if not view_url:
        return ""
    trials = sweep.trials.sort_values([POINT_TAG, SEED_COLUMN])
    runs = []
    for run_id, point, seed in zip(
        trials[RUN_ID_COLUMN], trials[POINT_TAG], trials[SEED_COLUMN], strict=True
    ):
        name = html.escape(f"{point_label(point)} seed {seed}")
        runs.append(f'<a href="{html.escape(run_url(view_url, run_id))}">{name}</a>')
    return (
        f'<p class="mlflow">In MLflow: <a id="mlflow-view" href="{html.escape(view_url)}">the sweep\'s runs, '
        f"grouped by {html.escape(', '.join(sweep.axes))}</a> (start the UI first); each trial's run: "
        + " · ".join(runs)
        + "</p>"
    )

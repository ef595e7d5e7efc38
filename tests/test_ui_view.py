"""The MLflow UI view the analysis stores for a sweep: its sections in order, a point's trials in one colour
(the figures' too), a search's view led by its configuration and gate."""

from __future__ import annotations

from pathlib import Path

from synthetic import (
    write_store,
)

from analysis.load import (
    read_sweep,
)


def test_the_chart_view_orders_mlflows_sections_accuracies_first_and_throughput_last() -> None:
    """Metrics of the kinds a reversal trial logs (as reverse_posembed_replication's do), a search's and
    one of a prefix the view does not name: the sections MLflow would sort by name (`eval` right under the
    accuracies) come in the view's order."""
    from analysis.ui_view import metric_sections

    logged = [
        "epochs_done", "eval/samples_per_s", "seen_fraction", "test_acc", "test_acc/beyond",
        "test_acc/in_range", "test_acc/regular", "test_acc/regular/beyond", "test_acc/repetitive/beyond",
        "train/loss", "train/tokens_per_s", "gate/weakest_unseen", "search/core_minutes", "a_new/metric",
    ]  # fmt: skip
    names = [s["name"] for s in metric_sections(logged)]
    assert names == [
        "test_acc", "test_acc/regular", "test_acc/repetitive", "gate", "search", "train", "Model metrics",
        "a_new", "eval",
    ]  # fmt: skip
    assert len({s["uuid"] for s in metric_sections(logged)}) == len(names)
    assert metric_sections([]) == []


def test_a_points_trials_share_a_run_colour_the_report_draws_it_in(tmp_path: Path, empty_store: Path) -> None:
    """Each trial carries MLflow's run-colour tag (what the UI's charts draw it in): every seed of a point
    alike, different points different, read back from a real store; the report's figures colour each point
    the same."""
    from mlflow import MlflowClient

    from analysis.curves import point_colours, point_labels
    from arith.tracking.schema import POINT_COLOURS, RUN_COLOR_TAG

    uri = write_store(tmp_path, empty_store, fail_first=False, seeds=2)
    sweep = read_sweep("add_posembed", uri)
    client = MlflowClient(uri)
    by_point: dict[str, set[str]] = {}
    for run_id, point in zip(sweep.trials["run_id"], sweep.trials["point"], strict=True):
        by_point.setdefault(point, set()).add(client.get_run(run_id).data.tags[RUN_COLOR_TAG])
    assert len(by_point) == 3 and all(len(c) == 1 for c in by_point.values())
    colours = [c for (c,) in by_point.values()]
    assert len(set(colours)) == 3 and set(colours) <= set(POINT_COLOURS)
    labels = point_labels(sweep.trials, sweep.axes)
    drawn = point_colours(sweep.trials, labels)
    for label, point in zip(labels, sweep.trials["point"], strict=True):
        assert {drawn[label]} == by_point[point]


def test_a_search_view_draws_every_trial_and_leads_with_its_configuration_and_gate() -> None:
    """A recipe search runs 24 configurations or more: its view draws every trial (not the UI's first 10),
    its table leads with each trial's configuration and gate, and its charts with the cost to the gate."""
    from arith.tracking.schema import GATE_METRIC
    from lab.search.view import SEARCH_SECTION, search_view_state

    view = search_view_state("0123456789abcdef")
    assert view["runsHiddenMode"] == "SHOW_ALL"
    assert view["columnOrder"][:3] == ["duration", "tags.`point`", f"metrics.`{GATE_METRIC}`"]
    assert set(view["columnWidths"]) == set(view["selectedColumns"])
    assert view["compareRunSections"][0]["uuid"] == SEARCH_SECTION
    assert {c["runsCountToCompare"] for c in view["compareRunCharts"]} == {100}


def test_the_view_colours_trials_from_before_the_colour_tag_as_the_figures_draw_them(
    tmp_path: Path, empty_store: Path
) -> None:
    """A sweep restored from an archive of before the run-colour tag: sharing its view tags each trial with
    the colour the report's figures draw its point in, every seed of a point alike; a trial that has a
    colour keeps it."""
    from mlflow import MlflowClient

    from analysis.curves import point_colours, point_labels
    from analysis.ui_view import colour_untagged_trials, share_view
    from arith.tracking.schema import RUN_COLOR_TAG

    uri = write_store(tmp_path, empty_store, fail_first=False, seeds=2)
    client = MlflowClient(uri)
    sweep = read_sweep("add_posembed", uri)
    kept, *rest = sweep.trials["run_id"]
    for run_id in rest:
        client.delete_tag(run_id, RUN_COLOR_TAG)
    client.set_tag(kept, RUN_COLOR_TAG, "#000000")
    before = read_sweep("add_posembed", uri)
    drawn = point_colours(before.trials, point_labels(before.trials, before.axes))

    share_view(before)
    after = read_sweep("add_posembed", uri)
    assert (after.trials["run_id"] == before.trials["run_id"]).all()
    colours = [client.get_run(run_id).data.tags[RUN_COLOR_TAG] for run_id in after.trials["run_id"]]
    labels = point_labels(after.trials, after.axes)
    assert colours[0] == "#000000"  # its own colour, kept (and so its point's, in the figures too)
    assert colours == [drawn[label] for label in labels]
    by_label: dict[str, set[str]] = {}
    for label, colour in zip(labels, colours, strict=True):
        by_label.setdefault(label, set()).add(colour)
    assert len(by_label) == 3 and all(len(c) == 1 for c in by_label.values())
    assert colour_untagged_trials(after) == 0  # every trial has one now: nothing to do again

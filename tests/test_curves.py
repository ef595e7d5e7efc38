"""analysis/curves.py on committed measurements: a re-judged sweep's archive (docs/results/sweeps/) read back
from a real SQLite store, and the pre-search's budget series (docs/presearch/); the report links both."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from matplotlib.collections import PathCollection

from analysis.by_digits import accuracy_by_digits_figure
from analysis.curves import gated_by_trial, learning_curves_figure
from analysis.load import read_sweep
from analysis.report import analyse
from arith.tracking.archive import import_sweep
from arith.tracking.schema import LOSS_METRIC
from arith.tracking.store import client as store_client
from experiments.verdicts import LEARNED
from lab import plan
from lab.analysis_output import save
from lab.budget import budget_figure, budget_table
from lab.paper_trial import longest_trial, paper_trial
from lab.presearch import presearch_records
from lab.results import page as results

ROOT = Path(__file__).resolve().parent.parent


ARCHIVE = ROOT / "docs" / "results" / "sweeps" / "mul_format__seeds-0-2__data.max_digits=3.jsonl"


@pytest.fixture(scope="module")
def mul_format_store(tmp_path_factory: pytest.TempPathFactory, empty_store: Path) -> str:
    """The committed 3-seed mul_format sweep (3-digit part) imported into a fresh store."""
    folder = tmp_path_factory.mktemp("curves")
    shutil.copy(empty_store, folder / "mlflow.db")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    import_sweep(uri, ARCHIVE)
    return uri


def test_learning_curves_show_the_loss_history_and_the_gates_reading_of_each_trial(
    mul_format_store: str,
) -> None:
    sweep = read_sweep("mul_format", mul_format_store)
    history = sweep.history_of((LOSS_METRIC,))
    assert history["run_id"].nunique() == 12 and set(history["metric"]) == {LOSS_METRIC}
    assert history.groupby("run_id").size().min() == 150  # a loss every 20 of 3,000 steps
    # each dot is the gate's own reading: a trial's lowest accuracy on the cells the paper's model learned,
    # so the worst seed and cell the verdict names is the lowest dot of its point, below the threshold
    lowest = gated_by_trial(sweep)
    assert len(lowest) == 12
    formats = sweep.trials.set_index("run_id").loc[lowest.index, "data.format"]
    evidence = next(f.evidence for f in analyse(sweep).findings)
    for fmt in ("basic", "padding_reverse"):
        named = re.search(rf"{fmt} not learned: seed \d+ ([0-9.]+) on", evidence)
        assert named, evidence
        assert f"{lowest[formats == fmt].min():.2f}" == named.group(1) and float(named.group(1)) < LEARNED

    figure = learning_curves_figure(sweep, history)
    loss_ax, acc_ax = figure.axes
    assert len(loss_ax.get_lines()) == 4  # one mean line per point
    assert len(acc_ax.collections) == 4 and sum(len(c.get_offsets()) for c in acc_ax.collections) == 12
    assert loss_ax.get_yscale() == "log"
    # the loss panel names its points; the accuracy panel's caption names its black bars
    assert [t.get_text() for t in loss_ax.get_legend().get_texts()] == [
        line.get_label() for line in loss_ax.get_lines()
    ]
    assert "black bar" in acc_ax.get_xlabel()


def test_budget_figure_draws_each_fitted_series_to_the_threshold(tmp_path: Path) -> None:
    records = [rec for recs in presearch_records().values() for rec in recs]
    figure = budget_figure(records)
    (ax,) = figure.axes
    assert len(ax.collections) == len(budget_table(records))  # one series of dots per fitted point
    assert ax.get_xscale() == "log" and ax.get_xlim()[1] > 390_000  # basic multiplication's estimate shown
    single = [rec for rec in records if "max_steps=3000" in rec["point"]]
    assert budget_figure(single) is None  # one budget a point: nothing to fit
    save(figure, tmp_path / "a.png")
    save(figure, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()  # no timestamp inside


def test_the_report_links_the_curves_and_says_what_would_make_a_claim_testable(
    tmp_path: Path,
    empty_store: Path,
) -> None:
    """Written from the restored archive alone: the section's learning curves and the budget figure are
    files beside the report, and the not-testable claim gets its reason, the pre-search's estimate for
    its models and the paper scale's trial length."""
    folder = tmp_path / "archives"
    folder.mkdir()
    shutil.copy(ARCHIVE, folder / ARCHIVE.name)
    shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    plan.restore_archives(uri, folder)
    out = tmp_path / "docs" / "RESULTS.md"
    out.parent.mkdir()
    results.write_results(uri, out, paper_trial=paper_trial)
    text = results.record_text(out)
    original = json.loads(ARCHIVE.read_text().splitlines()[1])["run_id"]  # the parent run, as it ran
    assert f"Sweep {original} of grid 'mul_format'" in text  # not the id of this store's import
    for name in ("mul_format.png", "budget.png"):
        assert (out.parent / "results" / "figures" / name).stat().st_size > 10_000
    assert "![mul_format: learning curves](../figures/mul_format.png)" in text  # from its page
    assert "![The gate's reading by step budget](../figures/budget.png)" in text
    table = text.split("### Not testable: why, and what it would take", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith("| mul_format |"))
    assert "basic not learned: seed" in row and "[figure](../figures/mul_format.png)" in row
    # only the max_digits=3 part is in this store: the row says the plan's other part has not run
    assert "the plan's sweep of it is not complete: 1 of 2 parts not yet run" in row
    # the gate's reading (the lowest gated cell) of the pre-search, followed to 0.9
    assert "cpu_tune_steps: task=mul: ~210,000" in row and "task=mul_basic: beyond 1,000,000,000" in row
    assert f"{longest_trial('mul_format'):,} steps (GPT-2 small) |" in row  # not a variant: its own trial


def test_accuracy_by_digits_draws_each_seed_and_leaves_the_seeds_that_chose_the_budget_out_of_the_mean(
    tmp_path: Path,
    empty_store: Path,
    mul_format_store: str,
) -> None:
    """From the committed archives: the fig:randembed replication (two contexts, 2-5 digits trained, 6-7
    beyond) and fig:acc_add_rand's 24,000-step sweep with its pre-search (seeds 101, 102, a point of its
    own: dots, no mean); multiplication's two-digit-count grid has no such figure."""
    archives = ROOT / "docs" / "results" / "sweeps"
    shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for path in sorted(archives.glob("reverse_posembed_replication__*.jsonl")):
        import_sweep(uri, path)
    sweep = read_sweep("reverse_posembed_replication", uri)
    figure = accuracy_by_digits_figure(sweep)
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["regular", "repetitive"]
    trials = sweep.trials
    for ax in panels:
        assert len(ax.get_lines()) == 2 + 1  # a mean line per point, and the gate's threshold
        scatters = [c for c in ax.collections if isinstance(c, PathCollection)]  # not the seeds' bands
        dots = sum(len(c.get_offsets()) for c in scatters)
        assert dots == len(trials) * 6  # 20 trials x 2-7 digits, every seed a dot
        (beyond,) = [p for p in ax.patches]  # the shaded digit counts beyond training: 6 and 7
        assert beyond.get_x() == 5.5 and beyond.get_width() == 2.0
    means = panels[1].get_lines()[0].get_ydata()  # repetitive, first point: none, seeds 20-29
    none = sweep.cells[(sweep.cells["model.position"] == "none") & (sweep.cells["context"] == "repetitive")]
    final = none[none["epoch"] == none["final_epoch"]]
    assert list(means) == list(final.groupby("col_digits")["accuracy"].mean())

    for path in sorted(archives.glob("add_posembed_recipe_24k__*.jsonl")):
        import_sweep(uri, path)
    parts = plan.part_runs(store_client(uri), "add_posembed_recipe_24k")
    added = read_sweep("add_posembed_recipe_24k", uri, [run.info.run_id for _, run in parts if run])
    (ax,) = [ax for ax in accuracy_by_digits_figure(added).axes if ax.get_lines()]
    points = added.trials.groupby(["model.position", "train.eval_epochs"]).ngroups
    assert len(ax.get_lines()) == (points - 1) + 1  # the pre-search's point draws no mean
    hollow = [c for c in ax.collections if len(c.get_offsets()) and not c.get_facecolor().any()]
    assert sum(len(c.get_offsets()) for c in hollow) == 2 * 2  # seeds 101, 102 x 5 and 6 digits
    legend = [t.get_text() for t in accuracy_by_digits_figure(added).legends[0].get_texts()]
    assert "a seed that chose the budget (not in the mean)" in legend
    assert accuracy_by_digits_figure(read_sweep("mul_format", mul_format_store)) is None

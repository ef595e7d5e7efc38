"""Looking inside what a trial learned, on a real tiny trial in a real SQLite store: its model/ artifact
loaded through runs:/ reproduces the accuracy it logged, eval/errors.csv agrees with eval/cells.csv and
survives an archive, `python -m arith.ask` answers (and refuses bad input in one line), and the error rate
by answer digit and carry chain (arith.tracking.digit_errors) with the report's wrong answers beside each
table."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from synthetic import write_store

from arith.ask import main as ask_main
from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import test_examples
from arith.model.gpt import ModelFolderError
from arith.tracking import digit_errors, models, schema
from arith.tracking.models import PICKLED_MODULE, load_model, saved_folder
from arith.training.evaluate import evaluate
from arith.training.train import train
from arith.validation import validate

mlflow = pytest.importorskip("mlflow")

CAP = 16


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    """A nano GPT-2 trained for seconds on <=2-digit additions: some answers right, many wrong (one
    cell above the cap of kept wrong answers, one below), nested under a sweep parent run."""
    tmp = tmp_path_factory.mktemp("trial")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("inspect", artifact_location=(tmp / "mlartifacts").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": "demo", "scale": "smoke"})
    cfg = ExperimentConfig().with_overrides(
        {
            "data.max_digits": 2,
            "data.train_samples": 1024,
            "data.test_per_cell": 20,
            "model.preset": "nano",
            "model.n_positions": 64,
            "train.epochs": 6,
            "train.eval_epochs": [3],
            "train.lr": 5e-3,
            "train.warmup_steps": 10,
            "train.eval_batch_size": 64,
            "train.checkpoint_every": 0,
            "train.num_threads": 1,
            "train.errors_per_cell": CAP,
            "tracking.tracking_uri": uri,
            "tracking.experiment": "inspect",
            "tracking.parent_run_id": parent.info.run_id,
        }
    )
    result = train(cfg)
    client.set_terminated(parent.info.run_id, "FINISHED")
    return cfg, result, client, parent.info.run_id, tmp


def _artifact(client, run_id: str, name: str, tmp: Path) -> pd.DataFrame:
    return pd.read_csv(client.download_artifacts(run_id, name, str(tmp)), keep_default_na=False)


def test_the_model_is_a_logged_model_that_scores_what_the_trial_logged(trial, tmp_path) -> None:
    import mlflow.pytorch

    cfg, result, client, _, _ = trial
    uri = cfg.tracking.tracking_uri
    run = client.get_run(result.run_id)
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags[schema.EXPERIMENT_KIND_TAG] == schema.EXPERIMENT_KIND  # MLflow's training view
    # an MLflow 3 logged model, linked to its run and to the metrics of its last evaluation
    found = client.search_logged_models(
        [experiment.experiment_id], filter_string=f"source_run_id = '{result.run_id}'"
    )
    assert [m.name for m in found] == ["model"] and str(found[0].status) == "READY"
    assert [o.model_id for o in run.outputs.model_outputs] == [found[0].model_id]
    assert {m.key for m in found[0].metrics} >= {"test_acc"}
    folder = models.download_artifacts(f"runs:/{result.run_id}/model", tmp_path / "logged", uri)
    names = {p.name for p in (folder / "extra_files").iterdir()}
    assert {"position_scheme.json", "tokenizer.json", "experiment_config.json"} <= names
    assert "model.safetensors" not in names  # the weights are stored once: in the flavour's pickled module
    # MLflow's own loader and ours load the same weights
    model = load_model(f"runs:/{result.run_id}/model", tracking_uri=uri)
    with mlflow.tracking._tracking_service.utils._use_tracking_uri(uri):
        theirs = mlflow.pytorch.load_model(f"models:/{found[0].model_id}")
    assert type(theirs) is type(model)
    for name, tensor in model.state_dict().items():
        assert torch.equal(theirs.state_dict()[name], tensor), name
    tokenizer = __import__("transformers").PreTrainedTokenizerFast.from_pretrained(folder / "extra_files")
    # same decoding as the trial's evaluation: the whole test grid, its batch size and seed
    again = evaluate(
        model, tokenizer, test_examples(cfg.data), batch_size=cfg.train.eval_batch_size, seed=cfg.train.seed
    ).to_frame()
    logged = _artifact(client, result.run_id, "eval/cells.csv", tmp_path)
    final = logged[logged["epoch"] == logged["epoch"].max()].reset_index(drop=True)
    cell = final["accuracy"].idxmax()  # a cell the model gets partly right
    assert final.loc[cell, "accuracy"] > 0
    assert again.loc[cell, "correct"] == final.loc[cell, "correct"]
    assert list(again["correct"]) == list(final["correct"])


def test_errors_csv_agrees_with_cells_csv_up_to_the_cap(trial, tmp_path) -> None:
    cfg, result, client, _, _ = trial
    cells = _artifact(client, result.run_id, "eval/cells.csv", tmp_path)
    errors = _artifact(client, result.run_id, "eval/errors.csv", tmp_path)
    assert list(errors.columns) == [
        *("epoch", "context", "row_digits", "col_digits", "a", "b", "prompt", "expected", "reply")
    ]
    last = cells[cells["epoch"] == cells["epoch"].max()]
    assert set(errors["epoch"]) == {last["epoch"].iloc[0]}  # the latest evaluation: the kept model's
    kept = errors.groupby("col_digits").size()
    wrong = (last["n"] - last["correct"]).set_axis(last["col_digits"])
    assert {d: kept.get(d, 0) for d in wrong.index} == {d: min(CAP, w) for d, w in wrong.items()}
    assert (wrong > CAP).any() and (wrong <= CAP).any()  # the cap bit in one cell, not in the other
    assert (errors["expected"] != errors["reply"]).all()
    # the same answers as an MLflow table the UI lists
    table = client.download_artifacts(result.run_id, "eval/errors.json", str(tmp_path))
    assert len(pd.read_json(table, orient="split")) == len(errors)
    tags = client.get_run(result.run_id).data.tags
    assert '"eval/errors.json"' in tags["mlflow.loggedArtifacts"]
    artifacts = {a.path for a in client.list_artifacts(result.run_id, "eval")}
    assert f"eval/digit_errors_epoch{cfg.train.epochs}.png" in artifacts


def test_errors_csv_survives_an_archive(trial, tmp_path, empty_store) -> None:
    from arith.tracking.archive import SOURCE_TAG, export_sweep, import_sweep

    _, result, client, parent_id, _ = trial
    archive = tmp_path / "sweep.jsonl"
    assert export_sweep(client, parent_id, archive) == 1
    shutil.copy(empty_store, tmp_path / "mlflow.db")
    other = f"sqlite:///{tmp_path / 'mlflow.db'}"
    new_parent, _ = import_sweep(other, archive)
    other_client = mlflow.MlflowClient(other)
    child = other_client.search_runs(
        [other_client.get_run(new_parent).info.experiment_id], f"tags.{SOURCE_TAG} = '{result.run_id}'"
    )[0]
    before = Path(client.download_artifacts(result.run_id, "eval/errors.csv", str(tmp_path / "a")))
    after = Path(other_client.download_artifacts(child.info.run_id, "eval/errors.csv", str(tmp_path / "b")))
    assert after.read_text() == before.read_text()


def test_ask_answers_a_typed_problem_and_a_cell(trial, capsys) -> None:
    cfg, result, _, _, _ = trial
    uri = ["--tracking-uri", cfg.tracking.tracking_uri]
    assert ask_main([f"runs:/{result.run_id}", "12+7", *uri]) == 0
    out = capsys.readouterr().out
    assert "prompt:   1 2 + 0 7 =" in out  # padded as the trial's format writes it
    assert "expected: 9 1 0" in out and "reply:" in out and ("right:    yes" in out or "right:    no" in out)

    assert ask_main([result.run_id, "--cell", "1", "--n", "20", *uri]) == 0
    out = capsys.readouterr().out
    cells = result.cells.set_index("col_digits")
    assert f"{int(cells.loc[1, 'correct'])}/20 right in cell 1" in out  # what the trial scored


def test_ask_refuses_bad_input_in_one_line(trial, tmp_path, capsys) -> None:
    cfg, result, _, _, _ = trial
    uri = ["--tracking-uri", cfg.tracking.tracking_uri]
    logged = models.download_artifacts(f"runs:/{result.run_id}/model", tmp_path, cfg.tracking.tracking_uri)
    no_scheme = logged / "extra_files"  # the files `ArithModel.save` wrote, without MLflow's
    (no_scheme / "position_scheme.json").unlink()
    for argv, says in (
        (["runs:/0123456789abcdef0123456789abcdef", "1+2", *uri], "cannot download"),
        ([f"runs:/{result.run_id}", "12*7", *uri], "cannot read '12*7' as a problem of task add"),
        ([f"runs:/{result.run_id}", "123+4", *uri], "more than max_digits=2"),
        ([str(no_scheme), "1+2"], "has no position_scheme.json"),
    ):
        assert ask_main(argv) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ask: ") and says in lines[0], captured.err
    with pytest.raises(ModelFolderError, match="neither a folder"):
        load_model(tmp_path / "nothing")


def test_ask_refuses_an_empty_problem_a_long_one_and_cut_weights_in_one_line(trial, tmp_path, capsys) -> None:
    """An empty prompt (AttributeError), an operand longer than the model's context on a
    basic-format run (IndexError) and truncated weights (the logged model's pickled module) were
    tracebacks."""
    cfg, result, _, _, _ = trial
    uri = ["--tracking-uri", cfg.tracking.tracking_uri]
    model_uri = f"runs:/{result.run_id}/model"  # the run's logged model: its files under extra_files/
    basic = models.download_artifacts(model_uri, tmp_path / "basic", cfg.tracking.tracking_uri)
    config = saved_folder(basic) / "experiment_config.json"
    saved = json.loads(config.read_text())
    saved["data"]["format"] = "basic"  # same weights, a format that takes operands of any length
    config.write_text(json.dumps(saved))
    cut = models.download_artifacts(model_uri, tmp_path / "cut", cfg.tracking.tracking_uri)
    weights = cut / PICKLED_MODULE  # where a logged model keeps its weights
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    for argv, says in (
        ([f"runs:/{result.run_id}", "", *uri], "cannot read '' as a problem"),
        ([str(basic), "9" * 40 + "+1"], "positions; the model has model.n_positions=64"),
        ([str(cut), "1+2"], "the model's weights cannot be read"),
    ):
        assert ask_main(argv) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ask: ") and says in lines[0], captured.err
    assert ask_main([str(basic), "9" * 10 + "+1"]) == 0  # a problem that fits is answered


# ---------------------------------------------------------------------------------------------------------
# Where in the answer: digits and carry chains
# ---------------------------------------------------------------------------------------------------------


def test_carry_chains_of_sums_and_products() -> None:
    assert digit_errors.carry_chains("add", 999, 1, 4) == [0, 1, 2, 3]
    assert digit_errors.carry_chains("add", 15, 5, 3) == [0, 1, 0]
    # 99 * 99 = 9801: column sums 81 | 81+81+8=170 | 81+17=98 | 9 -> carries into 1, 2, 3
    assert digit_errors.carry_chains("mul", 99, 99, 4) == [0, 1, 2, 3]
    assert digit_errors.carry_chains("mul", 12, 3, 2) == [0, 0]
    assert digit_errors.carry_chains("reverse", 12, 3, 2) == []


def test_digit_errors_by_position_read_either_answer_order() -> None:
    errors = pd.DataFrame(
        {
            "context": ["main"] * 3,
            "row_digits": pd.array([2, 2, 2], dtype="Int64"),
            "col_digits": [2, 2, 2],
            "a": [99, 12, 25],
            "b": [99, 34, 40],
            "prompt": ["", "", ""],
            # padding_reverse: least significant digit first, padded to 4 digits
            "expected": ["1 0 8 9", "8 0 4 0", "0 0 0 1"],
            "reply": ["1 0 8 8", "8 0 4", "oops"],
        }
    )
    rows = digit_errors.digit_rows(errors, "mul", "padding_reverse")
    wrong = rows.groupby("answer")["wrong"].apply(list).to_dict()
    assert wrong == {0: [False, False, False, True], 1: [False, False, False, True], 2: [True] * 4}
    positions = digit_errors.by_position(rows)
    top = positions[positions["position"] == 3].iloc[0]
    assert top["answers"] == 3 and top["wrong"] == 3 and top["rate"] == 1.0
    chains = digit_errors.by_carry_chain(rows, keys=[])
    assert set(chains["chain"]) <= {0, 1, 2, 3} and chains["digits"].sum() == 12
    # the plain format writes its answer most significant digit first: read it turned round
    plain = errors.assign(expected=["9 8 0 1", "4 0 8", "1 0 0 0"], reply=["8 8 0 1", "4 0 8 0", ""])
    rows = digit_errors.digit_rows(plain, "mul", "basic")
    assert rows.groupby("answer")["wrong"].apply(list).to_dict()[0] == [False, False, False, True]
    assert digit_errors.figure(rows, "t") is not None
    with pytest.raises(ConfigError):
        validate(ExperimentConfig().with_overrides({"tracking.log_model": "best"}))


def test_report_shows_digit_errors_and_wrong_answers_under_each_table(tmp_path, empty_store) -> None:
    from analysis import report
    from analysis.load import read_sweep

    uri = write_store(tmp_path, empty_store, recorded=True)
    sweep = read_sweep("add_posembed", uri)
    client = mlflow.MlflowClient(uri)
    for run_id in sweep.trials.loc[sweep.trials["status"] == "FINISHED", "run_id"]:
        cells = pd.read_csv(client.download_artifacts(run_id, "eval/cells.csv", str(tmp_path / run_id)))
        last = cells[cells["epoch"] == cells["epoch"].max()].iloc[0]
        row = {"epoch": last["epoch"], "context": last["context"], "row_digits": None}
        row |= {"col_digits": last["col_digits"], "a": 12, "b": 34}
        row |= {"prompt": "1 2 + 3 4 =", "expected": "4 6", "reply": "4 7"}
        text = io.StringIO()
        pd.DataFrame([row]).to_csv(text, index=False)
        client.log_text(run_id, text.getvalue(), "eval/errors.csv")
    out = tmp_path / "report"
    page = report("add_posembed", uri, out_dir=out, fmt="html", log_artifacts=False)
    assert "What the trials wrote when wrong" in page and "<code>4 7</code>" in page
    assert page.count('class="wrong-answers"') >= 1 and 'alt="digit errors: ' in page
    assert list((out / "digit_errors").glob("*.png")) and (out / "errors.csv").exists()


def test_a_point_whose_trials_erred_nowhere_says_so_and_not_that_its_trials_are_old(
    tmp_path,
    empty_store,
) -> None:
    """A trial that answered every test problem right writes eval/errors.csv with its header alone: its
    point reads "no wrong answers", where trials without the file read as from before it."""
    from analysis import report
    from analysis.load import keeping_no_errors, read_sweep

    uri = write_store(tmp_path, empty_store, recorded=True)
    old = report("add_posembed", uri, out_dir=tmp_path / "old", fmt="html", log_artifacts=False)
    assert "No wrong answers kept (trials from before eval/errors.csv, or run with" in old
    sweep = read_sweep("add_posembed", uri)
    finished = sweep.trials[sweep.trials["status"] == "FINISHED"]
    clean_point = str(finished["point"].iloc[0])
    client = mlflow.MlflowClient(uri)
    header = "epoch,context,row_digits,col_digits,a,b,prompt,expected,reply\n"
    for run_id, point in zip(finished["run_id"], finished["point"], strict=True):
        text = header
        if point != clean_point:
            cells = pd.read_csv(client.download_artifacts(run_id, "eval/cells.csv", str(tmp_path / run_id)))
            last = cells[cells["epoch"] == cells["epoch"].max()].iloc[0]
            text += f"{last['epoch']},{last['context']},,{last['col_digits']},12,34,1 2 + 3 4 =,4 6,4 7\n"
        client.log_text(run_id, text, "eval/errors.csv")
    page = report("add_posembed", uri, out_dir=tmp_path / "new", fmt="html", log_artifacts=False)
    assert "trials from before eval/errors.csv" not in page
    assert (
        f"<strong>{clean_point}</strong>: no wrong answers: every test answer of its trials was right" in page
    )
    assert "<code>4 7</code>" in page  # the other points' wrong answer, as before
    # a trial told to keep no wrong answers (train.errors_per_cell 0) writes the header alone whatever it
    # answered: its file is no sign that it erred nowhere
    experiment = client.get_experiment_by_name("add_posembed").experiment_id
    told, kept = client.create_run(experiment).info.run_id, client.create_run(experiment).info.run_id
    client.log_param(told, "train.errors_per_cell", "0")
    client.log_param(kept, "train.errors_per_cell", "100")
    assert keeping_no_errors([client.get_run(told), client.get_run(kept)]) == {told}

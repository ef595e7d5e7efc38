"""A trained model from wherever a trial left it: a local folder or any MLflow artifact URI of one.

The model package saves and loads folders (`arith.model.gpt`) and knows no store; reaching a run's
`model/` artifact (`runs:/<run id>/model`, `mlflow-artifacts:/...`, `file:///...`) is tracking's, so it
lives here. mlflow is imported only for a URI (`arith.tracking.store.download_artifacts`). A trial of an
offline sweep has no `model/` in the store it was imported into (an archive carries text, not weights):
`kept_weights` finds the folder its sweep kept them in, or says in one line why there is none.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from arith.config import TrackingConfig
from arith.model import gpt
from arith.model.gpt import ArithModel, ModelFolderError
from arith.tracking import logged_model, store
from arith.tracking.archive import FILE_TAG, SOURCE_TAG
from arith.tracking.schema import PARENT_RUN_TAG, WEIGHTS_FOLDER_TAG


@contextmanager
def model_folder(path: str | Path, tracking_uri: str = "") -> Iterator[Path]:
    """The local folder of a saved model's files (an MLflow logged model's extra files): `path` itself,
    or a temporary download of an MLflow artifact URI (`runs:/<run id>/model`, `models:/<model id>`,
    `mlflow-artifacts:/...`, `file:///...`; `tracking_uri` is the store a `runs:/` URI is read from),
    removed on exit. mlflow is imported only for a URI."""
    if Path(path).is_dir() and not logged_model.needs_weights(Path(path)):
        yield logged_model.saved_folder(Path(path))
        return
    if not Path(path).is_dir() and not store.is_artifact_uri(path):
        raise ModelFolderError(f"no model at {path}: neither a folder nor an MLflow artifact URI")
    with tempfile.TemporaryDirectory(prefix="arith-model-") as tmp:
        if Path(path).is_dir():  # a logged model's folder, copied: its weights are written beside its files
            folder = Path(shutil.copytree(path, Path(tmp) / "model"))
        else:
            try:
                folder = store.download_artifacts(str(path), tmp, tracking_uri)
            except store.StoreError as err:
                raise ModelFolderError(str(err)) from err
        if logged_model.needs_weights(folder):
            try:
                logged_model.restore_weights(folder)
            except Exception as err:  # a pickle cut short (an interrupted copy or download)
                first = (str(err).splitlines() or [type(err).__name__])[0]
                raise ModelFolderError(f"{path}: the model's weights cannot be read ({first})") from err
        yield logged_model.saved_folder(folder)


def load_model(
    uri: str | Path, device: str | torch.device | None = None, *, tracking_uri: str = ""
) -> ArithModel:
    """Reload a model written by `ArithModel.save` exactly, from a local folder or any MLflow artifact URI
    of one (`runs:/<run id>/model`: a trial's final model); anything else raises `ModelFolderError`."""
    with model_folder(uri, tracking_uri) as folder:
        return gpt.load_folder(folder, device)


def kept_weights(run_id: str, tracking_uri: str = "") -> Path | None:
    """The folder of the trained model of a run whose store holds none: a trial imported from an offline
    sweep's archive, its weights kept beside that archive (`sweeps.offline --keep-weights`). Raises
    ModelFolderError saying in one line why there is none, and what keeps weights; None for a run the
    store does not hold."""
    from mlflow.exceptions import MlflowException

    tracking_uri = TrackingConfig(tracking_uri=tracking_uri).resolved_uri()
    try:
        store.check_reachable(tracking_uri)
    except store.StoreError as err:
        raise ModelFolderError(str(err)) from err
    mlflow_client = store.client(tracking_uri)
    try:
        run = mlflow_client.get_run(run_id)
        parent = (
            mlflow_client.get_run(run.data.tags[PARENT_RUN_TAG]) if PARENT_RUN_TAG in run.data.tags else None
        )
    except MlflowException:
        return None
    keeps = (
        "a trial keeps them when a Ray Tune sweep logs its model (tracking.log_model=final), or beside its "
        "archive when its offline sweep runs with --keep-weights"
    )
    archive = parent.data.tags.get(FILE_TAG) if parent is not None else None
    if SOURCE_TAG not in run.data.tags or archive is None:
        raise ModelFolderError(f"run {run_id} has no trained model (model/) in its store; {keeps}")
    kept = run.data.tags.get(WEIGHTS_FOLDER_TAG)
    if kept is None:
        raise ModelFolderError(
            f"run {run_id} was imported from the archive {archive}, which carries no weights, and its sweep "
            f"kept none; {keeps}"
        )
    folder = Path(archive).parent / kept
    if not folder.is_dir():
        raise ModelFolderError(
            f"run {run_id} was imported from {archive}; its weights were kept in {folder}, which is not "
            "there (moved without its archive?)"
        )
    return folder

"""A trained model from wherever a trial left it: a local folder or any MLflow artifact URI of one.

The model package saves and loads folders (`arith.model.gpt`) and knows no store; reaching a run's
`model/` artifact (`runs:/<run id>/model`, `mlflow-artifacts:/...`, `file:///...`) is tracking's, so it
lives here, with the reading of an MLflow logged model's folder (`arith.tracking.logged_model` writes
it). mlflow is imported only for a URI (`download_artifacts`). A trial of an offline sweep has no
`model/` in the store it was imported into (an archive carries text, not weights):
`kept_weights` finds the folder its sweep kept them in, or says in one line why there is none.
"""

from __future__ import annotations

import os
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
from arith.tracking.schema import MODEL_ARTIFACT, PARENT_RUN_TAG, WEIGHTS_FOLDER_TAG

#: where an MLflow model folder keeps the flavour's extra files (mlflow.utils.model_utils)
EXTRA_FILES = "extra_files"
#: the MLflow model folder's descriptor file
MLMODEL = "MLmodel"
#: the pytorch flavour's pickled module in an MLflow model folder
PICKLED_MODULE = "data/model.pth"
#: artifact URI schemes (`runs:/<run id>/model`, `mlflow-artifacts:/...`, `file:///...`, cloud stores)
ARTIFACT_SCHEMES = (
    "runs",
    "mlflow-artifacts",
    "models",
    "file",
    "s3",
    "gs",
    "wasbs",
    "hdfs",
    "dbfs",
    "http",
    "https",
)


def is_artifact_uri(path: str | os.PathLike[str]) -> bool:
    """Whether `path` names an artifact through an MLflow URI scheme rather than a local path."""
    scheme, sep, _ = str(path).partition(":")
    return bool(sep) and scheme.lower() in ARTIFACT_SCHEMES


def download_artifacts(uri: str, dst: str | Path, tracking_uri: str = "") -> Path:
    """Download the artifact (file or folder) `uri` names into `dst` and return its local path. A
    `runs:/` URI is read from `tracking_uri` (default: $MLFLOW_TRACKING_URI, else the local SQLite store).
    Raises StoreError with a one-line message for an unknown run or path."""
    from mlflow.artifacts import download_artifacts as download
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    tracking_uri = TrackingConfig(tracking_uri=tracking_uri).resolved_uri()
    client = store.client(tracking_uri)  # MLflow's HTTP settings, as for every client
    try:
        # a run's logged model (`runs:/<id>/model`, `models:/<id>`) is looked up in the global store
        with _use_tracking_uri(tracking_uri):
            uri = run_model_uri(client, str(uri))
            return Path(download(artifact_uri=uri, dst_path=str(dst), tracking_uri=tracking_uri))
    except Exception as err:  # MlflowException, OSError: an unknown run, path or store
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        raise store.StoreError(
            f"cannot download {uri} (store {store.display(tracking_uri)}): {first}"
        ) from err


def run_model_uri(client, uri: str) -> str:
    """`runs:/<run id>/model[/...]` as the URI of that run's logged model (`models:/<model id>[/...]`);
    any other URI, or a run without one (its `model/` kept while the store was down), as it is."""
    prefix, _, rest = uri.removeprefix("runs:/").partition("/")
    if not uri.startswith("runs:/") or rest.split("/")[0] != MODEL_ARTIFACT:
        return uri
    run = client.get_run(prefix)
    found = client.search_logged_models(
        [run.info.experiment_id], filter_string=f"source_run_id = '{prefix}'", max_results=5
    )
    named = [m for m in found if m.name in (logged_model.name_of(run.data.tags), MODEL_ARTIFACT)]
    if not named:
        return uri
    return f"models:/{named[0].model_id}" + rest.removeprefix(MODEL_ARTIFACT)


def saved_folder(folder: Path) -> Path:
    """The folder holding `ArithModel.save`'s files: `folder` itself, or its extra files when it is an
    MLflow logged model's folder."""
    extra = folder / EXTRA_FILES
    return extra if (folder / MLMODEL).exists() and extra.is_dir() else folder


def needs_weights(folder: Path) -> bool:
    """Whether `folder` is an MLflow model folder whose extra files leave the weights to its module."""
    return (folder / PICKLED_MODULE).is_file() and not (
        folder / EXTRA_FILES / logged_model.WEIGHT_FILES[0]
    ).exists()


def restore_weights(folder: Path) -> None:
    """Write the weight files of an MLflow model folder's pickled module into its extra files, so that
    they are a whole `ArithModel.save` folder again (the folder must be a copy of one's own)."""
    module = torch.load(folder / PICKLED_MODULE, map_location="cpu", weights_only=False)
    module.save(folder / EXTRA_FILES)


@contextmanager
def model_folder(path: str | Path, tracking_uri: str = "") -> Iterator[Path]:
    """The local folder of a saved model's files (an MLflow logged model's extra files): `path` itself,
    or a temporary download of an MLflow artifact URI (`runs:/<run id>/model`, `models:/<model id>`,
    `mlflow-artifacts:/...`, `file:///...`; `tracking_uri` is the store a `runs:/` URI is read from),
    removed on exit. mlflow is imported only for a URI."""
    if Path(path).is_dir() and not needs_weights(Path(path)):
        yield saved_folder(Path(path))
        return
    if not Path(path).is_dir() and not is_artifact_uri(path):
        raise ModelFolderError(f"no model at {path}: neither a folder nor an MLflow artifact URI")
    with tempfile.TemporaryDirectory(prefix="arith-model-") as tmp:
        if Path(path).is_dir():  # a logged model's folder, copied: its weights are written beside its files
            folder = Path(shutil.copytree(path, Path(tmp) / "model"))
        else:
            try:
                folder = download_artifacts(str(path), tmp, tracking_uri)
            except store.StoreError as err:
                raise ModelFolderError(str(err)) from err
        if needs_weights(folder):
            try:
                restore_weights(folder)
            except Exception as err:  # a pickle cut short (an interrupted copy or download)
                first = (str(err).splitlines() or [type(err).__name__])[0]
                raise ModelFolderError(f"{path}: the model's weights cannot be read ({first})") from err
        yield saved_folder(folder)


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

"""A trained model from wherever a trial left it: a local folder or any MLflow artifact URI of one.

The model package saves and loads folders (`arith.model.gpt`) and knows no store; reaching a run's
`model/` artifact (`runs:/<run id>/model`, `mlflow-artifacts:/...`, `file:///...`) is tracking's, so it
lives here. mlflow is imported only for a URI (`arith.tracking.store.download_artifacts`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from arith.model import gpt
from arith.model.gpt import ArithModel, ModelFolderError
from arith.tracking import logged_model, store


@contextmanager
def model_folder(path: str | Path, tracking_uri: str = "") -> Iterator[Path]:
    """The local folder of a saved model's files (an MLflow logged model's extra files): `path` itself,
    or a temporary download of an MLflow artifact URI (`runs:/<run id>/model`, `models:/<model id>`,
    `mlflow-artifacts:/...`, `file:///...`; `tracking_uri` is the store a `runs:/` URI is read from),
    removed on exit. mlflow is imported only for a URI."""
    if Path(path).is_dir():
        yield logged_model.saved_folder(Path(path))
        return
    if not store.is_artifact_uri(path):
        raise ModelFolderError(f"no model at {path}: neither a folder nor an MLflow artifact URI")
    with tempfile.TemporaryDirectory(prefix="arith-model-") as tmp:
        try:
            folder = store.download_artifacts(str(path), tmp, tracking_uri)
        except store.StoreError as err:
            raise ModelFolderError(str(err)) from err
        yield logged_model.saved_folder(folder)


def load_model(
    uri: str | Path, device: str | torch.device | None = None, *, tracking_uri: str = ""
) -> ArithModel:
    """Reload a model written by `ArithModel.save` exactly, from a local folder or any MLflow artifact URI
    of one (`runs:/<run id>/model`: a trial's final model); anything else raises `ModelFolderError`."""
    with model_folder(uri, tracking_uri) as folder:
        return gpt.load_folder(folder, device)

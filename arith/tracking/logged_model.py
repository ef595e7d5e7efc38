"""A trial's trained model as an MLflow 3 logged model: listed under its experiment's "Models", linked to
its run and to the metrics of its last evaluation, loadable by MLflow's own loader
(`mlflow.pytorch.load_model("runs:/<run id>/model")` or `"models:/<model id>"`) and by `arith.ask`.

The pytorch flavour keeps the module itself (pickled; loading needs the `arith` package importable); the
files `ArithModel.save` wrote (weights, position scheme, tokenizer) and the trial's config ride along as
the flavour's extra files, which is where `arith.tracking.models` finds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arith.tracking.schema import MODEL_ARTIFACT

#: where an MLflow model folder keeps the flavour's extra files (mlflow.utils.model_utils)
EXTRA_FILES = "extra_files"
#: the MLflow model folder's descriptor file
MLMODEL = "MLmodel"


def saved_folder(folder: Path) -> Path:
    """The folder holding `ArithModel.save`'s files: `folder` itself, or its extra files when it is an
    MLflow logged model's folder."""
    extra = folder / EXTRA_FILES
    return extra if (folder / MLMODEL).exists() and extra.is_dir() else folder


def requirements() -> list[str]:
    """What loading the model needs, pinned to this environment (given, so MLflow does not load the model
    in a subprocess to infer them)."""
    import safetensors
    import torch
    import transformers

    return [
        f"torch=={torch.__version__.split('+')[0]}",
        f"transformers=={transformers.__version__}",
        f"safetensors=={safetensors.__version__}",
    ]


def log(uri: str, run_id: str, model: Any, folder: Path, step: int) -> str:
    """Log `model` (a torch module) and the files of `folder` (`ArithModel.save`'s and the trial's
    config) as the run's logged model `MODEL_ARTIFACT`, linked to its metrics at `step`; return its id."""
    import mlflow.pytorch
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    client = mlflow.MlflowClient(uri)
    run = client.get_run(run_id)
    # created here, in the run's experiment (MLflow's own would go to the active or default experiment),
    # with the trial's config as its params
    created = client.create_logged_model(
        run.info.experiment_id, name=MODEL_ARTIFACT, source_run_id=run_id, params=dict(run.data.params)
    )
    with _use_tracking_uri(uri):
        info = mlflow.pytorch.log_model(
            model,
            name=MODEL_ARTIFACT,
            model_id=created.model_id,
            run_id=run_id,
            step=step,
            serialization_format="pickle",  # the module itself: pt2 traces a graph from an input example
            extra_files=[str(p) for p in sorted(Path(folder).iterdir()) if p.is_file()],
            pip_requirements=requirements(),
        )
    return info.model_id

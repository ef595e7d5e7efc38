"""A trial's trained model as an MLflow 3 logged model: named by point and seed (`schema.model_name`),
linked to its run and last evaluation's metrics, loadable by `mlflow.pytorch.load_model` and `arith.ask`.
The pytorch flavour pickles the module with its weights; `ArithModel.save`'s other files and the config
ride along as extra files, without the weights a second time (`arith.tracking.models` writes them back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arith.tracking.schema import MODEL_ARTIFACT, POINT_TAG, SEED_TAG, model_name

#: `ArithModel.save`'s weight files, which the pickled module holds
WEIGHT_FILES = ("model.safetensors", "position_scheme.pt")


def requirements() -> list[str]:
    """What loading the model needs, pinned (so MLflow does not load it in a subprocess to infer them)."""
    import safetensors
    import torch
    import transformers

    return [
        f"torch=={torch.__version__.split('+')[0]}",
        f"transformers=={transformers.__version__}",
        f"safetensors=={safetensors.__version__}",
    ]


def name_of(tags: dict[str, str]) -> str:
    """A run's logged model's name: its point and seed, else `MODEL_ARTIFACT` (a run outside a sweep)."""
    if POINT_TAG in tags and SEED_TAG in tags:
        return model_name(tags[POINT_TAG], tags[SEED_TAG])
    return MODEL_ARTIFACT


def log(uri: str, run_id: str, model: Any, folder: Path, step: int) -> str:
    """Log `model` and `folder`'s other files as the run's logged model at `step`; return its id."""
    import mlflow.pytorch
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    client = mlflow.MlflowClient(uri)
    run = client.get_run(run_id)
    name = name_of(run.data.tags)
    # created here, in the run's experiment (MLflow's own would go to the active or default one)
    created = client.create_logged_model(
        run.info.experiment_id, name=name, source_run_id=run_id, params=dict(run.data.params)
    )
    extra = [p for p in sorted(Path(folder).iterdir()) if p.is_file() and p.name not in WEIGHT_FILES]
    with _use_tracking_uri(uri):
        info = mlflow.pytorch.log_model(
            model,
            name=name,
            model_id=created.model_id,
            run_id=run_id,
            step=step,
            serialization_format="pickle",  # the module itself: pt2 traces a graph from an input example
            extra_files=[str(p) for p in extra],
            pip_requirements=requirements(),
        )
    return info.model_id

"""A trial's trained model as an MLflow 3 logged model: listed under its experiment's "Models" by its
point and seed (`padding_reverse-seed0`: `schema.model_name`), linked to its run and to the metrics of its
last evaluation, loadable by MLflow's own loader (`mlflow.pytorch.load_model("models:/<model id>")` or
`"runs:/<run id>/<its name>"`) and by `arith.ask` (`runs:/<run id>/model` too: `run_model_uri`).

The pytorch flavour keeps the module itself (pickled; loading needs the `arith` package importable), its
weights with it; the other files `ArithModel.save` wrote (the position scheme's settings, the tokenizer)
and the trial's config ride along as the flavour's extra files, without the weights a second time:
`restore_weights` writes them back from the module where `arith.tracking.models` reads the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arith.tracking.schema import MODEL_ARTIFACT, POINT_TAG, SEED_TAG, model_name

#: where an MLflow model folder keeps the flavour's extra files (mlflow.utils.model_utils)
EXTRA_FILES = "extra_files"
#: the MLflow model folder's descriptor file
MLMODEL = "MLmodel"
#: the pytorch flavour's pickled module in an MLflow model folder
PICKLED_MODULE = "data/model.pth"
#: `ArithModel.save`'s weight files (transformers' weights, the position scheme's tables): in the module
WEIGHT_FILES = ("model.safetensors", "position_scheme.pt")


def saved_folder(folder: Path) -> Path:
    """The folder holding `ArithModel.save`'s files: `folder` itself, or its extra files when it is an
    MLflow logged model's folder."""
    extra = folder / EXTRA_FILES
    return extra if (folder / MLMODEL).exists() and extra.is_dir() else folder


def needs_weights(folder: Path) -> bool:
    """Whether `folder` is an MLflow model folder whose extra files leave the weights to its module."""
    extra = folder / EXTRA_FILES
    return (folder / PICKLED_MODULE).is_file() and not (extra / WEIGHT_FILES[0]).exists()


def restore_weights(folder: Path) -> None:
    """Write the weight files of an MLflow model folder's pickled module into its extra files, so that
    they are a whole `ArithModel.save` folder again (the folder must be a copy of one's own)."""
    import torch

    module = torch.load(folder / PICKLED_MODULE, map_location="cpu", weights_only=False)
    module.save(folder / EXTRA_FILES)


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


def name_of(tags: dict[str, str]) -> str:
    """The logged model's name of a run with these tags: its point and seed, else `MODEL_ARTIFACT` (a run
    trained alone, outside a sweep)."""
    if POINT_TAG in tags and SEED_TAG in tags:
        return model_name(tags[POINT_TAG], tags[SEED_TAG])
    return MODEL_ARTIFACT


def run_model_uri(client: Any, uri: str) -> str:
    """`runs:/<run id>/model[/...]` as the URI of that run's logged model (`models:/<model id>[/...]`),
    which MLflow finds by its name; any other URI as it is (a run without a logged model: its `model/`
    artifacts, as a store that was down kept them)."""
    prefix, _, rest = uri.removeprefix("runs:/").partition("/")
    if not uri.startswith("runs:/") or rest.split("/")[0] != MODEL_ARTIFACT:
        return uri
    run = client.get_run(prefix)
    found = client.search_logged_models(
        [run.info.experiment_id], filter_string=f"source_run_id = '{prefix}'", max_results=5
    )
    named = [m for m in found if m.name in (name_of(run.data.tags), MODEL_ARTIFACT)]
    if not named:
        return uri
    return f"models:/{named[0].model_id}" + rest.removeprefix(MODEL_ARTIFACT)


def log(uri: str, run_id: str, model: Any, folder: Path, step: int) -> str:
    """Log `model` (a torch module, its weights with it) and the other files of `folder` (`ArithModel.save`'s
    and the trial's config) as the run's logged model, named by its point and seed (`name_of`), linked to
    its metrics at `step`; return its id."""
    import mlflow.pytorch
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    client = mlflow.MlflowClient(uri)
    run = client.get_run(run_id)
    name = name_of(run.data.tags)
    # created here, in the run's experiment (MLflow's own would go to the active or default experiment),
    # with the trial's config as its params
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

"""The record of a sweep in MLflow, named once: the tags a sweep and its trials carry, the artifacts a
trial writes and their columns. `arith.tracking` writes it, `sweeps` sets its tags, `analysis` reads it
back; no module spells a tag name or a column list of its own. Imports nothing heavy (no torch, no
mlflow), so `analysis` and `experiments` may read it.
"""

from __future__ import annotations

#: MLflow 3's experiment tag that chooses its UI's view, and the value of a model-training experiment
#: (the UI's "custom_model_development"; without it MLflow 3 opens an experiment as a GenAI app)
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"

#: a trial's trained model (`tracking.log_model`: its MLflow logged model's name, `runs:/<run id>/model`)
#: and the trial's config saved beside it, what `arith.ask` renders problems with
MODEL_ARTIFACT, EXPERIMENT_CONFIG = "model", "experiment_config.json"

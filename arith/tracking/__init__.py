"""Tracking: where results go and how they come back. `store` is the MLflow store (clients, URIs,
experiments, search), `runs` one MLflow run per trial, `outbox` what a run has not sent yet (batched
metrics that survive outages; `python -m arith.tracking send`), `digit_errors` where a trial's wrong
answers err (the figures a run logs and the report draws), `models` a trained model loaded from a
folder or any MLflow artifact URI, `archive` a finished sweep as one JSON-lines file and back into any
store, `recorder` a tracker that writes archive records with no MLflow at all (the offline executor).
This is the only part of `arith` that imports mlflow, and only where a store is really used.
"""

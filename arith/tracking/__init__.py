"""Tracking: where results go and how they come back. `store` is the MLflow store (clients, URIs,
experiments, search), `runs` one MLflow run per trial with batched metrics that survive outages
(`python -m arith.tracking send`), `archive` a finished sweep as one JSON-lines file and back into any
store, `recorder` a tracker that writes archive records with no MLflow at all (the offline executor).
This is the only part of `arith` that imports mlflow, and only where a store is really used.
"""

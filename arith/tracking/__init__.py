"""Tracking: where results go and how they come back. `schema` names the record, `store` is the MLflow
store (clients, URIs, experiments, search), `runs` one MLflow run per trial, `outbox` what a run has not
sent yet (`python -m arith.tracking send`), `digit_errors` where wrong answers err, `models` a trained model
from a folder or an MLflow URI, `archive` a finished sweep as one JSON-lines file and back, `recorder` a
tracker that writes archive records without MLflow. The only part of `arith` that imports mlflow.
"""

"""MLflow logging for one trial, following the schema in docs/DESIGN.md.

The trial owns its run through `MlflowClient` calls (no global active run, so trials in one process
cannot cross-log). A resumed trial re-opens the run id saved in its checkpoint instead of starting a
new one. Metrics are buffered and sent with `log_batch`. mlflow is imported lazily: a machine without
it can still train with `tracking.enabled=False`, which gives the `NullTracker`.
"""

from __future__ import annotations

import fcntl
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from arith.config import ExperimentConfig

#: MLflow's per-call limits for log_batch
_MAX_METRICS_PER_BATCH = 1000
_MAX_PARAMS_PER_BATCH = 100
#: buffered metric values are sent once this many are waiting (and on flush / finish)
FLUSH_EVERY = 500


class NullTracker:
    """The tracker for `tracking.enabled=False`: same calls, nothing logged."""

    run_id: str = ""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def set_tags(self, tags: dict[str, str]) -> None:
        pass

    def log_text(self, text: str, artifact_file: str) -> None:
        pass

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        pass

    def flush(self) -> None:
        pass

    def finish(self, status: str = "FINISHED") -> None:
        pass


class MlflowTracker(NullTracker):
    """One MLflow run per trial: params, tags, batched metrics, evaluation artifacts."""

    def __init__(self, cfg: ExperimentConfig, run_id: str = "") -> None:
        """Start the trial's run, or re-open `run_id` (a resumed trial) and mark it RUNNING again."""
        self.cfg = cfg
        self.uri = cfg.tracking.resolved_uri()
        self.client = open_client(self.uri)
        self._buffer: list[Any] = []
        self._cells_history: list[pd.DataFrame] = []
        self._failures_history: list[dict] = []
        if run_id:
            self.run_id = run_id
            self.client.update_run(run_id, status="RUNNING")
            self._reload_history()
            return
        experiment_id = self._experiment_id(cfg.tracking.experiment)
        tags = dict(cfg.tracking.tags)
        if cfg.tracking.parent_run_id:
            tags["mlflow.parentRunId"] = cfg.tracking.parent_run_id
        run = self.client.create_run(experiment_id, tags=tags, run_name=cfg.tracking.run_name or None)
        self.run_id = run.info.run_id
        self._log_params(cfg.flat())
        self.log_text(cfg.to_json(), "config.json")

    # --- setup -------------------------------------------------------------------------------------------

    def _experiment_id(self, name: str) -> str:
        """The experiment's id, creating it if missing (with artifacts beside a SQLite store)."""
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=default_artifact_location(self.uri))
        except MlflowException:  # another trial created it first
            return self.client.get_experiment_by_name(name).experiment_id

    def _log_params(self, flat: dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [Param(key, _param_value(value)) for key, value in flat.items()]
        for i in range(0, len(params), _MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=params[i : i + _MAX_PARAMS_PER_BATCH])

    def _reload_history(self) -> None:
        """A resumed run keeps appending to the cells / failures artifacts written before the stop."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for name in ("eval/cells.csv", "eval/failures.jsonl"):
                try:
                    path = self.client.download_artifacts(self.run_id, name, tmp)
                except Exception:  # not written yet (stopped before the first evaluation)
                    continue
                if name.endswith(".csv"):
                    self._cells_history = [pd.read_csv(path)]
                else:
                    lines = Path(path).read_text().splitlines()
                    self._failures_history = [json.loads(line) for line in lines if line]

    # --- logging -----------------------------------------------------------------------------------------

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._buffer.extend(Metric(key, float(value), now, int(step)) for key, value in metrics.items())
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        while self._buffer:
            chunk, self._buffer = self._buffer[:_MAX_METRICS_PER_BATCH], self._buffer[_MAX_METRICS_PER_BATCH:]
            self.client.log_batch(self.run_id, metrics=chunk)

    def set_tags(self, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self.run_id, text, artifact_file)

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        """Append one evaluation to eval/cells.csv and eval/failures.jsonl and draw its heatmaps."""
        cells = cells.copy()
        cells.insert(0, "epoch", epoch)
        self._cells_history.append(cells)
        history = pd.concat(self._cells_history, ignore_index=True)
        self.log_text(history.to_csv(index=False), "eval/cells.csv")
        rows = failures.to_dict("records") if isinstance(failures, pd.DataFrame) else list(failures)
        self._failures_history.extend({"epoch": epoch, **row} for row in rows)
        self.log_text(
            "".join(json.dumps(row, default=str) + "\n" for row in self._failures_history),
            "eval/failures.jsonl",
        )
        from arith.evaluate import heatmap

        title = f"{self.cfg.data.task} {self.cfg.data.format}"
        for context in cells["context"].unique():
            figure = heatmap(cells, context, title=f"{title}: {context}, epoch {epoch}")
            self.client.log_figure(self.run_id, figure, f"eval/heatmap_{context}_epoch{epoch}.png")

    def finish(self, status: str = "FINISHED") -> None:
        """Send what is buffered and end the run (FINISHED, FAILED or KILLED)."""
        try:
            self.flush()
        finally:
            self.client.set_terminated(self.run_id, status=status)


def start_tracker(cfg: ExperimentConfig, run_id: str = "") -> NullTracker:
    """The trial's tracker: MLflow when `tracking.enabled`, else a NullTracker."""
    return MlflowTracker(cfg, run_id) if cfg.tracking.enabled else NullTracker()


def ray_placement_tags() -> dict[str, str]:
    """Where a trial runs (`ray_node_id`, `hostname`), when inside Ray; else just the hostname."""
    tags = {"hostname": socket.gethostname()}
    import sys

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            tags["ray_node_id"] = ray.get_runtime_context().get_node_id()
    return tags


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` store URI; None for any other store."""
    prefix = "sqlite:///"
    return Path(uri[len(prefix) :]) if uri.startswith(prefix) else None


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Serialise opening a SQLite store: two processes opening a new one at once both run its schema
    migrations and one fails ("duplicate column name"), so they take turns on a lock file beside it."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_client(uri: str):
    """An `MlflowClient` whose store is open (created and migrated, for a new SQLite file)."""
    from mlflow import MlflowClient

    with store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)  # opens the store: runs the migrations of a new one
    return client


def default_artifact_location(uri: str) -> str | None:
    """`<dir of the db>/mlartifacts` for a SQLite store, so artifacts sit beside the database rather than
    under the working directory; None (MLflow's default) for servers and other stores."""
    db = sqlite_path(uri)
    return None if db is None else (db.resolve().parent / "mlartifacts").as_uri()


def _param_value(value: Any) -> str:
    """Params are strings; lists and dicts as JSON so analysis can read them back."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)

"""MLflow logging for one trial (the schema of docs/DESIGN.md) that survives store outages. The trial owns
its run through client calls (no global active run: trials in one process cannot cross-log); a resumed trial
re-opens it and skips every (key, step) and evaluation epoch it has. What is sent goes through an `Outbox`.
mlflow is imported lazily: a machine without it trains with `tracking.enabled=False`.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from functools import partial
from io import StringIO
from pathlib import Path
from typing import Any

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking import digit_errors, logged_model, schema, store
from arith.tracking.outbox import Outbox, logged_steps, patiently

#: MLflow's per-call limit of params for log_batch
_MAX_PARAMS_PER_BATCH = 100
#: the kept wrong answers as the table the MLflow UI shows (beside the canonical eval/errors.csv)
ERRORS_TABLE = "eval/errors.json"
#: significant digits a metric is stored with: far below what any metric resolves, and the UI's columns
#: then read 0.945, not 0.9450000000000001
METRIC_DIGITS = 6


def stored(value: float) -> float:
    """A metric's value as the store keeps it (the trainer and Ray Tune read the value itself)."""
    return float(f"{float(value):.{METRIC_DIGITS}g}")


class TrackingUnavailableError(RuntimeError):
    """The store could not be reached at the end of a trial; the message names it and the saved folder."""


class NullTracker:
    """The tracker for `tracking.enabled=False`, and for a resumed trial whose run is already FINISHED:
    same calls, nothing logged."""

    run_id: str = ""  # subclasses set their own

    def __init__(self, run_id: str = "") -> None:
        self.run_id = run_id

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def set_tags(self, tags: dict[str, str]) -> None:
        pass

    def log_text(self, text: str, artifact_file: str) -> None:
        pass

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        pass

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The evaluation's kept wrong answers (`EvalResult.errors_frame()`), after `log_evaluation`."""

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        """Keep a copy of `folder`'s files as the run's `artifact_path` (the caller may then delete it)."""

    def log_model(self, model, folder: str | Path, step: int) -> None:
        """Keep the trained model (`folder`: `ArithModel.save`'s files and the config) as `model/`."""
        self.log_artifacts(folder, schema.MODEL_ARTIFACT)

    def flush(self) -> bool:
        return True

    def unsent(self) -> dict[str, Any]:
        return {}

    def finish(self, status: str = "FINISHED") -> None:
        pass


class MlflowTracker(NullTracker):
    """One MLflow run per trial: params, tags, batched metrics, evaluation artifacts."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_id: str = "",
        unsent: dict[str, Any] | None = None,
        folder: str | Path | None = None,
    ) -> None:
        """Start the trial's run, or re-open `run_id` with what its checkpoint held unsent."""
        self.cfg = cfg
        self.uri = cfg.tracking.resolved_uri()
        self._logged: set[tuple[str, int]] = set()  # (key, step) the run had when it was re-opened
        self._cells_history: list[pd.DataFrame] = []
        self._failures_history: list[dict] = []
        self._staging = Path(tempfile.mkdtemp(prefix="arith-figures-"))
        self.client = patiently(lambda: store.open_client(self.uri), "open the store", self.uri)
        tags = dict(cfg.tracking.tags)
        if run_id:
            self.run_id = run_id
            patiently(self._reopen, "re-open the run", self.uri)
        else:
            if cfg.tracking.parent_run_id:
                tags[schema.PARENT_RUN_TAG] = cfg.tracking.parent_run_id
            experiment_id = store.experiment_id(self.client, cfg.tracking.experiment, self.uri)
            run = self.client.create_run(experiment_id, tags=tags, run_name=cfg.tracking.run_name or None)
            self.run_id = run.info.run_id
        self.outbox = Outbox(self.client, self.run_id, self.uri, Path(folder or Path.cwd()))
        if run_id:
            self._restore_unsent(unsent or {})
            self.set_tags(tags)  # placement tags follow the trial to its new node
        else:
            self._log_params(cfg.flat())
            self.log_text(cfg.to_json(), "config.json")

    def _log_params(self, flat: dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [Param(key, param_value(value)) for key, value in flat.items()]
        for i in range(0, len(params), _MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=params[i : i + _MAX_PARAMS_PER_BATCH])

    def _reopen(self) -> None:
        """Mark the run RUNNING, note every (key, step) it has and reload its evaluation history."""
        self.client.update_run(self.run_id, status="RUNNING")
        self._logged = logged_steps(self.client, self.run_id)
        with tempfile.TemporaryDirectory() as tmp:
            for name in (schema.CELLS_ARTIFACT, schema.FAILURES_ARTIFACT):
                try:
                    path = self.client.download_artifacts(self.run_id, name, tmp)
                except Exception:  # not written yet (stopped before the first evaluation)
                    continue
                self._set_history(name, Path(path).read_text())

    def _set_history(self, name: str, text: str) -> None:
        if name == schema.CELLS_ARTIFACT:
            self._cells_history = [pd.read_csv(StringIO(text))] if text.strip() else []
        elif name == schema.FAILURES_ARTIFACT:
            self._failures_history = [json.loads(line) for line in text.splitlines() if line]

    def _restore_unsent(self, unsent: dict[str, Any]) -> None:
        """What the checkpoint held unsent: metrics the run lacks, and artifacts newer than the run's."""
        box = self.outbox
        box.metrics = [tuple(v) for v in unsent.get("metrics", []) if (v[0], v[3]) not in self._logged]
        for name, text in unsent.get("texts", {}).items():
            box.texts[name] = text
            self._set_history(name, text)
        box.tags.update(unsent.get("tags", {}))

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now, step = int(time.time() * 1000), int(step)
        values = [(k, stored(v), now, step) for k, v in metrics.items() if (k, step) not in self._logged]
        self.outbox.add_metrics(values)

    def set_tags(self, tags: dict[str, str]) -> None:
        self.outbox.tags.update({k: str(v) for k, v in tags.items()})
        self.flush()

    def log_text(self, text: str, artifact_file: str) -> None:
        self.outbox.texts[artifact_file] = text
        self.flush()

    def _log_figure(self, figure, name: str, **savefig) -> None:
        figure.savefig(self._staging / name, **savefig)  # a bare Figure: no pyplot state to close
        self.outbox.files.append((str(self._staging / name), "eval"))

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        """Append one evaluation to eval/cells.csv and eval/failures.jsonl and draw its heatmaps; an
        epoch the run already holds (logged before a restart) is not added again."""
        if any(epoch in set(frame[schema.EPOCH_COLUMN]) for frame in self._cells_history):
            return
        cells = cells.copy()
        cells.insert(0, schema.EPOCH_COLUMN, epoch)
        self._cells_history.append(cells)
        history = pd.concat(self._cells_history, ignore_index=True)
        self.outbox.texts[schema.CELLS_ARTIFACT] = history.to_csv(index=False)
        rows = failures.to_dict("records") if isinstance(failures, pd.DataFrame) else list(failures)
        self._failures_history.extend({schema.EPOCH_COLUMN: epoch, **row} for row in rows)
        self.outbox.texts[schema.FAILURES_ARTIFACT] = "".join(
            json.dumps(row, default=str) + "\n" for row in self._failures_history
        )
        title = f"{self.cfg.data.task} {self.cfg.data.format}"
        for context in cells[schema.CONTEXT_COLUMN].unique():
            figure = digit_errors.cells_heatmap(cells, context, title=f"{title}: {context}, epoch {epoch}")
            self._log_figure(figure, f"heatmap_{context}_epoch{epoch}.png")
        self.flush()

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The kept wrong answers replace eval/errors.csv and its UI table: the latest evaluation's, the
        final model's. Their error rate by answer digit is drawn as eval/digit_errors_epoch<E>.png."""
        errors = errors.copy()
        errors.insert(0, schema.EPOCH_COLUMN, epoch)
        self.outbox.texts[schema.ERRORS_ARTIFACT] = errors.to_csv(index=False)
        # what `MlflowClient.log_table` writes, as a text: sent and kept like any, and replaced by the
        # next evaluation's rather than appended to; the tag is how the UI lists a run's tables
        self.outbox.texts[ERRORS_TABLE] = errors.to_json(orient="split", index=False, date_format="iso")
        self.outbox.tags["mlflow.loggedArtifacts"] = json.dumps([{"path": ERRORS_TABLE, "type": "table"}])
        rows = digit_errors.digit_rows(errors, self.cfg.data.task, self.cfg.data.format)
        title = f"{self.cfg.data.task} {self.cfg.data.format}: where wrong answers err, epoch {epoch}"
        figure = digit_errors.figure(rows, title)
        if figure is not None:
            self._log_figure(figure, f"digit_errors_epoch{epoch}.png", dpi=100)
        self.flush()

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        copy = self._staging / "folders" / artifact_path
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)
        self.outbox.files.append((str(copy), artifact_path))
        self.flush()

    def log_model(self, model, folder: str | Path, step: int) -> None:
        """An MLflow logged model; while the store stays down, the folder as the artifact `model/`."""
        self.flush()  # the metrics of `step` are in the store, for the model to be linked to
        log = partial(logged_model.log, self.uri, self.run_id, model, Path(folder), step)
        try:
            patiently(log, "log the model", self.uri)
        except Exception as err:
            if not store.is_unreachable(err):
                raise
            super().log_model(model, folder, step)

    def flush(self) -> bool:
        """Send everything waiting: False while the store is down, which keeps it."""
        return self.outbox.flush()

    def unsent(self) -> dict[str, Any]:
        return self.outbox.unsent()

    def finish(self, status: str = "FINISHED") -> None:
        """Send what is waiting and end the run (never turning a FINISHED run KILLED), waiting up to
        PATIENCE_S for a store that is down. If it stays down, save the unsent part in the trial's folder;
        a FINISHED trial then fails with the command that sends it, a failing one keeps its own error."""

        def send_and_end() -> None:
            self.outbox.retry_now()
            if not self.flush():
                raise ConnectionError(f"MLflow store {store.display(self.uri)} unreachable")
            if status == "KILLED" and self.client.get_run(self.run_id).info.status == "FINISHED":
                return  # whoever stopped it ended it already, as done (a search's scheduler, at the gate)
            self.client.set_terminated(self.run_id, status=status)

        try:
            patiently(send_and_end, "send the trial's last metrics", self.uri)
        except Exception as err:
            self._end_failed(err, status)
        finally:  # the figures were sent, or copied into the unsent folder
            shutil.rmtree(self._staging, ignore_errors=True)

    def _end_failed(self, err: Exception, status: str) -> None:
        """`finish` could not end the run: keep the unsent part when the store is down, else report."""
        if not store.is_unreachable(err) and not isinstance(err, ConnectionError):
            if status == "FINISHED":
                raise err
            print(f"warning: could not end run {self.run_id} as {status}: {err}", file=sys.stderr)
            return
        folder = self.outbox.save(status)
        message = (
            f"MLflow store {store.display(self.uri)} unreachable at the end of the trial ({err}); its "
            f"unsent metrics and the run's end ({status}) are saved in {folder}. When the store is "
            f"back, send them: python -m arith.tracking send {folder}"
        )
        if status == "FINISHED":
            raise TrackingUnavailableError(message) from err
        print(f"warning: {message}", file=sys.stderr)


def start_tracker(
    cfg: ExperimentConfig,
    run_id: str = "",
    unsent: dict[str, Any] | None = None,
    folder: str | Path | None = None,
) -> NullTracker:
    """The trial's tracker: MLflow when `tracking.enabled`, else a NullTracker."""
    if not cfg.tracking.enabled:
        return NullTracker()
    if run_id and _run_status(cfg, run_id) == "FINISHED":
        # a driver killed between the trial's last report and Tune's next save restarts it from its last
        # checkpoint; training from there is deterministic, so the run already holds all it would log
        print(
            f"MLflow run {run_id} is already FINISHED: the trial ended before its driver recorded it; "
            "its run is kept as it is and nothing is logged to it again",
            flush=True,
        )
        return NullTracker(run_id)
    return MlflowTracker(cfg, run_id, unsent, folder)


def _run_status(cfg: ExperimentConfig, run_id: str) -> str | None:
    """The run's status in the store, or None when the store cannot say (MlflowTracker then waits)."""
    try:
        return store.open_client(cfg.tracking.resolved_uri()).get_run(run_id).info.status
    except Exception:
        return None


def param_value(value: Any) -> str:
    """Params are strings; lists and dicts as JSON so analysis can read them back."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)

"""MLflow logging for one trial, following the schema in docs/DESIGN.md, and surviving store outages.

The trial owns its run through client calls (no global active run, so trials in one process cannot
cross-log). A resumed trial re-opens the run id saved in its checkpoint and logs nothing the run already
has: the (key, step) pairs and evaluation epochs already in the store are skipped, so a step logged by
an attempt that died after its last checkpoint is not logged twice.

What the run is sent goes through its `arith.tracking.outbox.Outbox`: batched, kept while the store is
down, riding in every checkpoint (`unsent()`), and at the end of a trial that still cannot reach the
store saved in `unsent-<run id>/`; the trial then fails with the command that sends it later
(`python -m arith.tracking send FOLDER`).

mlflow is imported lazily: a machine without it can still train with `tracking.enabled=False`.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking import digit_errors, logged_model, store
from arith.tracking.outbox import Outbox, patiently
from arith.tracking.schema import (
    CELLS_ARTIFACT,
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    ERRORS_ARTIFACT,
    FAILURES_ARTIFACT,
    MODEL_ARTIFACT,
    PARENT_RUN_TAG,
)

#: MLflow's per-call limit of params for log_batch
_MAX_PARAMS_PER_BATCH = 100
#: the kept wrong answers of the latest evaluation: the canonical CSV and the table the MLflow UI shows
ERRORS_CSV, ERRORS_TABLE = ERRORS_ARTIFACT, "eval/errors.json"

#: significant digits a metric is stored with: far below what any metric measures (an accuracy over 100
#: problems moves in steps of 0.01), and what keeps the UI's columns from reading 0.9450000000000001
METRIC_DIGITS = 6

T = TypeVar("T")


def stored(value: float) -> float:
    """A metric's value as the store keeps it: `METRIC_DIGITS` significant digits (nan and inf as they are).
    The trainer and Ray Tune read the value itself; only its record in MLflow is rounded."""
    return float(f"{float(value):.{METRIC_DIGITS}g}")


class TrackingUnavailableError(RuntimeError):
    """The store could not be reached at the end of a trial; the message names it and the saved folder."""


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

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The evaluation's kept wrong answers (`EvalResult.errors_frame()`), after `log_evaluation`."""

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        """Keep the files of `folder` as the run's artifacts under `artifact_path` (e.g. the trained model
        as `model/`). The tracker takes a copy: the caller may delete `folder` once this returns."""

    def log_model(self, model, folder: str | Path, step: int) -> None:
        """Keep the trained `model` (`folder`: `ArithModel.save`'s files and the trial's config) as the
        run's `model/`; MLflow's tracker makes it an MLflow logged model linked to the metrics at `step`."""
        self.log_artifacts(folder, MODEL_ARTIFACT)

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
        """Start the trial's run, or re-open `run_id` (a resumed trial), mark it RUNNING again and take
        back what its checkpoint held unsent. `folder` keeps what cannot be sent (default: the cwd)."""
        self.cfg = cfg
        self.uri = cfg.tracking.resolved_uri()
        self.folder = Path(folder or Path.cwd())
        self._logged: set[tuple[str, int]] = set()  # (key, step) the run had when it was re-opened
        self._cells_history: list[pd.DataFrame] = []
        self._failures_history: list[dict] = []
        self._staging = Path(tempfile.mkdtemp(prefix="arith-figures-"))
        self.client = self._patiently(lambda: store.open_client(self.uri), "open the store")
        if run_id:
            self.run_id = run_id
            self._patiently(self._reopen, "re-open the run")
            self.outbox = Outbox(self.client, self.run_id, self.uri, self.folder)
            self._restore_unsent(unsent or {})
            self.set_tags(dict(cfg.tracking.tags))  # placement tags follow the trial to its new node
            return
        tags = dict(cfg.tracking.tags)
        if cfg.tracking.parent_run_id:
            tags[PARENT_RUN_TAG] = cfg.tracking.parent_run_id
        experiment_id = store.experiment_id(self.client, cfg.tracking.experiment, self.uri)
        run = self.client.create_run(experiment_id, tags=tags, run_name=cfg.tracking.run_name or None)
        self.run_id = run.info.run_id
        self.outbox = Outbox(self.client, self.run_id, self.uri, self.folder)
        self._log_params(cfg.flat())
        self.log_text(cfg.to_json(), "config.json")

    # --- setup -------------------------------------------------------------------------------------------

    def _log_params(self, flat: dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [Param(key, param_value(value)) for key, value in flat.items()]
        for i in range(0, len(params), _MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=params[i : i + _MAX_PARAMS_PER_BATCH])

    def _reopen(self) -> None:
        """Mark the run RUNNING, note every (key, step) it has and reload its evaluation history."""
        self.client.update_run(self.run_id, status="RUNNING")
        for key in self.client.get_run(self.run_id).data.metrics:
            self._logged |= {(key, m.step) for m in self.client.get_metric_history(self.run_id, key)}
        with tempfile.TemporaryDirectory() as tmp:
            for name in (CELLS_ARTIFACT, FAILURES_ARTIFACT):
                try:
                    path = self.client.download_artifacts(self.run_id, name, tmp)
                except Exception:  # not written yet (stopped before the first evaluation)
                    continue
                self._set_history(name, Path(path).read_text())

    def _set_history(self, name: str, text: str) -> None:
        if name == CELLS_ARTIFACT:
            from io import StringIO

            self._cells_history = [pd.read_csv(StringIO(text))] if text.strip() else []
        elif name == FAILURES_ARTIFACT:
            self._failures_history = [json.loads(line) for line in text.splitlines() if line]

    def _restore_unsent(self, unsent: dict[str, Any]) -> None:
        """What the checkpoint held unsent: metrics the run lacks, and artifacts newer than the run's."""
        box = self.outbox
        box.metrics = [tuple(v) for v in unsent.get("metrics", []) if (v[0], v[3]) not in self._logged]
        for name, text in unsent.get("texts", {}).items():
            box.texts[name] = text
            self._set_history(name, text)
        box.tags.update(unsent.get("tags", {}))

    # --- logging -----------------------------------------------------------------------------------------

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        step = int(step)
        self.outbox.add_metrics(
            [
                (key, stored(value), now, step)
                for key, value in metrics.items()
                if (key, step) not in self._logged
            ]
        )

    def set_tags(self, tags: dict[str, str]) -> None:
        self.outbox.tags.update({k: str(v) for k, v in tags.items()})
        self.flush()

    def log_text(self, text: str, artifact_file: str) -> None:
        self.outbox.texts[artifact_file] = text
        self.flush()

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        """Append one evaluation to eval/cells.csv and eval/failures.jsonl and draw its heatmaps; an
        epoch the run already holds (logged before a restart) is not added again."""
        if any(epoch in set(frame[EPOCH_COLUMN]) for frame in self._cells_history):
            return
        cells = cells.copy()
        cells.insert(0, EPOCH_COLUMN, epoch)
        self._cells_history.append(cells)
        history = pd.concat(self._cells_history, ignore_index=True)
        self.outbox.texts[CELLS_ARTIFACT] = history.to_csv(index=False)
        rows = failures.to_dict("records") if isinstance(failures, pd.DataFrame) else list(failures)
        self._failures_history.extend({EPOCH_COLUMN: epoch, **row} for row in rows)
        self.outbox.texts[FAILURES_ARTIFACT] = "".join(
            json.dumps(row, default=str) + "\n" for row in self._failures_history
        )
        import matplotlib.pyplot as plt

        title = f"{self.cfg.data.task} {self.cfg.data.format}"
        for context in cells[CONTEXT_COLUMN].unique():
            figure = digit_errors.cells_heatmap(cells, context, title=f"{title}: {context}, epoch {epoch}")
            path = self._staging / f"heatmap_{context}_epoch{epoch}.png"
            figure.savefig(path)
            plt.close(figure)
            self.outbox.files.append((str(path), "eval"))
        self.flush()

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The kept wrong answers replace eval/errors.csv (and the MLflow table eval/errors.json): it
        holds the latest evaluation's, the one the run's final model gives (an evaluation logged again
        after a restart writes the same). Their error rate by answer digit is drawn as
        eval/digit_errors_epoch<E>.png."""
        import matplotlib.pyplot as plt

        errors = errors.copy()
        errors.insert(0, EPOCH_COLUMN, epoch)
        self.outbox.texts[ERRORS_CSV] = errors.to_csv(index=False)
        self.outbox.tags.update(_table_tag(ERRORS_TABLE))
        self.outbox.texts[ERRORS_TABLE] = _table_json(errors)
        rows = digit_errors.digit_rows(errors, self.cfg.data.task, self.cfg.data.format)
        title = f"{self.cfg.data.task} {self.cfg.data.format}: where wrong answers err, epoch {epoch}"
        figure = digit_errors.figure(rows, title)
        if figure is not None:
            path = self._staging / f"digit_errors_epoch{epoch}.png"
            figure.savefig(path, dpi=100)
            plt.close(figure)
            self.outbox.files.append((str(path), "eval"))
        self.flush()

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        copy = self._staging / "folders" / artifact_path
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)
        self.outbox.files.append((str(copy), artifact_path))
        self.flush()

    def log_model(self, model, folder: str | Path, step: int) -> None:
        """An MLflow logged model; while the store stays down, the folder as the artifact `model/`,
        kept with the run's unsent part like any artifact."""
        self.flush()  # the metrics of `step` are in the store, for the model to be linked to
        try:
            self._patiently(
                lambda: logged_model.log(self.uri, self.run_id, model, Path(folder), step), "log the model"
            )
        except Exception as err:
            if not store.is_unreachable(err):
                raise
            super().log_model(model, folder, step)

    # --- sending -----------------------------------------------------------------------------------------

    def flush(self) -> bool:
        """Send everything waiting (`Outbox.flush`): False while the store is down, which keeps it."""
        return self.outbox.flush()

    def unsent(self) -> dict[str, Any]:
        """What the store does not have yet, for the checkpoint (the trainer flushes first)."""
        return self.outbox.unsent()

    def _patiently(self, action: Callable[[], T], what: str) -> T:
        """Run `action`, retrying for `arith.tracking.outbox.PATIENCE_S` while the store is unreachable."""
        return patiently(action, what, self.uri)

    def finish(self, status: str = "FINISHED") -> None:
        """Send what is waiting and end the run (FINISHED, FAILED or KILLED: never over a FINISHED that
        what stopped the trial wrote first), waiting up to PATIENCE_S for a store that is down. If it
        stays down, save the unsent part in the trial's folder; a FINISHED trial then fails with the
        command that sends it, a failing one keeps its own error."""

        def send_and_end() -> None:
            self.outbox.retry_now()
            if not self.flush():
                raise ConnectionError(f"MLflow store {store.display(self.uri)} unreachable")
            if status == "KILLED" and self.client.get_run(self.run_id).info.status == "FINISHED":
                return  # whoever stopped it ended it already, as done (a search's scheduler, at the gate)
            self.client.set_terminated(self.run_id, status=status)

        try:
            self._patiently(send_and_end, "send the trial's last metrics")
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
        folder = self.save_unsent(status)
        message = (
            f"MLflow store {store.display(self.uri)} unreachable at the end of the trial ({err}); its "
            f"unsent metrics and the run's end ({status}) are saved in {folder}. When the store is "
            f"back, send them: python -m arith.tracking send {folder}"
        )
        if status == "FINISHED":
            raise TrackingUnavailableError(message) from err
        print(f"warning: {message}", file=sys.stderr)

    def save_unsent(self, status: str) -> Path:
        """Write everything unsent into `unsent-<run id>/` in the trial's folder (`Outbox.save`)."""
        return self.outbox.save(status)


def _table_json(frame: pd.DataFrame) -> str:
    """A frame as MLflow's table artifact (what `MlflowClient.log_table` writes to a .json file), so
    it is sent, kept while the store is down and re-sent like any text; unlike `log_table` a new
    evaluation's table replaces the last one instead of being appended to it."""
    return frame.to_json(orient="split", index=False, date_format="iso")


def _table_tag(artifact_file: str) -> dict[str, str]:
    """The tag by which the MLflow UI lists a run's tables (`log_table` sets the same)."""
    return {"mlflow.loggedArtifacts": json.dumps([{"path": artifact_file, "type": "table"}])}


def start_tracker(
    cfg: ExperimentConfig,
    run_id: str = "",
    unsent: dict[str, Any] | None = None,
    folder: str | Path | None = None,
) -> NullTracker:
    """The trial's tracker: MLflow when `tracking.enabled`, else a NullTracker; a `FinishedRun` for a
    resumed trial whose run the store already holds as FINISHED."""
    if not cfg.tracking.enabled:
        return NullTracker()
    if run_id and _run_status(cfg, run_id) == "FINISHED":
        print(
            f"MLflow run {run_id} is already FINISHED: the trial ended before its driver recorded it; "
            "its run is kept as it is and nothing is logged to it again",
            flush=True,
        )
        return FinishedRun(run_id)
    return MlflowTracker(cfg, run_id, unsent, folder)


class FinishedRun(NullTracker):
    """A resumed trial whose run had already finished: a driver killed between the trial's last report
    and Tune's next save of its state restarts it from its last checkpoint. Training from there is
    deterministic, so the run already holds everything it would log; it is left untouched."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


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

"""MLflow logging for one trial, following the schema in docs/DESIGN.md, and surviving store outages.

The trial owns its run through client calls (no global active run, so trials in one process cannot
cross-log). A resumed trial re-opens the run id saved in its checkpoint and logs nothing the run already
has: the (key, step) pairs and evaluation epochs already in the store are skipped, so a step logged by
an attempt that died after its last checkpoint is not logged twice.

Metrics are buffered and sent with `log_batch`. A send that fails because the store is down keeps the
buffer, warns once and tries again after a growing pause; values past `MAX_BUFFERED` go to a file in
the trial's folder. What is still unsent rides in every checkpoint (`unsent()`), so a trial killed while
the store is down loses nothing. At the end a trial that still cannot reach the store writes everything
unsent to `unsent-<run id>/` and fails with the command that sends it later:

    python -m arith.tracking send FOLDER [--tracking-uri URI]

mlflow is imported lazily: a machine without it can still train with `tracking.enabled=False`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking import digit_errors, store

#: MLflow's per-call limits for log_batch
_MAX_METRICS_PER_BATCH = 1000
_MAX_PARAMS_PER_BATCH = 100
#: buffered metric values are sent once this many are waiting (and before every checkpoint, and at the end)
FLUSH_EVERY = 500
#: at most this many values wait in memory while the store is down; older ones go to the trial's folder
MAX_BUFFERED = 200_000
#: pauses between tries while the store is down: first, doubling up to the last
RETRY_FIRST_S, RETRY_MAX_S = 5.0, 300.0
#: how long the start and the end of a trial wait for a store that is down before giving up
PATIENCE_S = float(os.environ.get("POSDESC_TRACKING_PATIENCE_S", "120"))
UNSENT_RUN, UNSENT_METRICS = "run.json", "metrics.jsonl"
#: the kept wrong answers of the latest evaluation: the canonical CSV and the table the MLflow UI shows
ERRORS_CSV, ERRORS_TABLE = "eval/errors.csv", "eval/errors.json"
#: the trained model's artifact folder (tracking.log_model) and the trial config saved in it
MODEL_ARTIFACT, EXPERIMENT_CONFIG = "model", "experiment_config.json"

T = TypeVar("T")
#: one metric value as buffered, checkpointed and saved: (key, value, timestamp ms, step)
Value = tuple[str, float, int, int]


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
        self._buffer: list[Value] = []
        self._tags: dict[str, str] = {}
        self._texts: dict[str, str] = {}  # artifact file -> text, waiting to be uploaded
        self._files: list[
            tuple[str, str]
        ] = []  # (local file or folder, artifact dir), waiting to be uploaded
        self._logged: set[tuple[str, int]] = set()  # (key, step) the run had when it was re-opened
        self._cells_history: list[pd.DataFrame] = []
        self._failures_history: list[dict] = []
        self._retry_at, self._pause, self._down_since = 0.0, RETRY_FIRST_S, None
        self._staging = Path(tempfile.mkdtemp(prefix="arith-figures-"))
        self.client = self._patiently(lambda: store.open_client(self.uri), "open the store")
        if run_id:
            self.run_id = run_id
            self._patiently(self._reopen, "re-open the run")
            self._restore_unsent(unsent or {})
            self.set_tags(dict(cfg.tracking.tags))  # placement tags follow the trial to its new node
            return
        tags = dict(cfg.tracking.tags)
        if cfg.tracking.parent_run_id:
            tags["mlflow.parentRunId"] = cfg.tracking.parent_run_id
        experiment_id = store.experiment_id(self.client, cfg.tracking.experiment, self.uri)
        run = self.client.create_run(experiment_id, tags=tags, run_name=cfg.tracking.run_name or None)
        self.run_id = run.info.run_id
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
            for name in ("eval/cells.csv", "eval/failures.jsonl"):
                try:
                    path = self.client.download_artifacts(self.run_id, name, tmp)
                except Exception:  # not written yet (stopped before the first evaluation)
                    continue
                self._set_history(name, Path(path).read_text())

    def _set_history(self, name: str, text: str) -> None:
        if name == "eval/cells.csv":
            from io import StringIO

            self._cells_history = [pd.read_csv(StringIO(text))] if text.strip() else []
        elif name == "eval/failures.jsonl":
            self._failures_history = [json.loads(line) for line in text.splitlines() if line]

    def _restore_unsent(self, unsent: dict[str, Any]) -> None:
        """What the checkpoint held unsent: metrics the run lacks, and artifacts newer than the run's."""
        self._buffer = [tuple(v) for v in unsent.get("metrics", []) if (v[0], v[3]) not in self._logged]
        for name, text in unsent.get("texts", {}).items():
            self._texts[name] = text
            self._set_history(name, text)
        self._tags.update(unsent.get("tags", {}))

    # --- logging -----------------------------------------------------------------------------------------

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        step = int(step)
        self._buffer.extend(
            (key, float(value), now, step)
            for key, value in metrics.items()
            if (key, step) not in self._logged
        )
        if len(self._buffer) > MAX_BUFFERED:
            self._spill(self._buffer[: len(self._buffer) - MAX_BUFFERED // 2])
            del self._buffer[: len(self._buffer) - MAX_BUFFERED // 2]
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()

    def set_tags(self, tags: dict[str, str]) -> None:
        self._tags.update({k: str(v) for k, v in tags.items()})
        self.flush()

    def log_text(self, text: str, artifact_file: str) -> None:
        self._texts[artifact_file] = text
        self.flush()

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        """Append one evaluation to eval/cells.csv and eval/failures.jsonl and draw its heatmaps; an
        epoch the run already holds (logged before a restart) is not added again."""
        if any(epoch in set(frame["epoch"]) for frame in self._cells_history):
            return
        cells = cells.copy()
        cells.insert(0, "epoch", epoch)
        self._cells_history.append(cells)
        history = pd.concat(self._cells_history, ignore_index=True)
        self._texts["eval/cells.csv"] = history.to_csv(index=False)
        rows = failures.to_dict("records") if isinstance(failures, pd.DataFrame) else list(failures)
        self._failures_history.extend({"epoch": epoch, **row} for row in rows)
        self._texts["eval/failures.jsonl"] = "".join(
            json.dumps(row, default=str) + "\n" for row in self._failures_history
        )
        import matplotlib.pyplot as plt

        title = f"{self.cfg.data.task} {self.cfg.data.format}"
        for context in cells["context"].unique():
            figure = digit_errors.heatmap(cells, context, title=f"{title}: {context}, epoch {epoch}")
            path = self._staging / f"heatmap_{context}_epoch{epoch}.png"
            figure.savefig(path)
            plt.close(figure)
            self._files.append((str(path), "eval"))
        self.flush()

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The kept wrong answers replace eval/errors.csv (and the MLflow table eval/errors.json): it
        holds the latest evaluation's, the one the run's final model gives (an evaluation logged again
        after a restart writes the same). Their error rate by answer digit is drawn as
        eval/digit_errors_epoch<E>.png."""
        import matplotlib.pyplot as plt

        errors = errors.copy()
        errors.insert(0, "epoch", epoch)
        self._texts[ERRORS_CSV] = errors.to_csv(index=False)
        self._tags.update(_table_tag(ERRORS_TABLE))
        self._texts[ERRORS_TABLE] = _table_json(errors)
        rows = digit_errors.digit_rows(errors, self.cfg.data.task, self.cfg.data.format)
        title = f"{self.cfg.data.task} {self.cfg.data.format}: where wrong answers err, epoch {epoch}"
        figure = digit_errors.figure(rows, title)
        if figure is not None:
            path = self._staging / f"digit_errors_epoch{epoch}.png"
            figure.savefig(path, dpi=100)
            plt.close(figure)
            self._files.append((str(path), "eval"))
        self.flush()

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        copy = self._staging / "folders" / artifact_path
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)
        self._files.append((str(copy), artifact_path))
        self.flush()

    # --- sending -----------------------------------------------------------------------------------------

    def flush(self) -> bool:
        """Send everything waiting. While the store is down this keeps it, tries again only after a pause
        (5 s doubling to 5 min) and returns False; it raises only for an error retrying cannot fix."""
        if not self._waiting() or time.monotonic() < self._retry_at:
            return not self._waiting()
        try:
            self._send()
        except Exception as err:
            if not store.is_unreachable(err):
                raise
            if self._down_since is None:
                self._down_since = time.monotonic()
                print(
                    f"warning: MLflow store {store.display(self.uri)} unreachable ({type(err).__name__}: "
                    f"{str(err).splitlines()[0][:200]}); training goes on, {len(self._buffer)} metric "
                    "values kept and retried with back-off",
                    file=sys.stderr,
                    flush=True,
                )
            self._retry_at = time.monotonic() + self._pause
            self._pause = min(RETRY_MAX_S, self._pause * 2)
            return False
        if self._down_since is not None:
            print(
                f"MLflow store {store.display(self.uri)} reachable again after "
                f"{time.monotonic() - self._down_since:.0f} s; everything kept was sent",
                file=sys.stderr,
                flush=True,
            )
        self._retry_at, self._pause, self._down_since = 0.0, RETRY_FIRST_S, None
        return True

    def _waiting(self) -> bool:
        return bool(self._buffer or self._tags or self._texts or self._files or self._spilled().exists())

    def _send(self) -> None:
        """Send in order, dropping each part only once the store has it (a failure mid-way resends none
        of what arrived)."""
        from mlflow.entities import RunTag

        spilled = self._spilled()
        if spilled.exists():
            _send_metrics(self.client, self.run_id, _read_values(spilled))
            spilled.unlink()
        while self._buffer:
            _send_metrics(self.client, self.run_id, self._buffer[:_MAX_METRICS_PER_BATCH])
            del self._buffer[:_MAX_METRICS_PER_BATCH]
        if self._tags:
            self.client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in self._tags.items()])
            self._tags.clear()
        for name in list(self._texts):
            self.client.log_text(self.run_id, self._texts[name], name)
            del self._texts[name]
        while self._files:
            _log_file(self.client, self.run_id, *self._files[0])
            self._files.pop(0)

    def _spilled(self) -> Path:
        return self.folder / f"unsent-{self.run_id or 'new'}" / UNSENT_METRICS

    def _spill(self, values: list[Value]) -> None:
        path = self._spilled()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.writelines(json.dumps(v) + "\n" for v in values)

    def unsent(self) -> dict[str, Any]:
        """What the store does not have yet, for the checkpoint (the trainer flushes first)."""
        return {"metrics": list(self._buffer), "texts": dict(self._texts), "tags": dict(self._tags)}

    def _patiently(self, action: Callable[[], T], what: str) -> T:
        """Run `action`, retrying with back-off for PATIENCE_S while the store is unreachable."""
        deadline, pause = time.monotonic() + PATIENCE_S, 1.0
        while True:
            try:
                return action()
            except Exception as err:
                if not store.is_unreachable(err) or time.monotonic() + pause > deadline:
                    raise
                if pause == 1.0:  # warn once
                    message = f"cannot {what} at {store.display(self.uri)} ({err})"
                    print(f"warning: {message}; retrying for up to {PATIENCE_S:.0f} s", file=sys.stderr)
                time.sleep(pause)
                pause = min(30.0, pause * 2)

    def finish(self, status: str = "FINISHED") -> None:
        """Send what is waiting and end the run (FINISHED, FAILED or KILLED), waiting up to PATIENCE_S for
        a store that is down. If it stays down, save the unsent part in the trial's folder; a FINISHED
        trial then fails with the command that sends it, a failing one keeps its own error."""

        def send_and_end() -> None:
            self._retry_at = 0.0
            if not self.flush():
                raise ConnectionError(f"MLflow store {store.display(self.uri)} unreachable")
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
        """Write everything unsent into `unsent-<run id>/` in the trial's folder, for `send`."""
        folder = self._spilled().parent
        self._spill(self._buffer)
        self._buffer.clear()
        figures = folder / "figures"
        figures.mkdir(parents=True, exist_ok=True)
        files = []
        for path, directory in self._files:
            target = figures / Path(path).name
            if Path(path).is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                target.write_bytes(Path(path).read_bytes())
            files.append([str(target), directory])
        header = {"tracking_uri": self.uri, "run_id": self.run_id, "status": status, "tags": self._tags}
        header |= {"texts": self._texts, "files": files}
        (folder / UNSENT_RUN).write_text(json.dumps(header, indent=1))
        return folder


def _log_file(client, run_id: str, path: str, directory: str) -> None:
    """A file into the run's folder `directory`, or a folder's files as `directory` itself."""
    if Path(path).is_dir():
        client.log_artifacts(run_id, path, directory)
    else:
        client.log_artifact(run_id, path, directory)


def _table_json(frame: pd.DataFrame) -> str:
    """A frame as MLflow's table artifact (what `MlflowClient.log_table` writes to a .json file), so
    it is sent, kept while the store is down and re-sent like any text; unlike `log_table` a new
    evaluation's table replaces the last one instead of being appended to it."""
    return frame.to_json(orient="split", index=False, date_format="iso")


def _table_tag(artifact_file: str) -> dict[str, str]:
    """The tag by which the MLflow UI lists a run's tables (`log_table` sets the same)."""
    return {"mlflow.loggedArtifacts": json.dumps([{"path": artifact_file, "type": "table"}])}


def _send_metrics(client, run_id: str, values: list[Value]) -> None:
    from mlflow.entities import Metric

    for i in range(0, len(values), _MAX_METRICS_PER_BATCH):
        chunk = values[i : i + _MAX_METRICS_PER_BATCH]
        client.log_batch(run_id, metrics=[Metric(k, v, ts, step) for k, v, ts, step in chunk])


def _read_values(path: Path) -> list[Value]:
    return [tuple(json.loads(line)) for line in path.read_text().splitlines() if line]


def send_unsent(folder: str | Path, tracking_uri: str | None = None) -> int:
    """Send a trial's saved unsent metrics, artifacts and end status (skipping any (key, step) the run
    already has, so sending twice is harmless); returns how many metric values were sent."""
    folder = Path(folder)
    header = json.loads((folder / UNSENT_RUN).read_text())
    uri = tracking_uri or header["tracking_uri"]
    client = store.open_client(uri)
    run_id = header["run_id"]
    have = set()
    for key in client.get_run(run_id).data.metrics:
        have |= {(key, m.step) for m in client.get_metric_history(run_id, key)}
    metrics_file = folder / UNSENT_METRICS
    values = _read_values(metrics_file) if metrics_file.exists() else []
    values = [v for v in values if (v[0], v[3]) not in have]
    _send_metrics(client, run_id, values)
    from mlflow.entities import RunTag

    if header["tags"]:
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in header["tags"].items()])
    for name, text in header["texts"].items():
        client.log_text(run_id, text, name)
    for path, directory in header["files"]:
        _log_file(client, run_id, path, directory)
    client.set_terminated(run_id, status=header["status"])
    folder.rename(folder.with_name(folder.name + ".sent"))
    return len(values)


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arith.tracking", description="Tracking utilities.")
    commands = parser.add_subparsers(dest="command", required=True)
    send = commands.add_parser("send", help="send a trial's unsent metrics (an unsent-<run id> folder)")
    send.add_argument("folder")
    send.add_argument("--tracking-uri", help="the store to send to (default: the one the trial used)")
    args = parser.parse_args(argv)
    n = send_unsent(args.folder, args.tracking_uri)
    print(f"sent {n} metric values and the run's end to {args.tracking_uri or 'its store'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

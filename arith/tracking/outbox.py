"""What a trial has logged and its MLflow store does not have yet: batched, kept through store outages,
carried in every checkpoint (`Outbox.unsent`), and saved to `unsent-<run id>/` when the trial ends without
the store (`Outbox.save`), for `python -m arith.tracking send FOLDER` to send later. The tracker
(`arith.tracking.runs`) decides what to log; this queue knows no evaluation or schema.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arith.tracking import store

#: MLflow's per-call limit of metrics for log_batch
MAX_METRICS_PER_BATCH = 1000
#: buffered metric values are sent once this many wait (and before every checkpoint, and at the end), or
#: once the oldest has waited FLUSH_AFTER_S: a slow trial would otherwise show the UI no curve for an hour
FLUSH_EVERY = 500
FLUSH_AFTER_S = 60.0
#: at most this many values wait in memory while the store is down; older ones go to the trial's folder
MAX_BUFFERED = 200_000
#: pauses between tries while the store is down: first, doubling up to the last
RETRY_FIRST_S, RETRY_MAX_S = 5.0, 300.0
#: how long the start and the end of a trial wait for a store that is down before giving up
PATIENCE_S = float(os.environ.get("POSDESC_TRACKING_PATIENCE_S", "120"))
UNSENT_RUN, UNSENT_METRICS = "run.json", "metrics.jsonl"

T = TypeVar("T")
#: one metric value as buffered, checkpointed and saved: (key, value, timestamp ms, step)
Value = tuple[str, float, int, int]


class Outbox:
    """One run's unsent metrics, tags, texts and files, sent in that order by `flush`."""

    def __init__(self, client, run_id: str, uri: str, folder: Path) -> None:
        self.client, self.run_id, self.uri, self.folder = client, run_id, uri, folder
        self.metrics: list[Value] = []
        self.tags: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.files: list[tuple[str, str]] = []
        self._retry_at, self._pause, self._down_since = 0.0, RETRY_FIRST_S, None
        self._waiting_since: float | None = None  # when the oldest value still in memory was queued

    def add_metrics(self, values: list[Value]) -> None:
        """Queue metric values (past MAX_BUFFERED the oldest go to the trial's folder), sent when due."""
        if self._waiting_since is None:
            self._waiting_since = time.monotonic()
        self.metrics.extend(values)
        if len(self.metrics) > MAX_BUFFERED:
            self._spill(self.metrics[: len(self.metrics) - MAX_BUFFERED // 2])
            del self.metrics[: len(self.metrics) - MAX_BUFFERED // 2]
        if len(self.metrics) >= FLUSH_EVERY or time.monotonic() - self._waiting_since >= FLUSH_AFTER_S:
            self.flush()

    def retry_now(self) -> None:
        """Let the next `flush` try at once, whatever the pause (the trial's end does not wait)."""
        self._retry_at = 0.0

    def flush(self) -> bool:
        """Send everything waiting. While the store is down this keeps it, tries again only after a pause
        (5 s doubling to 5 min) and returns False; it raises only for an error retrying cannot fix."""
        if not self.waiting() or time.monotonic() < self._retry_at:
            return not self.waiting()
        try:
            self._send()
        except Exception as err:
            if not store.is_unreachable(err):
                raise
            if self._down_since is None:
                self._down_since = time.monotonic()
                print(
                    f"warning: MLflow store {store.display(self.uri)} unreachable ({type(err).__name__}: "
                    f"{str(err).splitlines()[0][:200]}); training goes on, {len(self.metrics)} metric "
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

    def waiting(self) -> bool:
        return bool(self.metrics or self.tags or self.texts or self.files or self.spilled().exists())

    def _send(self) -> None:
        """Send in order, dropping each part once the store has it (a failure resends none that arrived)."""
        spilled = self.spilled()
        if spilled.exists():
            send_metrics(self.client, self.run_id, read_values(spilled))
            spilled.unlink()
        while self.metrics:
            send_metrics(self.client, self.run_id, self.metrics[:MAX_METRICS_PER_BATCH])
            del self.metrics[:MAX_METRICS_PER_BATCH]
        self._waiting_since = None
        send_parts(self.client, self.run_id, self.tags, self.texts, self.files)

    def spilled(self) -> Path:
        """The file of metric values that did not fit in memory while the store was down."""
        return self.folder / f"unsent-{self.run_id or 'new'}" / UNSENT_METRICS

    def _spill(self, values: list[Value]) -> None:
        path = self.spilled()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.writelines(json.dumps(v) + "\n" for v in values)

    def unsent(self) -> dict[str, Any]:
        """What the store does not have yet, for the checkpoint (the trainer flushes first)."""
        return {"metrics": list(self.metrics), "texts": dict(self.texts), "tags": dict(self.tags)}

    def save(self, status: str) -> Path:
        """Write everything unsent into `unsent-<run id>/` in the trial's folder, for `send_unsent`."""
        folder = self.spilled().parent
        self._spill(self.metrics)
        self.metrics.clear()
        figures = folder / "figures"
        figures.mkdir(parents=True, exist_ok=True)
        files = []
        for path, directory in self.files:
            target = figures / Path(path).name
            if Path(path).is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                target.write_bytes(Path(path).read_bytes())
            files.append([str(target), directory])
        header = {"tracking_uri": self.uri, "run_id": self.run_id, "status": status, "tags": self.tags}
        header |= {"texts": self.texts, "files": files}
        (folder / UNSENT_RUN).write_text(json.dumps(header, indent=1))
        return folder


def patiently(action: Callable[[], T], what: str, uri: str) -> T:
    """Run `action`, retrying with back-off for PATIENCE_S while the store at `uri` is unreachable."""
    deadline, pause = time.monotonic() + PATIENCE_S, 1.0
    while True:
        try:
            return action()
        except Exception as err:
            if not store.is_unreachable(err) or time.monotonic() + pause > deadline:
                raise
            if pause == 1.0:  # warn once
                message = f"cannot {what} at {store.display(uri)} ({err})"
                print(f"warning: {message}; retrying for up to {PATIENCE_S:.0f} s", file=sys.stderr)
            time.sleep(pause)
            pause = min(30.0, pause * 2)


def send_parts(client, run_id: str, tags: dict[str, str], texts: dict[str, str], files: list) -> None:
    """Tags, texts (artifact file -> text) and files (a file into the run's folder `directory`, a folder's
    files as `directory` itself), each dropped from its collection once the store has it."""
    from mlflow.entities import RunTag

    if tags:
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        tags.clear()
    for name in list(texts):
        client.log_text(run_id, texts[name], name)
        del texts[name]
    while files:
        path, directory = files[0]
        if Path(path).is_dir():
            client.log_artifacts(run_id, path, directory)
        else:
            client.log_artifact(run_id, path, directory)
        files.pop(0)


def send_metrics(client, run_id: str, values: list[Value]) -> None:
    """Metric values in batches of MLflow's per-call limit."""
    from mlflow.entities import Metric

    for i in range(0, len(values), MAX_METRICS_PER_BATCH):
        chunk = values[i : i + MAX_METRICS_PER_BATCH]
        client.log_batch(run_id, metrics=[Metric(k, v, ts, step) for k, v, ts, step in chunk])


def logged_steps(client, run_id: str) -> set[tuple[str, int]]:
    """Every (metric key, step) the run holds."""
    have: set[tuple[str, int]] = set()
    for key in client.get_run(run_id).data.metrics:
        have |= {(key, m.step) for m in client.get_metric_history(run_id, key)}
    return have


def read_values(path: Path) -> list[Value]:
    return [tuple(json.loads(line)) for line in path.read_text().splitlines() if line]


def send_unsent(folder: str | Path, tracking_uri: str | None = None) -> int:
    """Send a saved unsent folder (sending twice is harmless: the run's (key, step) are skipped); returns
    how many metric values were sent."""
    folder = Path(folder)
    header = json.loads((folder / UNSENT_RUN).read_text())
    uri = tracking_uri or header["tracking_uri"]
    client = store.open_client(uri)
    run_id = header["run_id"]
    have = logged_steps(client, run_id)
    metrics_file = folder / UNSENT_METRICS
    values = read_values(metrics_file) if metrics_file.exists() else []
    values = [v for v in values if (v[0], v[3]) not in have]
    send_metrics(client, run_id, values)
    send_parts(client, run_id, header["tags"], header["texts"], header["files"])
    client.set_terminated(run_id, status=header["status"])
    folder.rename(folder.with_name(folder.name + ".sent"))
    return len(values)

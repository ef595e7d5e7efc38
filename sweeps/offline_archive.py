"""The files an offline sweep leaves for its user: each part's archive, its trials' kept weights, and the
work folder they are made in, none of them another plan's.

An archive is written for one plan (`sweeps.workdir`): the first run of the plan names the sweep's parent
run, and every later run of it (a resume) rewrites the archive of that parent, further on. A file at
`--out` that this plan did not write (another grid's archive, a hand-made file) is never replaced: the
sweep is refused before anything runs. Each archive's work folder is its own (`<name>.trials` beside it),
so two plans sharing a folder of archives never meet. A parent run ends when its last trial ended, so
that an archive written again with nothing new is the same file, which an import takes as a no-op.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arith.tracking.archive import ArchiveError, read_archive, write_records
from arith.tracking.recorder import now_ms
from arith.tracking.schema import WEIGHTS_FOLDER_TAG
from sweeps.errors import SweepError
from sweeps.workdir import PLAN_FILE

#: the work folder of every archive in one folder, before each had its own (resumed there, if its plan)
SHARED_WORK = "trials"


def archive_work(out: Path) -> Path:
    """The work folder of the archive `out`: `<name>.trials` beside it; the folder all archives there
    once shared when it holds this archive's plan (a sweep begun before is resumed where it began)."""
    shared = out.parent / SHARED_WORK / PLAN_FILE
    try:
        parts = json.loads(shared.read_text())["plan"]
        if [part["name"] for part in parts] == [out.name.removesuffix(".jsonl")]:
            return shared.parent
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return out.with_name(out.name.removesuffix(".jsonl") + ".trials")


def weights_folder(archive: Path, run_name: str) -> Path:
    """Where a trial's trained model is kept (`--keep-weights`): `<name>.weights/<run name>` beside its
    archive `<name>.jsonl`."""
    return archive.with_name(archive.name.removesuffix(".jsonl") + ".weights") / run_name.replace(os.sep, "_")


def check_outputs(paths: Sequence[Path], parents: Sequence[str] | None, work: Path) -> None:
    """Refuse, before anything runs, to write an archive over a file this plan did not write: `parents`
    are the plan's parent run ids as its work folder `work` holds them (None: it holds none yet)."""
    for index, path in enumerate(paths):
        if not path.exists():
            continue
        try:
            header, records = read_archive(path)
            parent = records[0]
        except ArchiveError:
            raise SweepError(
                f"--out {path} exists and is not an archive of this sweep; name another file or move it away"
            ) from None
        if parents is None or parent["run_id"] != parents[index]:
            what = f"sweep {parent['run_id']} of {header.get('experiment')!r} ({header.get('trials')} trials)"
            raise SweepError(
                f"--out {path} holds {what}, which this sweep (work folder {work}) did not write; name "
                "another file or move it away"
            )


def write_part(path: Path, experiment: str, parent: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """A part's archive: the parent run, then its trials' records by start. The parent is FINISHED when
    every trial of the plan finished, FAILED when one failed, else KILLED (stopped at a deadline), and
    ends when its last trial ended. A trial whose weights were kept is tagged with their folder."""
    trials = sorted(records, key=lambda r: (r["start_time"] or 0, r["run_name"]))
    for record in trials:
        kept = weights_folder(path, record["run_name"])
        if kept.is_dir():
            record["tags"][WEIGHTS_FOLDER_TAG] = str(kept.relative_to(path.parent))
    statuses = {r["status"] for r in trials}
    started = int(parent["tags"].get("trials", len(trials)))
    if "FAILED" in statuses:
        status = "FAILED"
    elif statuses <= {"FINISHED"} and len(trials) == started:
        status = "FINISHED"
    else:
        status = "KILLED"
    end = max((r["end_time"] for r in trials if r["end_time"]), default=parent["start_time"])
    write_records(path, experiment, [{**parent, "status": status, "end_time": end}, *trials])


def read_record(record_path: Path) -> dict[str, Any]:
    """A trial's record; one that was stopped (or died) before it ended is KILLED as of now."""
    record = json.loads(record_path.read_text())
    if record["status"] == "RUNNING":
        record["status"], record["end_time"] = "KILLED", now_ms()
    return record


def failed_trials(paths: Sequence[Path]) -> int:
    """How many trials of these archives FAILED."""
    return sum(r["status"] == "FAILED" for path in paths for r in read_archive(path)[1][1:])

"""What a sweep archive must hold before any of it is imported: the trials its header counts, the digest
of its content, each run record in the archive's schema, and cell tables whose counts and accuracies are
numbers.

An import writes run after run into a store; a record found wrong half-way would leave half a sweep
there, and an archive cut short (a copy interrupted at a line boundary) would import as a smaller sweep
whose missing trials nobody is told about. So the whole file is checked first, and the first fault is
named in one line. An archive edited so that it stays consistent (a trial's line removed and the count
fixed, a metric history cut short) passes every other check; its digest, written with it, does not.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pandas as pd

from arith.tracking.schema import CELLS_ARTIFACT, CELLS_CSV_COLUMNS, CONTEXT_COLUMN

#: MLflow's run statuses
STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
#: eval/cells.csv: every column the trainer writes must be there, each but the context a number (empty
#: where the seen/unseen split is unknown)
NUMERIC_CELL_COLUMNS = tuple(c for c in CELLS_CSV_COLUMNS if c != CONTEXT_COLUMN)


#: the header's field holding `content_digest`, which every archive carries
DIGEST_FIELD = "sha256"


class RecordError(ValueError):
    """One record breaks the archive's schema; the message says which field and how."""


def canonical(value: Any) -> bytes:
    """JSON with sorted keys and no spaces: the same content gives the same bytes however a file was
    written (key order, spacing, line ends)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_digest(header: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The sha256 of an archive's content: its header (less the digest itself) and every run record."""
    head = {k: v for k, v in header.items() if k != DIGEST_FIELD}
    return hashlib.sha256(canonical([head, records])).hexdigest()


def check_archive(header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Raise RecordError for the first fault of an archive (its header, then its records: the parent
    first); the caller names the file. Its digest is checked last (a fault the other checks name is
    named so)."""
    trials = header.get("trials")
    if not isinstance(trials, int) or isinstance(trials, bool):
        raise RecordError(f"the header's trial count is {trials!r}, not a number")
    if trials != len(records) - 1:
        raise RecordError(
            f"the header counts {trials} trial runs but the file holds {len(records) - 1} (cut short?)"
        )
    parent_id = None
    for number, record in enumerate(records):
        where = "the parent run" if number == 0 else f"trial record {number}"
        try:
            check_record(record, parent_id)
        except RecordError as err:
            name = record.get("run_name") if isinstance(record, dict) else None
            raise RecordError(f"{where}{f' ({name})' if name else ''}: {err}") from None
        parent_id = parent_id or record["run_id"]
    if header.get(DIGEST_FIELD) != content_digest(header, records):
        found = "no digest" if DIGEST_FIELD not in header else "a digest that does not match its content"
        raise RecordError(f"the header has {found}: the file was changed after it was written")


def check_record(record: Any, parent_id: str | None) -> None:
    """One run record: its fields and their types; a trial's `parent_run_id` is the parent's id."""
    if not isinstance(record, dict):
        raise RecordError("not a JSON object")
    _field(record, "run_id", str)
    if not record["run_id"]:
        raise RecordError("run_id is empty")
    _field(record, "run_name", str)
    if record.get("parent_run_id") != parent_id:
        raise RecordError(f"parent_run_id is {record.get('parent_run_id')!r}, not {parent_id!r}")
    if record.get("status") not in STATUSES:
        raise RecordError(f"status {record.get('status')!r} is none of {', '.join(STATUSES)}")
    for key in ("start_time", "end_time"):
        if key not in record:
            raise RecordError(f"no {key}")
        if record[key] is not None and not _is_int(record[key]):
            raise RecordError(f"{key} {record[key]!r} is not a time in ms")
    for key in ("params", "tags", "artifacts"):
        _field(record, key, dict)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in record[key].items()):
            raise RecordError(f"{key} maps names to text, and one value is not text")
    _field(record, "metrics", dict)
    for key, history in record["metrics"].items():
        if not isinstance(history, list) or not all(_is_point(p) for p in history):
            raise RecordError(f"metric {key!r} is not a list of [step, timestamp, value]")
    cells = record["artifacts"].get(CELLS_ARTIFACT)
    if cells is not None:
        check_cells(cells)


def check_cells(text: str) -> None:
    """eval/cells.csv: a table with the analysis's columns, its counts and accuracies numbers."""
    try:
        cells = pd.read_csv(io.StringIO(text))
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise RecordError(f"eval/cells.csv is not a table ({err})") from None
    missing = [c for c in CELLS_CSV_COLUMNS if c not in cells.columns]
    if missing:
        raise RecordError(f"eval/cells.csv lacks column(s) {', '.join(missing)}")
    for column in NUMERIC_CELL_COLUMNS:
        if not pd.api.types.is_numeric_dtype(cells[column]):
            bad = pd.to_numeric(cells[column], errors="coerce").isna() & cells[column].notna()
            value = cells.loc[bad, column].iloc[0] if bad.any() else cells[column].iloc[0]
            raise RecordError(f"eval/cells.csv column {column!r} holds {value!r}, not a number")


def _field(record: dict[str, Any], key: str, kind: type) -> None:
    if key not in record:
        raise RecordError(f"no {key}")
    if not isinstance(record[key], kind):
        raise RecordError(f"{key} is a {type(record[key]).__name__}, not a {kind.__name__}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_point(point: Any) -> bool:
    return (
        isinstance(point, list)
        and len(point) == 3
        and _is_int(point[0])
        and _is_int(point[1])
        and isinstance(point[2], int | float)
        and not isinstance(point[2], bool)
    )

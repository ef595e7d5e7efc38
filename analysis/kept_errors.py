"""A trial's kept wrong answers (its last evaluation's eval/errors.csv) read into a frame, and joined onto
the trials they are of."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.errors import AnalysisError
from analysis.sweep import (
    IDENTITY_KEYS,
)
from arith.tracking import schema
from arith.tracking.schema import ERRORS_ARTIFACT


def read_errors(client, run_id: str, into: Path) -> pd.DataFrame | None:
    """The run's eval/errors.csv (its last evaluation's kept wrong answers), or None without one."""
    from mlflow.exceptions import MlflowException

    try:
        path = client.download_artifacts(run_id, ERRORS_ARTIFACT, str(into))
    except (MlflowException, OSError):
        return None
    texts = (schema.PROMPT_COLUMN, schema.EXPECTED_COLUMN, schema.REPLY_COLUMN)
    operands = (schema.A_COLUMN, schema.B_COLUMN)
    try:
        errors = pd.read_csv(path, dtype=dict.fromkeys((*texts, *operands), str))
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise AnalysisError(f"run {run_id}: eval/errors.csv cannot be read as a table ({err})") from err
    for column in texts:  # an empty reply is read as NaN
        errors[column] = errors[column].fillna("")
    numbers = (schema.EPOCH_COLUMN, schema.ROW_DIGITS_COLUMN, schema.COL_DIGITS_COLUMN)
    for column in numbers:
        errors[column] = pd.to_numeric(errors[column], errors="coerce").astype("Int64")
    for column in operands:  # read as text: a number of 20 digits and more is exact only as a Python int
        values = errors[column].map(_operand)
        errors[column] = values.astype(schema.operand_dtype(values))
    return errors


def _operand(text: object) -> int | None:
    """An operand read from its text ('123'); None where empty."""
    return int(text) if isinstance(text, str) and text.strip() else None


def tidy_errors(
    trials: pd.DataFrame, errors_by_run: dict[str, pd.DataFrame], axes: list[str]
) -> pd.DataFrame:
    """Trial columns joined onto each kept wrong answer (as `tidy_cells` does onto cells)."""
    keep = [
        schema.RUN_ID_COLUMN,
        schema.SEED_COLUMN,
        schema.POINT_COLUMN,
        *dict.fromkeys([*IDENTITY_KEYS, *axes]),
    ]
    frames = []
    for run_id, errors in errors_by_run.items():
        trial = trials.loc[trials[schema.RUN_ID_COLUMN] == run_id, keep].iloc[0]
        frames.append(errors.assign(**{k: [trial[k]] * len(errors) for k in keep}))
    if not frames:
        return pd.DataFrame(
            columns=[
                *keep,
                schema.EPOCH_COLUMN,
                schema.CONTEXT_COLUMN,
                schema.ROW_DIGITS_COLUMN,
                schema.COL_DIGITS_COLUMN,
                schema.PROMPT_COLUMN,
            ]
        )
    return pd.concat(frames, ignore_index=True)

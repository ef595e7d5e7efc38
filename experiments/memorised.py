"""Memorised, not learned: a cell below the competence gate whose model answers the test problems it was
trained on and far fewer of the others. Said beside the gate's reason: more steps on the same lines would
not fix it the way they fix a model still learning."""

from __future__ import annotations

import pandas as pd

from arith.tracking.schema import (
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    N_COLUMN,
    N_SEEN_COLUMN,
    ROW_DIGITS_COLUMN,
    SEED_COLUMN,
)
from experiments.cells import cell_name

#: "memorised": at the gate on the test problems seen in training, at least this much lower on the others,
MEMORISED_GAP = 0.3
#: read on at least this many seen problems (one right answer seen in training says little)
MEMORISED_MIN_SEEN = 10


def memorised_note(below: pd.DataFrame, learned: float, tolerance: float = 1e-9) -> str:
    """'; memorised: ...' when some cells below the gate are memorised, '' when none is or the trials did not
    record the split."""
    if ACCURACY_SEEN_COLUMN not in below or ACCURACY_UNSEEN_COLUMN not in below:
        return ""
    seen, unseen = below[ACCURACY_SEEN_COLUMN].astype(float), below[ACCURACY_UNSEEN_COLUMN].astype(float)
    n_seen = (
        below[N_SEEN_COLUMN].astype(float) if N_SEEN_COLUMN in below else pd.Series(float("nan"), below.index)
    )
    memorised = below[
        (seen >= learned - tolerance) & (unseen <= seen - MEMORISED_GAP) & (n_seen >= MEMORISED_MIN_SEEN)
    ]
    if memorised.empty:
        return ""
    worst = memorised.loc[memorised[ACCURACY_UNSEEN_COLUMN].astype(float).idxmin()]
    cell = cell_name(worst[ROW_DIGITS_COLUMN], worst[COL_DIGITS_COLUMN], worst[CONTEXT_COLUMN])
    counts = f" ({int(worst[N_SEEN_COLUMN])} of {int(worst[N_COLUMN])} seen)" if N_COLUMN in worst else ""
    seen_accuracy, unseen_accuracy = worst[ACCURACY_SEEN_COLUMN], worst[ACCURACY_UNSEEN_COLUMN]
    return (
        f"; memorised: seed {int(worst[SEED_COLUMN])} on {cell} is {seen_accuracy:.2f} on the test "
        f"problems it was trained on and {unseen_accuracy:.2f} on the others{counts}; "
        f"{len(memorised)} of the {len(below)} cell(s) below the gate read so"
    )

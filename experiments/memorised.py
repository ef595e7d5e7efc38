"""Memorised, not learned: a cell below the competence gate (`experiments.verdicts.competence`) whose
model answers right the test problems that were also training problems and far fewer of the others. Said
beside the gate's reason, since more steps on the same lines would not fix it the way they fix a model still
learning."""

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

#: "memorised": a cell at the gate or more on its test problems seen in training and at least this much
#: lower on the unseen ones
MEMORISED_GAP = 0.3
#: ... read on at least this many seen problems (one right answer seen in training says little)
MEMORISED_MIN_SEEN = 10


def memorised_note(below: pd.DataFrame, learned: float, tolerance: float = 1e-9) -> str:
    """', memorised: ...' when gated cells below the gate are right on their test problems that are also
    training problems (>= `learned`, the competence gate, on at least MEMORISED_MIN_SEEN of them) and far
    below on the others (MEMORISED_GAP lower): the model learned its training set, not the task. '' when no
    cell is, or the trials did not record the split."""
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

"""Beyond the paper: addition and multiplication under every position scheme of `arith.model.schemes`.

No claim of the paper reads it: the report shows its tables (and the paper's learned / none / random tags
beside the schemes proposed since: randomized positions, Abacus, position coupling).
"""

from __future__ import annotations

from experiments.claim import Experiment
from experiments.grid import Grid, Variant
from experiments.setups import ADD_LENGTH_SETUP, MUL_SETUP, RANDEMBED_TRAINING

#: the mul_format protocol on padded, reversed 5-digit multiplication
MUL = Variant("mul", {**MUL_SETUP, "data.format": "padding_reverse", "data.max_digits": 5})
SCHEMES = ["learned", "none", "random_embed", "randomized", "abacus"]


def _add(name: str, data_format: str, test_digits: list[int]) -> Variant:
    """The add_posembed protocol on plain addition of 2-10 digits."""
    overrides = {"data.task": "add", "data.format": data_format, "data.test_digits": test_digits}
    return Variant(name, {**ADD_LENGTH_SETUP, **overrides, **RANDEMBED_TRAINING})


POSITION_SCHEMES = Experiment(
    Grid(
        name="position_schemes",
        description="Beyond the paper: addition and multiplication under every position scheme.",
        base={"model.init": "random"},
        axes={"data.task": [_add("add", "basic", list(range(2, 14))), MUL], "model.position": SCHEMES},
        # position coupling needs an answer written least significant digit first: addition padded and
        # reversed (tested on its training range, as padding allows no longer operand) under every scheme,
        # and the reversed multiplication
        also=(
            {
                "data.task": [_add("add_reverse", "padding_reverse", list(range(2, 11)))],
                "model.position": [*SCHEMES, "coupling"],
            },
            {"data.task": [MUL], "model.position": ["coupling"]},
        ),
    )
)

EXPERIMENTS = (POSITION_SCHEMES,)

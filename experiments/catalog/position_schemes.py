"""Beyond the paper: addition and multiplication under every position scheme of `arith.model.schemes`.

No claim of the paper reads it: the report shows its tables (and the paper's learned / none / random tags
beside the schemes proposed since: randomized positions, Abacus, position coupling).
"""

from __future__ import annotations

from experiments.claim import Experiment
from experiments.grid import Grid, Variant
from experiments.setups import ADD_LENGTH_SETUP, MUL_SETUP, RANDEMBED_TRAINING

POSITION_SCHEMES = Experiment(
    Grid(
        name="position_schemes",
        description="Beyond the paper: addition and multiplication under every position scheme.",
        base={"model.init": "random"},
        axes={
            "data.task": [
                # the add_posembed protocol on plain addition, 2-10 digits, tested to 13 digits
                Variant(
                    "add",
                    {
                        **ADD_LENGTH_SETUP,
                        "data.task": "add",
                        "data.format": "basic",
                        "data.test_digits": list(range(2, 14)),
                        **RANDEMBED_TRAINING,
                    },
                ),
                # the mul_format protocol on padded, reversed 5-digit multiplication
                Variant("mul", {**MUL_SETUP, "data.format": "padding_reverse", "data.max_digits": 5}),
            ],
            "model.position": ["learned", "none", "random_embed", "randomized", "abacus"],
        },
        also=(
            # position coupling needs an answer written least significant digit first: plain addition
            # padded and reversed (2-10 digits, tested on its training range, as padding allows no longer
            # operand) under every scheme, and the reversed multiplication
            {
                "data.task": [
                    Variant(
                        "add_reverse",
                        {
                            **ADD_LENGTH_SETUP,
                            "data.task": "add",
                            "data.format": "padding_reverse",
                            "data.test_digits": list(range(2, 11)),
                            **RANDEMBED_TRAINING,
                        },
                    )
                ],
                "model.position": ["learned", "none", "random_embed", "randomized", "abacus", "coupling"],
            },
            {
                "data.task": [
                    Variant("mul", {**MUL_SETUP, "data.format": "padding_reverse", "data.max_digits": 5})
                ],
                "model.position": ["coupling"],
            },
        ),
    )
)

EXPERIMENTS = (POSITION_SCHEMES,)

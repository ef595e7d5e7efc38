"""The paper's setups (its appendix), as dotted overrides shared by several grids: below the catalogue, so
that an experiment imports its setups, never another experiment.
"""

from __future__ import annotations

from typing import Any

#: Appendix B: 300k samples, factor digits uniform on 1..n, random-init GPT2-small, 300 epochs at 2e-5,
#: 100 test samples per (digits of a, digits of b) cell (empty test_digits = 1..max_digits both ways).
MUL_SETUP: dict[str, Any] = {
    "data.task": "mul",
    "data.min_digits": 1,
    "data.train_samples": 300_000,
    "data.test_per_cell": 100,
    "model.init": "random",
    "train.epochs": 300,
    "train.lr": 2e-5,
}

#: Appendix C.1: 120k samples, addend digits uniform on 2..10, pretrained GPT2-small fine-tuned for 5
#: epochs at 2e-5, tested on 100 additions of n digits for n in 9..13.
ADD_LENGTH_SETUP: dict[str, Any] = {
    "data.task": "add_scratchpad",
    "data.min_digits": 2,
    "data.max_digits": 10,
    "data.train_samples": 120_000,
    "data.test_digits": list(range(9, 14)),
    "data.test_per_cell": 100,
    "train.epochs": 5,
    "train.lr": 2e-5,
}

#: Appendix C.2 and figure fig:randembed: random-init GPT2-small without position embedding, 25 epochs
#: at 1e-5 (figure fig:testacc_rev: 10 epochs at 2e-5). 120k samples of 2..10 digits.
RANDEMBED_TRAINING: dict[str, Any] = {"model.init": "random", "train.epochs": 25, "train.lr": 1e-5}

#: Section 3.2 (figure fig:testacc_rev): digit reversal of 2..10 digits, 120k samples, 10 epochs at 2e-5.
REVERSE_SETUP: dict[str, Any] = {
    "data.task": "reverse",
    "data.format": "basic",
    "data.min_digits": 2,
    "data.max_digits": 10,
    "data.train_samples": 120_000,
    # the figures read regular and repetitive numbers well past the training lengths
    "data.test_digits": list(range(2, 17)),
    "train.epochs": 10,
    "train.lr": 2e-5,
}

#: the position schemes the paper compares: a learned embedding (GPT-2's), none, random tags (section 3.2)
PAPER_POSITIONS = ["learned", "none", "random_embed"]

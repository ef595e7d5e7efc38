"""Position coupling (Cho et al. 2024), a position scheme beyond the paper, in a module of its own as
docs/DESIGN.md's "Add a position scheme" describes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from arith.config import ConfigError, CouplingSettings, ExperimentConfig
from arith.data.tasks import get_task, test_digits
from arith.model.positions import (
    AbacusState,
    ModelShape,
    PositionScheme,
    _end,
    digit_mask,
    run_index,
    start_offsets,
)


@dataclass(frozen=True)
class CouplingState(AbacusState):
    """Abacus's offset and digit run, plus the (B,) numbers (digit runs) begun so far."""

    numbers: torch.Tensor


class Coupling(PositionScheme):
    """Position coupling (Cho et al. 2024): digits of equal significance in the operands and the answer
    share a position id, so that the model finds the digits to combine by equal ids.

    A digit of significance k gets the id `offset + 2 + k`; the token right after a number written most
    significant digit first (" +", " =") gets `offset + 1`, as in Cho et al.'s code, so that the token
    predicting an answer digit sits one id below the operand digits it needs; every other token gets 0.
    The offset is a random start in [0, max_offset] while training, 0 at evaluation. Which way each
    number is written is the task's knowledge (`Task.digit_order`); the answer must be written least
    significant digit first, so that decoding knows each digit's significance as it writes it."""

    name = "coupling"
    uses_wpe = True
    needs_digits = True
    needs_digit_order = True
    ORDERS = ("msd", "lsd")

    Settings = CouplingSettings

    @classmethod
    def check(cls, cfg: ExperimentConfig) -> None:
        m, d = cfg.model, cfg.data
        if m.init == "pretrained":
            raise ConfigError(
                "model.position='coupling' needs one token per digit (the project's tokenizer); "
                "GPT-2's pretrained tokenizer merges digits, so use model.init='random'"
            )
        if m.coupling_max_offset < 0:
            raise ConfigError(f"model.coupling_max_offset must be >= 0 (got {m.coupling_max_offset})")
        get_task(d.task).digit_order(d.format)  # refuses formats without a defined significance
        # the most digits a number has (the answer of the longest test cell): a product's twice a factor's
        widest = max(d.max_digits, *test_digits(d))
        longest = 2 * widest if get_task(d.task).carries == "product" else widest + 1
        if m.coupling_max_offset + longest + 1 >= m.n_positions:
            raise ConfigError(
                f"model.position='coupling' gives ids up to coupling_max_offset + {longest} (the longest "
                f"number's digits) + 1 = {m.coupling_max_offset + longest + 1}; it must stay below "
                f"model.n_positions={m.n_positions}"
            )

    @classmethod
    def build(cls, settings: Any, shape: ModelShape) -> Coupling:
        return cls(shape, settings.coupling_max_offset)

    def __init__(self, shape: ModelShape, max_offset: int) -> None:
        super().__init__()
        self.digit_order = shape.digit_order
        if not self.digit_order or any(o not in self.ORDERS for o in self.digit_order):
            raise ValueError(
                f"position coupling needs the task's digit order, 'msd' or 'lsd' per number (got "
                f"{self.digit_order}); build the model with its data config"
            )
        self.max_offset, self.n_positions = max_offset, shape.n_positions
        self.register_buffer("is_digit", digit_mask(shape, "position coupling"))
        #: per number of the line: True where it is written most significant digit first
        self.register_buffer("msd_first", torch.tensor([o == "msd" for o in self.digit_order]))

    def draw(self, attention_mask: torch.Tensor, generator: torch.Generator | None = None) -> CouplingState:
        batch, device = attention_mask.shape[0], attention_mask.device
        offset = start_offsets(batch, self.max_offset if self.training else 0, generator, device)
        zeros = torch.zeros(batch, dtype=torch.long, device=device)
        # position_ids only records the width here: embed computes the coupled ids from the tokens
        ids = torch.zeros_like(attention_mask, dtype=torch.long)
        return CouplingState(position_ids=ids, offset=offset, digit_run=zeros, numbers=zeros)

    def embed(self, input_ids, token_embeds, state, start=0):
        _end(state, start, input_ids)
        fresh = start == 0
        run = torch.zeros_like(state.digit_run) if fresh else state.digit_run
        numbers = torch.zeros_like(state.numbers) if fresh else state.numbers
        digit = self.is_digit[input_ids]
        index = run_index(digit, run)
        # a number begins where a digit follows a non-digit (or a call that ended outside a run)
        before = torch.cat([run[:, None] > 0, digit[:, :-1]], dim=1)
        begins = (digit & ~before).long().cumsum(-1)
        number = numbers[:, None] + begins - 1
        # each run's length within this call: the largest index of its digits
        length = index.new_zeros(index.shape[0], index.shape[1] + 1)
        length = length.scatter_reduce(1, begins, index, "amax").gather(1, begins)
        numbered = (number >= 0) & (number < len(self.digit_order))  # a number of the task's
        known = digit & numbered
        msd = self.msd_first[number.clamp(0, len(self.digit_order) - 1)]
        significance = torch.where(msd, length - index, index - 1)
        # the token after a msd-first number's last digit: one id below that digit (significance -1)
        closes = ~digit & before & numbered & msd
        start_id = state.offset[:, None] + 1
        ids = torch.where(known, start_id + 1 + significance, torch.where(closes, start_id, 0))
        # never cut: a clamped id would alias another digit's (the check is a host sync, left out of a
        # compiled graph, whose configs `check` has bounded)
        if not torch.compiler.is_compiling() and bool((ids >= self.n_positions).any()):
            raise ValueError(
                f"position coupling gives id {int(ids.max())} to a digit here, beyond the model's "
                f"n_positions={self.n_positions}: the number is longer than the model can place"
            )
        after = dataclasses.replace(
            state, digit_run=index[:, -1], numbers=numbers + (digit & ~before).sum(-1)
        )
        return token_embeds, ids, after

    def extra_config(self) -> dict:
        return {"digit_order": list(self.digit_order)}

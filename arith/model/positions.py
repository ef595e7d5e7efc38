"""Position schemes: how a GPT-2 learns where each token is (or, for `none`, does not).

Every scheme turns token embeddings into the GPT-2 input in two steps:

1. `draw(attention_mask, generator)` fixes what is random for a batch of sequences for their whole life
   (tags, position ids, offsets) as a `PositionState`. The mask covers every column the sequences will
   ever have, so decoding draws once for prompt + new tokens and every step reuses the draw.
2. `embed(input_ids, token_embeds, state, start)` gives the inputs for columns `start:start+T` (a whole
   line in training, one token per decoding step) and the position ids GPT-2 adds its `wpe` for;
   schemes that carry information from earlier tokens (abacus digit runs) return an updated state.

`readout(hidden)` adapts the final hidden states before the LM head. Real tokens are numbered by rank
(cumsum of the mask), so left and right padding give the same positions. Schemes that do not use `wpe`
zero and freeze it: transformers always adds it.

Each scheme owns its `Settings` (the `model.*` fields only it reads, an `arith.config` class), its
`PositionState` subclass, a `check` of the experiment config and a `build` for a model's sizes. Adding a
scheme is a class plus one line in `arith.model.schemes` (docs/DESIGN.md, "Add a position scheme").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from arith.config import (
    AbacusSettings,
    ConfigError,
    ExperimentConfig,
    NoSettings,
    RandomEmbedSettings,
    RandomizedSettings,
    default_n_hash,
)


@dataclass(frozen=True)
class PositionState:
    """A batch's position information over `width` columns, fixed for the sequences' lifetime; a scheme
    that draws more than the ids has a subclass of its own."""

    #: (B, width) ids GPT-2 looks `wpe` up with (rank of each real token; pads get 0)
    position_ids: torch.Tensor

    @property
    def width(self) -> int:
        return self.position_ids.shape[1]


@dataclass(frozen=True)
class RandomEmbedState(PositionState):
    #: (B, width, n_hash) Gaussian tags
    tags: torch.Tensor


@dataclass(frozen=True)
class AbacusState(PositionState):
    #: (B,) offset added to every digit index, and (B,) length of the digit run so far
    offset: torch.Tensor
    digit_run: torch.Tensor


def rank_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each real token among the real tokens of its row (0, 1, ...); pads get 0."""
    return (attention_mask.long().cumsum(-1) - 1).clamp_(min=0)


@dataclass(frozen=True)
class ModelShape:
    """What a scheme is built for: the GPT-2's actual sizes (a pretrained model's, not the preset's), the
    tokenizer's digit tokens, and the order the task writes each number's digits in."""

    n_embd: int
    n_head: int
    n_positions: int
    vocab_size: int
    digit_ids: tuple[int, ...] = ()
    #: per number of a line (operands, then the answer): "msd" or "lsd" first (`Task.digit_order`)
    digit_order: tuple[str, ...] = ()


class PositionScheme(nn.Module):
    """Base class: the learned-style rank ids, no extra input, identity readout."""

    name = "base"
    #: whether GPT-2's own position embedding `wpe` is used (else it is zeroed and frozen)
    uses_wpe = False
    #: whether `build` needs the tokenizer's digit tokens (ModelShape.digit_ids)
    needs_digits = False
    #: whether `build` needs the task's digit order (ModelShape.digit_order)
    needs_digit_order = False

    #: the `model.*` config fields only this scheme reads, with their defaults
    Settings: type = NoSettings

    @classmethod
    def check(cls, cfg: ExperimentConfig) -> None:
        """Raise ConfigError for an experiment this scheme cannot run (called by `validate()`)."""

    @classmethod
    def max_width(cls, cfg: ExperimentConfig) -> tuple[int, str]:
        """(the most columns a sequence may span under `cfg`, the setting that bounds them), which the data
        is held to before launch: every column's position id indexes GPT-2's `wpe`, used or not."""
        return cfg.model.n_positions, f"model.n_positions={cfg.model.n_positions}"

    @classmethod
    def build(cls, settings: Any, shape: ModelShape) -> PositionScheme:
        """The scheme for a model of `shape`; `settings` has the Settings fields (a ModelConfig)."""
        return cls()

    def attach(self, lm: nn.Module) -> None:
        """Adapt a freshly built or loaded GPT2LMHeadModel to the scheme."""
        if not self.uses_wpe:
            lm.transformer.wpe.weight.requires_grad_(False).zero_()

    def draw(self, attention_mask: torch.Tensor, generator: torch.Generator | None = None) -> PositionState:
        return PositionState(position_ids=rank_ids(attention_mask))

    def embed(
        self, input_ids: torch.Tensor, token_embeds: torch.Tensor, state: PositionState, start: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor, PositionState]:
        stop = _end(state, start, input_ids)
        return token_embeds, state.position_ids[:, start:stop], state

    def readout(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden

    def extra_config(self) -> dict:
        """What `load_folder` (arith.model.gpt) needs back beyond the model's config (coupling: the task's
        digit order), saved beside the model."""
        return {}


def start_offsets(
    batch: int, max_offset: int, generator: torch.Generator | None, device: torch.device
) -> torch.Tensor:
    """A random start offset in 0..max_offset per line, or 0 where max_offset is (evaluation)."""
    if max_offset:
        return torch.randint(0, max_offset + 1, (batch,), generator=generator, device=device)
    return torch.zeros(batch, dtype=torch.long, device=device)


def _end(state: PositionState, start: int, input_ids: torch.Tensor) -> int:
    """The end of the columns start:start+T that `embed` is asked for, which the state must cover."""
    stop = start + input_ids.shape[1]
    if stop > state.width:
        raise ValueError(f"position state covers {state.width} columns but column {stop - 1} was asked for")
    return stop


def digit_mask(shape: ModelShape, scheme: str) -> torch.Tensor:
    """is_digit[token id]: whether the token's text is a digit string (possibly with a leading space)."""
    is_digit = torch.zeros(shape.vocab_size, dtype=torch.bool)
    is_digit[list(shape.digit_ids)] = True
    if not is_digit.any():
        raise ValueError(f"{scheme} needs digit tokens, but the tokenizer has none")
    return is_digit


def run_index(digit: torch.Tensor, run: torch.Tensor) -> torch.Tensor:
    """Each digit's 1-based index within its run of digits (0 on other tokens), a run open before these
    columns going on from its `run` digits: the digits so far less those counted at the last non-digit."""
    count = run[:, None] + digit.long().cumsum(-1)
    return count - torch.where(digit, 0, count).cummax(-1).values


class Learned(PositionScheme):
    """GPT-2's absolute learned position embedding, indexed by each real token's rank."""

    name = "learned"
    uses_wpe = True


class NoPosition(PositionScheme):
    """The paper's NoPosEmbed: `wpe` zeroed and frozen, so only the causal mask orders tokens."""

    name = "none"


class RandomEmbed(PositionScheme):
    """The paper's random embedding (§3.2): a Gaussian tag per token overwrites the last n_hash/n_head
    dims of each head's slice of the input; the LM head reads only the other dims. Tags are drawn per
    sequence and column, fresh when the generator is (the model reseeds it every epoch)."""

    name = "random_embed"

    Settings = RandomEmbedSettings

    @classmethod
    def check(cls, cfg: ExperimentConfig) -> None:
        _, n_head, n_embd = cfg.model.sizes()
        n_hash = cfg.model.resolved_n_hash()
        if n_hash % n_head:
            raise ConfigError(f"model.n_hash={n_hash} must be a multiple of n_head={n_head}")
        if n_hash >= n_embd:
            raise ConfigError(f"model.n_hash={n_hash} must be smaller than n_embd={n_embd}")

    @classmethod
    def build(cls, settings: Any, shape: ModelShape) -> RandomEmbed:
        return cls(shape.n_embd, shape.n_head, settings.n_hash or default_n_hash(shape.n_embd, shape.n_head))

    def __init__(self, n_embd: int, n_head: int, n_hash: int) -> None:
        super().__init__()
        if n_hash % n_head or not 0 < n_hash < n_embd:
            raise ValueError(
                f"random_embed needs 0 < n_hash < n_embd, n_head | n_hash ({n_hash=}, {n_head=}, {n_embd=})"
            )
        self.n_embd, self.n_head, self.n_hash = n_embd, n_head, n_hash
        head_dim, per_head = n_embd // n_head, n_hash // n_head
        keep = torch.ones(n_head, head_dim)
        keep[:, head_dim - per_head :] = 0
        #: 1 on the dims the LM head decodes from, 0 on the tag dims
        self.register_buffer("decode_mask", keep.flatten(), persistent=False)

    def draw(self, attention_mask: torch.Tensor, generator: torch.Generator | None = None) -> PositionState:
        batch, width = attention_mask.shape
        tags = torch.randn(batch, width, self.n_hash, generator=generator, device=attention_mask.device)
        return RandomEmbedState(position_ids=rank_ids(attention_mask), tags=tags)

    def embed(self, input_ids, token_embeds, state, start=0):
        stop = _end(state, start, input_ids)
        batch, length, _ = token_embeds.shape
        heads = token_embeds.view(batch, length, self.n_head, -1)
        per_head = self.n_hash // self.n_head
        tags = state.tags[:, start:stop].view(batch, length, self.n_head, per_head).to(token_embeds.dtype)
        inputs = torch.cat([heads[..., :-per_head], tags], dim=-1).view(batch, length, self.n_embd)
        return inputs, state.position_ids[:, start:stop], state

    def readout(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden * self.decode_mask.to(hidden.dtype)


class Randomized(PositionScheme):
    """Randomized positions (Ruoss et al. 2023): each sequence's real tokens get a sorted random
    subset of 0..max_position-1 as ids, in training and at test, fixed through decoding."""

    name = "randomized"
    uses_wpe = True

    Settings = RandomizedSettings

    @classmethod
    def check(cls, cfg: ExperimentConfig) -> None:
        m = cfg.model
        if not 0 <= m.randomized_max_position <= m.n_positions:
            raise ConfigError(
                f"model.randomized_max_position must be in 0..model.n_positions={m.n_positions} (got "
                f"{m.randomized_max_position}; 0 = n_positions)"
            )

    @classmethod
    def max_width(cls, cfg: ExperimentConfig) -> tuple[int, str]:
        """A row's ids are a subset of 0..max_position-1 over every column of its batch, padding too."""
        drawn = cfg.model.randomized_max_position
        if not drawn:
            return super().max_width(cfg)
        return drawn, f"model.randomized_max_position={drawn} (the ids randomized positions draw from)"

    @classmethod
    def build(cls, settings: Any, shape: ModelShape) -> Randomized:
        max_position = settings.randomized_max_position or shape.n_positions
        if max_position > shape.n_positions:
            raise ValueError(
                f"randomized_max_position={max_position} exceeds the model's n_positions={shape.n_positions}"
            )
        return cls(max_position)

    def __init__(self, max_position: int) -> None:
        super().__init__()
        self.max_position = max_position

    def draw(self, attention_mask: torch.Tensor, generator: torch.Generator | None = None) -> PositionState:
        batch, longest = attention_mask.shape  # a row has at most as many real tokens as columns
        n_real = attention_mask.long().sum(-1, keepdim=True)
        if longest > self.max_position:
            raise ValueError(
                f"randomized positions draw from {self.max_position} ids but a sequence has {longest} "
                f"columns; raise model.randomized_max_position (<= model.n_positions)"
            )
        noise = torch.rand(batch, self.max_position, generator=generator, device=attention_mask.device)
        # topk of noise = a uniformly random subset in random order; its first n_real ids, sorted, are
        # the row's positions
        subset = noise.topk(longest, dim=-1).indices
        column = torch.arange(longest, device=subset.device)
        subset = torch.where(column < n_real, subset, self.max_position).sort(dim=-1).values
        ids = subset.gather(1, rank_ids(attention_mask))
        ids = torch.where(attention_mask.bool(), ids, 0)
        return PositionState(position_ids=ids)


class Abacus(PositionScheme):
    """Abacus embeddings (McLeish et al. 2024): each digit token gets its 1-based index within its own
    number (a run of digit tokens) plus a random offset in [0, max_offset] while training (0 at test),
    looked up in a learned table and added to the input; other tokens get 0. The index is a digit's
    significance only where numbers are written least significant digit first, as McLeish et al. write
    them (the `lsd_first` format)."""

    name = "abacus"
    needs_digits = True

    Settings = AbacusSettings

    @classmethod
    def check(cls, cfg: ExperimentConfig) -> None:
        if cfg.model.abacus_max_offset < 0:
            raise ConfigError(f"model.abacus_max_offset must be >= 0 (got {cfg.model.abacus_max_offset})")

    @classmethod
    def build(cls, settings: Any, shape: ModelShape) -> Abacus:
        return cls(shape, settings.abacus_max_offset)

    def __init__(self, shape: ModelShape, max_offset: int) -> None:
        super().__init__()
        self.max_offset = max_offset
        self.register_buffer("is_digit", digit_mask(shape, "abacus positions"))
        self.embedding = nn.Embedding(shape.n_positions + max_offset + 1, shape.n_embd)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def draw(self, attention_mask: torch.Tensor, generator: torch.Generator | None = None) -> PositionState:
        batch, device = attention_mask.shape[0], attention_mask.device
        offset = start_offsets(batch, self.max_offset if self.training else 0, generator, device)
        run = torch.zeros(batch, dtype=torch.long, device=device)
        return AbacusState(position_ids=rank_ids(attention_mask), offset=offset, digit_run=run)

    def digit_slots(
        self, input_ids: torch.Tensor, state: AbacusState, start: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(slot, index): the table row each token of columns start:start+T looks up (its 1-based index
        within its digit run plus the line's offset; 0 for other tokens), and the index alone. A run is
        never longer than the line, so every slot has a row of its own (none is clamped)."""
        run = state.digit_run if start > 0 else torch.zeros_like(state.digit_run)
        digit = self.is_digit[input_ids]
        index = run_index(digit, run)
        slot = torch.where(digit, index + state.offset[:, None], 0)
        return slot, index

    def embed(self, input_ids, token_embeds, state, start=0):
        stop = _end(state, start, input_ids)
        slot, index = self.digit_slots(input_ids, state, start)
        inputs = token_embeds + self.embedding(slot).to(token_embeds.dtype)
        return inputs, state.position_ids[:, start:stop], dataclasses.replace(state, digit_run=index[:, -1])


def digit_token_ids(tokenizer) -> list[int]:
    """Ids of tokens whose text is a digit string, possibly after one leading space (" 7", "12")."""
    bodies = {
        i: tokenizer.convert_tokens_to_string([t]).removeprefix(" ") for t, i in tokenizer.get_vocab().items()
    }
    return [i for i, body in bodies.items() if body.isdigit() and body.isascii()]

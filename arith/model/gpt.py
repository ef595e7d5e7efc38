"""ArithModel: transformers' GPT2LMHeadModel driven through a position scheme.

The model computes the GPT-2 input itself (`wte(ids)` + the scheme's contribution) and hands
`inputs_embeds`, `position_ids` and the attention mask to the GPT-2 trunk, so that one code path serves
every scheme, in training and in KV-cache decoding. The mask is always passed: without one, transformers
reads non-consecutive position ids as packed sequences."""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

from arith.config import INITS, MODEL_PRESETS, DataConfig, ModelConfig, choice
from arith.data.tasks import get_task
from arith.model.attention import ATTENTION
from arith.model.positions import ModelShape, PositionScheme, PositionState, digit_token_ids
from arith.model.schemes import scheme_class

#: file beside the HF weights that records the position scheme (and its learned tables)
SCHEME_CONFIG = "position_scheme.json"
SCHEME_WEIGHTS = "position_scheme.pt"
#: greedy decoding checks whether every row has finished only this often (each check syncs a GPU)
FINISH_CHECK_EVERY = 8


@dataclass
class ModelOutput:
    """`loss`: next-token cross-entropy, mean over the weighted target tokens (None without targets);
    `logits`: (batch, columns, vocab), None when the forward pass was asked for the loss only."""

    loss: torch.Tensor | None
    logits: torch.Tensor | None


class ArithModel(nn.Module):
    """A GPT-2 language model plus a position scheme; see `build_model` and `load_folder`."""

    def __init__(self, lm: GPT2LMHeadModel, scheme: PositionScheme, cfg: ModelConfig) -> None:
        super().__init__()
        self.lm = lm
        self.scheme = scheme
        self.cfg = cfg
        scheme.attach(lm)
        # Per-model seed for the training draws (tags, random ids, offsets), taken from the global RNG
        # so that seeding torch before `build_model` makes a run reproducible.
        self._seed = int(torch.randint(0, 2**62, (1,)).item())
        self._epoch = 0
        self._generators: dict[torch.device, torch.Generator] = {}

    @property
    def device(self) -> torch.device:
        return self.lm.transformer.wte.weight.device

    def new_epoch(self, epoch: int) -> None:
        """Reseed the training draws: fresh random tags / ids / offsets each epoch, the same on a rerun."""
        self._epoch = epoch
        self._generators.clear()

    @torch.compiler.disable  # generators are not traceable: draw eagerly, compile the rest
    def draw_positions(
        self, attention_mask: torch.Tensor, generator: torch.Generator | None = None
    ) -> PositionState:
        """The scheme's per-sequence draw for these columns. Without a generator: the epoch's
        generator in training mode, a fixed seed in eval mode (so eval never moves training's)."""
        width, reach, device = attention_mask.shape[1], self.lm.config.n_positions, attention_mask.device
        if width > reach:  # GPT-2's position table would fail with an index error, or a scheme would alias
            raise ValueError(f"a line of {width} tokens: a model of n_positions={reach} cannot place it")
        if generator is None and not self.training:
            generator = torch.Generator(device=device).manual_seed(0)
        elif generator is None:
            if device not in self._generators:
                seed = zlib.crc32(f"{self._seed}/{self._epoch}".encode())
                self._generators[device] = torch.Generator(device=device).manual_seed(seed)
            generator = self._generators[device]
        return self.scheme.draw(attention_mask, generator)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        loss_mask: torch.Tensor | None = None,
        *,
        positions: PositionState | None = None,
        generator: torch.Generator | None = None,
        logits: bool = True,
    ) -> ModelOutput:
        """Logits for every column and the loss on the tokens `loss_mask` marks (default: every real token
        after the first); `positions` reuses a draw (e.g. a generation's). `logits=False` runs the LM head
        only on the columns that predict a weighted token: the same loss without the head's matmuls on the
        prompt, but a data-dependent shape (no CUDA graph)."""
        if positions is None:
            positions = self.draw_positions(attention_mask, generator)
        hidden, _ = self._trunk(input_ids, attention_mask, positions, start=0, cache=None)
        weights = (attention_mask if loss_mask is None else loss_mask)[:, 1:]
        if not logits:
            return ModelOutput(weighted_rows_loss(self.lm.lm_head, hidden, input_ids, weights), None)
        all_logits = self.lm.lm_head(hidden)
        return ModelOutput(loss=next_token_loss(all_logits, input_ids, weights), logits=all_logits)

    def _trunk(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        positions: PositionState,
        start: int,
        cache: DynamicCache | None,
    ) -> tuple[torch.Tensor, PositionState]:
        """Final hidden states (after the scheme's readout) for columns start:start+T."""
        token_embeds = self.lm.transformer.wte(input_ids)
        inputs, position_ids, positions = self.scheme.embed(input_ids, token_embeds, positions, start)
        # The cache goes in second, by position: transformers 5.x renamed that argument from
        # `past_key_values` to `cache`, and it is updated in place, so it never needs reading back.
        out = self.lm.transformer(
            None,
            cache,
            attention_mask=attention_mask,
            position_ids=position_ids,
            inputs_embeds=inputs,
            use_cache=cache is not None,
        )
        return self.scheme.readout(out.last_hidden_state), positions

    @torch.no_grad()
    def generate_greedy(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        max_new_tokens: int,
        eos_token_id: int | None,
        *,
        generator: torch.Generator | None = None,
        positions: PositionState | None = None,
        stop_token_ids: Sequence[int] = (),
    ) -> torch.Tensor:
        """Greedy continuation of left-padded prompts with the KV cache: (B, n <= max_new_tokens) new
        tokens, eos after a row's eos. A row also ends at a token of `stop_token_ids` (line breaks) after
        its first other token (a reply may open with a line break). The positions are drawn once."""
        batch, prompt_len = input_ids.shape
        if max_new_tokens < 1:
            return input_ids.new_zeros(batch, 0)
        mask = torch.cat([attention_mask, attention_mask.new_ones(batch, max_new_tokens)], dim=1)
        if positions is None:
            positions = self.draw_positions(mask, generator)
        stops = torch.tensor(list(stop_token_ids), dtype=input_ids.dtype, device=input_ids.device)
        begun = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)

        def finished(token: torch.Tensor) -> torch.Tensor:
            is_stop = torch.isin(token, stops)
            ended = (is_stop & begun) | (token == eos_token_id if eos_token_id is not None else False)
            begun.logical_or_(~is_stop)
            return ended

        cache = DynamicCache(config=self.lm.config)
        hidden, positions = self._trunk(input_ids, mask[:, :prompt_len], positions, 0, cache)
        token = self.lm.lm_head(hidden[:, -1]).argmax(-1)
        done = finished(token)
        new_tokens = [token]
        for step in range(1, max_new_tokens):
            if step % FINISH_CHECK_EVERY == 0 and bool(done.all()):
                break
            column = prompt_len + step - 1
            hidden, positions = self._trunk(token[:, None], mask[:, : column + 1], positions, column, cache)
            token = self.lm.lm_head(hidden[:, -1]).argmax(-1)
            if eos_token_id is not None:
                token = torch.where(done, eos_token_id, token)
            done |= finished(token)
            new_tokens.append(token)
        return torch.stack(new_tokens, dim=1)

    def save(self, path: str | Path, tokenizer=None) -> None:
        """A directory `from_pretrained` can read (HF weights + config) plus the scheme's settings and
        tables; with a tokenizer, that too, so `load_folder(path)` and the tokenizer reload as they were."""
        path = Path(path)
        with quiet_progress():
            self.lm.save_pretrained(path)
        scheme_config = {"position": self.scheme.name, **self.scheme.extra_config()}
        if self.scheme.needs_digits:
            scheme_config["digit_ids"] = self.scheme.is_digit.nonzero().flatten().tolist()
        (path / SCHEME_CONFIG).write_text(
            json.dumps({"scheme": scheme_config, "model_config": dataclasses.asdict(self.cfg)}, indent=2)
        )
        state = self.scheme.state_dict()
        if state:
            torch.save(state, path / SCHEME_WEIGHTS)
        if tokenizer is not None:
            tokenizer.save_pretrained(path)


#: under bf16 autocast on a CPU the rows the LM head reads are padded to a multiple of this: oneDNN keeps a
#: kernel for every matrix shape it meets, and an answer-only loss selects a new row count nearly every batch
ROW_BUCKET = 64


def weighted_rows_loss(
    lm_head: nn.Module, hidden: torch.Tensor, input_ids: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """`next_token_loss` with the LM head applied only to the columns whose next token has weight (under
    bf16 on a CPU, padded with weightless rows to a multiple of ROW_BUCKET: the same loss)."""
    flat = weights.flatten()
    rows = (flat > 0).nonzero().squeeze(1)
    if hidden.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        rows = torch.cat([rows, rows.new_zeros((-len(rows)) % ROW_BUCKET)])
    kept = flat[rows].clone()
    kept[int((flat > 0).sum()) :] = 0  # the padding rows: read, weighed 0
    logits = lm_head(hidden[:, :-1].flatten(0, 1)[rows]).float()
    ce = F.cross_entropy(logits, input_ids[:, 1:].flatten()[rows], reduction="none")
    kept = kept.to(ce.dtype)
    return (ce * kept).sum() / kept.sum().clamp(min=1.0)


def next_token_loss(logits: torch.Tensor, input_ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of token t+1 given tokens <= t, weighted by `weights` (B, L-1), in float32."""
    ce = F.cross_entropy(
        logits[:, :-1].flatten(0, 1).float(), input_ids[:, 1:].flatten(), reduction="none"
    ).view_as(weights)
    weights = weights.to(ce.dtype)
    return (ce * weights).sum() / weights.sum().clamp(min=1.0)


def build_model(cfg: ModelConfig, tokenizer, data: DataConfig | None = None) -> ArithModel:
    """A GPT-2 for `tokenizer`, randomly initialised from the preset/sizes or loaded with
    `from_pretrained(cfg.pretrained)` (a local directory or hub name), with `cfg.position` attached.
    `data` tells schemes that read the task's structure (coupling: its digit order) what it is."""
    choice("model.init", cfg.init, INITS)
    choice("model.preset", cfg.preset, MODEL_PRESETS)
    overrides = {f"{part}_pdrop": cfg.dropout for part in ("resid", "embd", "attn")}
    overrides["activation_function"] = "gelu_pytorch_tanh"  # GPT-2's gelu_new, one fused kernel not five
    if cfg.init == "pretrained":
        lm = _load_pretrained(cfg.pretrained, **overrides)
        if len(tokenizer) > lm.config.vocab_size:
            lm.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    else:
        n_layer, n_head, n_embd = cfg.sizes()
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=cfg.n_positions,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=n_head,
            bos_token_id=tokenizer.eos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            attn_implementation=ATTENTION,
            **overrides,
        )
        lm = GPT2LMHeadModel(config)
    scheme_cls = scheme_class(cfg.position)
    digit_order: tuple[str, ...] = ()
    if scheme_cls.needs_digit_order:
        if data is None:
            raise ValueError(
                f"position scheme {cfg.position!r} needs the task: build_model(..., data=cfg.data)"
            )
        digit_order = get_task(data.task).digit_order(data.format)
    digits = digit_token_ids(tokenizer) if scheme_cls.needs_digits else ()
    return ArithModel(lm, _scheme_for(cfg, lm.config, digits, digit_order), cfg)


class ModelFolderError(ValueError):
    """A path or URI that does not hold a model written by `ArithModel.save`; the message says why."""


def load_folder(folder: str | Path, device: str | torch.device | None = None) -> ArithModel:
    """Reload a model written by `ArithModel.save` (weights, scheme and scheme tables) exactly, from its
    local folder. A run's model in MLflow (`runs:/<run id>/model`) is `arith.tracking.models.load_model`'s:
    the model knows no store."""
    path = Path(folder)
    if not path.is_dir():
        raise ModelFolderError(
            f"no model at {folder}: not a folder (an MLflow URI loads with arith.tracking.models.load_model)"
        )
    if not (path / SCHEME_CONFIG).exists():
        raise ModelFolderError(f"{path} is not a model written by ArithModel.save: it has no {SCHEME_CONFIG}")
    saved = json.loads((path / SCHEME_CONFIG).read_text())
    cfg = ModelConfig(**saved["model_config"])
    with quiet_progress():
        lm = _load_pretrained(str(path))
    scheme = _scheme_for(
        cfg, lm.config, saved["scheme"].get("digit_ids", ()), saved["scheme"].get("digit_order", ())
    )
    if (path / SCHEME_WEIGHTS).exists():
        scheme.load_state_dict(torch.load(path / SCHEME_WEIGHTS, map_location="cpu", weights_only=True))
    model = ArithModel(lm, scheme, cfg)
    return model.to(device) if device is not None else model


@contextmanager
def quiet_progress() -> Iterator[None]:
    """transformers' per-shard progress bars off (one bar per saved or loaded tiny model is noise)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def _load_pretrained(name: str, **overrides) -> GPT2LMHeadModel:
    try:
        return GPT2LMHeadModel.from_pretrained(name, attn_implementation=ATTENTION, **overrides)
    except OSError as err:
        raise OSError(
            f"cannot load pretrained GPT-2 {name!r}: no save_pretrained folder, no reachable hub name ({err})"
        ) from err


def _scheme_for(cfg: ModelConfig, config: GPT2Config, digit_ids, digit_order=()) -> PositionScheme:
    """The scheme `cfg.position` for the actual model sizes (a pretrained model's, not the preset's)."""
    sizes = (config.n_embd, config.n_head, config.n_positions, config.vocab_size)
    shape = ModelShape(*sizes, tuple(digit_ids), tuple(digit_order))
    return scheme_class(cfg.position).build(cfg, shape)

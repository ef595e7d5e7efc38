"""Typed, printable experiment configuration: the one object every trial is built from.

An `ExperimentConfig` holds four dataclasses (data, model, train, tracking); it round-trips through dicts,
JSON and YAML and flattens to dotted keys (``data.max_digits``) for MLflow params and ``--set``. It is the
leaf every layer reads (the analysis too, without torch), so it imports no registry: a position scheme's
own settings are `Settings` classes here, and `arith.validation.validate` checks a config against them."""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arith.coerce import coerce
from arith.errors import ConfigError

#: multiplication augmentations (appendix A): every third sample becomes n x 1, or a first-step `%` line.
AUGMENTS: tuple[str, ...] = ("none", "n_times_1", "first_step")
#: arithmetic data mixed into the dialogues of nl_mix (section 4): dia, dia+basic, dia+random_space
MIX_FORMATS: tuple[str, ...] = ("none", "basic", "random_space")
INITS: tuple[str, ...] = ("random", "pretrained")
#: model size presets: name -> (n_layer, n_head, n_embd). `gpt2-small` is the paper's model.
MODEL_PRESETS: dict[str, tuple[int, int, int]] = {
    "gpt2-small": (12, 12, 768),
    "gpt2-mini": (6, 8, 256),
    "tiny": (4, 4, 128),
    "nano": (2, 2, 64),
}
LOSS_ON: tuple[str, ...] = ("answer", "all")
SCHEDULES: tuple[str, ...] = ("linear", "cosine", "constant")
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16")
#: `auto`: GPT-2's for a pretrained model, else the digit-aware one; `pretrained`: model.pretrained's
#: whatever the init (the paper's random-init GPT-2s)
TOKENIZERS: tuple[str, ...] = ("auto", "pretrained")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
LOG_MODEL: tuple[str, ...] = ("final", "none")
#: torch.compile modes; `reduce-overhead` replays CUDA graphs (one per batch shape: train.bucket_lengths)
COMPILE_MODES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def choice(name: str, value: str, choices: typing.Iterable[str]) -> None:
    """Raise ConfigError unless `value` is one of `choices`, listing them."""
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not valid; choose one of: {', '.join(choices)}")


def default_n_hash(n_embd: int, n_head: int) -> int:
    """n_embd // 4 rounded down to a multiple of n_head (at least n_head)."""
    return max(n_head, (n_embd // 4) // n_head * n_head)


# Settings one position scheme reads (`PositionScheme.Settings`); ModelConfig is built from them


@dataclass
class NoSettings:
    """A scheme that reads no setting of its own."""


@dataclass
class RandomEmbedSettings:
    #: random_embed: dimensions of the Gaussian tag; 0 = n_embd // 4 (rounded to a multiple of n_head)
    n_hash: int = 0

    def resolved_n_hash(self) -> int:
        """The tag width for this config's sizes (`sizes()` is ModelConfig's)."""
        _, n_head, n_embd = self.sizes()  # type: ignore[attr-defined]
        return self.n_hash or default_n_hash(n_embd, n_head)


@dataclass
class RandomizedSettings:
    #: randomized: position ids are drawn from 0..randomized_max_position-1; 0 = n_positions
    randomized_max_position: int = 0


@dataclass
class AbacusSettings:
    #: abacus: largest random offset added to the digit positions during training
    abacus_max_offset: int = 20


@dataclass
class CouplingSettings:
    #: coupling: largest random start added to every digit's position id during training (0 at test)
    coupling_max_offset: int = 20


@dataclass
class DataConfig:
    """What the model is trained and tested on. Defaults follow the paper's appendix where it has one."""

    task: str = "add"
    format: str = "padding_reverse"
    #: training digit counts per operand are drawn from min_digits..max_digits
    min_digits: int = 1
    max_digits: int = 3
    #: weight of 1 in the digit-count distribution {alpha, 1, ..., 1} (multiplication, tb:padding_10_ratio)
    one_digit_weight: float = 1.0
    augment: str = "none"
    #: recursive scratchpad with the addends written least-significant digit first (section 3.1)
    reverse_addends: bool = False
    #: probability of a random extra space at each position (add_scratchpad random_space)
    random_space_prob: float = 0.3
    train_samples: int = 120_000
    #: nl_mix: arithmetic data mixed into the dialogues (`none` = dialogue data alone)
    mix_format: str = "none"
    mix_samples: int = 120_000
    #: nl_mix: dialogue counts on 2-3-digit and on 4-5-digit sums (appendix C)
    dialogue_easy: int = 12_200
    dialogue_hard: int = 1_040
    #: a user's own dialogue data (JSONL with a `text` field, or one dialogue a line); replaces the generator
    dialogue_file: str = ""
    #: digit counts of the test cells; empty = the task's default (the paper's test protocol)
    test_digits: list[int] = field(default_factory=list)
    test_per_cell: int = 100
    seed: int = 0


@dataclass
class ModelConfig(CouplingSettings, AbacusSettings, RandomizedSettings, RandomEmbedSettings):
    """A GPT-2 (transformers' GPT2LMHeadModel) with an interchangeable position scheme. The fields a
    single scheme reads come first, from that scheme's Settings above."""

    preset: str = "tiny"
    #: explicit sizes override the preset; None = take the preset's
    n_layer: int | None = None
    n_head: int | None = None
    n_embd: int | None = None
    n_positions: int = 1024
    position: str = "learned"
    init: str = "random"
    #: init=pretrained: a local directory or a hub name
    pretrained: str = "gpt2"
    #: see TOKENIZERS; `pretrained` falls back, with a message, to the digit-aware one when it cannot load
    tokenizer: str = "auto"
    #: GPT-2's resid/embd/attn dropout (Hugging Face's GPT2Config: 0.1; the paper scale uses that)
    dropout: float = 0.0

    def sizes(self) -> tuple[int, int, int]:
        """(n_layer, n_head, n_embd) after applying explicit overrides to the preset."""
        n_layer, n_head, n_embd = MODEL_PRESETS[self.preset]

        def pick(value: int | None, preset: int) -> int:
            return preset if value is None else value  # 0 is a size (refused by validation), not "unset"

        return (pick(self.n_layer, n_layer), pick(self.n_head, n_head), pick(self.n_embd, n_embd))


@dataclass
class TrainConfig:
    """Optimisation, evaluation schedule and hardware. `epochs` as in the paper; `max_steps` caps a budget."""

    epochs: int = 300
    #: epochs a pass over the training lines is cut into (1: the paper's epoch), so that a scheduler reads
    #: a long pass more often; `epochs`, `eval_epochs` and `checkpoint_every` count these epochs
    epochs_per_pass: int = 1
    #: stop after this many optimiser steps (0 = no cap); the schedule is laid over min(epochs, steps)
    max_steps: int = 0
    batch_size: int = 32
    lr: float = 2e-5
    weight_decay: float = 0.0
    #: AdamW's (Hugging Face's Trainer: 0.9, 0.999, 1e-8, as the paper scale; cpu and smoke keep 0.95)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1e-8
    schedule: str = "linear"
    warmup_steps: int = 0
    warmup_ratio: float = 0.0
    grad_clip: float = 1.0
    #: loss on the answer tokens only, or on the whole line (the paper fine-tunes on whole lines)
    loss_on: str = "answer"
    #: the first this fraction of the steps draws short lines, the digit cap rising to the most (0 = none)
    curriculum: float = 0.0
    #: epochs after which the test grids are evaluated (the final epoch always is; nl_mix: 50 and 100)
    eval_epochs: list[int] = field(default_factory=list)
    #: epochs between checkpoints (0 = only at evaluations and the end)
    checkpoint_every: int = 1
    #: run alone: where checkpoints are kept and resumed from; empty = none (a Tune trial uses Tune's)
    checkpoint_dir: str = ""
    #: evaluation batch size and the number of failure examples kept per cell (eval/failures.jsonl)
    eval_batch_size: int = 256
    failures_per_cell: int = 3
    #: wrong answers kept per cell of the latest evaluation (eval/errors.csv: every one of a paper cell)
    errors_per_cell: int = 100
    #: tokens decoded per test reply; 0 = the longest reply the data can produce plus a margin (set it
    #: for a data.dialogue_file whose replies are longer than the generator's)
    eval_max_new_tokens: int = 0
    #: when the answer's exact-match on a held-out probe reaches this, training stops early (0 = never)
    target_accuracy: float = 0.0
    #: test cells ("main:2x3", "regular:5") whose weakest accuracy on unseen problems each evaluation
    #: reports as `gate/weakest_unseen`, for a scheduler to read a competence gate; empty = not reported
    gate_cells: list[str] = field(default_factory=list)
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    compile_mode: str = "default"
    #: pad each batch to the next of these lengths (few shapes for compiled steps and CUDA graphs);
    #: empty = to its longest line
    bucket_lengths: list[int] = field(default_factory=list)
    #: torch threads on a CPU; 0 = the CPUs this process may use (Ray sets them per trial)
    num_threads: int = 0
    log_every_steps: int = 50


@dataclass
class TrackingConfig:
    """Where the trial logs. The trial owns its MLflow run; sweeps pass the parent run and tags."""

    enabled: bool = True
    #: empty = $MLFLOW_TRACKING_URI, else a local SQLite store (sqlite:///mlflow.db)
    tracking_uri: str = ""
    experiment: str = "arith"
    run_name: str = ""
    parent_run_id: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    #: the run's MLflow logged model `model` (`arith.tracking.models.load_model("runs:/<id>/model")`):
    #: `final` = the model at the end of the trial, `none` = not kept (a GPT2-small's is ~1 GB)
    log_model: str = "final"

    def resolved_uri(self) -> str:
        return self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


@dataclass
class ExperimentConfig:
    """One trial: data x model x training x tracking."""

    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(
                f"unknown config section(s) {sorted(unknown)}; valid: data, model, train, tracking"
            )
        return cls().with_overrides(
            {f"{s}.{k}": v for s, values in d.items() for k, v in (values or {}).items()}
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExperimentConfig:
        """Read a YAML or JSON file holding some or all of the sections."""
        text = Path(path).read_text()
        if str(path).endswith((".yaml", ".yml")):
            return cls.from_dict(yaml.safe_load(text) or {})
        return cls.from_dict(json.loads(text))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    def __str__(self) -> str:
        return "\n".join(f"{k} = {v!r}" for k, v in self.flat().items())

    def flat(self) -> dict[str, Any]:
        """Dotted keys -> values, e.g. ``{"data.task": "mul", ...}`` (MLflow params, --set keys)."""
        return {f"{s}.{k}": v for s, values in self.to_dict().items() for k, v in values.items()}

    @classmethod
    def keys(cls) -> list[str]:
        return list(cls().flat())

    def with_overrides(self, overrides: dict[str, Any]) -> ExperimentConfig:
        """A copy with dotted-key overrides applied; string values are parsed to the field's type."""
        sections = {f.name: dataclasses.replace(getattr(self, f.name)) for f in dataclasses.fields(self)}
        for key, value in overrides.items():
            section_name, _, field_name = key.partition(".")
            section = sections.get(section_name)
            fields = {f.name: f for f in dataclasses.fields(section)} if section is not None else {}
            if field_name not in fields:
                raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(self.keys())}")
            hint = typing.get_type_hints(type(section))[field_name]
            setattr(section, field_name, coerce(value, hint, key))
        return ExperimentConfig(**sections)

"""A config checked against the registries (its task and its position scheme each check what only they
know) and the general rules: apart from `arith.config` so that the config stays a leaf, with no torch.
"""

from __future__ import annotations

import math

from arith.config import (
    COMPILE_MODES,
    DEVICES,
    INITS,
    LOG_MODEL,
    LOSS_ON,
    MODEL_PRESETS,
    PRECISIONS,
    SCHEDULES,
    TOKENIZERS,
    ConfigError,
    ExperimentConfig,
    choice,
)
from arith.data.tasks import check_data_config
from arith.model.schemes import scheme_class


def validate(cfg: ExperimentConfig) -> ExperimentConfig:
    """Raise ConfigError for any setting of `cfg` that cannot train; return `cfg` so calls can chain."""
    d, m, t = cfg.data, cfg.model, cfg.train
    bad = [k for k, v in cfg.flat().items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise ConfigError(f"{bad[0]} must be a finite number (got {cfg.flat()[bad[0]]})")
    check_data_config(d)

    choice("model.preset", m.preset, MODEL_PRESETS)
    scheme = scheme_class(m.position)
    choice("model.init", m.init, INITS)
    choice("model.tokenizer", m.tokenizer, TOKENIZERS)
    n_layer, n_head, n_embd = m.sizes()
    if min(n_layer, n_head, n_embd) < 1 or n_embd % n_head:
        raise ConfigError(
            "model sizes need n_head | n_embd, each size >= 1 "
            f"(got model.n_layer={n_layer}, model.n_head={n_head}, model.n_embd={n_embd})"
        )
    if m.n_positions < 1:
        raise ConfigError(f"model.n_positions must be >= 1 (got {m.n_positions})")
    scheme.check(cfg)
    if m.init == "pretrained" and not m.pretrained:
        raise ConfigError("model.init='pretrained' needs model.pretrained (a local directory or hub name)")
    if not 0 <= m.dropout < 1:
        raise ConfigError(f"model.dropout must be in [0, 1) (got {m.dropout})")

    choice("train.loss_on", t.loss_on, LOSS_ON)
    choice("train.schedule", t.schedule, SCHEDULES)
    choice("train.precision", t.precision, PRECISIONS)
    choice("train.device", t.device, DEVICES)
    choice("train.compile_mode", t.compile_mode, COMPILE_MODES)
    choice("tracking.log_model", cfg.tracking.log_model, LOG_MODEL)
    if t.failures_per_cell < 0 or t.errors_per_cell < 0:
        raise ConfigError("train.failures_per_cell and train.errors_per_cell must be >= 0")
    if any(not 1 <= b <= m.n_positions for b in t.bucket_lengths):
        raise ConfigError(
            f"train.bucket_lengths {t.bucket_lengths} must lie in 1..model.n_positions={m.n_positions}"
        )
    if t.epochs < 1 or t.batch_size < 1 or t.lr <= 0 or t.epochs_per_pass < 1:
        raise ConfigError(
            "train.epochs, train.epochs_per_pass and train.batch_size must be >= 1 and train.lr > 0"
        )
    if t.max_steps < 0 or t.warmup_steps < 0 or not 0 <= t.warmup_ratio < 1:
        raise ConfigError("train.max_steps, train.warmup_steps >= 0 and 0 <= train.warmup_ratio < 1")
    if not (0 <= t.adam_beta1 < 1 and 0 <= t.adam_beta2 < 1 and t.adam_eps > 0):
        raise ConfigError("train.adam_beta1 and adam_beta2 must be in [0, 1) and train.adam_eps > 0")
    if t.eval_batch_size < 1 or t.log_every_steps < 1:
        raise ConfigError("train.eval_batch_size and train.log_every_steps must be >= 1")
    if t.eval_max_new_tokens < 0:
        raise ConfigError(f"train.eval_max_new_tokens must be >= 0 (got {t.eval_max_new_tokens})")
    if not 0 <= t.curriculum < 1:
        raise ConfigError(f"train.curriculum={t.curriculum} must be in [0, 1): a fraction of the steps")
    bad = [e for e in t.eval_epochs if not 1 <= e <= t.epochs]
    if bad:
        raise ConfigError(f"train.eval_epochs {bad} fall outside 1..train.epochs={t.epochs}")
    return cfg

"""The checks a sweep passes before it touches Ray, MLflow or its work folder, needing only the trials'
configs and data: a trial failing one would fail the same way on every retry, hours in, so here the sweep
is refused in one line instead, with nothing written. A pretrained model must load, and every trial's
batches must fit its position scheme.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor

from arith.config import ConfigError, ExperimentConfig
from arith.model.schemes import scheme_class
from arith.training.lengths import check_positions
from sweeps.errors import SweepError


def check_before_launch(configs: Iterable[ExperimentConfig], lengths: bool = True) -> None:
    """Raise SweepError or ConfigError, naming the trial, for the first check a trial fails (a resumed
    sweep's configs passed `lengths` when they launched)."""
    configs = list(configs)
    check_pretrained(configs)
    if lengths:
        check_lengths(configs)


def check_pretrained(configs: Iterable[ExperimentConfig]) -> None:
    """Fail when a pretrained point's model cannot be loaded (no hub access, a wrong path)."""
    names = sorted({c.model.pretrained for c in configs if c.model.init == "pretrained"})
    for name in names:
        from transformers import AutoConfig

        try:
            AutoConfig.from_pretrained(name)
        except Exception as err:
            raise SweepError(
                f"model.pretrained={name!r} cannot be loaded here ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:200]}). Give a local copy: --set model.pretrained=/path/to/gpt2 "
                "(a save_pretrained directory), or set HF_HUB_OFFLINE=1 with the model in the HF cache."
            ) from err


def check_lengths(configs: Iterable[ExperimentConfig]) -> None:
    """Every trial's sequences against its scheme's columns, measured once per `_measure_key` and side by
    side, one process a core (a paper-scale training set takes seconds to generate)."""
    measured: dict[str, ExperimentConfig] = {}
    for cfg in configs:
        measured.setdefault(_measure_key(cfg), cfg)
    trials = list(measured.values())
    workers = min(len(trials), os.cpu_count() or 1)
    if workers > 1:  # forked before Ray or any device is started: the workers inherit the imports
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            refusals = list(pool.map(_refusal, trials))
    else:
        refusals = [_refusal(cfg) for cfg in trials]
    for cfg, refusal in zip(trials, refusals, strict=True):
        if refusal:
            raise ConfigError(f"trial {cfg.tracking.run_name!r}: {refusal}")


def _refusal(cfg: ExperimentConfig) -> str:
    """Why `check_positions` refuses the trial ('' when it fits): a message crosses processes whole."""
    try:
        check_positions(cfg)
    except ConfigError as err:
        return str(err)
    return ""


def _measure_key(cfg: ExperimentConfig) -> str:
    """What the measure of a trial's widths depends on."""
    m, t = cfg.model, cfg.train
    return json.dumps(
        [
            dataclasses.asdict(cfg.data),
            [m.init, m.tokenizer, m.pretrained],
            [t.bucket_lengths, t.eval_batch_size, t.eval_max_new_tokens, t.target_accuracy > 0],
            scheme_class(m.position).max_width(cfg)[0],
        ],
        sort_keys=True,
        default=str,
    )

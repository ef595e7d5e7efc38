"""The trainer timed on the paper's points, for `benchmarks/bench_paper.py` (what the reproduction costs on a
device): each paper point's data profiled for its batch widths (a probe of its own training set through
the trainer's loader), the trainer's own step timed at those widths on the point's model, and its
evaluation on a slice of its test set. Points that share a model and batch share their timings.

The measurements live here, beside `sweeps.cost` (the cost model they feed) and `sweeps.packing` (trials per
GPU), so that the benchmark's file is its command line and its tables. Neither Ray nor MLflow is imported.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from arith.config import ExperimentConfig
from arith.data.datasets import test_examples, train_examples, train_size
from arith.model.gpt import build_model
from arith.model.tokenizer import build_tokenizer
from arith.tracking import schema
from arith.training.batching import EncodedLine, batches_per_epoch, collate, pad_token_id
from arith.training.checkpoints import seed_everything
from arith.training.evaluate import evaluate
from arith.training.hardware import autocast_context, compile_model
from arith.training.optim import lr_lambda, make_optimizer, total_steps
from arith.training.setup import train_loader
from arith.training.step import drain_losses, train_step
from arith.validation import validate
from sweeps import cost
from sweeps.grids import points

#: GPT-2's vocabulary: the pretrained points' embedding and output layer
GPT2_VOCAB = 50257
#: the trainer as it was before the paper scale set its one-GPU switches
BEFORE = {"train.compile": False, "train.bucket_lengths": []}
#: widths measured per model when its points need more distinct ones (eager steps): every 8th, interpolated
WIDTH_STRIDE = 8
MAX_EXACT_WIDTHS = 12
#: the training settings a step's cost depends on (with the model section and the vocabulary)
STEP_KEYS = ("batch_size", "precision", "compile", "compile_mode", "loss_on", "grad_clip", "device")


# ---------------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------------


def bench_config(cfg: ExperimentConfig, mode: str, device: str, preset: str, sets: dict) -> ExperimentConfig:
    """A paper-scale point as the benchmark runs it: this mode's switches, this device, no tracking."""
    over = {"train.device": device, "tracking.enabled": False, "train.checkpoint_every": 0}
    if mode == "before":
        over.update(BEFORE)
    if preset:
        over["model.preset"] = preset
    return validate(cfg.with_overrides({**over, **sets}))


def probe_data(cfg: ExperimentConfig, probe: int):
    """A `probe`-sized slice of the point's training set (every count shrunk alike: the cost model's
    probe, `sweeps.cost`) and its whole test set."""
    small = cost.throughput_config(cfg, probe, 1, cfg.train.batch_size)
    return train_examples(small.data), test_examples(cfg.data)


def model_key(cfg: ExperimentConfig, vocab: int) -> str:
    """What a step's time depends on besides the batch width: the model, its vocabulary, the settings."""
    model = {k: v for k, v in asdict(cfg.model).items() if k != "pretrained"}
    steps = {k: getattr(cfg.train, k) for k in STEP_KEYS}
    return json.dumps({"model": model, "vocab": vocab, "train": steps}, sort_keys=True)


def timing_model(cfg: ExperimentConfig, tokenizer) -> torch.nn.Module:
    """The point's model, or for a pretrained point a random one of GPT-2's size and vocabulary."""
    if cfg.model.init != "pretrained":
        return build_model(cfg.model, tokenizer)
    model = build_model(replace(cfg.model, init="random"), tokenizer)
    if cfg.model.preset == "gpt2-small":  # the paper's stand-in; a smaller preset is a test of the bench
        model.lm.resize_token_embeddings(GPT2_VOCAB, mean_resizing=False)
    return model


def vocab_size(cfg: ExperimentConfig, tokenizer) -> int:
    if cfg.model.init == "pretrained" and cfg.model.preset == "gpt2-small":
        return GPT2_VOCAB
    return len(tokenizer)


# ---------------------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------------------


@dataclass
class PointProfile:
    """One paper point: its schedule and its data's batch widths (from the trainer's loader)."""

    grid: str
    point: str
    cfg: ExperimentConfig
    key: str
    steps: int
    evaluations: int
    width_counts: Counter
    tokens_per_batch: float
    test_size: int
    eval_key: str


@dataclass
class ModelTiming:
    """The trainer's step time on one model at each measured batch width."""

    widths: list[int]
    step_seconds: list[float]
    #: one-off seconds before timing: compilation and CUDA-graph recording included
    warmup_seconds: float
    peak_memory_bytes: int | None
    eval_seconds: dict[str, float] = field(default_factory=dict)

    def at(self, width: float) -> float:
        return float(np.interp(width, self.widths, self.step_seconds))


def profile_points(
    grids: list[str], seeds: int, mode: str, device: str, preset: str, probe: int, sets: dict
) -> tuple[list[PointProfile], dict]:
    """Every point of `grids` at scale paper, with its data's widths; one tokenizer and probe per key."""
    profiles, context = [], {}
    for grid in grids:
        for paper_cfg in points(grid, "paper", seeds=seeds):
            cfg = bench_config(paper_cfg, mode, device, preset, sets)
            train_set, test_set = probe_data(cfg, probe)
            tokenizer = build_tokenizer(e.text for e in train_set)
            t = cfg.train
            loader = train_loader(train_set, tokenizer, t)
            widths, tokens = Counter(), []
            for batch in loader.epoch(1):
                widths[batch.input_ids.shape[1]] += 1
                tokens.append(batch.n_tokens)
            key = model_key(cfg, vocab_size(cfg, tokenizer))
            eval_key = json.dumps([asdict(cfg.data) | {"seed": 0}, key], sort_keys=True)
            context.setdefault(key, (cfg, tokenizer, {}))[2].setdefault(eval_key, test_set)
            profiles.append(
                PointProfile(
                    grid=grid,
                    point=cfg.tracking.tags[schema.POINT_TAG] + f",seed={cfg.train.seed}",
                    cfg=cfg,
                    key=key,
                    steps=total_steps(t, batches_per_epoch(train_size(cfg.data), t.batch_size)),
                    evaluations=len({*t.eval_epochs, t.epochs}),
                    width_counts=widths,
                    tokens_per_batch=float(np.mean(tokens)),
                    test_size=len(test_set),
                    eval_key=eval_key,
                )
            )
    return profiles, context


def widths_to_measure(needed: set[int]) -> list[int]:
    """The needed widths themselves when they are few (bucketed batches), else every WIDTH_STRIDE-th."""
    if len(needed) <= MAX_EXACT_WIDTHS:
        return sorted(needed)
    low, high = min(needed), max(needed)
    return sorted({low, high, *range(-(-low // WIDTH_STRIDE) * WIDTH_STRIDE, high, WIDTH_STRIDE)})


def synthetic_batch(rows: int, width: int, vocab: int, pad_id: int, loss_on: str, seed: int):
    """A batch of `rows` lines of `width` tokens through the trainer's collate: a step costs what its
    shape costs, whatever the tokens are."""
    rng = np.random.default_rng(seed)
    lines = [
        EncodedLine(tuple(int(x) for x in rng.integers(0, vocab, width)), width // 2) for _ in range(rows)
    ]
    return collate(lines, pad_id, loss_on)


def timed_steps(step_model, optimizer, scheduler, cfg, device, batches: list) -> float:
    """Wall seconds of the trainer's training loop over `batches` (device work finished)."""
    t, autocast = cfg.train, autocast_context(device, cfg.train.precision)
    start = time.perf_counter()
    window: list[torch.Tensor] = []
    for step, batch in enumerate(batches, 1):  # the trainer's loop: its step, its loss read-back
        window.append(train_step(step_model, optimizer, scheduler, batch.to(device), t, autocast))
        if device.type == "cpu" or len(window) >= t.log_every_steps:
            drain_losses(window, step, 1)
    drain_losses(window, len(batches), 1)
    _sync(device)
    return time.perf_counter() - start


def trainer_state(cfg: ExperimentConfig, tokenizer, device: torch.device):
    """Model, step module, optimizer and schedule as the trainer builds them."""
    seed_everything(cfg.train.seed)
    model = timing_model(cfg, tokenizer).to(device)
    model.train()
    model.new_epoch(1)
    optimizer = make_optimizer(model, cfg.train, device)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg.train, 10**9))
    return model, compile_model(model, cfg.train), optimizer, scheduler


def time_model(
    cfg: ExperimentConfig, tokenizer, widths: list[int], steps: int, warmup: int, device: torch.device
) -> tuple[ModelTiming, torch.nn.Module]:
    """The trainer's step time at each width, after `warmup` steps at every width (compilation, graphs)."""
    torch._dynamo.reset()  # each model compiles afresh, as in its own trial
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model, step_model, optimizer, scheduler = trainer_state(cfg, tokenizer, device)
    vocab, pad = vocab_size(cfg, tokenizer), pad_token_id(tokenizer)
    batches = {w: synthetic_batch(cfg.train.batch_size, w, vocab, pad, cfg.train.loss_on, w) for w in widths}
    warm = sum(
        timed_steps(step_model, optimizer, scheduler, cfg, device, [b] * warmup) for b in batches.values()
    )
    seconds = [
        timed_steps(step_model, optimizer, scheduler, cfg, device, [batches[w]] * steps) / steps
        for w in widths
    ]
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return ModelTiming(widths, seconds, warm, peak), model


def eval_seconds(cfg: ExperimentConfig, model, tokenizer, examples: list, samples: int, device) -> float:
    """Seconds of the trainer's evaluation of the whole test set, from an evenly spread slice of it."""
    picked = examples[:: max(1, len(examples) // samples)][:samples]
    start = time.perf_counter()
    with autocast_context(device, cfg.train.precision):
        evaluate(model, tokenizer, picked, batch_size=cfg.train.eval_batch_size, seed=cfg.train.seed)
    _sync(device)
    return (time.perf_counter() - start) * len(examples) / len(picked)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)

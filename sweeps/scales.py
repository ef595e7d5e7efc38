"""Scales: one preset, applied to any grid's points, that sets how big every trial is.

A scale shrinks proportionally what differs between grids (samples, epochs, evaluation epochs, learning
rate, digit counts) and sets outright what does not (model size, batch size, test samples per cell).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import train_size
from arith.data.tasks import get_task
from arith.training.epochs import epochs_for_steps
from experiments.recipes import Recipe
from experiments.registry import why_no_recipe


@dataclass(frozen=True)
class Scale:
    """How a trial shrinks from the paper's size: proportional factors plus fixed overrides."""

    name: str
    description: str
    #: dotted overrides set outright on every point
    overrides: Mapping[str, Any] = field(default_factory=dict)
    #: training, mixed-in and dialogue sample counts are multiplied by this, then capped at `max_samples`
    sample_fraction: float = 1.0
    max_samples: int = 0
    #: the dialogue task's data has its own fraction, uncapped (None: sample_fraction and max_samples): the
    #: paper's dialogues are few already, and a model must see many to learn their language
    dialogue_fraction: float | None = None
    #: epochs are capped here (0 = no cap); evaluation epochs keep their place in the run
    max_epochs: int = 0
    #: optimiser steps of one trial unless a recipe gives its own (0: epochs as scaled); the epochs become
    #: what it needs (max_epochs does not apply), so every grid of a task trains as long
    steps: int = 0
    lr_factor: float = 1.0
    #: digit counts up to `digit_knee` stay, every `digit_stride` digits above it count as one
    digit_knee: int = 0
    digit_stride: int = 1
    #: the paper's models need GPUs: sweeps refuse to start this scale on a cluster without one
    needs_gpu: bool = False
    #: trials sharing one GPU by default (0: the paper scale's measured packing, sweeps/packing.py)
    trials_per_gpu: int = 0
    #: the seeds of the pre-search that chose this scale's budgets (the analysis judges only other seeds)
    presearch_seeds: tuple[int, ...] = ()
    #: every task trains here at a recipe its experiment declares
    needs_recipe: bool = False
    #: per task, a recipe given to this scale (`with_recipe`: a search's candidate)
    recipes: Mapping[str, Recipe] = field(default_factory=dict)

    def recipe(self, task: str) -> Recipe | None:
        """The task's recipe given to this scale (None: none given); a scale given recipes, or needing them,
        refuses a task it has none for, saying what its nearest pre-search reached."""
        if task in self.recipes:
            return self.recipes[task]
        if self.recipes or self.needs_recipe:
            raise ConfigError(f"scale {self.name!r} has no recipe for task {task!r}: {why_no_recipe(task)}")
        return None

    def with_recipe(self, task: str, recipe: Recipe) -> Scale:
        """This scale with `recipe` as the task's (a search's candidate)."""
        return replace(self, recipes={**self.recipes, task: recipe})

    def digits(self, n: int) -> int:
        """A paper digit count at this scale; strictly increasing up to the knee, then compressed."""
        if self.digit_stride == 1 or n <= self.digit_knee:
            return n
        return self.digit_knee + math.ceil((n - self.digit_knee) / self.digit_stride)

    def samples(self, n: int) -> int:
        scaled = max(1, round(n * self.sample_fraction))
        return min(scaled, self.max_samples) if self.max_samples else scaled

    def dialogue_samples(self, n: int, task: str, name: str) -> int:
        """A count of the dialogue task's data (`data.<name>`); other tasks scale it like any data."""
        if self.dialogue_fraction is None or not get_task(task).reads(name):
            return self.samples(n)
        return max(1, round(n * self.dialogue_fraction)) if n else 0

    def shrink(self, cfg: ExperimentConfig, scale_digits: bool = True) -> ExperimentConfig:
        """`cfg` (a paper-scale point) with this scale's factors and settings: sample counts, learning rate,
        digit counts, capped epochs (evaluations in their place), the step budget and the fixed overrides."""
        d, t = cfg.data, cfg.train
        changes: dict[str, Any] = {
            "data.train_samples": self.samples(d.train_samples),
            "data.mix_samples": self.dialogue_samples(d.mix_samples, d.task, "mix_samples"),
            "data.dialogue_easy": self.dialogue_samples(d.dialogue_easy, d.task, "dialogue_easy"),
            "data.dialogue_hard": self.dialogue_samples(d.dialogue_hard, d.task, "dialogue_hard"),
            "train.lr": t.lr * self.lr_factor,
        }
        if scale_digits:
            changes["data.min_digits"] = self.digits(d.min_digits)
            changes["data.max_digits"] = self.digits(d.max_digits)
            changes["data.test_digits"] = sorted({self.digits(n) for n in d.test_digits})
        epochs = min(t.epochs, self.max_epochs) if self.max_epochs else t.epochs
        changes["train.epochs"] = epochs
        changes["train.eval_epochs"] = _moved_evaluations(t.eval_epochs, t.epochs, epochs)
        if self.steps:
            changes["train.max_steps"] = self.steps
        return cfg.with_overrides(changes).with_overrides(dict(self.overrides))

    def fit_epochs(self, cfg: ExperimentConfig, paper_cfg: ExperimentConfig) -> ExperimentConfig:
        """cfg with the epochs its `train.max_steps` needs; the evaluation epochs keep their place."""
        t = paper_cfg.train
        batches = math.ceil(train_size(cfg.data) / cfg.train.batch_size)
        epochs = epochs_for_steps(cfg.train.max_steps, batches, cfg.train.epochs_per_pass)
        return cfg.with_overrides(
            {
                "train.epochs": epochs,
                "train.eval_epochs": _moved_evaluations(t.eval_epochs, t.epochs, epochs),
                # small data sets make hundreds of short epochs: keep about ten checkpoints, not one an epoch
                "train.checkpoint_every": max(1, epochs // 10),
            }
        )


def _moved_evaluations(eval_epochs: list[int], paper_epochs: int, epochs: int) -> list[int]:
    """The paper's evaluation epochs at the same fraction of a run of `epochs` epochs."""
    return sorted({min(epochs, max(1, round(e * epochs / paper_epochs))) for e in eval_epochs})


#: the paper scale's batch widths (the longest lines are ~310 tokens): a batch carries under 16-32 padding
#: tokens a line and a trial records a handful of CUDA graphs
PAPER_BUCKET_LENGTHS = [*range(16, 257, 16), *range(288, 513, 32)]

SCALES: dict[str, Scale] = {
    scale.name: scale
    for scale in [
        Scale(
            name="paper",
            description="the paper's setup: GPT2-small (124M), full samples and epochs; needs GPUs",
            # what the paper does not state follows the Hugging Face defaults (docs/SETTINGS.md);
            # checkpoints every 5 epochs: GPT2-small with AdamW state is ~1.5 GB one
            overrides={
                "model.preset": "gpt2-small",
                "model.pretrained": "gpt2",
                "model.tokenizer": "pretrained",
                "model.dropout": 0.1,
                "train.loss_on": "all",
                "train.adam_beta1": 0.9,
                "train.adam_beta2": 0.999,
                "train.adam_eps": 1e-8,
                "train.weight_decay": 0.0,
                "train.schedule": "linear",
                "train.warmup_steps": 0,
                "train.warmup_ratio": 0.0,
                "train.checkpoint_every": 5,
                # the same computation as a few fixed batch shapes, each replayed as a CUDA graph
                "train.compile": True,
                "train.compile_mode": "reduce-overhead",
                "train.bucket_lengths": PAPER_BUCKET_LENGTHS,
            },
            needs_gpu=True,
        ),
        Scale(
            name="cpu",
            description="laptop-CPU miniature: tiny model, answer-only loss, 1/30 samples, 3,000 steps",
            # the loss stays the config default (answer tokens only): measured to learn in fewer steps
            overrides={
                "model.preset": "tiny",
                "train.batch_size": 64,
                "train.warmup_ratio": 0.05,
                "train.eval_batch_size": 256,
                "train.log_every_steps": 20,
                # 100 problems a cell, as the paper: the competence gate reads each cell, and at 20 a model
                # right on 95% of a cell's problems falls below 0.9 on 1 cell in 13; decoding costs seconds
                "data.test_per_cell": 100,
                "model.n_hash": 8,
            },
            sample_fraction=1 / 30,
            max_samples=10_000,
            # a thirtieth of the dialogues left their language unlearned (docs/RESULTS.md, nl_mix)
            dialogue_fraction=1.0,
            max_epochs=10,
            # one budget for every task (docs/RESULTS.md, "Steps to competence")
            steps=3000,
            lr_factor=50.0,
            digit_knee=2,
            digit_stride=3,
        ),
        Scale(
            name="gpu",
            description="one lent GPU: the paper's digit counts and samples, a 6-layer GPT-2, "
            "a step budget per task; its budgets come from pre-searches on seeds from 100 up",
            # The paper's digit and sample counts are kept, so its tables compare cell for cell. gpt2-mini
            # is launch-bound like the tiny model on a GPU, so its width and depth cost little; the
            # pre-searches (docs/results/gpu_plan.yaml) chose batch 512 and 8,000 steps.
            overrides={
                "model.preset": "gpt2-mini",
                "model.n_hash": 8,
                "train.batch_size": 512,
                "train.warmup_ratio": 0.05,
                "train.eval_batch_size": 1000,
                "train.log_every_steps": 50,
            },
            max_samples=300_000,
            dialogue_fraction=1.0,
            steps=8000,
            lr_factor=50.0,
            presearch_seeds=(100, 101),
            # measured side by side on one GPU (docs/results/gpu/)
            trials_per_gpu=6,
            needs_gpu=True,
        ),
        Scale(
            name="smoke",
            description="seconds a trial, for tests: nano model, a few hundred samples, 2 epochs",
            overrides={
                "model.preset": "nano",
                "model.n_positions": 512,
                "train.loss_on": "all",
                "train.batch_size": 32,
                "train.eval_batch_size": 64,
                "train.log_every_steps": 2,
                "data.test_per_cell": 3,
            },
            sample_fraction=1 / 1000,
            max_samples=200,
            max_epochs=2,
            lr_factor=100.0,
            digit_knee=1,
            digit_stride=4,
        ),
    ]
}

#: the cpu miniature where it learns (docs/RESULTS.md, "A cpu recipe per task"; experiments/recipes.py)
SCALES["cpu_recipe"] = replace(
    SCALES["cpu"],
    name="cpu_recipe",
    description="the cpu miniature at each task's pre-searched recipe: the paper's sample counts, bf16, "
    "a step budget per task chosen on seeds 100+",
    steps=0,
    needs_recipe=True,
    presearch_seeds=(100, 101, 102),
)


def get_scale(name: str) -> Scale:
    """The scale called `name`; an unknown name fails listing the valid ones."""
    if name not in SCALES:
        raise ConfigError(f"unknown scale {name!r}; choose one of: {', '.join(SCALES)}")
    return SCALES[name]

"""Teacher-forced exact match (arith/training/forced.py), the measure position coupling's authors report,
against greedy decoding on a model trained for seconds: a reply greedy decoding writes right is right
under teacher forcing, and an answer with one digit changed is never."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from arith.config import ExperimentConfig
from arith.data.tasks import render_example
from arith.model.gpt import build_model
from arith.model.tokenizer import build_tokenizer, encode_examples
from arith.training.decoding import generate_replies, is_right
from arith.training.forced import forced_correct


@pytest.fixture(scope="module")
def trained():
    """A 2-layer GPT-2 given 400 steps on every 1-digit sum, written least significant digit first."""
    cfg = ExperimentConfig().with_overrides(
        {"model.preset": "nano", "model.n_layer": 2, "model.n_positions": 32, "data.format": "lsd_first"}
    )
    examples = [render_example("add", "lsd_first", a, b) for a in range(10) for b in range(10)]
    tokenizer = build_tokenizer([e.prompt + e.answer for e in examples])
    torch.manual_seed(0)
    model = build_model(cfg.model, tokenizer, cfg.data)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    lines = encode_examples(tokenizer, examples)
    width = max(len(ids) for ids, _ in lines)
    ids = torch.tensor([line + [tokenizer.eos_token_id] * (width - len(line)) for line, _ in lines])
    mask = torch.tensor([[1] * len(line) + [0] * (width - len(line)) for line, _ in lines])
    answer = torch.tensor([[int(start <= i < len(line)) for i in range(width)] for line, start in lines])
    model.train()
    for _ in range(400):
        model(ids, mask, answer).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval(), tokenizer, examples


def test_a_reply_greedy_decoding_writes_right_is_right_under_teacher_forcing(trained):
    model, tokenizer, examples = trained
    replies, ended = generate_replies(model, tokenizer, examples, batch_size=32, seed=0)
    greedy = [is_right(e, r, d) for e, r, d in zip(examples, replies, ended, strict=True)]
    forced = forced_correct(model, tokenizer, examples, batch_size=32)
    assert sum(greedy) >= 50  # a model that learned something, so the implication is tested on many
    assert all(f for g, f in zip(greedy, forced, strict=True) if g)


def test_an_answer_with_one_digit_changed_is_never_right_under_teacher_forcing(trained):
    model, tokenizer, examples = trained
    wrong = []
    for e in examples:
        digit = str((int(e.answer.strip()[0]) + 1) % 10)
        wrong.append(dataclasses.replace(e, answer=" " + digit + e.answer.strip()[1:]))
    assert not any(forced_correct(model, tokenizer, wrong, batch_size=7))

"""length_gen's schemes as their papers define them: where each places the digits of a line, built at the
experiment's own trial configs (trained on 1-5 digits), and what happens at 3x the training length and
past the model's reach."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch

from arith.config import ExperimentConfig
from arith.data.datasets import test_examples
from arith.data.tasks import render_example
from arith.model.gpt import ArithModel, build_model
from arith.model.tokenizer import build_tokenizer, encode_example
from arith.training.evaluate import evaluate
from experiments.catalog.length_gen import TESTED, TRAINED
from sweeps.grids import points

SCHEMES = ("learned", "none", "random_embed", "randomized", "abacus", "coupling")


@pytest.fixture(scope="module")
def configs() -> dict[str, ExperimentConfig]:
    """length_gen's trial of each scheme at --scale cpu, seed 0."""
    return {cfg.model.position: cfg for cfg in points("length_gen", "cpu")}


def built(cfg: ExperimentConfig, *lines: tuple[int, int]) -> tuple[ArithModel, object, list]:
    examples = [
        render_example("add", cfg.data.format, a, b, max_digits=cfg.data.max_digits) for a, b in lines
    ]
    tokenizer = build_tokenizer([e.prompt + e.answer for e in examples])
    torch.manual_seed(0)
    return build_model(cfg.model, tokenizer, cfg.data).eval(), tokenizer, examples


def placed(cfg: ExperimentConfig, a: int, b: int) -> tuple[list[str], list[int], list[int]]:
    """A line's tokens, the position ids GPT-2 reads for them and, for Abacus, each digit's table index."""
    model, tokenizer, (example,) = built(cfg, (a, b))
    ids, _ = encode_example(tokenizer, example)
    tokens = torch.tensor([ids])
    state = model.draw_positions(torch.ones_like(tokens))
    _, position_ids, _ = model.scheme.embed(tokens, model.lm.transformer.wte(tokens), state, 0)
    index = model.scheme.digit_slots(tokens, state)[1][0].tolist() if cfg.model.position == "abacus" else []
    return tokenizer.convert_ids_to_tokens(ids), position_ids[0].tolist(), index


def by_significance(tokens: list[str], values: list[int], orders: tuple[str, str, str]) -> list[dict]:
    """For each number of the line (a, b, the sum), {significance: value} of its digits, given which way
    each number is written ("msd" or "lsd" first)."""
    numbers, run = [], []
    for token, value in zip(tokens, values, strict=True):
        if token.strip().isdigit():
            run.append(value)
        elif run:
            numbers.append(run)
            run = []
    assert len(numbers) == 3, tokens
    return [
        {(len(n) - 1 - i if order == "msd" else i): v for i, v in enumerate(n)}
        for n, order in zip(numbers, orders, strict=True)
    ]


def test_the_grid_pairs_each_scheme_with_its_papers_format(configs):
    assert set(configs) == set(SCHEMES)
    assert configs["abacus"].data.format == "lsd_first"  # McLeish et al.: every number reversed
    assert configs["coupling"].data.format == "line_padding_reverse"  # Cho et al.: padded, sum reversed
    for cfg in configs.values():
        assert (cfg.data.min_digits, cfg.data.max_digits) == (1, TRAINED)
        assert cfg.data.test_digits == list(range(1, TESTED + 1)) and TESTED >= 3 * TRAINED
        assert cfg.data.test_per_cell >= 100


def test_coupling_gives_digits_of_equal_significance_one_id(configs):
    tokens, ids, _ = placed(configs["coupling"], 98765, 4321)
    a, b, total = by_significance(tokens, ids, ("msd", "msd", "lsd"))
    assert len(a) == len(b) == 5 and len(total) == 6  # b zero-padded to a's length, the sum to one more
    for k in range(5):
        assert a[k] == b[k] == total[k], (k, tokens, ids)
    assert sorted(a.values()) == list(range(2, 7))  # offset 0 at test: significance k gets 2 + k


def test_abacus_gives_digits_of_equal_significance_one_index(configs):
    tokens, _, index = placed(configs["abacus"], 98765, 4321)
    a, b, total = by_significance(tokens, index, ("lsd", "lsd", "lsd"))
    for k in range(2):
        assert a[k] == b[k] == total[k] == k + 1, (k, tokens, index)
    assert [a[k] for k in range(5)] == [1, 2, 3, 4, 5] and total[5] == 6


@pytest.mark.parametrize("scheme", ["learned", "none", "random_embed", "randomized"])
def test_the_other_schemes_number_a_line_in_order_within_the_table(configs, scheme):
    _, ids, _ = placed(configs[scheme], 98765, 4321)
    assert all(later > earlier for earlier, later in itertools.pairwise(ids)), ids
    assert max(ids) < configs[scheme].model.n_positions


@pytest.mark.parametrize("scheme", SCHEMES)
def test_each_scheme_sized_for_the_training_length_evaluates_3x_and_the_longest_test(configs, scheme):
    """The test protocol itself at 3x the training length and at the longest: equal lengths, and the
    longest against a shorter operand (the mixed cell); an untrained model answers, it need not be right."""
    cfg = configs[scheme]
    examples = test_examples(replace(cfg.data, test_digits=[3 * TRAINED, TESTED], test_per_cell=2))
    tokenizer = build_tokenizer([e.prompt + e.answer for e in examples])
    model = build_model(cfg.model, tokenizer, cfg.data).eval()
    result = evaluate(model, tokenizer, examples, batch_size=4)
    cells = {(c.context, c.col_digits) for c in result.cells}
    assert cells == {("main", 3 * TRAINED), ("main", TESTED), ("mixed", TESTED)}
    assert result.n_samples == 6


def test_an_input_past_the_models_reach_is_refused_in_one_line(configs):
    cfg = configs["coupling"]
    longest = cfg.model.n_positions  # a sum of this many digits has ids past the table
    model, tokenizer, (example,) = built(cfg, (10**longest - 1, 1))
    ids, _ = encode_example(tokenizer, example)
    tokens = torch.tensor([ids])
    with pytest.raises(ValueError) as refused:
        model(tokens, torch.ones_like(tokens))
    message = str(refused.value)
    assert "\n" not in message and "n_positions=128" in message and "cannot place" in message

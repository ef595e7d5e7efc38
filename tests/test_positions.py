"""Position schemes: what each one feeds GPT-2, and the properties the paper relies on."""

from __future__ import annotations

import pytest
import torch

from arith.config import POSITION_SCHEMES, DataConfig, ModelConfig
from arith.model import build_model
from arith.positions import Abacus, PositionState, digit_token_ids, make_scheme, rank_ids
from arith.tokenizer import build_tokenizer

SIZES = {"n_embd": 32, "n_head": 4, "n_positions": 64, "vocab_size": 40}


#: the task the models are built for (position coupling reads its digit order; the others ignore it)
DATA = DataConfig(task="add", format="padding_reverse")


def tokenizer():
    """The project's digit-aware tokenizer (one token per spaced digit)."""
    return build_tokenizer()


def tiny_model(position: str, **overrides):
    torch.manual_seed(0)
    cfg = ModelConfig(preset="nano", n_positions=64, position=position, **overrides)
    return build_model(cfg, tokenizer(), DATA).eval()


def encode(tok, text: str) -> torch.Tensor:
    return torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])


def test_rank_ids_number_real_tokens_whatever_the_padding():
    left = torch.tensor([[0, 0, 1, 1, 1]])
    right = torch.tensor([[1, 1, 1, 0, 0]])
    assert rank_ids(left).tolist() == [[0, 0, 0, 1, 2]]
    assert rank_ids(right).tolist() == [[0, 1, 2, 2, 2]]


@pytest.mark.parametrize("position", ["none", "random_embed", "abacus"])
def test_schemes_without_wpe_zero_and_freeze_it_after_build(position):
    wpe = tiny_model(position).lm.transformer.wpe.weight
    assert not wpe.requires_grad
    assert torch.count_nonzero(wpe) == 0


def test_learned_keeps_a_trainable_wpe():
    wpe = tiny_model("learned").lm.transformer.wpe.weight
    assert wpe.requires_grad and torch.count_nonzero(wpe) > 0


def test_none_has_no_position_information():
    """Shuffling the tokens before the last one leaves the last position's output unchanged.

    One layer: there the last token attends to the others as a set, so only a position embedding
    could tell the orders apart. (Deeper causal stacks see order through their earlier tokens'
    causal prefixes, with or without a position embedding.)"""
    tok = tokenizer()
    ids = encode(tok, " 1 2 3 + 4 5 6 =")
    shuffled = torch.cat(
        [
            ids[:, :-1][:, torch.randperm(ids.shape[1] - 1, generator=torch.Generator().manual_seed(1))],
            ids[:, -1:],
        ],
        1,
    )
    assert not torch.equal(ids, shuffled)
    mask = torch.ones_like(ids)
    for position, invariant in (("none", True), ("learned", False)):
        model = tiny_model(position, n_layer=1)
        with torch.no_grad():
            last = model(ids, mask).logits[0, -1]
            last_shuffled = model(shuffled, mask).logits[0, -1]
        assert torch.allclose(last, last_shuffled, atol=1e-5) == invariant, position


def test_random_embed_overwrites_the_last_dims_of_each_head_with_the_tag():
    scheme = make_scheme("random_embed", **SIZES, n_hash=8)
    mask = torch.ones(2, 5, dtype=torch.long)
    state = scheme.draw(mask, torch.Generator().manual_seed(0))
    embeds = torch.randn(2, 5, 32)
    inputs, _, _ = scheme.embed(torch.zeros(2, 5, dtype=torch.long), embeds, state)
    heads, original = inputs.view(2, 5, 4, 8), embeds.view(2, 5, 4, 8)
    assert torch.equal(heads[..., :6], original[..., :6])
    assert torch.equal(heads[..., 6:], state.tags.view(2, 5, 4, 2))


def test_random_embed_decodes_only_from_the_non_hash_dims():
    model = tiny_model("random_embed", n_hash=16)
    ids = encode(tokenizer(), " 1 2 + 3 4 =")
    mask = torch.ones_like(ids)
    state = model.draw_positions(mask, torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(ids, mask, positions=state).logits
        head_dim, per_head = 64 // 2, 16 // 2
        hash_dims = torch.cat(
            [torch.arange(h * head_dim + head_dim - per_head, (h + 1) * head_dim) for h in range(2)]
        )
        model.lm.lm_head.weight[:, hash_dims] += (
            5.0  # also moves the tied wte: hash dims of the input are overwritten
        )
        after = model(ids, mask, positions=state).logits
    assert torch.allclose(before, after, atol=1e-5)
    assert model.scheme.decode_mask.sum() == 64 - 16


def test_random_embed_redraws_tags_each_epoch_deterministically():
    model = tiny_model("random_embed").train()
    mask = torch.ones(1, 6, dtype=torch.long)
    model.new_epoch(1)
    first = model.draw_positions(mask).tags
    model.new_epoch(2)
    second = model.draw_positions(mask).tags
    model.new_epoch(1)
    again = model.draw_positions(mask).tags
    assert not torch.equal(first, second)
    assert torch.equal(first, again)


def test_randomized_ids_are_sorted_distinct_and_in_range():
    scheme = make_scheme("randomized", **SIZES, randomized_max_position=50)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    state = scheme.draw(mask, torch.Generator().manual_seed(0))
    for row, real in zip(state.position_ids, mask.bool(), strict=True):
        ids = row[real]
        assert torch.all(ids[1:] > ids[:-1]) and ids.min() >= 0 and ids.max() < 50
        assert torch.all(row[~real] == 0)
    redraw = scheme.draw(mask, torch.Generator().manual_seed(0)).position_ids
    assert torch.equal(state.position_ids, redraw)
    assert not torch.equal(
        state.position_ids, scheme.draw(mask, torch.Generator().manual_seed(1)).position_ids
    )


def test_randomized_range_must_fit_the_position_table():
    with pytest.raises(ValueError, match="n_positions"):
        make_scheme("randomized", **SIZES, randomized_max_position=65)


def test_abacus_numbers_each_digit_within_its_own_number():
    tok = tokenizer()
    scheme = make_scheme("abacus", **{**SIZES, "vocab_size": len(tok)}, digit_ids=digit_token_ids(tok)).eval()
    ids = encode(tok, " 1 2 + 3 4 5 = 9")
    state = scheme.draw(torch.ones_like(ids))
    with torch.no_grad():
        scheme.embedding.weight.copy_(torch.arange(scheme.embedding.num_embeddings)[:, None].float())
        inputs, _, _ = scheme.embed(ids, torch.zeros(1, ids.shape[1], 32), state)
    assert inputs[0, :, 0].tolist() == [1, 2, 0, 1, 2, 3, 0, 1]


def test_abacus_offsets_only_in_training_and_carries_runs_across_decoding_steps():
    tok = tokenizer()
    scheme: Abacus = make_scheme(
        "abacus", **{**SIZES, "vocab_size": len(tok)}, digit_ids=digit_token_ids(tok)
    )
    ids = encode(tok, " 7 + 1 2 3 4")
    mask = torch.ones_like(ids)
    scheme.train()
    offsets = scheme.draw(mask.repeat(64, 1), torch.Generator().manual_seed(0)).offset
    assert offsets.min() >= 0 and offsets.max() <= 20 and len(set(offsets.tolist())) > 1
    scheme.eval()
    state = scheme.draw(mask)
    assert state.offset.tolist() == [0]
    embeds = torch.randn(1, ids.shape[1], 32)
    whole, _, _ = scheme.embed(ids, embeds, state)
    pieces, step_state = [], state
    for column in range(ids.shape[1]):
        piece, _, step_state = scheme.embed(
            ids[:, column : column + 1], embeds[:, column : column + 1], step_state, column
        )
        pieces.append(piece)
    assert torch.allclose(whole, torch.cat(pieces, 1))


def test_digit_tokens_are_the_spaced_digits():
    tok = tokenizer()
    digits = {
        tok.convert_tokens_to_string([t]).strip() for t in tok.convert_ids_to_tokens(digit_token_ids(tok))
    }
    assert digits == set("0123456789")


def test_unknown_scheme_names_the_valid_ones():
    with pytest.raises(ValueError, match="learned, none, random_embed, randomized, abacus"):
        make_scheme("sinusoidal", **SIZES)


@pytest.mark.parametrize("n_hash", [6, 32])
def test_random_embed_rejects_impossible_hash_sizes(n_hash):
    with pytest.raises(ValueError, match="n_hash"):
        make_scheme("random_embed", **SIZES, n_hash=n_hash)


def test_every_registered_scheme_builds():
    for position in POSITION_SCHEMES:
        assert tiny_model(position).scheme.name == position


def test_state_refuses_columns_beyond_its_draw():
    scheme = make_scheme("learned", **SIZES)
    state: PositionState = scheme.draw(torch.ones(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="3 columns"):
        scheme.embed(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, 32), state, start=2)

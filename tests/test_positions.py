"""Position schemes: what each one feeds GPT-2, and the properties the paper relies on."""

from __future__ import annotations

import pytest
import torch

from arith.config import DataConfig, ModelConfig
from arith.model.gpt import build_model
from arith.model.positions import Abacus, PositionState, digit_token_ids, rank_ids
from arith.model.schemes import POSITION_SCHEMES, make_scheme
from arith.model.tokenizer import build_tokenizer
from arith.validation import validate

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


# --- position coupling -------------------------------------------------------------------------------------


def coupling(tok, order=("msd", "msd", "lsd"), **settings):
    return make_scheme(
        "coupling",
        **{**SIZES, "vocab_size": len(tok)},
        digit_ids=digit_token_ids(tok),
        digit_order=order,
        **settings,
    )


def coupled_ids(scheme, ids, mask=None, start=0, state=None):
    state = state or scheme.draw(torch.ones_like(ids) if mask is None else mask)
    _, position_ids, state = scheme.embed(ids, torch.zeros(*ids.shape, 32), state, start)
    return position_ids, state


@pytest.mark.parametrize(
    ("task", "fmt", "a", "b", "max_digits", "expected"),
    [
        # 123 + 045 = 0168 reversed: significance 2 1 0 | 2 1 0 | 0 1 2 3, ids = 2 + significance;
        # the operator after an operand gets 1, one below its least significant digit (Cho et al.)
        ("add", "padding_reverse", 123, 45, 3, [4, 3, 2, 1, 4, 3, 2, 1, 2, 3, 4, 5]),
        # 12 * 345 = 4140 reversed, operands unpadded: each operand's length gives its significances
        ("mul", "reverse_product", 12, 345, None, [3, 2, 1, 4, 3, 2, 1, 2, 3, 4, 5]),
        # 07 * 21 = 0147 reversed and padded to four digits
        ("mul", "padding_reverse", 7, 21, 2, [3, 2, 1, 3, 2, 1, 2, 3, 4, 5]),
    ],
)
def test_coupling_gives_digits_of_equal_significance_one_id(task, fmt, a, b, max_digits, expected):
    from arith.data.tasks import get_task, render_line

    tok = tokenizer()
    scheme = coupling(tok, get_task(task).digit_order(fmt)).eval()
    ids = encode(
        tok, " " + render_line(task, fmt, a, b, **({"max_digits": max_digits} if max_digits else {}))
    )
    position_ids, _ = coupled_ids(scheme, torch.cat([ids, torch.tensor([[tok.eos_token_id]])], 1))
    assert position_ids[0].tolist() == [*expected, 0]  # eos after the reversed answer gets 0


def test_coupling_offsets_digit_ids_only_in_training():
    tok = tokenizer()
    scheme = coupling(tok, coupling_max_offset=20)
    ids = encode(tok, " 1 2 + 3 4 = 6 4 0").repeat(64, 1)
    scheme.train()
    state = scheme.draw(torch.ones_like(ids), torch.Generator().manual_seed(0))
    offsets = state.offset
    assert offsets.min() >= 0 and offsets.max() <= 20 and len(set(offsets.tolist())) > 1
    trained, _ = coupled_ids(scheme, ids, state=state)
    scheme.eval()
    tested, _ = coupled_ids(scheme, ids)
    coupled = tested > 0  # digits and the operators after the operands move with the offset
    assert torch.equal(trained[coupled], (tested + offsets[:, None])[coupled])
    assert torch.equal(trained[~coupled], tested[~coupled])


def test_coupling_is_the_same_token_by_token_as_whole_and_under_left_padding():
    """Decoding embeds the prompt at once, then one token per step: the carried run and number count
    must give the ids a whole-line forward gives; pads before the prompt change nothing."""
    tok = tokenizer()
    scheme = coupling(tok).eval()
    ids = encode(tok, " 9 8 7 + 0 1 2 = 9 9 9 0")
    whole, _ = coupled_ids(scheme, ids)
    prompt = 8  # up to and including " ="
    pieces, state = coupled_ids(scheme, ids[:, :prompt], state=scheme.draw(torch.ones_like(ids)))
    pieces = [pieces]
    for column in range(prompt, ids.shape[1]):
        piece, state = coupled_ids(scheme, ids[:, column : column + 1], start=column, state=state)
        pieces.append(piece)
    assert torch.equal(whole, torch.cat(pieces, 1))
    padded = torch.cat([torch.full((1, 3), tok.pad_token_id), ids], 1)
    mask = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones_like(ids)], 1)
    left, _ = coupled_ids(scheme, padded, mask)
    assert torch.equal(left[:, 3:], whole) and left[:, :3].eq(0).all()


def test_coupling_needs_the_task_s_digit_order():
    tok = tokenizer()
    with pytest.raises(ValueError, match="digit order"):
        coupling(tok, order=())
    with pytest.raises(ValueError, match="needs the task"):
        build_model(ModelConfig(preset="nano", n_positions=64, position="coupling"), tok)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"data.task": "add", "data.format": "basic"}, "least significant digit first"),
        (
            {"data.task": "mul", "data.format": "padding", "data.max_digits": 5},
            "least significant digit first",
        ),
        ({"data.task": "reverse", "data.format": "basic"}, "does not define"),
        ({"data.task": "add_scratchpad", "data.format": "basic"}, "does not define"),
        ({"data.task": "dialogue", "data.format": "basic"}, "does not define"),
        ({"model.init": "pretrained"}, "one token per digit"),
        ({"model.n_positions": 20, "data.max_digits": 5}, "below model.n_positions=20"),
        ({"model.coupling_max_offset": -1}, ">= 0"),
    ],
)
def test_coupling_refuses_configs_without_a_digit_significance(overrides, message):
    from arith.config import ConfigError, ExperimentConfig

    cfg = ExperimentConfig().with_overrides({"model.position": "coupling", **overrides})
    with pytest.raises(ConfigError, match=message):
        validate(cfg)


def test_coupling_accepts_reversed_answers():
    from arith.config import ExperimentConfig

    for task, fmt in [("add", "padding_reverse"), ("mul", "padding_reverse"), ("mul", "reverse_product")]:
        overrides = {"model.position": "coupling", "data.task": task, "data.format": fmt}
        validate(ExperimentConfig().with_overrides(overrides))


# --- the registry ------------------------------------------------------------------------------------------


def test_each_scheme_s_settings_are_model_config_fields_with_their_defaults():
    import dataclasses

    from arith.model.schemes import SCHEMES

    assert tuple(SCHEMES) == POSITION_SCHEMES
    model_fields = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    for scheme in SCHEMES.values():
        for f in dataclasses.fields(scheme.Settings):
            assert model_fields[f.name] == f.default, (scheme.name, f.name)
    assert ModelConfig(preset="tiny").resolved_n_hash() == 32  # random_embed's default: n_embd // 4


def test_a_scheme_is_one_class_plus_one_registration(monkeypatch):
    """The recipe of docs/DESIGN.md: a new scheme class and its entry in SCHEMES make it a valid
    `model.position` for config validation and the model (here: learned ids counted from the end)."""
    from arith.config import ExperimentConfig
    from arith.model import positions, schemes

    class FromTheEnd(positions.PositionScheme):
        name = "from_the_end"
        uses_wpe = True

        def draw(self, attention_mask, generator=None):
            ranks = positions.rank_ids(attention_mask)
            ids = attention_mask.sum(-1, keepdim=True) - 1 - ranks
            return positions.PositionState(position_ids=torch.where(attention_mask.bool(), ids, 0))

    monkeypatch.setitem(schemes.SCHEMES, "from_the_end", FromTheEnd)
    validate(ExperimentConfig().with_overrides({"model.position": "from_the_end"}))
    model = tiny_model("from_the_end")
    ids = encode(tokenizer(), " 1 2 + 3 =")
    assert model.scheme.name == "from_the_end"
    assert model(ids, torch.ones_like(ids)).logits.shape[:2] == ids.shape

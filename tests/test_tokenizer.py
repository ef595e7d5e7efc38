"""The digit-aware tokenizer splits like GPT-2 on the paper's data, covers any text, and saves/loads."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from arith.config import ModelConfig
from arith.data.dialogue import generate_dialogues
from arith.data.sampling import generator
from arith.data.tasks import render_example
from arith.model.tokenizer import EOS, PAD, build_tokenizer, encode_example, encode_examples, tokenizer_for


@pytest.fixture(scope="module")
def dialogues():
    return generate_dialogues(generator(0, "dialogue"), 300, 30)


@pytest.fixture(scope="module")
def tokenizer(dialogues):
    return build_tokenizer([e.text for e in dialogues])


def tokens(tok, text: str) -> list[str]:
    return tok.convert_ids_to_tokens(tok.encode(text, add_special_tokens=False))


def test_digits_with_their_space_are_one_token(tokenizer):
    assert tokens(tokenizer, " 7 3 8 6 6 * 0 1 0 0 1 # 6 6") == (
        [" 7", " 3", " 8", " 6", " 6", " *", " 0", " 1", " 0", " 0", " 1", " #", " 6", " 6"]
    )
    assert tokens(tokenizer, " 4 8 + 4 = 5 2") == [" 4", " 8", " +", " 4", " =", " 5", " 2"]


def test_extra_spaces_are_tokens_of_their_own(tokenizer):
    assert tokens(tokenizer, " 2  3 9 :  0 +") == [" 2", " ", " 3", " 9", " :", " ", " 0", " +"]
    assert tokens(tokenizer, " 4 8     4") == [" 4", " 8", " ", " ", " ", " ", " 4"]


def test_dialogue_words_become_tokens(tokenizer):
    assert tokens(tokenizer, " Student: Hi, what is the sum of 4 8?") == (
        [" Student", ":", " Hi", ",", " what", " is", " the", " sum", " of", " 4", " 8", "?"]
    )
    assert " Teacher" in tokens(tokenizer, " Teacher: ok")


def test_unknown_words_and_any_character_still_encode(tokenizer):
    for text in [" Zyzzyva quux", " café ☃ naïve", "\ttab\nnewline", string.printable]:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert tokenizer.decode(ids) == text
        assert tokenizer.unk_token_id is None or tokenizer.unk_token_id not in ids
    # every printable ASCII character has a token of its own
    for ch in string.printable.strip():
        assert len(tokens(tokenizer, ch)) == 1


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="ascii"), max_size=80))
def test_round_trip(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text


def test_special_tokens_and_determinism(tokenizer, dialogues):
    assert tokenizer.eos_token == EOS and tokenizer.pad_token == PAD
    assert tokenizer.eos_token_id != tokenizer.pad_token_id
    again = build_tokenizer([e.text for e in dialogues])
    assert again.get_vocab() == tokenizer.get_vocab()
    assert len(build_tokenizer()) < len(tokenizer) < 3000


def test_save_and_load(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = " Student: what is 4 8 +  5 2? Teacher: 1 0 0"
    assert loaded.encode(text) == tokenizer.encode(text)
    assert (loaded.eos_token_id, loaded.pad_token_id) == (tokenizer.eos_token_id, tokenizer.pad_token_id)


@pytest.mark.parametrize(
    "example",
    [
        render_example("mul", "padding_reverse", 73866, 1001, max_digits=5),
        render_example("add_scratchpad", "random_space", 239, 821, rng=np.random.default_rng(0)),
        render_example("add", "random_space", 48, 4, spaces=(3, 2)),
        render_example("dialogue", "basic", 48, 52),
    ],
    ids=lambda e: f"{e.task}-{e.format}",
)
def test_encode_example_marks_the_answer(tokenizer, example):
    ids, start = encode_example(tokenizer, example)
    assert ids[-1] == tokenizer.eos_token_id
    # prompt and answer tokenize the same apart as together, so the split is exact
    assert ids[:-1] == tokenizer.encode(" " + example.text, add_special_tokens=False)
    assert tokenizer.decode(ids[:start]) == " " + example.prompt
    assert tokenizer.decode(ids[start:-1]) == example.answer
    assert encode_examples(tokenizer, [example, example]) == [(ids, start), (ids, start)]


def tiny_gpt2_tokenizer(path) -> None:
    """A byte-level BPE saved the way GPT-2's is (no hub: the test builds its own)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)

    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(["Student: what is 4 8 + 5 2? Teacher: 1 0 0"] * 20, trainer)
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS).save_pretrained(path)


def test_tokenizer_for(tmp_path, dialogues):
    scratch = tokenizer_for(ModelConfig(init="random"), [e.text for e in dialogues])
    assert " Teacher" in scratch.get_vocab()
    tiny_gpt2_tokenizer(tmp_path)
    pretrained = tokenizer_for(ModelConfig(init="pretrained", pretrained=str(tmp_path)))
    assert pretrained.pad_token == pretrained.eos_token == EOS  # GPT-2 pads with end-of-text
    ids, start = encode_example(pretrained, render_example("add", "basic", 48, 4))
    assert pretrained.decode(ids[start:-1]) == " 5 2" and ids[-1] == pretrained.eos_token_id


def test_a_random_init_model_takes_the_pretrained_tokenizer_when_asked(tmp_path, capsys):
    """model.tokenizer=pretrained (the paper scale): model.pretrained's tokenizer for random init too."""
    from arith.config import ModelConfig
    from arith.model.tokenizer import build_tokenizer, tokenizer_for

    saved = build_tokenizer(["Teacher: hello"])
    saved.save_pretrained(tmp_path)
    cfg = ModelConfig(init="random", tokenizer="pretrained", pretrained=str(tmp_path))
    loaded = tokenizer_for(cfg, ["other words"])
    assert loaded.get_vocab() == saved.get_vocab()


def test_the_pretrained_tokenizer_falls_back_to_the_digit_aware_one_saying_so(capsys):
    from arith.config import ModelConfig
    from arith.model.tokenizer import build_tokenizer, tokenizer_for

    cfg = ModelConfig(init="random", tokenizer="pretrained", pretrained="/no/such/gpt2")
    tok = tokenizer_for(cfg, ["Teacher: hello"])
    assert tok.get_vocab() == build_tokenizer(["Teacher: hello"]).get_vocab()
    assert "cannot load the tokenizer of '/no/such/gpt2'" in capsys.readouterr().err

"""The digit-aware tokenizer for models trained from scratch; GPT-2's for pretrained ones.

It splits text as GPT-2's BPE splits the paper's data: a digit with its leading space is one token (" 7"),
an extra space a token of its own (random spaces stay visible), frequent words of the training texts word
tokens (" Teacher"); unseen words fall back to characters and UTF-8 bytes, so any file encodes. A
transformers fast tokenizer, it saves and loads beside a model."""

from __future__ import annotations

import re
import string
import sys
from collections import Counter
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from arith.config import ModelConfig
from arith.data.examples import Example

EOS = "<|endoftext|>"
PAD = "<pad>"
#: one pre-token each: " 7" / "7", " word" / "word", " +" / "+", and any other whitespace char alone
PRE_TOKEN = r" ?\d| ?[A-Za-z]+| ?[^\sA-Za-z\d]|\s"
#: printable ASCII (space included) plus newline and tab: each has its own token
ALPHABET = [ch for ch in string.printable if ch not in "\r\x0b\x0c"]
_WORD = re.compile(r" [A-Za-z]{2,}")


def build_tokenizer(
    texts: Iterable[str] = (), *, max_words: int = 2000, min_count: int = 2
) -> PreTrainedTokenizerFast:
    """A BPE over single characters whose merges make " d" and " <char>" tokens, plus one token for each
    of the `max_words` most frequent words of `texts` seen `min_count` times (ties broken alphabetically)."""
    vocab: dict[str, int] = {}
    merges: list[tuple[str, str]] = []

    def add(token: str) -> None:
        vocab.setdefault(token, len(vocab))

    def merge(left: str, right: str) -> None:
        if left + right not in vocab:
            add(left + right)
            merges.append((left, right))

    for token in (EOS, PAD, *(f"<0x{i:02X}>" for i in range(256)), *ALPHABET):
        add(token)
    for ch in ALPHABET:
        if not ch.isspace():
            merge(" ", ch)
    counts = Counter(word for text in texts for word in _WORD.findall(" " + text))
    frequent = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    for word in frequent[:max_words]:
        for end in range(3, len(word) + 1):  # " T" exists: " Te", " Tea", ..., " Teacher"
            merge(word[: end - 1], word[end - 1])

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PRE_TOKEN), behavior="isolated")
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([EOS, PAD])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS,
        pad_token=PAD,
        clean_up_tokenization_spaces=False,
        model_max_length=1_000_000,
    )


def tokenizer_for(model_cfg: ModelConfig, texts: Iterable[str] = ()) -> PreTrainedTokenizerFast:
    """GPT-2's tokenizer (model_cfg.pretrained's) for a pretrained model or model.tokenizer='pretrained',
    else `build_tokenizer(texts)`; a random-init model falls back to that, saying so, when GPT-2's cannot
    load. GPT-2 has no pad token: its end-of-text token pads (the attention mask hides it)."""
    if model_cfg.init != "pretrained" and model_cfg.tokenizer != "pretrained":
        return build_tokenizer(texts)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_cfg.pretrained)
    except (OSError, ValueError) as err:
        if model_cfg.init == "pretrained":
            raise
        print(
            f"model.tokenizer=pretrained: cannot load the tokenizer of {model_cfg.pretrained!r} ({err}); "
            "using the digit-aware tokenizer of arith.model.tokenizer instead",
            file=sys.stderr,
        )
        return build_tokenizer(texts)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def encode_example(tokenizer: PreTrainedTokenizerFast, example: Example) -> tuple[list[int], int]:
    """(input_ids, answer_start): encode(" " + prompt) + encode(answer) + [eos]. The leading space makes
    the first digit " d" like every other; `answer_start` indexes the first answer token."""
    return encode_examples(tokenizer, [example])[0]


def encode_examples(
    tokenizer: PreTrainedTokenizerFast, examples: Iterable[Example]
) -> list[tuple[list[int], int]]:
    """`encode_example` for many examples at once (batched in the Rust tokenizer)."""
    examples, encode = list(examples), tokenizer.backend_tokenizer.encode_batch
    prompts = encode([" " + e.prompt for e in examples], add_special_tokens=False)
    answers = encode([e.answer for e in examples], add_special_tokens=False)
    eos = tokenizer.eos_token_id
    return [([*p.ids, *a.ids, eos], len(p.ids)) for p, a in zip(prompts, answers, strict=True)]
